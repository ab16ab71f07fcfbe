-- Version 13: support bundles a runner wrote (`stackpack-runner support-bundle`)
-- and an operator imported for a customer (`support-bundle import`), kept whole
-- (capped in size) for the customer's support page to offer.
CREATE TABLE support_bundles (
    id INTEGER PRIMARY KEY,
    customer TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    bytes BLOB NOT NULL
);
CREATE INDEX support_bundles_customer ON support_bundles(customer, id);
