-- Version 16:
-- the index pages and search answer from what is kept, never from a pass over
-- every cell. `fleet_stack_versions` counts, per stack and version in place
-- (`''` for none), its cells and how many of them failed or drifted; triggers on
-- `fleet_cells` keep it in the same transaction as every change of a cell,
-- whichever code path made it. Search walks the customers who run a version, or
-- have a cell of a stack, in id order and stops after a page: the cells never
-- attempted (a drift report before any apply) have an index of their own, partial,
-- so that no fleet filter (all of them on attempted cells) prefers it to theirs.
-- A stack page's failed and drifted customers are read per stack, in customer
-- order, like its behind ones, not picked out of the whole fleet's.
CREATE TABLE fleet_stack_versions (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    cells INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    drifted INTEGER NOT NULL,
    PRIMARY KEY (stack, version)
) WITHOUT ROWID;
INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
    SELECT stack, COALESCE(version, ''), COUNT(*), SUM(failed), SUM(drifted)
    FROM fleet_cells GROUP BY stack, COALESCE(version, '');
CREATE TRIGGER fleet_stack_versions_insert AFTER INSERT ON fleet_cells BEGIN
    INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
        VALUES (new.stack, COALESCE(new.version, ''), 1, new.failed, new.drifted)
        ON CONFLICT (stack, version) DO UPDATE SET cells = cells + 1,
            failed = failed + excluded.failed, drifted = drifted + excluded.drifted;
END;
CREATE TRIGGER fleet_stack_versions_delete AFTER DELETE ON fleet_cells BEGIN
    UPDATE fleet_stack_versions SET cells = cells - 1, failed = failed - old.failed,
        drifted = drifted - old.drifted
        WHERE stack = old.stack AND version = COALESCE(old.version, '');
END;
CREATE TRIGGER fleet_stack_versions_update AFTER UPDATE OF stack, version, failed, drifted
    ON fleet_cells
    WHEN old.stack IS NOT new.stack OR old.version IS NOT new.version
        OR old.failed IS NOT new.failed OR old.drifted IS NOT new.drifted
BEGIN
    UPDATE fleet_stack_versions SET cells = cells - 1, failed = failed - old.failed,
        drifted = drifted - old.drifted
        WHERE stack = old.stack AND version = COALESCE(old.version, '');
    INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
        VALUES (new.stack, COALESCE(new.version, ''), 1, new.failed, new.drifted)
        ON CONFLICT (stack, version) DO UPDATE SET cells = cells + 1,
            failed = failed + excluded.failed, drifted = drifted + excluded.drifted;
END;
CREATE INDEX fleet_cells_version_customer ON fleet_cells(version, customer)
    WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_unattempted ON fleet_cells(stack, customer)
    WHERE attempt_id IS NULL;
CREATE INDEX fleet_cells_stack_failed ON fleet_cells(stack, customer) WHERE failed = 1;
CREATE INDEX fleet_cells_stack_drifted ON fleet_cells(stack, customer) WHERE drifted = 1;
