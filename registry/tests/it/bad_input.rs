//! Bad input gets the right error code, never a panic and never a partial write:
//! malformed digests, names, references, manifests, JSON, ranges, oversize bodies,
//! unknown or expired upload sessions.

use crate::common;

use common::*;

fn expect(r: &Resp, status: u16, code: &str, what: &str) {
    assert_eq!(
        r.status,
        status,
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    if !code.is_empty() {
        assert_eq!(r.error_code(), code, "{what}");
        assert_eq!(r.header("content-type"), Some("application/json"), "{what}");
    }
}

#[test]
fn malformed_digests_names_and_references() {
    let server = OurRegistry::start();
    let c = Client::new(server.url(), Some(server.token("admin", None)));
    c.push_image("ok/app", "1.0.0", 1);
    for digest in [
        "sha256:xyz",
        "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        "sha256:e3b0c442",
        "md5:d41d8cd98f00b204e9800998ecf8427e",
        "sha256:..%2F..%2Fetc%2Fpasswd",
        "nodigest",
    ] {
        expect(
            &c.req("GET", &format!("/v2/ok/app/blobs/{digest}"), &[], None),
            400,
            "DIGEST_INVALID",
            digest,
        );
        expect(
            &c.req("GET", &format!("/v2/ok/app/referrers/{digest}"), &[], None),
            400,
            "DIGEST_INVALID",
            digest,
        );
        expect(
            &c.req(
                "POST",
                &format!("/v2/ok/app/blobs/uploads/?digest={digest}"),
                &[],
                Some(b"x"),
            ),
            400,
            "DIGEST_INVALID",
            digest,
        );
    }
    for name in [
        "UPPER/app",
        "a..b",
        "-a/b",
        "a/b-",
        "a//b",
        "a/_b",
        &"x".repeat(256),
    ] {
        expect(
            &c.req("GET", &format!("/v2/{name}/tags/list"), &[], None),
            400,
            "NAME_INVALID",
            name,
        );
        expect(
            &c.req("POST", &format!("/v2/{name}/blobs/uploads/"), &[], None),
            400,
            "NAME_INVALID",
            name,
        );
    }
    for reference in ["-tag", ".tag", &"t".repeat(129), "sha256:nothex"] {
        let r = c.req(
            "GET",
            &format!("/v2/ok/app/manifests/{reference}"),
            &[],
            None,
        );
        assert_eq!(r.status, 400, "{reference}");
    }
    expect(
        &c.req("GET", "/v2/ok/app/tags/list?n=lots", &[], None),
        400,
        "BAD_REQUEST",
        "n",
    );
    expect(
        &c.req("GET", "/v2/ok/app/nonsense", &[], None),
        404,
        "NOT_FOUND",
        "unknown route",
    );
    expect(
        &c.req("POST", "/v2/ok/app/manifests/1.0.0", &[], None),
        405,
        "UNSUPPORTED",
        "method",
    );
}

#[test]
fn malformed_manifests_are_refused_and_nothing_is_stored() {
    let server = OurRegistry::start();
    let c = Client::new(server.url(), Some(server.token("admin", None)));
    let config = c.push_blob("m/app", b"{}");
    let layer_data = bytes(1, 500);
    let layer = c.push_blob("m/app", &layer_data);
    let good = image_manifest(&config, 2, &[(layer.clone(), 500)], None, None);
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("not JSON", b"{not json".to_vec(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("empty", Vec::new(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("array", b"[]".to_vec(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("schema 1", br#"{"schemaVersion":1,"config":{}}"#.to_vec(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("no config", br#"{"schemaVersion":2,"layers":[]}"#.to_vec(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("bad digest in config", br#"{"schemaVersion":2,"config":{"mediaType":"a","digest":"sha256:zz","size":2},"layers":[]}"#.to_vec(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("negative size", format!(r#"{{"schemaVersion":2,"config":{{"mediaType":"a","digest":"{config}","size":-2}},"layers":[]}}"#).into_bytes(), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("type mismatch", good.clone(), OCI_INDEX, "MANIFEST_INVALID"),
        ("unknown type", good.clone(), "application/x-whatever", "MANIFEST_INVALID"),
        ("missing blob", image_manifest(&config, 2, &[(sha256(b"absent"), 6)], None, None), OCI_MANIFEST, "MANIFEST_BLOB_UNKNOWN"),
        ("wrong blob size", image_manifest(&config, 2, &[(layer.clone(), 501)], None, None), OCI_MANIFEST, "MANIFEST_INVALID"),
        ("index of unknown manifest", serde_json::to_vec(&serde_json::json!({"schemaVersion":2,"mediaType":OCI_INDEX,"manifests":[{"mediaType":OCI_MANIFEST,"digest":sha256(b"nope"),"size":4}]})).unwrap(), OCI_INDEX, "MANIFEST_BLOB_UNKNOWN"),
    ];
    for (what, body, content_type, code) in &cases {
        let r = c.push_manifest("m/app", "t", body, content_type);
        expect(&r, 400, code, what);
    }
    expect(
        &c.push_manifest("m/app", &sha256(b"other"), &good, OCI_MANIFEST),
        400,
        "DIGEST_INVALID",
        "digest reference",
    );

    // Oversize: over 4 MiB is refused before it is stored.
    let mut huge = good.clone();
    huge.pop();
    huge.extend_from_slice(
        format!(
            ",\"annotations\":{{\"pad\":\"{}\"}}}}",
            "x".repeat(4 * 1024 * 1024)
        )
        .as_bytes(),
    );
    expect(
        &c.push_manifest("m/app", "huge", &huge, OCI_MANIFEST),
        413,
        "SIZE_INVALID",
        "oversize manifest",
    );

    // None of it left a trace.
    let tags = c.req("GET", "/v2/m/app/tags/list", &[], None);
    assert_eq!(tags.json()["tags"], serde_json::json!([]));
    assert_eq!(
        c.push_manifest("m/app", "t", &good, OCI_MANIFEST).status,
        201
    );
}

/// A registry with small limits (blobs up to 100 kB, upload sessions living one
/// second) and an admin client.
fn limited_registry() -> (OurRegistry, Client) {
    let registry =
        OurRegistry::start_with(&["--max-blob-bytes", "100000", "--upload-lifetime-secs", "1"]);
    let client = Client::new(registry.url(), Some(registry.token("admin", None)));
    (registry, client)
}

#[test]
fn a_range_the_blob_cannot_serve_is_refused_with_its_size() {
    let (_registry, c) = limited_registry();
    let data = bytes(3, 1000);
    let digest = c.push_blob("r/app", &data);
    let blob = format!("/v2/r/app/blobs/{digest}");
    for range in [
        "bytes=5-1",
        "bytes=abc",
        "bytes=1000-",
        "bytes=0-1,5-6",
        "lines=1-2",
        "bytes=-0",
    ] {
        let r = c.req("GET", &blob, &[("Range", range)], None);
        expect(&r, 416, "RANGE_INVALID", range);
        assert_eq!(r.header("content-range"), Some("bytes */1000"), "{range}");
    }
    let r = c.req("GET", &blob, &[("Range", "bytes=-10")], None);
    assert_eq!((r.status, r.body.as_slice()), (206, &data[990..]));
    assert_eq!(r.header("content-range"), Some("bytes 990-999/1000"));
    assert_eq!(
        c.req("GET", "/healthz", &[], None).status,
        200,
        "still alive"
    );
}

#[test]
fn a_blob_over_the_size_limit_is_cut_off_and_not_stored() {
    let (_registry, c) = limited_registry();
    let big = bytes(4, 150_000);
    let r = c.req(
        "POST",
        &format!("/v2/r/app/blobs/uploads/?digest={}", sha256(&big)),
        &[],
        Some(&big),
    );
    expect(&r, 413, "SIZE_INVALID", "oversize blob");
    assert_eq!(
        c.req(
            "HEAD",
            &format!("/v2/r/app/blobs/{}", sha256(&big)),
            &[],
            None
        )
        .status,
        404
    );
}

#[test]
fn upload_sessions_are_refused_when_unknown_elsewhere_or_given_bad_ranges_or_digests() {
    let (_registry, c) = limited_registry();
    let r = c.req("POST", "/v2/r/app/blobs/uploads/", &[], None);
    let location = absolute(&c.base, r.header("location").unwrap());
    let id = location.rsplit('/').next().unwrap().to_string();
    expect(
        &c.req(
            "GET",
            "/v2/r/app/blobs/uploads/00000000000000000000000000000000",
            &[],
            None,
        ),
        404,
        "BLOB_UPLOAD_UNKNOWN",
        "unknown",
    );
    expect(
        &c.req("GET", "/v2/r/app/blobs/uploads/../../x", &[], None),
        404,
        "",
        "traversal",
    );
    expect(
        &c.req("GET", &format!("/v2/r/other/blobs/uploads/{id}"), &[], None),
        404,
        "BLOB_UPLOAD_UNKNOWN",
        "other repo",
    );
    expect(
        &c.req("PUT", &location, &[], None),
        400,
        "DIGEST_INVALID",
        "no digest",
    );
    expect(
        &c.req(
            "PATCH",
            &location,
            &[("Content-Range", "junk")],
            Some(b"abc"),
        ),
        416,
        "RANGE_INVALID",
        "junk range",
    );
    expect(
        &c.req(
            "PATCH",
            &location,
            &[("Content-Range", "0-9")],
            Some(b"abc"),
        ),
        416,
        "RANGE_INVALID",
        "length mismatch",
    );
    let r = c.req(
        "PATCH",
        &location,
        &[("Content-Range", "0-2")],
        Some(b"abc"),
    );
    assert_eq!(r.status, 202);
    expect(
        &c.req(
            "PUT",
            &format!("{location}?digest={}", sha256(b"abcd")),
            &[],
            None,
        ),
        400,
        "DIGEST_INVALID",
        "wrong digest",
    );
    expect(
        &c.req("GET", &location, &[], None),
        404,
        "BLOB_UPLOAD_UNKNOWN",
        "a failed finish ends the session",
    );
    assert_eq!(
        c.req(
            "HEAD",
            &format!("/v2/r/app/blobs/{}", sha256(b"abc")),
            &[],
            None
        )
        .status,
        404
    );
}

#[test]
fn an_upload_session_expires_after_its_lifetime() {
    let (_registry, c) = limited_registry();
    let r = c.req("POST", "/v2/r/app/blobs/uploads/", &[], None);
    let location = absolute(&c.base, r.header("location").unwrap());
    std::thread::sleep(std::time::Duration::from_millis(2100));
    expect(
        &c.req("PATCH", &location, &[], Some(b"late")),
        404,
        "BLOB_UPLOAD_UNKNOWN",
        "expired",
    );
}

#[test]
fn ledger_bodies_that_are_bad_json_invalid_or_oversize_are_refused() {
    let (_registry, c) = limited_registry();
    expect(
        &c.req("POST", "/api/v1/customers", &[], Some(b"{\"id\":")),
        400,
        "BAD_REQUEST",
        "bad JSON",
    );
    expect(
        &c.req(
            "POST",
            "/api/v1/customers",
            &[],
            Some(br#"{"id":"Not Valid"}"#),
        ),
        400,
        "BAD_REQUEST",
        "bad id",
    );
    expect(
        &c.req(
            "POST",
            "/api/v1/receipts",
            &[],
            Some(&vec![b' '; 2 * 1024 * 1024]),
        ),
        413,
        "SIZE_INVALID",
        "oversize receipt",
    );
    expect(
        &c.req("GET", "/api/v1/deployments?limit=-1", &[], None),
        400,
        "BAD_REQUEST",
        "limit",
    );
    assert_eq!(
        c.req("GET", "/healthz", &[], None).status,
        200,
        "still alive"
    );
}

#[test]
fn a_mistyped_flag_is_answered_with_the_similar_one() {
    // `--ulr`: two letters swapped, which clap alone finds nothing similar to.
    for (args, near) in [
        (&["fleet", "--ulr", "http://127.0.0.1:1"][..], "--url"),
        (&["gc", "--dta", "x"][..], "--data"),
        (
            &["fleet", "--url", "http://127.0.0.1:1", "--tkoen", "t"][..],
            "--token",
        ),
        (
            &["fleet", "--custmer", "globex", "--data", "x"][..],
            "--customer",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("tip: a similar argument exists: '{near}'")),
            "{args:?}: {stderr}"
        );
    }
}
