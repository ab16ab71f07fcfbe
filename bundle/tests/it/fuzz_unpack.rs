//! A fuzz test of the unpacker, runnable on stable Rust with no extra tools (the
//! cargo-fuzz target in `fuzz/` runs the same property under libFuzzer where
//! nightly and cargo-fuzz are installed).
//!
//! Seeds: a plain archive and every hostile shape. Each round mutates one seed (bit
//! flips, byte overwrites with tar-significant bytes, truncation, duplicated ranges)
//! either before or after gzip, unpacks it, and checks the properties that matter:
//! no panic; on refusal the destination is gone; on success everything under the
//! destination is a plain file or folder; and nothing ever appears outside it.
//! `STACKPACK_FUZZ_ROUNDS` sets the number of rounds (default 1500).

use std::io::Write;
use std::path::Path;

use stackpack_bundle::archive::{unpack, Limits};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn tar_of(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, kind, content, link) in entries {
        let mut header = tar::Header::new_gnu();
        let name = &mut header.as_gnu_mut().unwrap().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_entry_type(*kind);
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        builder.append(&header, *content).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn seeds() -> Vec<Vec<u8>> {
    use tar::EntryType as E;
    let main: &[u8] = b"output \"x\" { value = 1 }\n";
    vec![
        tar_of(&[
            ("stacks/a/main.tf", E::Regular, main, None),
            ("modules/b/x.tf", E::Regular, b"x", None),
        ]),
        tar_of(&[("stacks/a/../../x", E::Regular, b"x", None)]),
        tar_of(&[("/tmp/stackpack-fuzz-escape", E::Regular, b"x", None)]),
        tar_of(&[("stacks/l", E::Symlink, b"", Some("../../.."))]),
        tar_of(&[("stacks/h", E::Link, b"", Some("/etc/passwd"))]),
        tar_of(&[("stacks/d", E::Char, b"", None)]),
        tar_of(&[
            ("stacks/a", E::Directory, b"", None),
            ("stacks/a/f", E::Regular, b"y", None),
        ]),
    ]
}

fn mutate(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    const INTERESTING: &[u8] = b"/.\0\x7f0123456789 ./..12357LKSHgx";
    for _ in 0..=rng.below(8) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(5) {
            0 => bytes[at] ^= 1 << rng.below(8),
            1 => bytes[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => bytes.truncate(at),
            3 => {
                let end = (at + rng.below(64)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                let to = rng.below(bytes.len());
                bytes.splice(to..to, copy);
            }
            _ => {
                // Rewrite a header's type flag (offset 156 in every 512-byte block).
                let block = rng.below(bytes.len() / 512 + 1) * 512 + 156;
                if block < bytes.len() {
                    bytes[block] = b"0125673LKgx"[rng.below(11)];
                }
            }
        }
    }
    bytes
}

fn everything_is_plain(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().all(|entry| {
        let entry = entry.unwrap();
        let kind = std::fs::symlink_metadata(entry.path()).unwrap().file_type();
        kind.is_file() || (kind.is_dir() && everything_is_plain(&entry.path()))
    })
}

#[test]
fn the_unpacker_never_panics_never_escapes_and_never_leaves_half_a_tree() {
    let rounds: usize = std::env::var("STACKPACK_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let seeds = seeds();
    let mut rng = Rng(0x5eed_5eed_1234_5678);
    let root = tempfile::tempdir().unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let limits = Limits {
        max_total_bytes: 1 << 20,
        max_file_bytes: 1 << 20,
        ratio_grace_bytes: 1 << 20,
        ..Limits::default()
    };
    let escape = Path::new("/tmp/stackpack-fuzz-escape");
    let escape_existed = escape.exists();
    let mut accepted = 0;
    for round in 0..rounds {
        let seed = seeds[rng.below(seeds.len())].clone();
        let input = if rng.below(2) == 0 {
            gzip(&mutate(&mut rng, seed))
        } else {
            mutate(&mut rng, gzip(&seed))
        };
        let work = root.path().join(format!("w{round}"));
        std::fs::create_dir(&work).unwrap();
        let destination = work.join("bundle");
        match unpack(&input[..], Some(input.len() as u64), &destination, &limits) {
            Ok(_) => {
                accepted += 1;
                assert!(
                    everything_is_plain(&destination),
                    "round {round}: a non-plain entry"
                );
            }
            Err(_) => assert!(
                !destination.exists(),
                "round {round}: a refused archive left files"
            ),
        }
        let siblings: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            siblings.iter().all(|n| n == "bundle"),
            "round {round}: wrote beside the destination: {siblings:?}"
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "round {round}: escaped"
        );
        assert!(!root.path().join("x").exists());
        assert!(
            escape_existed || !escape.exists(),
            "round {round}: wrote an absolute path"
        );
        std::fs::remove_dir_all(&work).unwrap();
    }
    assert!(
        accepted > 0,
        "the mutations never kept an archive valid: the test exercises nothing"
    );
}
