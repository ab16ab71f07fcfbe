//! Every endpoint × every caller: no token, a wrong token, each role, and a customer
//! token for another customer. Each cell names the status the design asks for.

use crate::common;

use base64::Engine as _;
use common::*;
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

const CALLERS: [&str; 8] = [
    "none",
    "wrong",
    "publisher",
    "reader",
    "support",
    "customer",
    "other-customer",
    "admin",
];

fn receipt(id: &str, customer: &str) -> Vec<u8> {
    ReceiptBuilder::new(customer, "data-plane", "1.0.0")
        .id(id)
        .bundle_digest(stackpack_schema::Digest::of(b"bundle"))
        .plan(0, 0, 0)
        .started_at("2026-01-01T00:00:00Z")
        .finished_at("2026-01-01T00:01:00Z")
        .sign(&PrivateKey::from_secret_bytes([9; 32]))
        .to_bytes()
}

/// One row of the matrix: name, method, path, body, and the status expected for each
/// caller, in [`CALLERS`] order.
type Row = (
    &'static str,
    &'static str,
    String,
    Option<Vec<u8>>,
    [u16; 8],
);

const REPO: &str = "acme/stacks/app";
const PULL: [u16; 8] = [401, 401, 200, 200, 403, 200, 200, 200];
const LEDGER: [u16; 8] = [401, 401, 403, 403, 200, 403, 403, 200];
/// Support, the customer itself and admins; not another customer.
const OWN_CUSTOMER: [u16; 8] = [401, 401, 403, 403, 200, 200, 403, 200];
const ADMIN_ONLY: [u16; 8] = [401, 401, 403, 403, 403, 403, 403, 201];

/// A registry with a token for every caller and an image to ask about: `1.0.0`, and
/// one `del-<caller>` tag per caller for each to try to delete.
struct Matrix {
    registry: OurRegistry,
    tokens: std::collections::HashMap<&'static str, String>,
    manifest: Vec<u8>,
    digest: String,
}

impl Matrix {
    fn new() -> Matrix {
        let registry = OurRegistry::start();
        let mut tokens = std::collections::HashMap::new();
        tokens.insert(
            "wrong",
            "spr_this-token-was-never-issued-0000000000000000".to_string(),
        );
        for role in ["publisher", "reader", "support", "admin"] {
            tokens.insert(role, registry.token(role, None));
        }
        tokens.insert("customer", registry.token("customer", Some("globex")));
        tokens.insert(
            "other-customer",
            registry.token("customer", Some("initech")),
        );
        let setup = Client::new(registry.url(), tokens.get("admin").cloned());
        let (manifest, digest) = setup.push_image(REPO, "1.0.0", 1);
        // Release `data-plane` exists: its fleet is asked below (an unknown release
        // is a 404 whoever asks).
        let release =
            stackpack_test_support::release_index::ReleaseBuilder::new("data-plane", "1.0.0")
                .stack("network", "1.0.0", &[])
                .build();
        for blob in &release.blobs {
            setup.push_blob("acme/releases/data-plane", blob);
        }
        for m in release.manifests.iter().chain([&release.index]) {
            let reference = if std::ptr::eq(m, &release.index) {
                "1.0.0".to_string()
            } else {
                m.digest.to_string()
            };
            let r = setup.push_manifest(
                "acme/releases/data-plane",
                &reference,
                &m.bytes,
                m.media_type,
            );
            assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        }
        for caller in CALLERS {
            assert_eq!(
                setup
                    .push_manifest(REPO, &format!("del-{caller}"), &manifest, OCI_MANIFEST)
                    .status,
                201
            );
        }
        Matrix {
            registry,
            tokens,
            manifest,
            digest,
        }
    }

    /// Asks every row as every caller, in order; fails listing every answer that is
    /// not the designed one, every 401 without the token challenge and every refusal
    /// without its spec error code.
    fn check(&self, rows: &[Row]) {
        let mut wrong = Vec::new();
        for (name, method, path, body, expected) in rows {
            for (caller, want) in CALLERS.iter().zip(expected) {
                let client = Client::new(self.registry.url(), self.tokens.get(caller).cloned());
                let path = if *name == "delete tag" {
                    format!("{path}{caller}")
                } else {
                    path.clone()
                };
                let headers: &[(&str, &str)] = if *name == "put manifest" {
                    &[("Content-Type", OCI_MANIFEST)]
                } else {
                    &[]
                };
                let r = client.req(method, &path, headers, body.as_deref());
                if r.status != *want {
                    wrong.push(format!("{name} as {caller}: {} (want {want})", r.status));
                }
                if r.status == 401 && path.starts_with("/v2") {
                    let challenge = r.header("www-authenticate").unwrap_or_default();
                    if !challenge.starts_with("Bearer realm=\"http://")
                        || !challenge.contains("/v2/token\"")
                    {
                        wrong.push(format!("{name} as {caller}: challenge `{challenge}`"));
                    }
                }
                if r.status >= 400 && method != &"HEAD" && r.status != 404 {
                    let code = serde_json::from_slice::<serde_json::Value>(&r.body)
                        .ok()
                        .and_then(|v| v["errors"][0]["code"].as_str().map(str::to_string));
                    let expected_code = match r.status {
                        401 => "UNAUTHORIZED",
                        403 => "DENIED",
                        _ => "",
                    };
                    if !expected_code.is_empty() && code.as_deref() != Some(expected_code) {
                        wrong.push(format!("{name} as {caller}: code {code:?}"));
                    }
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "unexpected answers:\n{}",
            wrong.join("\n")
        );
    }
}

#[test]
fn pulls_answer_every_role_as_designed() {
    let matrix = Matrix::new();
    let digest = &matrix.digest;
    let blob = sha256(br#"{"seed":1}"#);
    matrix.check(&[
        (
            "version check",
            "GET",
            "/v2/".into(),
            None,
            [401, 401, 200, 200, 200, 200, 200, 200],
        ),
        (
            "token endpoint",
            "GET",
            "/v2/token?service=stackpack-registry".into(),
            None,
            [401, 401, 200, 200, 200, 200, 200, 200],
        ),
        ("catalog", "GET", "/v2/_catalog".into(), None, PULL),
        (
            "get manifest",
            "GET",
            format!("/v2/{REPO}/manifests/1.0.0"),
            None,
            PULL,
        ),
        (
            "head manifest",
            "HEAD",
            format!("/v2/{REPO}/manifests/{digest}"),
            None,
            PULL,
        ),
        (
            "get blob",
            "GET",
            format!("/v2/{REPO}/blobs/{blob}"),
            None,
            PULL,
        ),
        (
            "head blob",
            "HEAD",
            format!("/v2/{REPO}/blobs/{blob}"),
            None,
            PULL,
        ),
        ("tags", "GET", format!("/v2/{REPO}/tags/list"), None, PULL),
        (
            "referrers",
            "GET",
            format!("/v2/{REPO}/referrers/{digest}"),
            None,
            PULL,
        ),
    ]);
}

#[test]
fn pushes_and_deletes_answer_every_role_as_designed() {
    let matrix = Matrix::new();
    matrix.check(&[
        (
            "start upload",
            "POST",
            format!("/v2/{REPO}/blobs/uploads/"),
            None,
            [401, 401, 202, 403, 403, 403, 403, 202],
        ),
        (
            "put manifest",
            "PUT",
            format!("/v2/{REPO}/manifests/latest"),
            Some(matrix.manifest.clone()),
            [401, 401, 201, 403, 403, 403, 403, 201],
        ),
        (
            "delete tag",
            "DELETE",
            format!("/v2/{REPO}/manifests/del-"),
            None,
            [401, 401, 202, 403, 403, 403, 403, 202],
        ),
        (
            "delete stable tag",
            "DELETE",
            format!("/v2/{REPO}/manifests/1.0.0"),
            None,
            [401, 401, 403, 403, 403, 403, 403, 202],
        ),
    ]);
}

#[test]
fn ledger_reads_answer_every_role_as_designed() {
    let matrix = Matrix::new();
    matrix.check(&[
        ("releases", "GET", "/api/v1/releases".into(), None, LEDGER),
        ("stacks", "GET", "/api/v1/stacks".into(), None, LEDGER),
        ("customers", "GET", "/api/v1/customers".into(), None, LEDGER),
        (
            "deployments",
            "GET",
            "/api/v1/deployments".into(),
            None,
            LEDGER,
        ),
        (
            "own deployments",
            "GET",
            "/api/v1/deployments?customer=globex".into(),
            None,
            OWN_CUSTOMER,
        ),
        (
            "customer",
            "GET",
            "/api/v1/customers/globex".into(),
            None,
            OWN_CUSTOMER,
        ),
        ("fleet", "GET", "/api/v1/fleet".into(), None, LEDGER),
        (
            "release versions",
            "GET",
            "/api/v1/releases/data-plane".into(),
            None,
            LEDGER,
        ),
        (
            "release fleet",
            "GET",
            "/api/v1/releases/data-plane/fleet".into(),
            None,
            LEDGER,
        ),
        (
            "own release fleet",
            "GET",
            "/api/v1/releases/data-plane/fleet?customer=globex".into(),
            None,
            OWN_CUSTOMER,
        ),
        ("adoption", "GET", "/api/v1/adoption".into(), None, LEDGER),
        (
            "customer history",
            "GET",
            "/api/v1/customers/globex/history".into(),
            None,
            OWN_CUSTOMER,
        ),
        (
            "own fleet",
            "GET",
            "/api/v1/fleet?customer=globex".into(),
            None,
            OWN_CUSTOMER,
        ),
        (
            "versions",
            "GET",
            "/api/v1/support/versions".into(),
            None,
            LEDGER,
        ),
        (
            "behind",
            "GET",
            "/api/v1/support/behind".into(),
            None,
            LEDGER,
        ),
        (
            "prerelease",
            "GET",
            "/api/v1/support/prerelease".into(),
            None,
            LEDGER,
        ),
        (
            "drifted",
            "GET",
            "/api/v1/support/drifted".into(),
            None,
            LEDGER,
        ),
    ]);
}

#[test]
fn ledger_writes_answer_every_role_as_designed() {
    let matrix = Matrix::new();
    let installation_key = PrivateKey::from_secret_bytes([9; 32]).public_key();
    matrix.check(&[
        (
            "create customer",
            "POST",
            "/api/v1/customers".into(),
            Some(br#"{"id":"umbrella","name":"Umbrella"}"#.to_vec()),
            ADMIN_ONLY,
        ),
        (
            "trust installation key",
            "POST",
            "/api/v1/customers/globex/keys".into(),
            Some(
                serde_json::to_vec(&serde_json::json!({
                    "publicKeyPem": installation_key.to_pem()
                }))
                .unwrap(),
            ),
            ADMIN_ONLY,
        ),
        (
            "record release",
            "POST",
            "/api/v1/releases".into(),
            Some(
                br#"{"stack":"app","version":"1.0.0","repository":"ecr.example/acme/stacks/app","digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}"#
                    .to_vec(),
            ),
            [401, 401, 201, 403, 403, 403, 403, 201],
        ),
        (
            "report",
            "POST",
            "/api/v1/receipts".into(),
            Some(receipt("r-1", "globex")),
            [401, 401, 403, 403, 403, 201, 403, 200],
        ),
        // After `report`, which signs with this key.
        (
            "revoke installation key",
            "DELETE",
            format!("/api/v1/customers/globex/keys/{}", installation_key.key_id()),
            None,
            [401, 401, 403, 403, 403, 403, 403, 200],
        ),
    ]);
}

#[test]
fn health_metrics_and_the_openapi_file_answer_everyone() {
    let open = [200; 8];
    Matrix::new().check(&[
        ("healthz", "GET", "/healthz".into(), None, open),
        ("metrics", "GET", "/metrics".into(), None, open),
        ("openapi", "GET", "/api/v1/openapi.json".into(), None, open),
    ]);
}

#[test]
fn basic_auth_with_the_token_as_password_and_the_challenge_flow_work() {
    let server = OurRegistry::start();
    let token = server.token("reader", None);
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("anyone:{token}"));
    let r = send(
        "GET",
        &format!("{}/v2/", server.url()),
        &[("Authorization", &format!("Basic {basic}"))],
        None,
    );
    assert_eq!(r.status, 200);
    // Follow the challenge as docker does: the realm gives back a bearer token.
    let r = send(
        "GET",
        &format!("{}/v2/x/tags/list", server.url()),
        &[],
        None,
    );
    let challenge = r.header("www-authenticate").unwrap().to_string();
    assert!(
        challenge.contains("scope=\"repository:x:pull\""),
        "{challenge}"
    );
    let realm = challenge.split('"').nth(1).unwrap();
    let r = send(
        "GET",
        &format!("{realm}?service=stackpack-registry&scope=repository:x:pull"),
        &[("Authorization", &format!("Basic {basic}"))],
        None,
    );
    assert_eq!(r.status, 200);
    let bearer = r.json()["token"].as_str().unwrap().to_string();
    let r = send(
        "GET",
        &format!("{}/v2/", server.url()),
        &[("Authorization", &format!("Bearer {bearer}"))],
        None,
    );
    assert_eq!(r.status, 200);
    // A wrong password is refused, never treated as anonymous.
    let bad = base64::engine::general_purpose::STANDARD.encode("anyone:nope");
    assert_eq!(
        send(
            "GET",
            &format!("{}/v2/", server.url()),
            &[("Authorization", &format!("Basic {bad}"))],
            None
        )
        .status,
        401
    );
}

#[test]
fn anonymous_pull_only_when_configured() {
    let server = OurRegistry::start_with(&["--anonymous-pull"]);
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    publisher.push_image("open/app", "1.0.0", 3);
    let anonymous = Client::new(server.url(), None);
    assert_eq!(anonymous.req("GET", "/v2/", &[], None).status, 200);
    assert_eq!(
        anonymous
            .req("GET", "/v2/open/app/manifests/1.0.0", &[], None)
            .status,
        200
    );
    let r = anonymous.req("POST", "/v2/open/app/blobs/uploads/", &[], None);
    assert_eq!(r.status, 401);
    assert!(r
        .header("www-authenticate")
        .unwrap()
        .contains("repository:open/app:pull,push"));
    assert_eq!(
        anonymous.req("GET", "/api/v1/releases", &[], None).status,
        401
    );
}

#[test]
fn tokens_are_stored_only_as_hashes() {
    let server = OurRegistry::start();
    let token = server.token("admin", None);
    let db = std::fs::read(server.data.join("registry.db")).unwrap_or_default();
    let wal = std::fs::read(server.data.join("registry.db-wal")).unwrap_or_default();
    let needle = token.as_bytes();
    for file in [&db, &wal] {
        assert!(
            !file.windows(needle.len()).any(|w| w == needle),
            "the token is stored in clear"
        );
    }
}
