//! OCI image-spec 1.1 types: descriptors, image manifests, image indexes and the
//! image layout marker. Field order is fixed and annotation maps are sorted, so the
//! JSON we write for the same values is always the same bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::media_type;

/// Annotations, sorted by key so serialisation is deterministic.
pub type Annotations = BTreeMap<String, String>;

/// Points at a blob or a manifest by media type, digest and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

impl Descriptor {
    pub fn new(media_type: impl Into<String>, digest: Digest, size: u64) -> Self {
        Descriptor {
            media_type: media_type.into(),
            digest,
            size,
            artifact_type: None,
            annotations: None,
            urls: None,
            platform: None,
            data: None,
        }
    }

    /// The descriptor of the OCI empty blob `{}`.
    pub fn empty() -> Self {
        Descriptor::new(
            media_type::OCI_EMPTY,
            Digest::of(media_type::EMPTY_BLOB),
            media_type::EMPTY_BLOB.len() as u64,
        )
    }

    /// An annotation's value, if set.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// An OCI image manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl ImageManifest {
    /// The blobs the manifest names: its config, then its layers.
    pub fn blobs(&self) -> impl Iterator<Item = &Descriptor> {
        std::iter::once(&self.config).chain(&self.layers)
    }

    /// The artifact type as the spec defines it: `artifactType`, else the config's
    /// media type.
    pub fn effective_artifact_type(&self) -> &str {
        self.artifact_type
            .as_deref()
            .unwrap_or(&self.config.media_type)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// Canonical bytes: compact JSON in field order.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("manifest serialisation cannot fail")
    }
}

/// An OCI image index (also the shape of `index.json` in an image layout and of a
/// referrers response).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl ImageIndex {
    pub fn new(manifests: Vec<Descriptor>) -> Self {
        ImageIndex {
            schema_version: 2,
            media_type: Some(media_type::OCI_INDEX.to_string()),
            artifact_type: None,
            manifests,
            subject: None,
            annotations: None,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("index serialisation cannot fail")
    }
}

/// The `oci-layout` marker file of an image layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageLayoutMarker {
    pub image_layout_version: String,
}

impl Default for ImageLayoutMarker {
    fn default() -> Self {
        ImageLayoutMarker {
            image_layout_version: "1.0.0".to_string(),
        }
    }
}

/// Which kind of manifest a JSON document is, judged by its `mediaType` field or, when
/// absent, by its shape (`manifests` makes an index).
pub fn sniff_manifest_media_type(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        media_type: Option<String>,
        manifests: Option<serde_json::Value>,
        config: Option<serde_json::Value>,
    }
    let probe: Probe = serde_json::from_slice(bytes).ok()?;
    match (probe.media_type, probe.manifests, probe.config) {
        (Some(media_type), _, _) => Some(media_type),
        (None, Some(_), _) => Some(media_type::OCI_INDEX.to_string()),
        (None, None, Some(_)) => Some(media_type::OCI_MANIFEST.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_json_omits_absent_fields_and_sorts_annotations() {
        let mut annotations = Annotations::new();
        annotations.insert("z".into(), "1".into());
        annotations.insert("a".into(), "2".into());
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(media_type::OCI_MANIFEST.into()),
            artifact_type: Some(media_type::BUNDLE_ARTIFACT.into()),
            config: Descriptor::empty(),
            layers: vec![],
            subject: None,
            annotations: Some(annotations),
        };
        let json = String::from_utf8(manifest.to_bytes()).unwrap();
        assert!(json.find("\"a\"").unwrap() < json.find("\"z\"").unwrap());
        assert!(!json.contains("subject"));
        let back: ImageManifest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, manifest);
    }

    #[test]
    fn sniffing_tells_index_from_manifest_without_media_type() {
        assert_eq!(
            sniff_manifest_media_type(br#"{"schemaVersion":2,"manifests":[]}"#).as_deref(),
            Some(media_type::OCI_INDEX)
        );
        assert_eq!(
            sniff_manifest_media_type(br#"{"schemaVersion":2,"config":{}}"#).as_deref(),
            Some(media_type::OCI_MANIFEST)
        );
        assert_eq!(sniff_manifest_media_type(b"not json"), None);
    }
}
