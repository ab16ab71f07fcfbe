//! The same raw HTTP requests against our registry and against CNCF Distribution
//! (`docker-registry`, 2.8), one scenario per area of the distribution spec (chunked
//! uploads, blob reads, monolithic uploads and mounts, manifests, indexes and tags,
//! deletes). Every step must answer with the same status code, carry the headers the
//! spec requires, and (for errors) the same spec error code. Features Distribution
//! 2.8 lacks (referrers, tag deletion, `OCI-Subject`, tag paging) are then checked
//! against the spec on ours alone.

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

const REPO: &str = "diff/app";
const OCTET: (&str, &str) = ("Content-Type", "application/octet-stream");
const MANIFEST_TYPE: (&str, &str) = ("Content-Type", OCI_MANIFEST);

/// The blob the scenarios upload and read: two chunks of 1000 bytes.
fn chunks() -> (Vec<u8>, Vec<u8>) {
    (bytes(1, 1000), bytes(2, 1000))
}

fn whole_blob() -> Vec<u8> {
    let (chunk1, chunk2) = chunks();
    [chunk1, chunk2].concat()
}

fn image_config() -> Vec<u8> {
    br#"{"architecture":"amd64","os":"linux"}"#.to_vec()
}

/// An image manifest over [`image_config`] and [`whole_blob`], with both blobs
/// pushed beforehand (a precondition, not a compared step).
fn pushed_image_manifest(run: &Run) -> Vec<u8> {
    let whole = whole_blob();
    let config = image_config();
    let digest = run.client.push_blob(REPO, &whole);
    let config_digest = run.client.push_blob(REPO, &config);
    image_manifest(
        &config_digest,
        config.len(),
        &[(digest, whole.len())],
        None,
        None,
    )
}

/// Runs `scenario` against our registry and against Distribution, and fails on any
/// step whose status, required headers or spec error code differ.
fn answers_as_distribution(scenario: fn(&mut Run)) {
    // Skips, or fails where `STACKPACK_REQUIRE_TOOLS` is set, without `docker-registry`.
    let Some(distribution) = Distribution::start() else {
        return;
    };
    let registry = OurRegistry::start();
    let ours = Client::new(registry.url(), Some(registry.token("admin", None)));
    let theirs = Client::new(distribution.url(), None);
    let seen = |client: &Client| {
        let mut run = Run {
            client,
            seen: Vec::new(),
        };
        scenario(&mut run);
        run.seen
    };
    let (a, b) = (seen(&ours), seen(&theirs));
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

/// Opens an upload session; returns its `Location`.
fn start_upload(run: &mut Run, step: &'static str, required: &[&'static str]) -> String {
    let r = run.step(
        step,
        "POST",
        &format!("/v2/{REPO}/blobs/uploads/"),
        &[],
        None,
        required,
    );
    location(run.client, &r)
}

/// A chunked upload, then the ways one goes wrong: a wrong or malformed digest at
/// the end, a cancelled session, a chunk out of order.
fn chunked_uploads(run: &mut Run) {
    let (chunk1, chunk2) = chunks();
    let whole = whole_blob();
    let digest = sha256(&whole);
    run.step(
        "version check",
        "GET",
        "/v2/",
        &[],
        None,
        &["Docker-Distribution-API-Version"],
    );
    let loc = start_upload(
        run,
        "start upload",
        &["Location", "Docker-Upload-UUID", "Range"],
    );
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
        &[OCTET, ("Content-Range", "0-999")],
        Some(&chunk1),
        &["Location", "Range", "Docker-Upload-UUID"],
    );
    assert_eq!(r.header("range"), Some("0-999"));
    let loc = location(run.client, &r);
    let r = run.step(
        "patch chunk 2",
        "PATCH",
        &loc,
        &[OCTET, ("Content-Range", "1000-1999")],
        Some(&chunk2),
        &["Location", "Range"],
    );
    assert_eq!(
        r.header("range"),
        Some("0-1999"),
        "{} {:?} {}",
        run.client.base,
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    let loc = location(run.client, &r);
    let r = run.step(
        "finish upload",
        "PUT",
        &with_query(&loc, &format!("digest={digest}")),
        &[OCTET],
        None,
        &["Location", "Docker-Content-Digest"],
    );
    assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    run.step("status after finish", "GET", &loc, &[], None, &[]);

    let loc = start_upload(run, "start upload 2", &["Location"]);
    let wrong = sha256(b"something else");
    run.step(
        "finish with wrong digest",
        "PUT",
        &with_query(&loc, &format!("digest={wrong}")),
        &[OCTET],
        Some(&whole),
        &[],
    );
    let loc = start_upload(run, "start upload 3", &["Location"]);
    run.step(
        "finish with malformed digest",
        "PUT",
        &with_query(&loc, "digest=sha256:xyz"),
        &[OCTET],
        Some(&whole),
        &[],
    );
    let loc = start_upload(run, "start upload 4", &["Location"]);
    run.step("cancel upload", "DELETE", &loc, &[], None, &[]);
    // Distribution drops a session after an out-of-order chunk, so this one is alone.
    let loc5 = start_upload(run, "start upload 5", &["Location"]);
    run.step(
        "patch out of order",
        "PATCH",
        &loc5,
        &[OCTET, ("Content-Range", "5000-5999")],
        Some(&chunk2),
        &[],
    );
    run.step("status after cancel", "GET", &loc, &[], None, &[]);
}

/// HEAD and GET of a blob, ranges inside and past its end, unknown and malformed
/// digests.
fn blob_reads(run: &mut Run) {
    let whole = whole_blob();
    let digest = run.client.push_blob(REPO, &whole);
    let blob = format!("/v2/{REPO}/blobs/{digest}");
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
    let unknown = format!("/v2/{REPO}/blobs/{}", sha256(b"nope"));
    run.step("head unknown blob", "HEAD", &unknown, &[], None, &[]);
    run.step("get unknown blob", "GET", &unknown, &[], None, &[]);
    run.step(
        "get blob with malformed digest",
        "GET",
        &format!("/v2/{REPO}/blobs/sha256:abc"),
        &[],
        None,
        &[],
    );
}

/// A monolithic upload (POST, then PUT with the whole body), a cross-repository
/// mount, and a mount of an unknown blob falling back to an upload session.
fn monolithic_uploads_and_mounts(run: &mut Run) {
    let digest = run.client.push_blob(REPO, &whole_blob());
    let config = image_config();
    let config_digest = sha256(&config);
    // (Single-request POST uploads are 1.1; Distribution 2.8 answers 202, so the
    // spec-only test covers them.)
    let loc = start_upload(run, "start monolithic upload", &["Location"]);
    run.step(
        "monolithic put",
        "PUT",
        &with_query(&loc, &format!("digest={config_digest}")),
        &[OCTET],
        Some(&config),
        &["Location", "Docker-Content-Digest"],
    );
    run.step(
        "mount from repo",
        "POST",
        &format!("/v2/diff/other/blobs/uploads/?mount={digest}&from={REPO}"),
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
            "/v2/diff/other/blobs/uploads/?mount={}&from={REPO}",
            sha256(b"nope")
        ),
        &[],
        None,
        &["Location", "Docker-Upload-UUID"],
    );
}

/// Manifests put by tag and by digest and read back; unknown references; a manifest
/// naming a missing blob, one that is not JSON, one under a digest not its own.
fn manifests(run: &mut Run) {
    let manifest = pushed_image_manifest(run);
    let manifest_digest = sha256(&manifest);
    let r = run.step(
        "put manifest by tag",
        "PUT",
        &format!("/v2/{REPO}/manifests/1.0.0"),
        &[MANIFEST_TYPE],
        Some(&manifest),
        &["Location", "Docker-Content-Digest"],
    );
    assert_eq!(
        r.header("docker-content-digest"),
        Some(manifest_digest.as_str()),
        "{} {}",
        run.client.base,
        String::from_utf8_lossy(&r.body)
    );
    run.step(
        "put manifest by digest",
        "PUT",
        &format!("/v2/{REPO}/manifests/{manifest_digest}"),
        &[MANIFEST_TYPE],
        Some(&manifest),
        &["Location", "Docker-Content-Digest"],
    );
    let r = run.step(
        "get manifest by tag",
        "GET",
        &format!("/v2/{REPO}/manifests/1.0.0"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &["Content-Type", "Docker-Content-Digest", "Content-Length"],
    );
    assert_eq!(r.body, manifest);
    assert_eq!(r.header("content-type"), Some(OCI_MANIFEST));
    run.step(
        "head manifest by digest",
        "HEAD",
        &format!("/v2/{REPO}/manifests/{manifest_digest}"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &["Content-Type", "Docker-Content-Digest", "Content-Length"],
    );
    run.step(
        "get unknown tag",
        "GET",
        &format!("/v2/{REPO}/manifests/nope"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    run.step(
        "get unknown digest",
        "GET",
        &format!("/v2/{REPO}/manifests/{}", sha256(b"nope")),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    let config = image_config();
    let missing = image_manifest(
        &sha256(&config),
        config.len(),
        &[(sha256(b"missing layer"), 13)],
        None,
        None,
    );
    run.step(
        "put manifest with missing blob",
        "PUT",
        &format!("/v2/{REPO}/manifests/missing"),
        &[MANIFEST_TYPE],
        Some(&missing),
        &[],
    );
    run.step(
        "put manifest that is not JSON",
        "PUT",
        &format!("/v2/{REPO}/manifests/bad"),
        &[MANIFEST_TYPE],
        Some(b"{not json"),
        &[],
    );
    run.step(
        "put manifest under a wrong digest",
        "PUT",
        &format!("/v2/{REPO}/manifests/{}", sha256(b"other")),
        &[MANIFEST_TYPE],
        Some(&manifest),
        &[],
    );
}

/// An index over a manifest, more tags, and the tag list of a repository and of an
/// unknown one.
fn indexes_and_tag_lists(run: &mut Run) {
    let manifest = pushed_image_manifest(run);
    let manifest_digest = sha256(&manifest);
    let r = run
        .client
        .push_manifest(REPO, "1.0.0", &manifest, OCI_MANIFEST);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": manifest_digest, "size": manifest.len(),
                        "platform": {"architecture": "amd64", "os": "linux"}}]
    }))
    .unwrap();
    run.step(
        "put index",
        "PUT",
        &format!("/v2/{REPO}/manifests/multi"),
        &[("Content-Type", OCI_INDEX)],
        Some(&index),
        &["Location", "Docker-Content-Digest"],
    );
    let r = run.step(
        "get index",
        "GET",
        &format!("/v2/{REPO}/manifests/multi"),
        &[("Accept", OCI_INDEX)],
        None,
        &["Content-Type", "Docker-Content-Digest"],
    );
    assert_eq!(r.body, index);

    for tag in ["a", "b", "c"] {
        run.step(
            "put more tags",
            "PUT",
            &format!("/v2/{REPO}/manifests/{tag}"),
            &[MANIFEST_TYPE],
            Some(&manifest),
            &["Docker-Content-Digest"],
        );
    }
    let r = run.step(
        "list tags",
        "GET",
        &format!("/v2/{REPO}/tags/list"),
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
}

/// Deleting a manifest by digest, an unknown manifest, and a blob no manifest refers
/// to; reading each after.
fn deletes(run: &mut Run) {
    let config = image_config();
    let config_digest = run.client.push_blob(REPO, &config);
    let doomed = image_manifest(&config_digest, config.len(), &[], None, None);
    let doomed_digest = sha256(&doomed);
    run.step(
        "put manifest to delete",
        "PUT",
        &format!("/v2/{REPO}/manifests/doomed"),
        &[MANIFEST_TYPE],
        Some(&doomed),
        &["Docker-Content-Digest"],
    );
    run.step(
        "delete manifest by digest",
        "DELETE",
        &format!("/v2/{REPO}/manifests/{doomed_digest}"),
        &[],
        None,
        &[],
    );
    run.step(
        "get deleted manifest",
        "GET",
        &format!("/v2/{REPO}/manifests/{doomed_digest}"),
        &[("Accept", OCI_MANIFEST)],
        None,
        &[],
    );
    run.step(
        "delete unknown manifest",
        "DELETE",
        &format!("/v2/{REPO}/manifests/{}", sha256(b"nope")),
        &[],
        None,
        &[],
    );
    let loose = bytes(9, 100);
    let loose_digest = run.client.push_blob(REPO, &loose);
    run.step(
        "delete unreferenced blob",
        "DELETE",
        &format!("/v2/{REPO}/blobs/{loose_digest}"),
        &[],
        None,
        &[],
    );
    run.step(
        "get deleted blob",
        "GET",
        &format!("/v2/{REPO}/blobs/{loose_digest}"),
        &[],
        None,
        &[],
    );
}

#[test]
fn chunked_uploads_answer_as_distribution_does() {
    answers_as_distribution(chunked_uploads);
}

#[test]
fn blob_reads_answer_as_distribution_does() {
    answers_as_distribution(blob_reads);
}

#[test]
fn monolithic_uploads_and_mounts_answer_as_distribution_does() {
    answers_as_distribution(monolithic_uploads_and_mounts);
}

#[test]
fn manifests_answer_as_distribution_does() {
    answers_as_distribution(manifests);
}

#[test]
fn indexes_and_tag_lists_answer_as_distribution_does() {
    answers_as_distribution(indexes_and_tag_lists);
}

#[test]
fn deletes_answer_as_distribution_does() {
    answers_as_distribution(deletes);
}

/// Our registry with an admin client, for the OCI distribution 1.1 features
/// Distribution 2.8 lacks, checked against the spec alone; and an image pushed
/// (tag `1.2.0`) to refer to. Returns the image manifest and its digest too.
fn spec_registry() -> (OurRegistry, Client, Vec<u8>, String) {
    let registry = OurRegistry::start();
    let client = Client::new(registry.url(), Some(registry.token("admin", None)));
    let (subject, subject_digest) = client.push_image(SPEC_REPO, "1.2.0", 1);
    (registry, client, subject, subject_digest)
}

const SPEC_REPO: &str = "spec/app";

#[test]
fn tag_lists_are_in_lexical_order_and_paged_with_link() {
    let (_registry, client, subject, _) = spec_registry();
    let repo = SPEC_REPO;
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
}

#[test]
fn referrers_list_the_artifacts_of_a_subject_and_filter_by_type() {
    let (_registry, client, subject, subject_digest) = spec_registry();
    let repo = SPEC_REPO;
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
}

#[test]
fn referrers_of_an_unknown_subject_are_an_empty_index_not_a_404() {
    let (_registry, client, _, _) = spec_registry();
    let repo = SPEC_REPO;
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
}

#[test]
fn a_single_request_post_upload_stores_the_blob() {
    let (_registry, client, _, _) = spec_registry();
    let repo = SPEC_REPO;
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
}

#[test]
fn deleting_a_tag_leaves_the_manifest() {
    let (_registry, client, subject, subject_digest) = spec_registry();
    let repo = SPEC_REPO;
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
