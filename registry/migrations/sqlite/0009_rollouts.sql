-- Version 9: rollouts. Channels with their ordered waves and soak time (a channel
-- without a row has the defaults, [`rollouts::DEFAULT_WAVES`] and 24 h); each
-- customer's channel and wave, and when its runner last reported a sync pass; the
-- vendor's signed promotions (`promotions`, ordered by version precedence); the
-- rollouts the registry schedules from them, with who was assigned when
-- (`rollout_assignments`, each with its health-gate standing, kept current as the
-- customer's receipts and sync reports arrive, so the gate is read by key) and
-- their history (`rollout_events`); release receipts (`release_receipts`) and each
-- customer's last sync state per release (`customer_sync`).
CREATE TABLE channels (
    name TEXT PRIMARY KEY,
    waves TEXT NOT NULL,
    soak_seconds INTEGER NOT NULL,
    created TEXT NOT NULL
);
ALTER TABLE customers ADD COLUMN channel TEXT;
ALTER TABLE customers ADD COLUMN wave TEXT;
ALTER TABLE customers ADD COLUMN last_sync TEXT;
CREATE INDEX customers_channel ON customers(channel, wave) WHERE channel IS NOT NULL;
CREATE TABLE promotions (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'stack')),
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    version_key BLOB NOT NULL,
    digest TEXT NOT NULL,
    required INTEGER NOT NULL,
    statement TEXT NOT NULL,
    key_id TEXT NOT NULL,
    promoted_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    UNIQUE (channel, kind, release, version)
);
CREATE INDEX promotions_order ON promotions(channel, kind, release, version_key);
CREATE TABLE rollouts (
    id INTEGER PRIMARY KEY,
    promotion_id INTEGER NOT NULL REFERENCES promotions(id),
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    waves TEXT NOT NULL,
    soak_seconds INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'halted', 'aborted', 'completed', 'superseded')),
    wave_index INTEGER NOT NULL,
    wave_opened_at TEXT,
    wave_opened_ns INTEGER,
    due_ns INTEGER,
    halted_reason TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX rollouts_state ON rollouts(state);
CREATE INDEX rollouts_release ON rollouts(channel, kind, release, id);
CREATE INDEX rollouts_due ON rollouts(due_ns) WHERE due_ns IS NOT NULL;
CREATE INDEX rollouts_promotion ON rollouts(promotion_id);
CREATE TABLE rollout_assignments (
    rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
    customer TEXT NOT NULL,
    wave TEXT NOT NULL,
    wave_index INTEGER NOT NULL,
    assigned_at TEXT NOT NULL,
    gate TEXT NOT NULL CHECK (gate IN ('waiting', 'succeeded', 'failed')),
    gate_reason TEXT,
    gate_at TEXT NOT NULL,
    PRIMARY KEY (rollout_id, customer)
) WITHOUT ROWID;
CREATE INDEX rollout_assignments_customer ON rollout_assignments(customer, rollout_id);
CREATE INDEX rollout_assignments_gate ON rollout_assignments(rollout_id, gate);
CREATE TABLE rollout_events (
    id INTEGER PRIMARY KEY,
    rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    customer TEXT,
    wave TEXT,
    detail TEXT
);
CREATE INDEX rollout_events_rollout ON rollout_events(rollout_id, id);
CREATE TABLE release_receipts (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    finished_ns INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    received_ns INTEGER NOT NULL,
    document TEXT NOT NULL
);
CREATE INDEX release_receipts_current ON release_receipts(customer, release, finished_ns);
CREATE TABLE customer_sync (
    customer TEXT NOT NULL,
    release TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    assigned TEXT,
    running TEXT,
    pending TEXT,
    message TEXT,
    reported_at TEXT NOT NULL,
    reported_ns INTEGER NOT NULL,
    PRIMARY KEY (customer, release)
) WITHOUT ROWID;
