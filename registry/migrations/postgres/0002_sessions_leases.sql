-- PostgreSQL version 2: what replicas share besides the ledger: support page
-- sessions (`db/sessions.rs`) and leases (`db/leases.rs`, `gc`'s), as SQLite's V15.
CREATE TABLE ui_sessions (
    id_hash BYTEA PRIMARY KEY,
    token_hash BYTEA NOT NULL,
    expires_ns BIGINT NOT NULL
);
CREATE INDEX ui_sessions_expires ON ui_sessions(expires_ns);
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ns BIGINT NOT NULL
);
