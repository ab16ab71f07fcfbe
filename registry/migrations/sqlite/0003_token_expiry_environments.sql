-- Version 3: tokens may expire and be revoked, and know when they were last used
-- (to within [`tokens::LAST_USED_SECS`]); customers have an environment
-- (`production`, `staging`, …); an installation key may be revoked.
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE tokens ADD COLUMN revoked_at TEXT;
ALTER TABLE tokens ADD COLUMN last_used TEXT;
ALTER TABLE customers ADD COLUMN environment TEXT;
ALTER TABLE installation_keys ADD COLUMN revoked_at TEXT;
CREATE INDEX receipts_finished ON receipts(customer, finished_ns);
