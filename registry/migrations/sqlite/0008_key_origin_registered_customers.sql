-- Version 8: how each installation key came to be trusted (`admin`, `report`, or
-- `import` for a key pinned on first use by `receipts import --customer`), so the
-- support views do not call a key from an imported file "trusted" like one a
-- customer's token vouched for. Keys from before stay NULL: pinned by a first
-- receipt, path unknown. And whether the vendor registered a customer (`customer
-- add`, a customer token) or knows it only from its receipts: before, those with a
-- name, an environment or a token count as registered.
ALTER TABLE installation_keys ADD COLUMN pinned_by TEXT;
ALTER TABLE customers ADD COLUMN registered_at TEXT;
UPDATE customers SET registered_at = created
WHERE name IS NOT NULL OR environment IS NOT NULL
   OR id IN (SELECT customer FROM tokens WHERE customer IS NOT NULL);
CREATE INDEX installation_keys_public_key ON installation_keys(public_key);
