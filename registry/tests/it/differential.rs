//! The same sequence of raw HTTP requests against our registry and against CNCF
//! Distribution (`docker-registry`, 2.8). Every step must answer with the same
//! status code, carry the headers the distribution spec requires, and (for errors)
//! the same spec error code. Features Distribution 2.8 lacks (referrers, tag
//! deletion, `OCI-Subject`) are then checked against the spec on ours alone.

use crate::common;

use common::*;

/// What one step observed.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    step: &'static str,
    status: u16,
    missing_headers: Vec<&'static str>,
    error_code: Option<String>,
}

struct Run<'a> {
    client: &'a Client,
    seen: Vec<Seen>,
}

impl Run<'_> {
    fn step(
        &mut self,
        step: &'static str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        required: &[&'static str],
    ) -> Resp {
        let r = self
            .client
            .try_req(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{step} against {}: {e}", self.client.base));
        let missing_headers = required
            .iter()
            .copied()
            .filter(|h| r.header(h).is_none())
            .collect();
        let error_code = (r.status >= 400 && method != "HEAD")
            .then(|| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
            .flatten()
            .and_then(|v| v["errors"][0]["code"].as_str().map(str::to_string));
        self.seen.push(Seen {
            step,
            status: r.status,
            missing_headers,
            error_code,
        });
        r
    }
}

fn location(client: &Client, r: &Resp) -> String {
    absolute(&client.base, r.header("location").expect("Location"))
}

fn with_query(url: &str, query: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{query}")
}

fn sequence(client: &Client) -> Vec<Seen> {
    let mut run = Run {
        client,
        seen: Vec::new(),
    };
    let repo = "diff/app";
    let chunk1 = bytes(1, 1000);
    let chunk2 = bytes(2, 1000);
    let whole: Vec<u8> = [chunk1.clone(), chunk2.clone()].concat();
    let digest = sha256(&whole);
    let octet = ("Content-Type", "application/octet-stream");

    run.step(
        "version check",
        "GET",
        "/v2/",
        &[],
        None,
        &["Docker-Distribution-API-Version"],
    );

    // Chunked upload, with an out-of-order chunk and a wrong digest on the way.
    let r = run.step(
        "start upload",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location", "Docker-Upload-UUID", "Range"],
    );
    let loc = location(client, &r);
    let r = run.step(
        "upload status",
        "GET",
        &loc,
        &[],
        None,
        &["Location", "Range", "Docker-Upload-UUID"],
    );
    assert_eq!(r.header("range"), Some("0-0"));
    let r = run.step(
        "patch chunk 1",
        "PATCH",
        &loc,
        &[octet, ("Content-Range", "0-999")],
        Some(&chunk1),
        &["Location", "Range", "Docker-Upload-UUID"],
    );
    assert_eq!(r.header("range"), Some("0-999"));
    let loc = location(client, &r);
    let r = run.step(
        "patch chunk 2",
        "PATCH",
        &loc,
        &[octet, ("Content-Range", "1000-1999")],
        Some(&chunk2),
        &["Location", "Range"],
    );
    assert_eq!(
        r.header("range"),
        Some("0-1999"),
        "{} {:?} {}",
        client.base,
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    let loc = location(client, &r);
    let r = run.step(
        "finish upload",
        "PUT",
        &with_query(&loc, &format!("digest={digest}")),
        &[octet],
        None,
        &["Location", "Docker-Content-Digest"],
    );
    assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    run.step("status after finish", "GET", &loc, &[], None, &[]);

    let r = run.step(
        "start upload 2",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location"],
    );
    let loc = location(client, &r);
    let wrong = sha256(b"something else");
    run.step(
        "finish with wrong digest",
        "PUT",
        &with_query(&loc, &format!("digest={wrong}")),
        &[octet],
        Some(&whole),
        &[],
    );
    let r = run.step(
        "start upload 3",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location"],
    );
    let loc = location(client, &r);
    run.step(
        "finish with malformed digest",
        "PUT",
        &with_query(&loc, "digest=sha256:xyz"),
        &[octet],
        Some(&whole),
        &[],
    );
    let r = run.step(
        "start upload 4",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location"],
    );
    let loc = location(client, &r);
    run.step("cancel upload", "DELETE", &loc, &[], None, &[]);
    // Distribution drops a session after an out-of-order chunk, so this one is alone.
    let r = run.step(
        "start upload 5",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location"],
    );
    let loc5 = location(client, &r);
    run.step(
        "patch out of order",
        "PATCH",
        &loc5,
        &[octet, ("Content-Range", "5000-5999")],
        Some(&chunk2),
        &[],
    );
    run.step("status after cancel", "GET", &loc, &[], None, &[]);

    // Blob reads.
    let blob = format!("/v2/{repo}/blobs/{digest}");
    run.step(
        "head blob",
        "HEAD",
        &blob,
        &[],
        None,
        &["Content-Length", "Docker-Content-Digest"],
    );
    let r = run.step(
        "get blob",
        "GET",
        &blob,
        &[],
        None,
        &["Content-Length", "Docker-Content-Digest"],
    );
    assert_eq!(r.body, whole);
    let r = run.step(
        "get blob range",
        "GET",
        &blob,
        &[("Range", "bytes=10-19")],
        None,
        &["Content-Range", "Content-Length"],
    );
    assert_eq!(r.body, whole[10..20]);
    run.step(
        "get blob range past end",
        "GET",
        &blob,
        &[("Range", "bytes=999999-")],
        None,
        &[],
    );
    let unknown = format!("/v2/{repo}/blobs/{}", sha256(b"nope"));
    run.step("head unknown blob", "HEAD", &unknown, &[], None, &[]);
    run.step("get unknown blob", "GET", &unknown, &[], None, &[]);
    run.step(
        "get blob with malformed digest",
        "GET",
        &format!("/v2/{repo}/blobs/sha256:abc"),
        &[],
        None,
        &[],
    );

    // Monolithic upload and mounts.
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let config_digest = sha256(&config);
    // (Single-request POST uploads are 1.1; Distribution 2.8 answers 202, so the
    // spec-only test covers them.) POST, then PUT with the whole body:
    let r = run.step(
        "start monolithic upload",
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        &["Location"],
    );
    let loc = location(client, &r);
    run.step(
        "monolithic put",
        "PUT",
        &with_query(&loc, &format!("digest={config_digest}")),
        &[octet],
        Some(&config),
        &["Location", "Docker-Content-Digest"],
    );
    run.step(
        "mount from repo",
        "POST",
        &format!("/v2/diff/other/blobs/uploads/?mount={digest}&from={repo}"),
        &[],
        None,
        &["Location", "Docker-Content-Digest"],
    );
    run.step(
        "get mounted blob",
        "GET",
        &format!("/v2/diff/other/blobs/{digest}"),
        &[],
        None,
        &["Docker-Content-Digest"],
    );
    run.step(
        "mount of unknown blob falls back to upload",
        "POST",
        &format!(
            "/v2/diff/other/blobs/uploads/?mount={}&from={repo}",
            sha256(b"nope")
        ),
        &[],
        None,
        &["Location", "Docker-Upload-UUID"],
    );

    // Manifests.
    let manifest = image_manifest(
        &config_digest,
        config.len(),
        &[(digest.clone(), whole.len())],
        None,
        None,
    );
    let manifest_digest = sha256(&manifest);
    let ct = ("Content-Type", OCI_MANIFEST);
    let r = run.step(
        "put manifest by tag",
        "PUT",
        &format!("/v2/{repo}/manifests/1.0.0"),
        &[ct],
        Some(&manifest),
        &["Location", "Docker-Content-Digest"],
    );
    assert_eq!(
        r.header("docker-content-digest"),
        Some(manifest_digest.as_str()),
        "{} {}",
        client.base,
        String::from_utf8_lossy(&r.body)
    );
    run.step(
        "put manifest by digest",
        "PUT",
        &format!("/v2/{repo}/manifests/{manifest_digest}"),
        &[ct],
        Some(&manifest),
        &["Location", "Docker-Content-Digest"],
    );
    let r = run.step(
        "get manifest by tag",
        "GET",
        &format!("/v2/{repo}/manifests/1.0.0"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &["Content-Type", "Docker-Content-Digest", "Content-Length"],
    );
    assert_eq!(r.body, manifest);
    assert_eq!(r.header("content-type"), Some(OCI_MANIFEST));
    run.step(
        "head manifest by digest",
        "HEAD",
        &format!("/v2/{repo}/manifests/{manifest_digest}"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &["Content-Type", "Docker-Content-Digest", "Content-Length"],
    );
    run.step(
        "get unknown tag",
        "GET",
        &format!("/v2/{repo}/manifests/nope"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    run.step(
        "get unknown digest",
        "GET",
        &format!("/v2/{repo}/manifests/{}", sha256(b"nope")),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    let missing = image_manifest(
        &config_digest,
        config.len(),
        &[(sha256(b"missing layer"), 13)],
        None,
        None,
    );
    run.step(
        "put manifest with missing blob",
        "PUT",
        &format!("/v2/{repo}/manifests/missing"),
        &[ct],
        Some(&missing),
        &[],
    );
    run.step(
        "put manifest that is not JSON",
        "PUT",
        &format!("/v2/{repo}/manifests/bad"),
        &[ct],
        Some(b"{not json"),
        &[],
    );
    run.step(
        "put manifest under a wrong digest",
        "PUT",
        &format!("/v2/{repo}/manifests/{}", sha256(b"other")),
        &[ct],
        Some(&manifest),
        &[],
    );

    // An index over the manifest.
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": manifest_digest, "size": manifest.len(),
                        "platform": {"architecture": "amd64", "os": "linux"}}]
    }))
    .unwrap();
    run.step(
        "put index",
        "PUT",
        &format!("/v2/{repo}/manifests/multi"),
        &[("Content-Type", OCI_INDEX)],
        Some(&index),
        &["Location", "Docker-Content-Digest"],
    );
    let r = run.step(
        "get index",
        "GET",
        &format!("/v2/{repo}/manifests/multi"),
        &[("Accept", OCI_INDEX)],
        None,
        &["Content-Type", "Docker-Content-Digest"],
    );
    assert_eq!(r.body, index);

    // Tags and pagination.
    for tag in ["a", "b", "c"] {
        run.step(
            "put more tags",
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[ct],
            Some(&manifest),
            &["Docker-Content-Digest"],
        );
    }
    let r = run.step(
        "list tags",
        "GET",
        &format!("/v2/{repo}/tags/list"),
        &[],
        None,
        &[],
    );
    // Distribution 2.8 does not sort an unpaginated list; the spec wants lexical order,
    // which the spec-only test checks on ours.
    let mut tags: Vec<String> = serde_json::from_value(r.json()["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["1.0.0", "a", "b", "c", "multi"]);
    // (Distribution 2.8 ignores `n` and `last`; the spec-only test covers pagination.)
    run.step(
        "list tags of unknown repo",
        "GET",
        "/v2/diff/nothing-here/tags/list",
        &[],
        None,
        &[],
    );

    // Deletes.
    let other_manifest = image_manifest(&config_digest, config.len(), &[], None, None);
    let other_digest = sha256(&other_manifest);
    run.step(
        "put manifest to delete",
        "PUT",
        &format!("/v2/{repo}/manifests/doomed"),
        &[ct],
        Some(&other_manifest),
        &["Docker-Content-Digest"],
    );
    run.step(
        "delete manifest by digest",
        "DELETE",
        &format!("/v2/{repo}/manifests/{other_digest}"),
        &[],
        None,
        &[],
    );
    run.step(
        "get deleted manifest",
        "GET",
        &format!("/v2/{repo}/manifests/{other_digest}"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    run.step(
        "delete unknown manifest",
        "DELETE",
        &format!("/v2/{repo}/manifests/{}", sha256(b"nope")),
        &[],
        None,
        &[],
    );
    let loose = bytes(9, 100);
    let loose_digest = client.push_blob(repo, &loose);
    run.step(
        "delete unreferenced blob",
        "DELETE",
        &format!("/v2/{repo}/blobs/{loose_digest}"),
        &[],
        None,
        &[],
    );
    run.step(
        "get deleted blob",
        "GET",
        &format!("/v2/{repo}/blobs/{loose_digest}"),
        &[],
        None,
        &[],
    );
    run.seen
}

#[test]
fn same_requests_same_answers_as_distribution() {
    let Some(distribution) = Distribution::start() else {
        if std::env::var_os("STACKPACK_REQUIRE_TOOLS").is_some() {
            panic!("`docker-registry` is required");
        }
        eprintln!("skipping: `docker-registry` is not on PATH");
        return;
    };
    let server = OurRegistry::start();
    let ours = Client::new(server.url(), Some(server.token("admin", None)));
    let theirs = Client::new(distribution.url(), None);
    let a = sequence(&ours);
    let b = sequence(&theirs);
    assert_eq!(a.len(), b.len());
    let mut differences = Vec::new();
    // Where Distribution 2.8 departs from the spec, ours must answer as the spec says.
    let spec_over_distribution = [("patch out of order", 416)];
    for (ours, theirs) in a.iter().zip(&b) {
        if let Some((_, status)) = spec_over_distribution.iter().find(|(s, _)| *s == ours.step) {
            assert_eq!(
                ours.status, *status,
                "{}: the spec wants {status}",
                ours.step
            );
            continue;
        }
        if ours.status != theirs.status {
            differences.push(format!(
                "{}: status {} (Distribution {})",
                ours.step, ours.status, theirs.status
            ));
        }
        if !ours.missing_headers.is_empty() {
            differences.push(format!("{}: we lack {:?}", ours.step, ours.missing_headers));
        }
        if !theirs.missing_headers.is_empty() {
            eprintln!(
                "note: Distribution lacks {:?} on `{}`",
                theirs.missing_headers, theirs.step
            );
        }
        if theirs.error_code.is_some() && ours.error_code != theirs.error_code {
            differences.push(format!(
                "{}: error {:?} (Distribution {:?})",
                ours.step, ours.error_code, theirs.error_code
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "differences:\n{}",
        differences.join("\n")
    );
}

/// OCI distribution 1.1 features Distribution 2.8 lacks, checked against the spec.
#[test]
fn referrers_subject_and_tag_deletion_follow_the_spec() {
    let server = OurRegistry::start();
    let client = Client::new(server.url(), Some(server.token("admin", None)));
    let repo = "spec/app";
    let (subject, subject_digest) = client.push_image(repo, "1.2.0", 1);

    // Two artifacts referring to it, of different artifact types.
    let empty = client.push_blob(repo, b"{}");
    let mut pushed = Vec::new();
    for (i, artifact_type) in [
        "application/vnd.stackpack.signature.v1",
        "application/vnd.example.sbom",
    ]
    .iter()
    .enumerate()
    {
        let layer = client.push_blob(repo, &bytes(100 + i as u64, 50));
        let m = image_manifest(
            &empty,
            2,
            &[(layer, 50)],
            Some(artifact_type),
            Some((&subject_digest, subject.len())),
        );
        let digest = sha256(&m);
        let r = client.push_manifest(repo, &digest, &m, OCI_MANIFEST);
        assert_eq!(r.status, 201);
        assert_eq!(
            r.header("oci-subject"),
            Some(subject_digest.as_str()),
            "OCI-Subject on a push with a subject"
        );
        pushed.push((digest, artifact_type));
    }
    for tag in ["multi", "c", "a", "b"] {
        assert_eq!(
            client
                .push_manifest(repo, tag, &subject, OCI_MANIFEST)
                .status,
            201
        );
    }
    let r = client.req("GET", &format!("/v2/{repo}/tags/list"), &[], None);
    assert_eq!(
        r.json()["tags"],
        serde_json::json!(["1.2.0", "a", "b", "c", "multi"]),
        "lexical order"
    );
    let r = client.req("GET", &format!("/v2/{repo}/tags/list?n=2"), &[], None);
    assert_eq!(r.json()["tags"], serde_json::json!(["1.2.0", "a"]));
    assert_eq!(
        r.header("link"),
        Some(format!("</v2/{repo}/tags/list?n=2&last=a>; rel=\"next\"").as_str())
    );
    let r = client.req(
        "GET",
        &format!("/v2/{repo}/tags/list?n=2&last=a"),
        &[],
        None,
    );
    assert_eq!(r.json()["tags"], serde_json::json!(["b", "c"]));
    assert!(r.header("link").is_some());
    let r = client.req(
        "GET",
        &format!("/v2/{repo}/tags/list?n=2&last=c"),
        &[],
        None,
    );
    assert_eq!(r.json()["tags"], serde_json::json!(["multi"]));
    assert!(r.header("link").is_none());
    let r = client.req("GET", &format!("/v2/{repo}/tags/list?n=0"), &[], None);
    assert_eq!(r.json()["tags"], serde_json::json!([]));

    let r = client.req(
        "GET",
        &format!("/v2/{repo}/referrers/{subject_digest}"),
        &[],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some(OCI_INDEX));
    assert!(r.header("oci-filters-applied").is_none());
    let index = r.json();
    assert_eq!(index["schemaVersion"], 2);
    assert_eq!(index["mediaType"], OCI_INDEX);
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2);
    for m in index["manifests"].as_array().unwrap() {
        assert!(
            m["artifactType"].is_string() && m["size"].is_u64() && m["mediaType"] == OCI_MANIFEST
        );
    }

    let r = client.req(
        "GET",
        &format!("/v2/{repo}/referrers/{subject_digest}?artifactType=application/vnd.example.sbom"),
        &[],
        None,
    );
    assert_eq!(r.header("oci-filters-applied"), Some("artifactType"));
    let manifests = r.json()["manifests"].as_array().unwrap().clone();
    assert_eq!(manifests.len(), 1);
    assert_eq!(manifests[0]["digest"], pushed[1].0.as_str());

    // An unknown subject gives an empty index, not a 404.
    let r = client.req(
        "GET",
        &format!("/v2/{repo}/referrers/{}", sha256(b"nothing")),
        &[],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["manifests"], serde_json::json!([]));
    let r = client.req("GET", &format!("/v2/{repo}/referrers/sha256:zz"), &[], None);
    assert_eq!((r.status, r.error_code().as_str()), (400, "DIGEST_INVALID"));

    // A single-request POST upload (1.1).
    let data = bytes(77, 3000);
    let digest = sha256(&data);
    let r = client.req(
        "POST",
        &format!("/v2/{repo}/blobs/uploads/?digest={digest}"),
        &[("Content-Type", "application/octet-stream")],
        Some(&data),
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    assert!(r.header("location").unwrap().ends_with(&digest));
    assert_eq!(
        client
            .req("GET", &format!("/v2/{repo}/blobs/{digest}"), &[], None)
            .body,
        data
    );

    // Deleting a tag (1.1) leaves the manifest.
    client.push_manifest(repo, "moving", &subject, OCI_MANIFEST);
    let r = client.req("DELETE", &format!("/v2/{repo}/manifests/moving"), &[], None);
    assert_eq!(r.status, 202);
    assert_eq!(
        client
            .req("GET", &format!("/v2/{repo}/manifests/moving"), &[], None)
            .status,
        404
    );
    assert_eq!(
        client
            .req(
                "GET",
                &format!("/v2/{repo}/manifests/{subject_digest}"),
                &[],
                None
            )
            .status,
        200
    );
}
