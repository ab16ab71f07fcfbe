//! How a `/v2/<name>/…` path splits. OCI repository names contain slashes, so the
//! distribution spec's suffixes say where the name ends. The router dispatches on
//! it, and the metrics middleware labels requests with it.

/// The route of a `/v2/<name>/…` path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum V2Route<'a> {
    Tags(&'a str),
    Manifest(&'a str, &'a str),
    Referrers(&'a str, &'a str),
    Uploads(&'a str, Option<&'a str>),
    Blob(&'a str, &'a str),
}

impl<'a> V2Route<'a> {
    /// The repository the path names.
    pub(crate) fn repository(&self) -> &'a str {
        match self {
            V2Route::Tags(name)
            | V2Route::Manifest(name, _)
            | V2Route::Referrers(name, _)
            | V2Route::Uploads(name, _)
            | V2Route::Blob(name, _) => name,
        }
    }
}

/// Splits what follows `/v2/`.
pub(crate) fn route(rest: &str) -> Option<V2Route<'_>> {
    if let Some(name) = rest.strip_suffix("/tags/list") {
        return Some(V2Route::Tags(name));
    }
    if let Some(name) = rest
        .strip_suffix("/blobs/uploads/")
        .or_else(|| rest.strip_suffix("/blobs/uploads"))
    {
        return Some(V2Route::Uploads(name, None));
    }
    if let Some((name, id)) = rest.rsplit_once("/blobs/uploads/") {
        return Some(V2Route::Uploads(name, Some(id)));
    }
    if let Some((name, reference)) = rest.rsplit_once("/manifests/") {
        return Some(V2Route::Manifest(name, reference));
    }
    if let Some((name, digest)) = rest.rsplit_once("/referrers/") {
        return Some(V2Route::Referrers(name, digest));
    }
    if let Some((name, digest)) = rest.rsplit_once("/blobs/") {
        return Some(V2Route::Blob(name, digest));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_paths_split_as_the_spec_says() {
        assert_eq!(route("a/b/tags/list"), Some(V2Route::Tags("a/b")));
        assert_eq!(
            route("a/manifests/1.0"),
            Some(V2Route::Manifest("a", "1.0"))
        );
        assert_eq!(
            route("a/b/blobs/uploads/"),
            Some(V2Route::Uploads("a/b", None))
        );
        assert_eq!(
            route("a/blobs/uploads/xyz"),
            Some(V2Route::Uploads("a", Some("xyz")))
        );
        assert_eq!(
            route("a/blobs/sha256:00"),
            Some(V2Route::Blob("a", "sha256:00"))
        );
        assert_eq!(
            route("a/referrers/sha256:00"),
            Some(V2Route::Referrers("a", "sha256:00"))
        );
        assert_eq!(route("a/b"), None);
        assert_eq!(route("a/b/blobs/uploads/").unwrap().repository(), "a/b");
    }
}
