//! A database made by an older `stackpack-registry` opens with a newer one: its
//! schema is migrated forward (`PRAGMA user_version`), its data kept and read in the
//! new form; a database from a newer build is refused, never half-read.

use crate::common;

use std::process::Command;

use common::*;

/// The schema as the first release wrote it (no `user_version`), kept here verbatim
/// so this test keeps opening a real old database however the schema moves on.
const V1_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repo_blobs (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL REFERENCES blobs(digest),
    PRIMARY KEY (repo, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS repo_blobs_digest ON repo_blobs(digest);
CREATE TABLE IF NOT EXISTS manifests (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL,
    media_type TEXT NOT NULL,
    artifact_type TEXT,
    size INTEGER NOT NULL,
    subject TEXT,
    annotations TEXT,
    content BLOB NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (repo, digest)
);
CREATE INDEX IF NOT EXISTS manifests_subject ON manifests(repo, subject) WHERE subject IS NOT NULL;
CREATE TABLE IF NOT EXISTS manifest_refs (
    repo TEXT NOT NULL,
    manifest TEXT NOT NULL,
    child TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('blob', 'manifest')),
    PRIMARY KEY (repo, manifest, child, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS manifest_refs_child ON manifest_refs(child, kind);
CREATE TABLE IF NOT EXISTS tags (
    repo TEXT NOT NULL,
    tag TEXT NOT NULL,
    digest TEXT NOT NULL,
    updated INTEGER NOT NULL,
    PRIMARY KEY (repo, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_digest ON tags(repo, digest);
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE,
    role TEXT NOT NULL,
    customer TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    source_repository TEXT,
    source_commit TEXT,
    source_branch TEXT,
    created TEXT,
    published_at TEXT NOT NULL,
    prerelease INTEGER NOT NULL,
    PRIMARY KEY (stack, version)
);
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS installation_keys (
    customer TEXT NOT NULL,
    key_id TEXT NOT NULL,
    public_key TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (customer, key_id)
);
CREATE TABLE IF NOT EXISTS receipts (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    key_id TEXT NOT NULL,
    document TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_customer ON receipts(customer, stack, finished_at);
"#;

fn old_registry(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("blobs/sha256")).unwrap();
    std::fs::create_dir_all(data.join("uploads")).unwrap();
    let db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.execute_batch(V1_SCHEMA).unwrap();
    for (version, prerelease) in [
        ("1.0.0", false),
        ("2.0.0", false),
        ("3.0.0", false),
        ("3.1.0-rc.1", true),
    ] {
        db.execute(
            "INSERT INTO releases (stack, version, repository, digest, published_at, prerelease)
             VALUES ('data-plane', ?1, 'acme/data-plane', ?2, '2026-01-01T00:00:00Z', ?3)",
            rusqlite::params![
                version,
                stackpack_schema::Digest::of(version.as_bytes()).to_string(),
                prerelease
            ],
        )
        .unwrap();
    }
    let receipt = |id: &str, (stack, version): (&str, &str), (kind, outcome), finished: &str| {
        db.execute(
            "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
                 started_at, finished_at, key_id, document, received_at)
             VALUES (?1, 'umbrella', ?2, ?3,
                 'sha256:0000000000000000000000000000000000000000000000000000000000000000', ?4, ?5,
                 '2026-02-01T00:00:00Z', ?6, 'k', '{}', '2026-02-02T00:00:00Z')",
            rusqlite::params![id, stack, version, kind, outcome, finished],
        )
        .unwrap();
    };
    let applied = ("apply", "succeeded");
    // 07:00Z with an offset sorted after 08:00Z as text: v2 orders by time.
    receipt(
        "r1",
        ("data-plane", "1.0.0"),
        applied,
        "2026-02-01T12:00:00+05:00",
    );
    receipt(
        "r2",
        ("data-plane", "2.0.0"),
        applied,
        "2026-02-01T08:00:00Z",
    );
    receipt(
        "r3",
        ("data-plane", "2.0.0"),
        ("drift", "drifted"),
        "2026-02-01T09:00:00Z",
    );
    receipt(
        "r4",
        ("edge", "3.1.0-rc.1"),
        applied,
        "2026-02-01T09:30:00Z",
    );
    receipt(
        "r5",
        ("edge", "4.0.0"),
        ("apply", "failed"),
        "2026-02-01T10:00:00Z",
    );
    // A plan that failed, never applied: from v18 a plan is an attempt.
    receipt(
        "r6",
        ("network", "0.1.0"),
        ("plan", "failed"),
        "2026-02-01T07:30:00Z",
    );
    // A receipt the runner signed as part of a release before the ledger read the
    // release: v7 copies it out of the stored document.
    db.execute(
        "UPDATE receipts SET document = ?1 WHERE id = 'r2'",
        [
            serde_json::json!({"receipt": {"release": {"name": "environment", "version": "1.0.0",
            "digest": stackpack_schema::Digest::of(b"index").to_string()}}})
            .to_string(),
        ],
    )
    .unwrap();
    db.execute(
        "INSERT INTO uploads (id, repo, created, updated) VALUES ('00000000000000000000000000000000', 'a', 0, 0)",
        [],
    )
    .unwrap();
    data
}

fn user_version(data: &std::path::Path) -> i64 {
    rusqlite::Connection::open(data.join("registry.db"))
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_database_from_schema_version_1_is_migrated_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = old_registry(dir.path());
    assert_eq!(user_version(&data), 0);
    let out = Command::new(BIN)
        .args(["fleet", "--json", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fleet: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fleet[0]["version"], "2.0.0", "{fleet}");
    assert_eq!(fleet[0]["since"], "2026-02-01T08:00:00Z");
    // What v5 copied into the cells from the old receipts and releases.
    assert_eq!(fleet[0]["behind"], 1, "3.0.0 is newer: {fleet}");
    assert_eq!(fleet[0]["latestStable"], "3.0.0");
    assert_eq!(fleet[0]["drifted"], true);
    assert_eq!(fleet[0]["lastSeen"], "2026-02-01T10:00:00Z");
    assert_eq!(fleet[1]["stack"], "edge");
    assert_eq!(fleet[1]["version"], "3.1.0-rc.1");
    assert_eq!(fleet[1]["prerelease"], true);
    assert_eq!(fleet[1]["lastAttempt"]["outcome"], "failed");
    assert_eq!(fleet[1]["lastAttempt"]["version"], "4.0.0");
    assert_eq!(
        fleet[2]["stack"], "network",
        "v18: a failed plan is an attempt"
    );
    assert_eq!(fleet[2]["lastAttempt"]["kind"], "plan");
    assert_eq!(fleet[2]["lastAttempt"]["outcome"], "failed");
    assert_eq!(
        user_version(&data),
        stackpack_registry::db::SCHEMA_VERSION as i64,
        "the fleet above was read from the cells v4 and v5 filled"
    );
    let fleet_with = |args: &[&str]| -> serde_json::Value {
        let out = Command::new(BIN)
            .args(["fleet", "--json", "--data"])
            .arg(&data)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // v6 filled the adoption deltas from the old receipts, in time order: 1.0.0 at
    // 07:00Z was replaced by 2.0.0 at 08:00Z the same day.
    let out = Command::new(BIN)
        .args(["adoption", "--json", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let adoption: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let release = fleet_with(&["--release", "environment"]);
    assert_eq!(
        release,
        serde_json::json!([{"customer": "umbrella", "environment": null, "release": "environment",
            "version": "1.0.0", "digest": stackpack_schema::Digest::of(b"index").to_string(),
            "recorded": false, "mixed": []}]),
        "v7 read the release out of the old receipt's document"
    );
    assert_eq!(
        adoption,
        serde_json::json!([
            {"stack": "data-plane", "bucket": "day", "versions": ["2.0.0"],
             "points": [{"at": "2026-02-01", "customers": {"2.0.0": 1}, "total": 1}]},
            {"stack": "edge", "bucket": "day", "versions": ["3.1.0-rc.1"],
             "points": [{"at": "2026-02-01", "customers": {"3.1.0-rc.1": 1}, "total": 1}]},
        ]),
        "{adoption}"
    );
    let below = fleet_with(&["--below", "3.0.0"]);
    assert_eq!(below.as_array().unwrap().len(), 1, "{below}");
    assert_eq!(below[0]["stack"], "data-plane", "3.1.0-rc.1 is above 3.0.0");
    let failed = fleet_with(&["--failed"]);
    assert_eq!(failed[0]["stack"], "edge", "{failed}");

    // The server runs on it, and new sessions (owned by a token) work.
    let server = OurRegistry::start_on(data.clone());
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    client.push_image("acme/app", "v1", 3);
    let db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn a_database_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = old_registry(dir.path());
    rusqlite::Connection::open(data.join("registry.db"))
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let out = Command::new(BIN)
        .args(["fleet", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("schema version 99"), "{stderr}");
    assert_eq!(user_version(&data), 99, "left as it was");
}

#[test]
fn a_token_from_before_names_is_listed_without_one_and_a_named_token_can_be_added() {
    let dir = tempfile::tempdir().unwrap();
    let data = old_registry(dir.path());
    rusqlite::Connection::open(data.join("registry.db"))
        .unwrap()
        .execute(
            "INSERT INTO tokens (id, hash, role, created) VALUES ('old0', x'00', 'publisher', '2026-01-01T00:00:00Z')",
            [],
        )
        .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .arg("--data")
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let list = run(&["token", "list", "--json"]);
    assert_eq!(list[0]["id"], "old0", "{list}");
    assert!(list[0]["name"].is_null(), "{list}");
    run(&[
        "token",
        "create",
        "--role",
        "publisher",
        "--name",
        "ci",
        "--json",
    ]);
    let list = run(&["token", "list", "--json"]);
    assert_eq!(list[1]["name"], "ci", "{list}");
}
