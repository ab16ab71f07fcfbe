-- PostgreSQL version 9: SQLite's V18, a plan is an attempt: each cell's last
-- attempt chosen again among its applies, rollbacks, destroys and plans, and the
-- columns that follow from it refilled from that receipt.
UPDATE fleet_cells SET attempt_id = (SELECT r.id FROM receipts r
    WHERE r.customer = fleet_cells.customer AND r.stack = fleet_cells.stack
    AND r.kind IN ('apply', 'rollback', 'destroy', 'plan')
    ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1);
UPDATE fleet_cells SET attempt_kind = a.kind, attempt_outcome = a.outcome,
    attempt_version = a.version, attempt_finished_at = a.finished_at,
    failed = CASE WHEN a.outcome = 'failed' THEN 1 ELSE 0 END
FROM receipts a WHERE a.id = fleet_cells.attempt_id;
