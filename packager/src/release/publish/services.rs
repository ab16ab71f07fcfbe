//! A release's services: each `stackpack.toml` reference resolved to its digest
//! through the registry API, and its manifest(s) and blobs brought into the local
//! layout (digest-checked, manifests read capped), from where the release's push
//! sends them on and `export` packs them.

use stackpack_bundle::layout::{ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::remote::Remote;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type;
use stackpack_schema::oci::{sniff_manifest_media_type, Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::ReleaseService;

use crate::error::{Error, Result};

/// Opens a connection to a service's registry host.
pub type Connect<'a> = &'a dyn Fn(&str) -> Result<Remote>;

/// Where a service reference points: `HOST/REPOSITORY:TAG` or `HOST/REPOSITORY@DIGEST`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceSource {
    pub host: String,
    pub repository: String,
    /// The tag or the digest.
    pub reference: String,
}

impl ServiceSource {
    /// Reads a reference; credentials before the host (`user:pass@host/…`) are dropped.
    pub fn parse(text: &str) -> Option<ServiceSource> {
        let text = text
            .trim_start_matches("docker://")
            .trim_start_matches("oci://");
        let (host, path) = text.split_once('/')?;
        let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
        let (repository, reference) = match path.split_once('@') {
            Some((repository, digest)) => (repository, digest.to_string()),
            None => match path.rsplit_once(':') {
                Some((repository, tag)) if !tag.contains('/') => (repository, tag.to_string()),
                _ => (path, "latest".to_string()),
            },
        };
        if host.is_empty() || repository.is_empty() || reference.is_empty() {
            return None;
        }
        Some(ServiceSource {
            host: host.into(),
            repository: repository.into(),
            reference,
        })
    }

    /// The reference as recorded: no credentials, the tag or digest as written.
    pub fn display(&self) -> String {
        let separator = if self.reference.parse::<Digest>().is_ok() {
            '@'
        } else {
            ':'
        };
        format!(
            "{}/{}{separator}{}",
            self.host, self.repository, self.reference
        )
    }
}

/// A service resolved and held in the local layout.
#[derive(Clone, Debug)]
pub struct ResolvedService {
    pub service: ReleaseService,
    /// Its manifest (or index) descriptor, as the release index pins it.
    pub descriptor: Descriptor,
    pub source: ServiceSource,
}

/// Resolves `text` (service `name`) and copies its manifests and blobs into `layout`.
/// A service on `publishing`'s host is read through it; another host is connected
/// to with `connect`.
pub fn resolve_service(
    name: &str,
    text: &str,
    publishing: &Remote,
    connect: Connect<'_>,
    layout: &ImageLayout,
) -> Result<ResolvedService> {
    let source = ServiceSource::parse(text).ok_or_else(|| {
        Error::usage(format!(
            "service `{name}`: `{text}` is not an OCI reference"
        ))
        .at("stackpack.toml")
        .hint("write `HOST/REPOSITORY:TAG` or `HOST/REPOSITORY@sha256:…`")
    })?;
    let other;
    let remote = if source.host == publishing.host() {
        publishing
    } else {
        other = connect(&source.host)?;
        &other
    };
    let (bytes, digest) = remote
        .pull_manifest(&source.repository, &source.reference)?
        .ok_or_else(|| {
            Error::refused(format!(
                "service `{name}`: `{}` is not in its registry",
                source.display()
            ))
            .at("stackpack.toml")
            .hint("push the service image first, or fix the reference")
        })?;
    let media_type = sniff_manifest_media_type(&bytes).ok_or_else(|| {
        Error::refused(format!(
            "service `{name}`: `{}` is not an OCI manifest or index",
            source.display()
        ))
    })?;
    let artifact_type = if media_type::is_index(&media_type) {
        let index: ImageIndex = parse(&bytes, name)?;
        for child in &index.manifests {
            copy_manifest(remote, &source, &child.digest.to_string(), name, layout)?;
        }
        index.artifact_type
    } else {
        let manifest = copy_manifest(remote, &source, &digest.to_string(), name, layout)?;
        Some(manifest.effective_artifact_type().to_string())
    };
    layout.write_blob(&bytes)?;
    let mut descriptor = Descriptor::new(media_type.clone(), digest.clone(), bytes.len() as u64);
    descriptor.artifact_type = artifact_type.clone();
    Ok(ResolvedService {
        service: ReleaseService {
            name: name.into(),
            reference: source.display(),
            media_type,
            digest,
            size: bytes.len() as u64,
            artifact_type,
        },
        descriptor,
        source,
    })
}

/// Copies one image manifest (by digest) and its blobs into `layout`.
fn copy_manifest(
    remote: &Remote,
    source: &ServiceSource,
    digest: &str,
    name: &str,
    layout: &ImageLayout,
) -> Result<ImageManifest> {
    let (bytes, _) = remote
        .pull_manifest(&source.repository, digest)?
        .ok_or_else(|| {
            Error::refused(format!(
                "service `{name}`: manifest `{digest}` of `{}` is missing from its registry",
                source.display()
            ))
        })?;
    if bytes.len() as u64 > MAX_MANIFEST_SIZE {
        return Err(Error::refused(format!(
            "service `{name}`: a manifest of `{}` is over {MAX_MANIFEST_SIZE} bytes",
            source.display()
        )));
    }
    let manifest: ImageManifest = parse(&bytes, name)?;
    let blobs: Vec<Descriptor> = manifest.blobs().cloned().collect();
    remote.pull_blobs(&source.repository, &blobs, layout, None)?;
    layout.write_blob(&bytes)?;
    Ok(manifest)
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8], name: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::refused(format!(
            "service `{name}`: its manifest is not one this program reads: {e}"
        ))
        .hint("services must be OCI images or artifacts (an image manifest, or an index of them)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_tags_digests_and_drop_credentials() {
        let tagged = ServiceSource::parse("127.0.0.1:5000/acme/api:1.2").unwrap();
        assert_eq!(tagged.host, "127.0.0.1:5000");
        assert_eq!(tagged.repository, "acme/api");
        assert_eq!(tagged.reference, "1.2");
        let digest = Digest::of(b"x");
        let pinned =
            ServiceSource::parse(&format!("user:secret@ghcr.io/acme/api@{digest}")).unwrap();
        assert_eq!(pinned.host, "ghcr.io");
        assert_eq!(pinned.display(), format!("ghcr.io/acme/api@{digest}"));
        assert_eq!(
            ServiceSource::parse("ghcr.io/acme/api").unwrap().reference,
            "latest"
        );
        assert!(ServiceSource::parse("api").is_none());
    }
}
