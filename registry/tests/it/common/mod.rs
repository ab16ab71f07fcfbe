//! Test harness: speaks raw HTTP to the real `stackpack-registry` (and, for the
//! differential test, CNCF Distribution's `docker-registry`), both started on
//! 127.0.0.1 by the workspace's one fixture for each (`stackpack_test_support::servers`).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

pub const BIN: &str = env!("CARGO_BIN_EXE_stackpack-registry");

// One policy for every suite: a missing tool skips here, fails where
// `STACKPACK_REQUIRE_TOOLS` is set (CI).
pub use stackpack_test_support::have;
pub use stackpack_test_support::servers::{free_port, Distribution, OurRegistry};

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Deterministic pseudo-random bytes.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The first error code of a spec error body.
    pub fn error_code(&self) -> String {
        self.json()["errors"][0]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

thread_local! {
    static AGENT: ureq::Agent = ureq::AgentBuilder::new()
        .redirects(0)
        .max_idle_connections(0)
        .timeout(Duration::from_secs(60))
        .build();
}

/// Sends one request; never follows redirects; any status is an answer.
pub fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
    try_send(method, url, headers, body).unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

/// Like [`send`], but a transport failure (server gone) is an `Err`.
pub fn try_send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Resp, String> {
    AGENT.with(|agent| {
        let mut request = agent.request(method, url);
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let result = match body {
            Some(body) => request.send_bytes(body),
            None => request.call(),
        };
        let response = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = response.status();
        let mut map = HashMap::new();
        for name in response.headers_names() {
            if let Some(v) = response.header(&name) {
                map.insert(name.to_ascii_lowercase(), v.to_string());
            }
        }
        let mut body = Vec::new();
        let read = response.into_reader().take(1 << 30).read_to_end(&mut body);
        // Distribution 2.8 announces a longer body than it sends on some 416s; a short
        // body only matters on success.
        if status < 300 {
            read.map_err(|e| e.to_string())?;
        }
        Ok(Resp {
            status,
            headers: map,
            body,
        })
    })
}

/// A client bound to one registry and one token.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub token: Option<String>,
}

impl Client {
    pub fn new(base: String, token: Option<String>) -> Self {
        Client { base, token }
    }

    pub fn req(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        self.try_req(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn try_req(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Resp, String> {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if let Some(a) = &auth {
            all.push(("Authorization", a));
        }
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{}", self.base, path)
        };
        try_send(method, &url, &all, body)
    }

    /// Monolithic push: POST then PUT with the whole body. Returns the digest.
    pub fn push_blob(&self, repo: &str, data: &[u8]) -> String {
        let digest = sha256(data);
        let r = self.req("POST", &format!("/v2/{repo}/blobs/uploads/"), &[], None);
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
        let location = absolute(&self.base, r.header("location").unwrap());
        let sep = if location.contains('?') { '&' } else { '?' };
        let r = self.req(
            "PUT",
            &format!("{location}{sep}digest={digest}"),
            &[("Content-Type", "application/octet-stream")],
            Some(data),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        digest
    }

    /// Pushes an image manifest with the given config and layers; returns its digest.
    pub fn push_manifest(
        &self,
        repo: &str,
        reference: &str,
        manifest: &[u8],
        media_type: &str,
    ) -> Resp {
        self.req(
            "PUT",
            &format!("/v2/{repo}/manifests/{reference}"),
            &[("Content-Type", media_type)],
            Some(manifest),
        )
    }

    /// Pushes a bundle the way the packager does: its config, a stack layer, and the
    /// manifest with the bundle artifact type, tagged with the version. Returns the
    /// manifest bytes and digest.
    pub fn push_bundle_config(
        &self,
        repo: &str,
        version: &str,
        config: &[u8],
    ) -> (Vec<u8>, String) {
        use stackpack_schema::media_type;
        let layer = bytes(version.len() as u64 + repo.len() as u64, 300);
        let config_digest = self.push_blob(repo, config);
        let layer_digest = self.push_blob(repo, &layer);
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": media_type::BUNDLE_ARTIFACT,
            "config": {"mediaType": media_type::BUNDLE_CONFIG, "digest": config_digest, "size": config.len()},
            "layers": [{"mediaType": media_type::STACK_LAYER, "digest": layer_digest, "size": layer.len()}],
            "annotations": {"org.opencontainers.image.version": version}
        }))
        .unwrap();
        let r = self.push_manifest(repo, version, &manifest, OCI_MANIFEST);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let digest = sha256(&manifest);
        (manifest, digest)
    }

    /// Pushes a small image (config + one layer) tagged `tag`; returns the manifest
    /// bytes and digest.
    pub fn push_image(&self, repo: &str, tag: &str, seed: u64) -> (Vec<u8>, String) {
        let config = format!("{{\"seed\":{seed}}}").into_bytes();
        let layer = bytes(seed, 1000 + (seed as usize % 5000));
        let config_digest = self.push_blob(repo, &config);
        let layer_digest = self.push_blob(repo, &layer);
        let manifest = image_manifest(
            &config_digest,
            config.len(),
            &[(layer_digest, layer.len())],
            None,
            None,
        );
        let r = self.push_manifest(repo, tag, &manifest, OCI_MANIFEST);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let digest = sha256(&manifest);
        (manifest, digest)
    }
}

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

pub fn image_manifest(
    config_digest: &str,
    config_size: usize,
    layers: &[(String, usize)],
    artifact_type: Option<&str>,
    subject: Option<(&str, usize)>,
) -> Vec<u8> {
    let mut m = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config_size},
        "layers": layers.iter().map(|(d, s)| serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": s
        })).collect::<Vec<_>>(),
    });
    if let Some(a) = artifact_type {
        m["artifactType"] = a.into();
    }
    if let Some((d, s)) = subject {
        m["subject"] = serde_json::json!({"mediaType": OCI_MANIFEST, "digest": d, "size": s});
    }
    serde_json::to_vec(&m).unwrap()
}

pub fn absolute(base: &str, location: &str) -> String {
    if location.starts_with("http") {
        location.to_string()
    } else {
        format!("{base}{location}")
    }
}

/// Writes an OCI image layout with one image (config + `layers` random layers).
/// Returns the blob digests.
pub fn write_layout(root: &Path, tag: &str, seed: u64, layer_sizes: &[usize]) -> Vec<String> {
    std::fs::create_dir_all(root.join("blobs/sha256")).unwrap();
    let write = |data: &[u8]| {
        let d = sha256(data);
        std::fs::write(root.join("blobs/sha256").join(&d[7..]), data).unwrap();
        d
    };
    let mut digests = Vec::new();
    let mut layers = Vec::new();
    for (i, size) in layer_sizes.iter().enumerate() {
        let data = bytes(seed + i as u64, *size);
        let d = write(&data);
        digests.push(d.clone());
        layers.push((d, *size));
    }
    let config =
        format!("{{\"architecture\":\"amd64\",\"os\":\"linux\",\"seed\":{seed}}}").into_bytes();
    let config_digest = write(&config);
    digests.push(config_digest.clone());
    let manifest = image_manifest(&config_digest, config.len(), &layers, None, None);
    let manifest_digest = write(&manifest);
    digests.push(manifest_digest.clone());
    std::fs::write(
        root.join("index.json"),
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{"mediaType": OCI_MANIFEST, "digest": manifest_digest, "size": manifest.len(),
                "annotations": {"org.opencontainers.image.ref.name": tag}}]
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        root.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    digests
}

/// Runs `stackpack-registry ARGS --data <server's data>` and returns what it did.
/// Registers customers as the vendor does (`POST /api/v1/customers`, what `customer
/// add` does), so a file of their receipts may be imported with `--customer`.
pub fn register_customers<'a>(server: &OurRegistry, ids: impl IntoIterator<Item = &'a str>) {
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let mut seen = std::collections::HashSet::new();
    for id in ids.into_iter().filter(|id| seen.insert(*id)) {
        let body = serde_json::json!({ "id": id }).to_string();
        let r = admin.req("POST", "/api/v1/customers", &[], Some(body.as_bytes()));
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

pub fn cli(server: &OurRegistry, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(args)
        .arg("--data")
        .arg(&server.data)
        .output()
        .unwrap()
}

/// [`cli`], which must succeed.
pub fn cli_ok(server: &OurRegistry, args: &[&str]) -> std::process::Output {
    let out = cli(server, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON a successful command printed.
pub fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
