-- Version 1: the schema before versioning. Databases made then have `user_version` 0
-- and exactly these tables; every statement says `IF NOT EXISTS`, so running it on
-- one of them changes nothing.
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
