//! A release's service reference, as `[releases.<name>.services]` writes it:
//! `HOST[:PORT]/REPO:TAG`, `HOST[:PORT]/REPO@sha256:…`, or both (the digest pins it,
//! the tag is kept for people). The host is always written out: an implicit Docker
//! Hub and an implicit `latest` would make what a release pins depend on where it
//! is published. Credentials are never part of a reference: it is signed into the
//! release description, and a registry login belongs in the publisher's credential
//! store.

use std::fmt;
use std::str::FromStr;

use stackpack_schema::digest::Digest;
use stackpack_schema::reference::validate_name;

/// A service reference, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceReference {
    /// `HOST[:PORT]`.
    pub host: String,
    /// The repository path on that host (`acme/inference-server`).
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<Digest>,
}

/// Why a service reference was refused; the text completes "… is not a reference: ".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceReferenceError {
    #[error("it holds credentials (`user:secret@` or a token); let the publisher log in instead")]
    Credentials,
    #[error("it names no registry host; write it out, such as `registry.acme.example/{0}`")]
    NoHost(String),
    #[error("`{0}` is not a repository path (lowercase letters, digits, and `-`, `_` or `.` between them, parts joined by `/`)")]
    Repository(String),
    #[error("`{0}` is not a tag")]
    Tag(String),
    #[error("`{0}` is not a digest: {1}")]
    Digest(String, String),
    #[error("it has neither a `:TAG` nor an `@sha256:…` digest")]
    Unpinned,
}

impl FromStr for ServiceReference {
    type Err = ServiceReferenceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let authority = text.split('/').next().unwrap_or(text);
        // `user:secret@host/…`, a URL (which may carry one), or a token's shape.
        if text.contains("://")
            || authority.contains('@')
            || crate::git::credential_in(text).is_some()
        {
            return Err(ServiceReferenceError::Credentials);
        }
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        let (host, path) = name
            .split_once('/')
            .ok_or_else(|| ServiceReferenceError::NoHost(name.to_string()))?;
        let is_host = host.contains('.') || host.contains(':') || host == "localhost";
        if !is_host {
            return Err(ServiceReferenceError::NoHost(name.to_string()));
        }
        // A `:` after the last `/` starts the tag.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (path, None),
        };
        if repository
            .split('/')
            .any(|part| validate_name(part).is_err())
        {
            return Err(ServiceReferenceError::Repository(repository.to_string()));
        }
        if let Some(tag) = tag.filter(|t| !is_tag(t)) {
            return Err(ServiceReferenceError::Tag(tag.to_string()));
        }
        let digest = digest
            .map(|d| {
                d.parse::<Digest>()
                    .map_err(|e| ServiceReferenceError::Digest(d.to_string(), e.to_string()))
            })
            .transpose()?;
        if tag.is_none() && digest.is_none() {
            return Err(ServiceReferenceError::Unpinned);
        }
        Ok(ServiceReference {
            host: host.to_string(),
            repository: repository.to_string(),
            tag: tag.map(str::to_string),
            digest,
        })
    }
}

impl fmt::Display for ServiceReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.host, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`, the distribution spec's tag.
fn is_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn tags_and_digests_with_a_host_are_references() {
        let r: ServiceReference = "registry.acme.example/acme/inference:1.4.2"
            .parse()
            .unwrap();
        assert_eq!(r.host, "registry.acme.example");
        assert_eq!(r.repository, "acme/inference");
        assert_eq!(r.tag.as_deref(), Some("1.4.2"));
        let pinned = format!("127.0.0.1:5000/acme/inference@{DIGEST}");
        let r: ServiceReference = pinned.parse().unwrap();
        assert_eq!(r.host, "127.0.0.1:5000");
        assert_eq!(r.tag, None);
        assert_eq!(r.to_string(), pinned);
        let both = format!("localhost/charts/ui:2.0.0@{DIGEST}");
        assert_eq!(both.parse::<ServiceReference>().unwrap().to_string(), both);
    }

    #[test]
    fn anything_else_is_refused_with_why() {
        let refused = |text: &str| text.parse::<ServiceReference>().unwrap_err();
        assert_eq!(
            refused("acme/inference:1.0"),
            ServiceReferenceError::NoHost("acme/inference:1.0".into())
        );
        assert_eq!(
            refused("inference:1.0"),
            ServiceReferenceError::NoHost("inference:1.0".into())
        );
        assert_eq!(
            refused("ci:s3cret@registry.acme.example/acme/inference:1.0"),
            ServiceReferenceError::Credentials
        );
        assert_eq!(
            refused("https://registry.acme.example/acme/inference:1.0"),
            ServiceReferenceError::Credentials
        );
        assert_eq!(
            refused("registry.acme.example/acme/inference"),
            ServiceReferenceError::Unpinned
        );
        assert!(matches!(
            refused("registry.acme.example/Acme/x:1"),
            ServiceReferenceError::Repository(_)
        ));
        assert!(matches!(
            refused("registry.acme.example/acme/x@sha256:abc"),
            ServiceReferenceError::Digest(..)
        ));
        assert!(matches!(
            refused("registry.acme.example/acme/x:-bad"),
            ServiceReferenceError::Tag(_)
        ));
    }
}
