//! A manifest body parsed and checked against its declared media type, before
//! anything is stored: what `put` and the hooks that record a release index or a
//! channel statement read. Pure: no I/O, so it can be fuzzed.

use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};

use crate::error::{Code, Error, Result};

/// What a manifest says, once checked.
#[derive(Debug)]
pub struct Checked {
    pub media_type: String,
    pub artifact_type: Option<String>,
    pub subject: Option<Descriptor>,
    pub annotations: Option<String>,
    pub blobs: Vec<Descriptor>,
    pub manifests: Vec<Descriptor>,
    pub config: Option<Descriptor>,
}

pub(super) fn invalid(message: impl Into<String>) -> Error {
    Error::new(Code::ManifestInvalid, message)
}

/// Parses and checks a manifest body against its declared media type. Pure: no I/O,
/// so it can be fuzzed.
pub fn check(content_type: Option<&str>, bytes: &[u8]) -> Result<Checked> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| invalid(format!("the manifest is not JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| invalid("the manifest is not a JSON object"))?;
    if object.get("schemaVersion").and_then(|v| v.as_u64()) != Some(2) {
        return Err(invalid("`schemaVersion` must be 2"));
    }
    let declared = object.get("mediaType").and_then(|v| v.as_str());
    let content_type = content_type
        .map(|c| c.split(';').next().unwrap_or("").trim())
        .filter(|c| !c.is_empty());
    let media_type = match (content_type, declared) {
        (Some(c), Some(d)) if c != d => {
            return Err(invalid(format!(
                "`Content-Type` is `{c}` but the manifest's `mediaType` is `{d}`"
            )))
        }
        (Some(c), _) => c.to_string(),
        (None, Some(d)) => d.to_string(),
        (None, None) => stackpack_schema::oci::sniff_manifest_media_type(bytes)
            .ok_or_else(|| invalid("the manifest's type cannot be told"))?,
    };
    if media_type::is_image_manifest(&media_type) {
        let manifest: ImageManifest = serde_json::from_value(value)
            .map_err(|e| invalid(format!("not a valid image manifest: {e}")))?;
        let mut blobs = vec![manifest.config.clone()];
        // Layers with `urls` (foreign layers) are fetched from elsewhere.
        blobs.extend(
            manifest
                .layers
                .iter()
                .filter(|l| l.urls.as_ref().is_none_or(|u| u.is_empty()))
                .cloned(),
        );
        Ok(Checked {
            artifact_type: Some(manifest.effective_artifact_type().to_string()),
            annotations: manifest
                .annotations
                .as_ref()
                .map(|a| serde_json::to_string(a).expect("annotations serialise")),
            subject: manifest.subject.clone(),
            config: Some(manifest.config.clone()),
            blobs,
            manifests: Vec::new(),
            media_type,
        })
    } else if media_type::is_index(&media_type) {
        let index: ImageIndex = serde_json::from_value(value)
            .map_err(|e| invalid(format!("not a valid image index: {e}")))?;
        Ok(Checked {
            artifact_type: index.artifact_type.clone(),
            annotations: index
                .annotations
                .as_ref()
                .map(|a| serde_json::to_string(a).expect("annotations serialise")),
            subject: index.subject.clone(),
            config: None,
            blobs: Vec::new(),
            manifests: index.manifests.clone(),
            media_type,
        })
    } else {
        Err(invalid(format!(
            "manifest type `{media_type}` is not supported: use an OCI or Docker v2 image manifest or index"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn garbage_is_manifest_invalid_never_a_panic() {
        let samples: &[&[u8]] = &[
            b"",
            b"null",
            b"[]",
            b"{}",
            b"{\"schemaVersion\":1}",
            b"{\"schemaVersion\":2}",
            b"{\"schemaVersion\":2,\"config\":{}}",
            b"{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"digest\":\"sha256:zz\",\"size\":1}}",
            b"{\"schemaVersion\":2,\"manifests\":[{\"digest\":1}]}",
            b"\xff\xfe",
        ];
        for sample in samples {
            for content_type in [None, Some("application/vnd.oci.image.manifest.v1+json")] {
                let error = check(content_type, sample).unwrap_err();
                assert_eq!(error.code, crate::error::Code::ManifestInvalid);
            }
        }
    }

    #[test]
    fn a_small_fuzz_of_mutated_manifests_never_panics() {
        let good = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#;
        assert!(check(None, good).is_ok());
        // Deterministic xorshift so the test is repeatable.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut bytes = good.to_vec();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() % bytes.len() as u64) as usize;
                match next() % 3 {
                    0 => bytes[at] = next() as u8,
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, b"{}[]\",:0a\\"[(next() % 10) as usize]),
                }
            }
            let _ = check(None, &bytes);
            let _ = check(Some("application/vnd.oci.image.index.v1+json"), &bytes);
        }
    }
}
