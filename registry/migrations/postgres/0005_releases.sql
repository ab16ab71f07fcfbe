-- PostgreSQL version 5: releases (`db/release_index.rs`), SQLite's V7 tables, and
-- `receipts` with every column SQLite's V1, V2 and V7 gave it, which the release
-- pages read (who deployed a release, what each cell runs as part of which); the
-- ledger stores them (`ledger::file_receipt`), its other tables are PG7's.
-- Versions list by `name` (then `version_key`, bytes) and a release's customers by
-- `receipts.customer`: those are `"C"`, so they sort in byte order as on SQLite.
-- So are `receipts.id` and `received_at` (amended with the ledger's port, PG7):
-- of two receipts finished at once, the later arrival and then the smaller id is
-- the newer, which decides what a cell runs and orders a customer's history.
CREATE TABLE release_indexes (
    name TEXT COLLATE "C" NOT NULL,
    version TEXT NOT NULL,
    version_key BYTEA NOT NULL,
    prerelease BIGINT NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    published_at TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE INDEX release_indexes_digest ON release_indexes(repository, digest);
CREATE TABLE release_index_stacks (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position BIGINT NOT NULL,
    stack TEXT NOT NULL,
    stack_version TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, stack)
);
CREATE TABLE release_index_services (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position BIGINT NOT NULL,
    service TEXT NOT NULL,
    reference TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, service)
);
CREATE TABLE receipts (
    id TEXT COLLATE "C" PRIMARY KEY,
    customer TEXT COLLATE "C" NOT NULL,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    key_id TEXT NOT NULL,
    document TEXT NOT NULL,
    received_at TEXT COLLATE "C" NOT NULL,
    finished_ns BIGINT NOT NULL DEFAULT 0,
    release_name TEXT,
    release_version TEXT,
    release_digest TEXT
);
CREATE INDEX receipts_current ON receipts(customer, stack, finished_ns);
CREATE INDEX receipts_finished ON receipts(customer, finished_ns);
CREATE INDEX receipts_stack ON receipts(stack, finished_ns);
CREATE INDEX receipts_release ON receipts(release_name, customer) WHERE release_name IS NOT NULL;
