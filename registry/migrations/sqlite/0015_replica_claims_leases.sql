-- Version 15: what several `serve` processes on one database share, so that no
-- correctness rests on one process's memory. Support page sessions (`ui_sessions`:
-- the SHA-256 of the session id and of its token, with an expiry), so a sign-in on
-- one replica holds on every other; the alert outbox names each event's customer
-- and who claimed it until when (`claimed_until_ns`), so one replica delivers an
-- event and the others leave it, and a killed replica's claim lapses; and `leases`,
-- one row per job that only one process may run at a time (`gc`), with the holder
-- and an expiry for the same reason.
CREATE TABLE ui_sessions (
    id_hash BLOB PRIMARY KEY,
    token_hash BLOB NOT NULL,
    expires_ns INTEGER NOT NULL
);
CREATE INDEX ui_sessions_expires ON ui_sessions(expires_ns);
ALTER TABLE alert_outbox ADD COLUMN customer TEXT NOT NULL DEFAULT '';
UPDATE alert_outbox SET customer = COALESCE(json_extract(body, '$.customer'), '');
ALTER TABLE alert_outbox ADD COLUMN claimed_until_ns INTEGER NOT NULL DEFAULT 0;
CREATE INDEX alert_outbox_key ON alert_outbox(alert, customer, claimed_until_ns);
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ns INTEGER NOT NULL
);
