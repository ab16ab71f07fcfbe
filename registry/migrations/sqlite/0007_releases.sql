-- Version 7: releases, a customer's whole environment as one version (an OCI index
-- in `<namespace>/releases/<name>`). Kept in `release_indexes` and their parts in
-- `release_index_stacks` and `release_index_services`, because `releases` (from
-- version 1) already names single stack versions (bundles). Receipts name the
-- release they were applied as part of; those stored before this version may carry
-- one in their document already (the runner wrote it before the ledger read it),
-- so it is copied out.
CREATE TABLE release_indexes (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    version_key BLOB NOT NULL,
    prerelease INTEGER NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    published_at TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE INDEX release_indexes_digest ON release_indexes(repository, digest);
CREATE TABLE release_index_stacks (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position INTEGER NOT NULL,
    stack TEXT NOT NULL,
    stack_version TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, stack)
);
CREATE TABLE release_index_services (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position INTEGER NOT NULL,
    service TEXT NOT NULL,
    reference TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, service)
);
ALTER TABLE receipts ADD COLUMN release_name TEXT;
ALTER TABLE receipts ADD COLUMN release_version TEXT;
ALTER TABLE receipts ADD COLUMN release_digest TEXT;
UPDATE receipts SET
    release_name = json_extract(document, '$.receipt.release.name'),
    release_version = json_extract(document, '$.receipt.release.version'),
    release_digest = json_extract(document, '$.receipt.release.digest')
WHERE json_extract(document, '$.receipt.release.name') IS NOT NULL;
CREATE INDEX receipts_release ON receipts(release_name, customer) WHERE release_name IS NOT NULL;
