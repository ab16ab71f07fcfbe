-- Version 4: the modules each release vendors, with their versions, so the ledger
-- can say who runs a bundle carrying module M below version X; receipts by stack
-- and time, for each version's adoption over time; and every customer known only
-- from receipts stored before receipts registered their customer gets its row, so
-- listing customers no longer scans every receipt; and `fleet_cells` keeps, per
-- customer and stack, the three receipts support's questions start from (the
-- version in place, the last attempt, the latest drift evidence), kept current as
-- receipts arrive, so the fleet is read by key instead of ranking every receipt.
CREATE TABLE release_modules (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    module TEXT NOT NULL,
    path TEXT NOT NULL,
    module_version TEXT,
    digest TEXT NOT NULL,
    PRIMARY KEY (stack, version, path)
);
CREATE INDEX release_modules_module ON release_modules(module);
CREATE INDEX receipts_stack ON receipts(stack, finished_ns);
INSERT OR IGNORE INTO customers (id, created)
    SELECT customer, MIN(received_at) FROM receipts GROUP BY customer;
CREATE TABLE fleet_cells (
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    current_id TEXT,
    attempt_id TEXT,
    drift_id TEXT,
    drifted INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (customer, stack)
) WITHOUT ROWID;
CREATE INDEX fleet_cells_stack ON fleet_cells(stack);
CREATE INDEX fleet_cells_drifted ON fleet_cells(customer, stack) WHERE drifted = 1;
CREATE INDEX fleet_cells_failed ON fleet_cells(customer, stack) WHERE failed = 1;
INSERT INTO fleet_cells (customer, stack, current_id, attempt_id, drift_id)
SELECT k.customer, k.stack,
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND r.kind IN ('apply', 'rollback', 'destroy') AND r.outcome IN ('succeeded', 'no-changes')
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1),
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND r.kind IN ('apply', 'rollback', 'destroy')
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1),
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND (r.kind = 'drift' OR (r.kind IN ('apply', 'rollback') AND r.outcome IN ('succeeded', 'no-changes')))
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1)
FROM (SELECT DISTINCT customer, stack FROM receipts) AS k;
