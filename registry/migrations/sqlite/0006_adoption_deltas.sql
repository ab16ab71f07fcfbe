-- Version 6: `adoption_deltas` keeps, per stack, day (UTC, `YYYY-MM-DD`) and
-- version, how many customers began (positive) or stopped (negative) running that
-- version that day, kept as receipts arrive ([`ledger::note_in_adoption`]), so a
-- stack's adoption over time is a running sum over at most days × versions rows
-- instead of a replay of every change. Filled here from the changes already stored:
-- each change starts its version (a destroy starts none) and ends the version the
-- customer's previous change (same order as `fleet_cells`) left in place. The
-- covering index the replay read changes through has no reader left, so no
-- receipt pays for it any more.
CREATE TABLE adoption_deltas (
    stack TEXT NOT NULL,
    day TEXT NOT NULL,
    version TEXT NOT NULL,
    delta INTEGER NOT NULL,
    PRIMARY KEY (stack, day, version)
) WITHOUT ROWID;
INSERT INTO adoption_deltas (stack, day, version, delta)
WITH ordered AS (
    SELECT stack, substr(finished_at, 1, 10) AS day, version, kind = 'destroy' AS destroy,
        LAG(CASE WHEN kind = 'destroy' THEN NULL ELSE version END) OVER (
            PARTITION BY customer, stack ORDER BY finished_ns, received_at, id DESC) AS previous
    FROM receipts
    WHERE kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes'))
SELECT stack, day, version, SUM(delta) FROM (
    SELECT stack, day, version, 1 AS delta FROM ordered WHERE NOT destroy
    UNION ALL
    SELECT stack, day, previous, -1 FROM ordered WHERE previous IS NOT NULL
) GROUP BY stack, day, version HAVING SUM(delta) <> 0;
DROP INDEX IF EXISTS receipts_changes;
