//! Reads of what a registry sends that is held in memory (manifests, indexes,
//! tag pages, error messages), each refused past a cap.
//!
//! `oci-client` reads such answers whole before looking at them, so a registry that
//! streams an endless manifest would grow the program's memory until it is killed.
//! These are our own `GET`s (with the token `oci-client` negotiated) that stop
//! reading at the cap and name it.

use oci_client::RegistryOperation;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageIndex};

use super::{error_chain, percent_encode, Remote, RemoteError, MANIFEST_TYPES, TAG_PAGE};
use crate::layout::MAX_MANIFEST_SIZE;

/// The most of a tag page read: a thousand tags of a hundred bytes each is far below.
const MAX_TAG_PAGE: u64 = MAX_MANIFEST_SIZE;

/// The most of an error answer read: only its message is shown.
pub(super) const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The body of `answer` if it is at most `limit` bytes; `None` as soon as it is
/// longer (a `Content-Length` over the limit before anything is read). The one read
/// loop of every answer held in memory: registry answers here, and the ledger's and
/// a cloud API's in [`super::http`].
pub(super) async fn body_within(
    answer: &mut reqwest::Response,
    limit: u64,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if answer.content_length().is_some_and(|length| length > limit) {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// `limit` bytes as people write them (`4 MiB`, `64 KiB`, `512 bytes`).
pub(super) fn size_text(limit: u64) -> String {
    match limit {
        l if l >= 1 << 20 && l % (1 << 20) == 0 => format!("{} MiB", l >> 20),
        l if l >= 1 << 10 && l % (1 << 10) == 0 => format!("{} KiB", l >> 10),
        l => format!("{l} bytes"),
    }
}

/// What an answer that is not a success means for a read by name: absent, or the
/// registry's refusal.
enum Missing {
    Absent,
    Refused(RemoteError),
}

impl Remote {
    /// The body of `answer`, refused as soon as it passes `limit` bytes (a
    /// `Content-Length` over the limit is refused before reading anything).
    pub(super) async fn read_capped(
        &self,
        mut answer: reqwest::Response,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, RemoteError> {
        let too_large = || RemoteError::TooLarge {
            host: self.host.clone(),
            what: what.to_string(),
            limit: size_text(limit),
        };
        body_within(&mut answer, limit)
            .await
            .map_err(|e| RemoteError::Unreachable {
                host: self.host.clone(),
                detail: error_chain(&e),
            })?
            .ok_or_else(too_large)
    }

    /// At most [`MAX_ERROR_BODY`] bytes of an error answer, as text: the rest is
    /// dropped, never read.
    pub(super) async fn error_body(&self, mut answer: reqwest::Response) -> String {
        let mut bytes = Vec::new();
        while let Ok(Some(chunk)) = answer.chunk().await {
            let room = MAX_ERROR_BODY as usize - bytes.len();
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if bytes.len() as u64 >= MAX_ERROR_BODY {
                break;
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A `GET` of `path` (under `/v2/`) with the pull token of `repository`: the
    /// one this session has, or, on a 401 (it expired), a new one.
    async fn get(
        &self,
        repository: &str,
        path: &str,
        accept: &str,
    ) -> Result<reqwest::Response, RemoteError> {
        let url = format!("{}/v2/{path}", self.base_url());
        let cached = self
            .pull_tokens
            .lock()
            .ok()
            .and_then(|tokens| tokens.get(repository).cloned());
        let fresh = cached.is_none();
        let token = match cached {
            Some(token) => token,
            None => self.new_pull_token(repository).await?,
        };
        let request = self.http.get(&url).header(reqwest::header::ACCEPT, accept);
        let answer = self.send(request, token.as_deref()).await?;
        if answer.status().as_u16() != 401 || fresh {
            return Ok(answer);
        }
        let token = self.new_pull_token(repository).await?;
        let request = self.http.get(&url).header(reqwest::header::ACCEPT, accept);
        self.send(request, token.as_deref()).await
    }

    async fn new_pull_token(&self, repository: &str) -> Result<Option<String>, RemoteError> {
        let token = self.token(repository, RegistryOperation::Pull).await?;
        if let Ok(mut tokens) = self.pull_tokens.lock() {
            tokens.insert(repository.to_string(), token.clone());
        }
        Ok(token)
    }

    /// A 404, or an error envelope saying the name or manifest is unknown, means
    /// absent; any other answer is the registry's refusal.
    async fn missing(&self, repository: &str, answer: reqwest::Response) -> Missing {
        let status = answer.status().as_u16();
        let body = self.error_body(answer).await;
        let unknown = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|value| {
                value["errors"].as_array().map(|errors| {
                    errors.iter().any(|e| {
                        matches!(
                            e["code"].as_str(),
                            Some("MANIFEST_UNKNOWN" | "NAME_UNKNOWN" | "NOT_FOUND")
                        )
                    })
                })
            })
            .unwrap_or(false);
        if status == 404 || unknown {
            Missing::Absent
        } else {
            Missing::Refused(self.refusal_of(repository, status, &body))
        }
    }

    /// A manifest's (or index's) bytes by tag or digest, at most
    /// [`MAX_MANIFEST_SIZE`]; `None` when absent.
    pub(super) async fn manifest_capped(
        &self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<Vec<u8>>, RemoteError> {
        let answer = self
            .get(
                repository,
                &format!("{repository}/manifests/{reference}"),
                &MANIFEST_TYPES.join(", "),
            )
            .await?;
        if answer.status().as_u16() != 200 {
            return match self.missing(repository, answer).await {
                Missing::Absent => Ok(None),
                Missing::Refused(error) => Err(error),
            };
        }
        self.read_capped(answer, "manifest", MAX_MANIFEST_SIZE)
            .await
            .map(Some)
    }

    /// One page of tags after `last`; a repository that does not exist has none.
    pub(super) async fn tag_page(
        &self,
        repository: &str,
        last: Option<&str>,
    ) -> Result<Vec<String>, RemoteError> {
        let mut path = format!("{repository}/tags/list?n={TAG_PAGE}");
        if let Some(last) = last {
            path.push_str("&last=");
            path.push_str(&percent_encode(last));
        }
        let answer = self.get(repository, &path, "application/json").await?;
        if answer.status().as_u16() != 200 {
            return match self.missing(repository, answer).await {
                Missing::Absent => Ok(vec![]),
                Missing::Refused(error) => Err(error),
            };
        }
        let bytes = self.read_capped(answer, "tag list", MAX_TAG_PAGE).await?;
        #[derive(serde::Deserialize)]
        struct TagList {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let page: TagList = serde_json::from_slice(&bytes).map_err(|e| RemoteError::Invalid {
            host: self.host.clone(),
            what: "tag list".into(),
            detail: e.to_string(),
        })?;
        Ok(page.tags.unwrap_or_default())
    }

    /// The first page of `/v2/_catalog` (up to [`TAG_PAGE`] names), asked with the
    /// pull token of `repository`; `None` when the registry does not allow it.
    pub(super) async fn catalog_page(
        &self,
        repository: &str,
    ) -> Result<Option<Vec<String>>, RemoteError> {
        let path = format!("_catalog?n={TAG_PAGE}");
        let answer = self.get(repository, &path, "application/json").await?;
        if answer.status().as_u16() != 200 {
            return Ok(None);
        }
        let bytes = self.read_capped(answer, "catalog", MAX_TAG_PAGE).await?;
        #[derive(serde::Deserialize)]
        struct Catalog {
            #[serde(default)]
            repositories: Option<Vec<String>>,
        }
        Ok(serde_json::from_slice::<Catalog>(&bytes)
            .ok()
            .map(|c| c.repositories.unwrap_or_default()))
    }

    /// The referrers index of `subject`: the referrers API's answer, or on a 404 (a
    /// registry without the API) the `sha256-<hex>` tag-schema index, or none. At
    /// most [`MAX_MANIFEST_SIZE`] either way.
    pub(super) async fn referrers_capped(
        &self,
        repository: &str,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Descriptor>, RemoteError> {
        let mut path = format!("{repository}/referrers/{subject}");
        if let Some(artifact_type) = artifact_type {
            path.push_str("?artifactType=");
            path.push_str(&percent_encode(artifact_type));
        }
        let answer = self.get(repository, &path, media_type::OCI_INDEX).await?;
        let bytes = match answer.status().as_u16() {
            200 => {
                self.read_capped(answer, "referrers index", MAX_MANIFEST_SIZE)
                    .await?
            }
            404 => {
                let fallback = self
                    .manifest_capped(repository, &subject.referrers_tag())
                    .await?;
                match fallback {
                    Some(bytes) => bytes,
                    None => return Ok(vec![]),
                }
            }
            _ => return Err(self.refusal(repository, answer).await),
        };
        let index: ImageIndex =
            serde_json::from_slice(&bytes).map_err(|e| RemoteError::Invalid {
                host: self.host.clone(),
                what: "referrers index".into(),
                detail: e.to_string(),
            })?;
        Ok(index.manifests)
    }
}

/// `text` safe in a query string: what is not unreserved is `%XX`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_named_as_people_write_them() {
        assert_eq!(size_text(MAX_MANIFEST_SIZE), "4 MiB");
        assert_eq!(size_text(MAX_ERROR_BODY), "64 KiB");
        assert_eq!(size_text(100), "100 bytes");
    }

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(
            percent_encode("application/vnd.x+json"),
            "application%2Fvnd.x%2Bjson"
        );
        assert_eq!(percent_encode("1.0.0-rc.1"), "1.0.0-rc.1");
    }
}
