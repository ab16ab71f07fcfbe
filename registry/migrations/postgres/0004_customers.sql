-- PostgreSQL version 4: customers (`db/customers.rs`, registered by
-- `ledger::register_customer`) with every column SQLite's V1..V17 gave them, and
-- the fleet's cells (`fleet_cells`), which customer search reads: who runs a
-- stack, or a version. The ledger writes cells (`ledger::note_in_cell`); the
-- per-stack counts SQLite's V16 keeps by triggers (`fleet_stack_versions`) are
-- PG7's.
-- Search pages by `customers.id` and `fleet_cells.customer` (a customer's cells
-- list by `fleet_cells.stack`; channels list by `customers.channel`, PG8) and matches
-- `lower(id|name|account)`: those are `"C"`, so they sort in byte order and
-- `lower` folds ASCII only, both as SQLite does.
CREATE TABLE customers (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C",
    created TEXT NOT NULL,
    environment TEXT,
    last_seen TEXT,
    last_seen_ns BIGINT,
    registered_at TEXT,
    channel TEXT COLLATE "C",
    wave TEXT,
    last_sync TEXT,
    approve TEXT,
    account TEXT COLLATE "C",
    region TEXT,
    contact TEXT,
    notes TEXT,
    silent_since TEXT
);
CREATE INDEX customers_last_seen ON customers(last_seen_ns);
CREATE INDEX customers_environment ON customers(environment, id);
CREATE INDEX customers_channel ON customers(channel, wave) WHERE channel IS NOT NULL;
CREATE INDEX customers_account ON customers(account) WHERE account IS NOT NULL;
CREATE TABLE fleet_cells (
    customer TEXT COLLATE "C" NOT NULL,
    stack TEXT COLLATE "C" NOT NULL,
    current_id TEXT,
    attempt_id TEXT,
    drift_id TEXT,
    drifted BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    version TEXT,
    version_key BYTEA,
    digest TEXT,
    since TEXT,
    prerelease BIGINT NOT NULL DEFAULT 0,
    behind BIGINT NOT NULL DEFAULT 0,
    attempt_kind TEXT,
    attempt_outcome TEXT,
    attempt_version TEXT,
    attempt_finished_at TEXT,
    PRIMARY KEY (customer, stack)
);
CREATE INDEX fleet_cells_drifted ON fleet_cells(customer, stack) WHERE drifted = 1;
CREATE INDEX fleet_cells_failed ON fleet_cells(customer, stack) WHERE failed = 1;
CREATE INDEX fleet_cells_stack ON fleet_cells(stack, customer) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_version ON fleet_cells(stack, version_key)
    WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_version ON fleet_cells(version, stack) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_digest ON fleet_cells(digest) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_prerelease ON fleet_cells(customer, stack) WHERE prerelease = 1;
CREATE INDEX fleet_cells_behind ON fleet_cells(customer, stack) WHERE behind > 0;
CREATE INDEX fleet_cells_stack_behind ON fleet_cells(stack, customer) WHERE behind > 0;
CREATE INDEX fleet_cells_stack_state ON fleet_cells(stack, version, failed, drifted);
CREATE INDEX fleet_cells_version_customer ON fleet_cells(version, customer)
    WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_unattempted ON fleet_cells(stack, customer)
    WHERE attempt_id IS NULL;
CREATE INDEX fleet_cells_stack_failed ON fleet_cells(stack, customer) WHERE failed = 1;
CREATE INDEX fleet_cells_stack_drifted ON fleet_cells(stack, customer) WHERE drifted = 1;
