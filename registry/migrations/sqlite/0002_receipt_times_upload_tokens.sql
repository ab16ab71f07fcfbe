-- Version 2: receipts are ordered by their parsed finish time (`finished_ns`, UTC
-- nanoseconds), not by comparing time strings; upload sessions know which token
-- opened them, so each token's open sessions can be capped.
ALTER TABLE receipts ADD COLUMN finished_ns INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS receipts_customer;
CREATE INDEX receipts_current ON receipts(customer, stack, finished_ns);
ALTER TABLE uploads ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX uploads_owner ON uploads(owner, updated);
CREATE INDEX uploads_updated ON uploads(updated);
