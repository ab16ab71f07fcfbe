-- PostgreSQL version 1: API tokens (`db/tokens.rs`), with every column SQLite's
-- V1..V15 gave them. `token list` orders tokens made in the same second by `id`:
-- `"C"`, byte order as on SQLite, whatever the database's locale.
CREATE TABLE tokens (
    id TEXT COLLATE "C" PRIMARY KEY,
    hash BYTEA NOT NULL UNIQUE,
    role TEXT NOT NULL,
    customer TEXT,
    created TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    last_used TEXT,
    name TEXT
);
CREATE UNIQUE INDEX tokens_name ON tokens(name) WHERE name IS NOT NULL;
