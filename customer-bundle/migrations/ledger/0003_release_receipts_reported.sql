-- Release receipts are reported to the registry like stack receipts.
ALTER TABLE release_receipts ADD COLUMN reported_at TEXT;
