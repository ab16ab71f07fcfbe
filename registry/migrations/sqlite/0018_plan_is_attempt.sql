-- Version 18: a plan is an attempt (`ledger::counts_as_attempt`): each cell's
-- last attempt is chosen again among its applies, rollbacks, destroys and plans, so
-- a failed plan shows as the last attempt failed (`fleet --failed`). The columns
-- that follow from it are refilled by [`ledger::refresh_cells`].
UPDATE fleet_cells SET attempt_id = (SELECT r.id FROM receipts r
    WHERE r.customer = fleet_cells.customer AND r.stack = fleet_cells.stack
    AND r.kind IN ('apply', 'rollback', 'destroy', 'plan')
    ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1);
