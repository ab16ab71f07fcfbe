-- Version 5: `fleet_cells` carries everything a fleet row shows (the version in
-- place with its digest, time and precedence key, whether it is a prerelease, how
-- many stable releases are newer, the last attempt), customers their last receipt's
-- time, and releases and their modules a precedence key
-- ([`crate::version_key`]), so every support question is answered from indexes,
-- without reading a receipt; and the changes of what customers run (adoption over
-- time) have a covering index, so a stack's are read without its receipts'
-- documents. The columns are filled from the data by
-- [`ledger::fill_precedence_keys`] and [`ledger::refresh_cells`].
ALTER TABLE releases ADD COLUMN version_key BLOB;
ALTER TABLE releases ADD COLUMN stable INTEGER NOT NULL DEFAULT 0;
CREATE INDEX releases_stable ON releases(stack, version_key) WHERE stable = 1;
ALTER TABLE release_modules ADD COLUMN module_version_key BLOB;
CREATE INDEX release_modules_module_key ON release_modules(module, module_version_key);
ALTER TABLE customers ADD COLUMN last_seen TEXT;
ALTER TABLE customers ADD COLUMN last_seen_ns INTEGER;
UPDATE customers SET (last_seen, last_seen_ns) = (
    SELECT r.finished_at, r.finished_ns FROM receipts r WHERE r.customer = customers.id
    ORDER BY r.finished_ns DESC LIMIT 1);
CREATE INDEX customers_last_seen ON customers(last_seen_ns);
CREATE INDEX customers_environment ON customers(environment, id);
ALTER TABLE fleet_cells ADD COLUMN version TEXT;
ALTER TABLE fleet_cells ADD COLUMN version_key BLOB;
ALTER TABLE fleet_cells ADD COLUMN digest TEXT;
ALTER TABLE fleet_cells ADD COLUMN since TEXT;
ALTER TABLE fleet_cells ADD COLUMN prerelease INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fleet_cells ADD COLUMN behind INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fleet_cells ADD COLUMN attempt_kind TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_outcome TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_version TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_finished_at TEXT;
DROP INDEX fleet_cells_stack;
CREATE INDEX fleet_cells_stack ON fleet_cells(stack, customer) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_version ON fleet_cells(stack, version_key) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_version ON fleet_cells(version, stack) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_digest ON fleet_cells(digest) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_prerelease ON fleet_cells(customer, stack) WHERE prerelease = 1;
CREATE INDEX fleet_cells_behind ON fleet_cells(customer, stack) WHERE behind > 0;
CREATE INDEX fleet_cells_stack_behind ON fleet_cells(stack, customer) WHERE behind > 0;
CREATE INDEX receipts_changes ON receipts(stack, finished_ns, received_at, id, customer, version,
    kind, finished_at)
    WHERE kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes');
