-- PostgreSQL version 7: the rest of the ledger (`db/ledger.rs`) and what the
-- fleet's index pages count (`db/fleet.rs`, `db/customers.rs`), with every column
-- SQLite's V1..V17 gave them: stack versions (`releases`), installation keys, the
-- modules each release vendors, adoption's per-day deltas, and
-- `fleet_stack_versions`, per stack and version in place (`''` for none) its
-- cells and how many failed or drifted. SQLite's V16 keeps those counts with three
-- triggers; here one trigger function does the same in the same transaction as
-- every change of a cell, whichever statement made it: a cell leaving a (stack,
-- version) takes itself off that row's counts, a cell arriving adds itself.
-- Columns answers are sorted or paged by are `"C"` (byte order, as SQLite's):
-- `releases.stack` and `published_at`, module paths, installation key ids and
-- customers, adoption's stack, day and version, `fleet_stack_versions.stack`.
CREATE TABLE releases (
    stack TEXT COLLATE "C" NOT NULL,
    version TEXT NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    source_repository TEXT,
    source_commit TEXT,
    source_branch TEXT,
    created TEXT,
    published_at TEXT COLLATE "C" NOT NULL,
    prerelease BIGINT NOT NULL,
    version_key BYTEA,
    stable BIGINT NOT NULL DEFAULT 0,
    pushed_by TEXT,
    PRIMARY KEY (stack, version)
);
CREATE INDEX releases_stable ON releases(stack, version_key) WHERE stable = 1;
CREATE TABLE installation_keys (
    customer TEXT COLLATE "C" NOT NULL,
    key_id TEXT COLLATE "C" NOT NULL,
    public_key TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    revoked_at TEXT,
    pinned_by TEXT,
    PRIMARY KEY (customer, key_id)
);
CREATE INDEX installation_keys_public_key ON installation_keys(public_key);
CREATE TABLE release_modules (
    stack TEXT COLLATE "C" NOT NULL,
    version TEXT NOT NULL,
    module TEXT NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    module_version TEXT,
    digest TEXT NOT NULL,
    module_version_key BYTEA,
    PRIMARY KEY (stack, version, path)
);
CREATE INDEX release_modules_module ON release_modules(module);
CREATE INDEX release_modules_module_key ON release_modules(module, module_version_key);
CREATE TABLE adoption_deltas (
    stack TEXT COLLATE "C" NOT NULL,
    day TEXT COLLATE "C" NOT NULL,
    version TEXT COLLATE "C" NOT NULL,
    delta BIGINT NOT NULL,
    PRIMARY KEY (stack, day, version)
);
CREATE TABLE fleet_stack_versions (
    stack TEXT COLLATE "C" NOT NULL,
    version TEXT NOT NULL,
    cells BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    drifted BIGINT NOT NULL,
    PRIMARY KEY (stack, version)
);
INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
    SELECT stack, COALESCE(version, ''), COUNT(*), SUM(failed), SUM(drifted)
    FROM fleet_cells GROUP BY stack, COALESCE(version, '');
CREATE FUNCTION fleet_stack_versions_keep() RETURNS trigger LANGUAGE plpgsql AS $keep$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE fleet_stack_versions SET cells = cells - 1, failed = failed - OLD.failed,
            drifted = drifted - OLD.drifted
            WHERE stack = OLD.stack AND version = COALESCE(OLD.version, '');
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO fleet_stack_versions AS k (stack, version, cells, failed, drifted)
            VALUES (NEW.stack, COALESCE(NEW.version, ''), 1, NEW.failed, NEW.drifted)
            ON CONFLICT (stack, version) DO UPDATE SET cells = k.cells + 1,
                failed = k.failed + excluded.failed, drifted = k.drifted + excluded.drifted;
    END IF;
    RETURN NULL;
END
$keep$;
CREATE TRIGGER fleet_stack_versions_insert_delete AFTER INSERT OR DELETE ON fleet_cells
    FOR EACH ROW EXECUTE FUNCTION fleet_stack_versions_keep();
CREATE TRIGGER fleet_stack_versions_update AFTER UPDATE OF stack, version, failed, drifted
    ON fleet_cells FOR EACH ROW
    WHEN (OLD.stack IS DISTINCT FROM NEW.stack OR OLD.version IS DISTINCT FROM NEW.version
        OR OLD.failed IS DISTINCT FROM NEW.failed OR OLD.drifted IS DISTINCT FROM NEW.drifted)
    EXECUTE FUNCTION fleet_stack_versions_keep();
