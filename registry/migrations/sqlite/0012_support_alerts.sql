-- Version 12: what support needs to answer "why" and to be told. Customers carry
-- their details (cloud account, region, contact, free notes; `customer set`), the
-- account searchable by index. Alerts: the webhooks (`alerts`, with the events
-- each wants and how its last delivery went), an outbox of events waiting for
-- delivery (`alert_outbox`: written in the receipt's own transaction, delivered
-- by a background task, so a slow webhook never holds a receipt up), and which
-- customers were already announced silent (`customers.silent_since`, so `silent`
-- is said once per silence). Stack versions keep the token that recorded them
-- (`releases.pushed_by`: who pushed what, by the token's id and so its name).
-- An index answers the stack pages from `fleet_cells` alone: per stack its
-- versions with their failed and drifted counts.
ALTER TABLE customers ADD COLUMN account TEXT;
ALTER TABLE customers ADD COLUMN region TEXT;
ALTER TABLE customers ADD COLUMN contact TEXT;
ALTER TABLE customers ADD COLUMN notes TEXT;
ALTER TABLE customers ADD COLUMN silent_since TEXT;
CREATE INDEX customers_account ON customers(account) WHERE account IS NOT NULL;
ALTER TABLE releases ADD COLUMN pushed_by TEXT;
CREATE INDEX fleet_cells_stack_state ON fleet_cells(stack, version, failed, drifted);
CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    webhook TEXT NOT NULL,
    events TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('cli', 'config')),
    created TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    last_ok_at TEXT,
    last_error TEXT,
    last_error_at TEXT,
    UNIQUE (webhook, source)
);
CREATE TABLE alert_outbox (
    id INTEGER PRIMARY KEY,
    alert INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    created TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ns INTEGER NOT NULL
);
CREATE INDEX alert_outbox_due ON alert_outbox(next_ns);
