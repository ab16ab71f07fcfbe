//! Hashes a file with the SHA-256 every Stackpack program uses, and says whether this
//! CPU offers the SHA instructions that `sha2` picks at run time (it checks the same
//! CPUID bits through `cpufeatures`). `scripts/bench/all.sh` runs it beside
//! `openssl dgst -sha256` on the same bytes.
//!
//!   cargo run --release -p stackpack-bundle --example sha_floor -- FILE

use std::io::Read;
use std::time::Instant;

use stackpack_schema::digest::Sha256Hasher;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("error: no file given\nhint: sha_floor FILE");
        std::process::exit(2);
    };
    #[cfg(target_arch = "x86_64")]
    let sha_ni =
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1");
    #[cfg(not(target_arch = "x86_64"))]
    let sha_ni = false;
    let mut file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("error: cannot read `{path}`: {e}");
        std::process::exit(2);
    });
    let start = Instant::now();
    let mut hasher = Sha256Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).expect("readable");
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    let bytes = hasher.len();
    let digest = hasher.finish();
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{digest}  {path}\nsha-ni: {}, {:.0} MB/s",
        if sha_ni { "yes" } else { "no" },
        bytes as f64 / 1e6 / seconds
    );
}
