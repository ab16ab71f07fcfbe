//! Load generator for `bench/load.sh`: blob push and pull throughput with N clients
//! against any registry (ours or CNCF Distribution), over plain HTTP on 127.0.0.1.
//!
//! ```text
//! loadgen seed URL TOKEN REPO              push one small image tagged `bench`
//! loadgen push URL TOKEN CLIENTS MIB COUNT each client pushes COUNT blobs of MIB MiB
//! loadgen pull URL TOKEN CLIENTS MIB COUNT each client pulls its MIB MiB blob COUNT times
//! ```
//!
//! `MIB` may be `<n>k` for KiB. `TOKEN` is `-` for none. Prints one line of JSON:
//! `{"mbps": …, "objectsPerSecond": …, "seconds": …}`.

use std::io::Read;
use std::time::Instant;

use sha2::{Digest as _, Sha256};

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn data(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

struct Target {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Target {
    fn request(&self, method: &str, url: &str) -> ureq::Request {
        let url = if url.starts_with("http") {
            url.to_string()
        } else {
            format!("{}{}", self.base, url)
        };
        let r = self.agent.request(method, &url);
        match &self.token {
            Some(t) => r.set("Authorization", &format!("Bearer {t}")),
            None => r,
        }
    }

    fn push(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let r = self
            .request("POST", &format!("/v2/{repo}/blobs/uploads/"))
            .call()
            .expect("POST");
        let location = r.header("location").expect("Location").to_string();
        let sep = if location.contains('?') { '&' } else { '?' };
        self.request("PUT", &format!("{location}{sep}digest={digest}"))
            .set("Content-Type", "application/octet-stream")
            .send_bytes(bytes)
            .expect("PUT");
        digest
    }

    fn pull(&self, repo: &str, digest: &str) -> u64 {
        let r = self
            .request("GET", &format!("/v2/{repo}/blobs/{digest}"))
            .call()
            .expect("GET");
        let mut sink = [0u8; 256 * 1024];
        let mut reader = r.into_reader();
        let mut total = 0u64;
        loop {
            let n = reader.read(&mut sink).expect("read");
            if n == 0 {
                return total;
            }
            total += n as u64;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = |_client: usize| Target {
        base: args[1].clone(),
        token: (args[2] != "-").then(|| args[2].clone()),
        agent: ureq::AgentBuilder::new().redirects(0).build(),
    };
    match args[0].as_str() {
        "seed" => {
            let t = target(0);
            let repo = &args[3];
            let config = br#"{"architecture":"amd64","os":"linux"}"#;
            let layer = data(1, 4096);
            let c = t.push(repo, config);
            let l = t.push(repo, &layer);
            let manifest = serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": c, "size": config.len()},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": l, "size": layer.len()}]
            }))
            .unwrap();
            t.request("PUT", &format!("/v2/{repo}/manifests/bench"))
                .set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                .send_bytes(&manifest)
                .expect("PUT manifest");
            println!("/v2/{repo}/manifests/bench");
        }
        mode @ ("push" | "pull") => {
            let clients: usize = args[3].parse().unwrap();
            // `16` is 16 MiB; `4k` is 4 KiB (small objects: what a commit costs).
            let size = match args[4].strip_suffix('k') {
                Some(kib) => kib.parse::<usize>().unwrap() * 1024,
                None => args[4].parse::<usize>().unwrap() * 1024 * 1024,
            };
            let count: usize = args[5].parse().unwrap();
            let salt = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            // Prepare outside the timed part: the data, and for pulls the blob itself.
            let prepared: Vec<_> = (0..clients)
                .map(|c| {
                    let t = target(c);
                    let repo = format!("bench/c{c}");
                    let blobs: Vec<Vec<u8>> = (0..if mode == "push" { count } else { 1 })
                        .map(|i| data(salt ^ ((c * 1000 + i) as u64 + 7), size))
                        .collect();
                    let digest = (mode == "pull").then(|| t.push(&repo, &blobs[0]));
                    (t, repo, blobs, digest)
                })
                .collect();
            let start = Instant::now();
            let handles: Vec<_> = prepared
                .into_iter()
                .map(|(t, repo, blobs, digest)| {
                    std::thread::spawn(move || {
                        let mut bytes = 0u64;
                        if let Some(digest) = digest {
                            for _ in 0..count {
                                bytes += t.pull(&repo, &digest);
                            }
                        } else {
                            for blob in &blobs {
                                t.push(&repo, blob);
                                bytes += blob.len() as u64;
                            }
                        }
                        bytes
                    })
                })
                .collect();
            let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "{}",
                serde_json::json!({
                    "mbps": total as f64 / 1e6 / seconds,
                    "objectsPerSecond": (clients * count) as f64 / seconds,
                    "seconds": seconds,
                    "bytes": total,
                })
            );
        }
        other => {
            eprintln!("error: unknown mode `{other}`: expected `seed`, `push` or `pull`");
            std::process::exit(2);
        }
    }
}
