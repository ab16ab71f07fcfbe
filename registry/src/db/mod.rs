//! Plain database functions over SQLite (WAL). Each takes a `&Connection` (or a
//! transaction, which derefs to one) and does one thing; the controllers decide
//! which run together in one transaction.

pub mod alerts;
pub mod backup;
pub mod blobs;
pub mod copy;
pub mod customers;
pub mod fleet;
pub mod forecasts;
pub mod leases;
pub mod ledger;
pub mod manifests;
pub mod pg;
pub mod pg_pool;
pub mod release_index;
pub mod rollouts;
pub mod sessions;
pub mod settings;
pub mod sql;
pub mod support_bundles;
pub mod tokens;
pub mod uploads;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::Error;
use crate::metrics::Metrics;
use sql::{Conn, SqlError};

/// Version 1: the schema before versioning. Databases made then have `user_version` 0
/// and exactly these tables; every statement says `IF NOT EXISTS`, so running it on
/// one of them changes nothing.
const V1: &str = r#"
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repo_blobs (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL REFERENCES blobs(digest),
    PRIMARY KEY (repo, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS repo_blobs_digest ON repo_blobs(digest);
CREATE TABLE IF NOT EXISTS manifests (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL,
    media_type TEXT NOT NULL,
    artifact_type TEXT,
    size INTEGER NOT NULL,
    subject TEXT,
    annotations TEXT,
    content BLOB NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (repo, digest)
);
CREATE INDEX IF NOT EXISTS manifests_subject ON manifests(repo, subject) WHERE subject IS NOT NULL;
CREATE TABLE IF NOT EXISTS manifest_refs (
    repo TEXT NOT NULL,
    manifest TEXT NOT NULL,
    child TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('blob', 'manifest')),
    PRIMARY KEY (repo, manifest, child, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS manifest_refs_child ON manifest_refs(child, kind);
CREATE TABLE IF NOT EXISTS tags (
    repo TEXT NOT NULL,
    tag TEXT NOT NULL,
    digest TEXT NOT NULL,
    updated INTEGER NOT NULL,
    PRIMARY KEY (repo, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_digest ON tags(repo, digest);
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE,
    role TEXT NOT NULL,
    customer TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    source_repository TEXT,
    source_commit TEXT,
    source_branch TEXT,
    created TEXT,
    published_at TEXT NOT NULL,
    prerelease INTEGER NOT NULL,
    PRIMARY KEY (stack, version)
);
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS installation_keys (
    customer TEXT NOT NULL,
    key_id TEXT NOT NULL,
    public_key TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (customer, key_id)
);
CREATE TABLE IF NOT EXISTS receipts (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    key_id TEXT NOT NULL,
    document TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_customer ON receipts(customer, stack, finished_at);
"#;

/// Version 2: receipts are ordered by their parsed finish time (`finished_ns`, UTC
/// nanoseconds), not by comparing time strings; upload sessions know which token
/// opened them, so each token's open sessions can be capped.
const V2: &str = r#"
ALTER TABLE receipts ADD COLUMN finished_ns INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS receipts_customer;
CREATE INDEX receipts_current ON receipts(customer, stack, finished_ns);
ALTER TABLE uploads ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX uploads_owner ON uploads(owner, updated);
CREATE INDEX uploads_updated ON uploads(updated);
"#;

/// Version 3: tokens may expire and be revoked, and know when they were last used
/// (to within [`tokens::LAST_USED_SECS`]); customers have an environment
/// (`production`, `staging`, …); an installation key may be revoked.
const V3: &str = r#"
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE tokens ADD COLUMN revoked_at TEXT;
ALTER TABLE tokens ADD COLUMN last_used TEXT;
ALTER TABLE customers ADD COLUMN environment TEXT;
ALTER TABLE installation_keys ADD COLUMN revoked_at TEXT;
CREATE INDEX receipts_finished ON receipts(customer, finished_ns);
"#;

/// Version 4: the modules each release vendors, with their versions, so the ledger
/// can say who runs a bundle carrying module M below version X; receipts by stack
/// and time, for each version's adoption over time; and every customer known only
/// from receipts stored before receipts registered their customer gets its row, so
/// listing customers no longer scans every receipt; and `fleet_cells` keeps, per
/// customer and stack, the three receipts support's questions start from (the
/// version in place, the last attempt, the latest drift evidence), kept current as
/// receipts arrive, so the fleet is read by key instead of ranking every receipt.
const V4: &str = r#"
CREATE TABLE release_modules (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    module TEXT NOT NULL,
    path TEXT NOT NULL,
    module_version TEXT,
    digest TEXT NOT NULL,
    PRIMARY KEY (stack, version, path)
);
CREATE INDEX release_modules_module ON release_modules(module);
CREATE INDEX receipts_stack ON receipts(stack, finished_ns);
INSERT OR IGNORE INTO customers (id, created)
    SELECT customer, MIN(received_at) FROM receipts GROUP BY customer;
CREATE TABLE fleet_cells (
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    current_id TEXT,
    attempt_id TEXT,
    drift_id TEXT,
    drifted INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (customer, stack)
) WITHOUT ROWID;
CREATE INDEX fleet_cells_stack ON fleet_cells(stack);
CREATE INDEX fleet_cells_drifted ON fleet_cells(customer, stack) WHERE drifted = 1;
CREATE INDEX fleet_cells_failed ON fleet_cells(customer, stack) WHERE failed = 1;
INSERT INTO fleet_cells (customer, stack, current_id, attempt_id, drift_id)
SELECT k.customer, k.stack,
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND r.kind IN ('apply', 'rollback', 'destroy') AND r.outcome IN ('succeeded', 'no-changes')
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1),
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND r.kind IN ('apply', 'rollback', 'destroy')
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1),
    (SELECT id FROM receipts r WHERE r.customer = k.customer AND r.stack = k.stack
        AND (r.kind = 'drift' OR (r.kind IN ('apply', 'rollback') AND r.outcome IN ('succeeded', 'no-changes')))
        ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1)
FROM (SELECT DISTINCT customer, stack FROM receipts) AS k;
"#;

/// Version 5: `fleet_cells` carries everything a fleet row shows (the version in
/// place with its digest, time and precedence key, whether it is a prerelease, how
/// many stable releases are newer, the last attempt), customers their last receipt's
/// time, and releases and their modules a precedence key
/// ([`crate::version_key`]), so every support question is answered from indexes,
/// without reading a receipt; and the changes of what customers run (adoption over
/// time) have a covering index, so a stack's are read without its receipts'
/// documents. The columns are filled from the data by
/// [`ledger::fill_precedence_keys`] and [`ledger::refresh_cells`].
const V5: &str = r#"
ALTER TABLE releases ADD COLUMN version_key BLOB;
ALTER TABLE releases ADD COLUMN stable INTEGER NOT NULL DEFAULT 0;
CREATE INDEX releases_stable ON releases(stack, version_key) WHERE stable = 1;
ALTER TABLE release_modules ADD COLUMN module_version_key BLOB;
CREATE INDEX release_modules_module_key ON release_modules(module, module_version_key);
ALTER TABLE customers ADD COLUMN last_seen TEXT;
ALTER TABLE customers ADD COLUMN last_seen_ns INTEGER;
UPDATE customers SET (last_seen, last_seen_ns) = (
    SELECT r.finished_at, r.finished_ns FROM receipts r WHERE r.customer = customers.id
    ORDER BY r.finished_ns DESC LIMIT 1);
CREATE INDEX customers_last_seen ON customers(last_seen_ns);
CREATE INDEX customers_environment ON customers(environment, id);
ALTER TABLE fleet_cells ADD COLUMN version TEXT;
ALTER TABLE fleet_cells ADD COLUMN version_key BLOB;
ALTER TABLE fleet_cells ADD COLUMN digest TEXT;
ALTER TABLE fleet_cells ADD COLUMN since TEXT;
ALTER TABLE fleet_cells ADD COLUMN prerelease INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fleet_cells ADD COLUMN behind INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fleet_cells ADD COLUMN attempt_kind TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_outcome TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_version TEXT;
ALTER TABLE fleet_cells ADD COLUMN attempt_finished_at TEXT;
DROP INDEX fleet_cells_stack;
CREATE INDEX fleet_cells_stack ON fleet_cells(stack, customer) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_version ON fleet_cells(stack, version_key) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_version ON fleet_cells(version, stack) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_digest ON fleet_cells(digest) WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_prerelease ON fleet_cells(customer, stack) WHERE prerelease = 1;
CREATE INDEX fleet_cells_behind ON fleet_cells(customer, stack) WHERE behind > 0;
CREATE INDEX fleet_cells_stack_behind ON fleet_cells(stack, customer) WHERE behind > 0;
CREATE INDEX receipts_changes ON receipts(stack, finished_ns, received_at, id, customer, version,
    kind, finished_at)
    WHERE kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes');
"#;

/// Version 6: `adoption_deltas` keeps, per stack, day (UTC, `YYYY-MM-DD`) and
/// version, how many customers began (positive) or stopped (negative) running that
/// version that day, kept as receipts arrive ([`ledger::note_in_adoption`]), so a
/// stack's adoption over time is a running sum over at most days × versions rows
/// instead of a replay of every change. Filled here from the changes already stored:
/// each change starts its version (a destroy starts none) and ends the version the
/// customer's previous change (same order as `fleet_cells`) left in place. The
/// covering index the replay read changes through has no reader left, so no
/// receipt pays for it any more.
const V6: &str = r#"
CREATE TABLE adoption_deltas (
    stack TEXT NOT NULL,
    day TEXT NOT NULL,
    version TEXT NOT NULL,
    delta INTEGER NOT NULL,
    PRIMARY KEY (stack, day, version)
) WITHOUT ROWID;
INSERT INTO adoption_deltas (stack, day, version, delta)
WITH ordered AS (
    SELECT stack, substr(finished_at, 1, 10) AS day, version, kind = 'destroy' AS destroy,
        LAG(CASE WHEN kind = 'destroy' THEN NULL ELSE version END) OVER (
            PARTITION BY customer, stack ORDER BY finished_ns, received_at, id DESC) AS previous
    FROM receipts
    WHERE kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes'))
SELECT stack, day, version, SUM(delta) FROM (
    SELECT stack, day, version, 1 AS delta FROM ordered WHERE NOT destroy
    UNION ALL
    SELECT stack, day, previous, -1 FROM ordered WHERE previous IS NOT NULL
) GROUP BY stack, day, version HAVING SUM(delta) <> 0;
DROP INDEX IF EXISTS receipts_changes;
"#;

/// Version 7: releases, a customer's whole environment as one version (an OCI index
/// in `<namespace>/releases/<name>`). Kept in `release_indexes` and their parts in
/// `release_index_stacks` and `release_index_services`, because `releases` (from
/// version 1) already names single stack versions (bundles). Receipts name the
/// release they were applied as part of; those stored before this version may carry
/// one in their document already (the runner wrote it before the ledger read it),
/// so it is copied out.
const V7: &str = r#"
CREATE TABLE release_indexes (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    version_key BLOB NOT NULL,
    prerelease INTEGER NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    published_at TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE INDEX release_indexes_digest ON release_indexes(repository, digest);
CREATE TABLE release_index_stacks (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position INTEGER NOT NULL,
    stack TEXT NOT NULL,
    stack_version TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, stack)
);
CREATE TABLE release_index_services (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    position INTEGER NOT NULL,
    service TEXT NOT NULL,
    reference TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (name, version, service)
);
ALTER TABLE receipts ADD COLUMN release_name TEXT;
ALTER TABLE receipts ADD COLUMN release_version TEXT;
ALTER TABLE receipts ADD COLUMN release_digest TEXT;
UPDATE receipts SET
    release_name = json_extract(document, '$.receipt.release.name'),
    release_version = json_extract(document, '$.receipt.release.version'),
    release_digest = json_extract(document, '$.receipt.release.digest')
WHERE json_extract(document, '$.receipt.release.name') IS NOT NULL;
CREATE INDEX receipts_release ON receipts(release_name, customer) WHERE release_name IS NOT NULL;
"#;

/// Version 8: how each installation key came to be trusted (`admin`, `report`, or
/// `import` for a key pinned on first use by `receipts import --customer`), so the
/// support views do not call a key from an imported file "trusted" like one a
/// customer's token vouched for. Keys from before stay NULL: pinned by a first
/// receipt, path unknown. And whether the vendor registered a customer (`customer
/// add`, a customer token) or knows it only from its receipts: before, those with a
/// name, an environment or a token count as registered.
const V8: &str = r#"
ALTER TABLE installation_keys ADD COLUMN pinned_by TEXT;
ALTER TABLE customers ADD COLUMN registered_at TEXT;
UPDATE customers SET registered_at = created
WHERE name IS NOT NULL OR environment IS NOT NULL
   OR id IN (SELECT customer FROM tokens WHERE customer IS NOT NULL);
CREATE INDEX installation_keys_public_key ON installation_keys(public_key);
"#;

/// Version 9: rollouts. Channels with their ordered waves and soak time (a channel
/// without a row has the defaults, [`rollouts::DEFAULT_WAVES`] and 24 h); each
/// customer's channel and wave, and when its runner last reported a sync pass; the
/// vendor's signed promotions (`promotions`, ordered by version precedence); the
/// rollouts the registry schedules from them, with who was assigned when
/// (`rollout_assignments`, each with its health-gate standing, kept current as the
/// customer's receipts and sync reports arrive, so the gate is read by key) and
/// their history (`rollout_events`); release receipts (`release_receipts`) and each
/// customer's last sync state per release (`customer_sync`).
const V9: &str = r#"
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
"#;

/// Version 10: forecasts. One document per release version (`forecasts`: the whole
/// `ReleaseForecast` as the packager sent it), each customer's part of it by key
/// (`forecast_customers`, what a receipt and an assignment look up), the real plans
/// that missed their forecast (`forecast_misses`, one per receipt and stack; an
/// unacknowledged one fails its customer's health gate until `resume` acknowledges
/// it), and each runner's approval policy as its last sync reported it.
const V10: &str = r#"
CREATE TABLE forecasts (
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'stack')),
    digest TEXT NOT NULL,
    channel TEXT,
    created_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (release, version)
);
CREATE TABLE forecast_customers (
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    customer TEXT NOT NULL,
    outcome TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (release, version, customer)
) WITHOUT ROWID;
CREATE TABLE forecast_misses (
    id INTEGER PRIMARY KEY,
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    differences TEXT NOT NULL,
    drifted TEXT NOT NULL,
    explained_by_drift INTEGER NOT NULL,
    at TEXT NOT NULL,
    acknowledged INTEGER NOT NULL DEFAULT 0,
    UNIQUE (receipt_id, stack)
);
CREATE INDEX forecast_misses_open ON forecast_misses(release, version, customer) WHERE acknowledged = 0;
CREATE INDEX forecast_misses_version ON forecast_misses(release, version, id);
CREATE INDEX forecast_misses_customer ON forecast_misses(customer, id);
ALTER TABLE customers ADD COLUMN approve TEXT;
"#;

/// Version 11: a token's name (`token create --name`), so `token list` tells three
/// publisher tokens apart. Names are unique among tokens that have one (revoking and
/// re-creating `ci` needs a new name, or the old token's name is still taken, which
/// keeps `token list` unambiguous); tokens from before have none.
const V11: &str = r#"
ALTER TABLE tokens ADD COLUMN name TEXT;
CREATE UNIQUE INDEX tokens_name ON tokens(name) WHERE name IS NOT NULL;
"#;

/// Version 12: what support needs to answer "why" and to be told. Customers carry
/// their details (cloud account, region, contact, free notes; `customer set`), the
/// account searchable by index. Alerts: the webhooks (`alerts`, with the events
/// each wants and how its last delivery went), an outbox of events waiting for
/// delivery (`alert_outbox`: written in the receipt's own transaction, delivered
/// by a background task, so a slow webhook never holds a receipt up), and which
/// customers were already announced silent (`customers.silent_since`, so `silent`
/// is said once per silence). Stack versions keep the token that recorded them
/// (`releases.pushed_by`: who pushed what, by the token's id and so its name).
/// An index answers the stack pages from `fleet_cells` alone: per stack its
/// versions with their failed and drifted counts.
const V12: &str = r#"
ALTER TABLE customers ADD COLUMN account TEXT;
ALTER TABLE customers ADD COLUMN region TEXT;
ALTER TABLE customers ADD COLUMN contact TEXT;
ALTER TABLE customers ADD COLUMN notes TEXT;
ALTER TABLE customers ADD COLUMN silent_since TEXT;
CREATE INDEX customers_account ON customers(account) WHERE account IS NOT NULL;
ALTER TABLE releases ADD COLUMN pushed_by TEXT;
CREATE INDEX fleet_cells_stack_state ON fleet_cells(stack, version, failed, drifted);
CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    webhook TEXT NOT NULL,
    events TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('cli', 'config')),
    created TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    last_ok_at TEXT,
    last_error TEXT,
    last_error_at TEXT,
    UNIQUE (webhook, source)
);
CREATE TABLE alert_outbox (
    id INTEGER PRIMARY KEY,
    alert INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    created TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ns INTEGER NOT NULL
);
CREATE INDEX alert_outbox_due ON alert_outbox(next_ns);
"#;

/// Version 13: support bundles a runner wrote (`stackpack-runner support-bundle`)
/// and an operator imported for a customer (`support-bundle import`), kept whole
/// (capped in size) for the customer's support page to offer.
const V13: &str = r#"
CREATE TABLE support_bundles (
    id INTEGER PRIMARY KEY,
    customer TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    bytes BLOB NOT NULL
);
CREATE INDEX support_bundles_customer ON support_bundles(customer, id);
"#;

/// Version 14: the pieces an upload session's bytes are stored in when blobs live
/// in object storage (`--blobs s3://…`): each a whole object
/// (`uploads/<id>/<start>`), recorded once written, so that any replica sharing
/// the database and the bucket can tell the session's size and go on with it.
/// Filesystem uploads keep one file and record none.
const V14: &str = r#"
CREATE TABLE upload_segments (
    upload TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
    start INTEGER NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (upload, start)
) WITHOUT ROWID;
"#;

/// Version 15: what several `serve` processes on one database share, so that no
/// correctness rests on one process's memory. Support page sessions (`ui_sessions`:
/// the SHA-256 of the session id and of its token, with an expiry), so a sign-in on
/// one replica holds on every other; the alert outbox names each event's customer
/// and who claimed it until when (`claimed_until_ns`), so one replica delivers an
/// event and the others leave it, and a killed replica's claim lapses; and `leases`,
/// one row per job that only one process may run at a time (`gc`), with the holder
/// and an expiry for the same reason.
const V15: &str = r#"
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
"#;

/// Version 16:
/// the index pages and search answer from what is kept, never from a pass over
/// every cell. `fleet_stack_versions` counts, per stack and version in place
/// (`''` for none), its cells and how many of them failed or drifted; triggers on
/// `fleet_cells` keep it in the same transaction as every change of a cell,
/// whichever code path made it. Search walks the customers who run a version, or
/// have a cell of a stack, in id order and stops after a page: the cells never
/// attempted (a drift report before any apply) have an index of their own, partial,
/// so that no fleet filter (all of them on attempted cells) prefers it to theirs.
/// A stack page's failed and drifted customers are read per stack, in customer
/// order, like its behind ones, not picked out of the whole fleet's.
const V16: &str = r#"
CREATE TABLE fleet_stack_versions (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    cells INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    drifted INTEGER NOT NULL,
    PRIMARY KEY (stack, version)
) WITHOUT ROWID;
INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
    SELECT stack, COALESCE(version, ''), COUNT(*), SUM(failed), SUM(drifted)
    FROM fleet_cells GROUP BY stack, COALESCE(version, '');
CREATE TRIGGER fleet_stack_versions_insert AFTER INSERT ON fleet_cells BEGIN
    INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
        VALUES (new.stack, COALESCE(new.version, ''), 1, new.failed, new.drifted)
        ON CONFLICT (stack, version) DO UPDATE SET cells = cells + 1,
            failed = failed + excluded.failed, drifted = drifted + excluded.drifted;
END;
CREATE TRIGGER fleet_stack_versions_delete AFTER DELETE ON fleet_cells BEGIN
    UPDATE fleet_stack_versions SET cells = cells - 1, failed = failed - old.failed,
        drifted = drifted - old.drifted
        WHERE stack = old.stack AND version = COALESCE(old.version, '');
END;
CREATE TRIGGER fleet_stack_versions_update AFTER UPDATE OF stack, version, failed, drifted
    ON fleet_cells
    WHEN old.stack IS NOT new.stack OR old.version IS NOT new.version
        OR old.failed IS NOT new.failed OR old.drifted IS NOT new.drifted
BEGIN
    UPDATE fleet_stack_versions SET cells = cells - 1, failed = failed - old.failed,
        drifted = drifted - old.drifted
        WHERE stack = old.stack AND version = COALESCE(old.version, '');
    INSERT INTO fleet_stack_versions (stack, version, cells, failed, drifted)
        VALUES (new.stack, COALESCE(new.version, ''), 1, new.failed, new.drifted)
        ON CONFLICT (stack, version) DO UPDATE SET cells = cells + 1,
            failed = failed + excluded.failed, drifted = drifted + excluded.drifted;
END;
CREATE INDEX fleet_cells_version_customer ON fleet_cells(version, customer)
    WHERE attempt_id IS NOT NULL;
CREATE INDEX fleet_cells_stack_unattempted ON fleet_cells(stack, customer)
    WHERE attempt_id IS NULL;
CREATE INDEX fleet_cells_stack_failed ON fleet_cells(stack, customer) WHERE failed = 1;
CREATE INDEX fleet_cells_stack_drifted ON fleet_cells(stack, customer) WHERE drifted = 1;
"#;

/// Version 17: facts about the registry itself (`registry_settings`): where its
/// blobs live (`blobs`: `data-folder` or `s3://bucket/prefix`), so that a replica or
/// `gc` started with another `--blobs` than the one the database's rows point into
/// is refused instead of answering "blob unknown" for everything, or collecting
/// nothing.
const V17: &str = r#"
CREATE TABLE registry_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"#;

/// Version 18: a plan is an attempt (`ledger::counts_as_attempt`): each cell's
/// last attempt is chosen again among its applies, rollbacks, destroys and plans, so
/// a failed plan shows as the last attempt failed (`fleet --failed`). The columns
/// that follow from it are refilled by [`ledger::refresh_cells`].
const V18: &str = r#"
UPDATE fleet_cells SET attempt_id = (SELECT r.id FROM receipts r
    WHERE r.customer = fleet_cells.customer AND r.stack = fleet_cells.stack
    AND r.kind IN ('apply', 'rollback', 'destroy', 'plan')
    ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1);
"#;

/// The schema, one step per version: a database at `user_version` N has had the
/// first N steps. Opening runs the missing ones in order, each in one transaction
/// with its version bump, so a crash leaves a database at one version or the next.
const MIGRATIONS: &[fn(&Transaction) -> rusqlite::Result<()>] = &[
    |tx| tx.execute_batch(V1),
    |tx| {
        tx.execute_batch(V2)?;
        normalise_receipt_times(tx)
    },
    |tx| tx.execute_batch(V3),
    |tx| {
        tx.execute_batch(V4)?;
        ledger::refresh_cell_flags(tx, None)
    },
    |tx| {
        tx.execute_batch(V5)?;
        ledger::fill_precedence_keys(tx)?;
        ledger::refresh_cells(tx, None)
    },
    |tx| tx.execute_batch(V6),
    |tx| tx.execute_batch(V7),
    |tx| tx.execute_batch(V8),
    |tx| tx.execute_batch(V9),
    |tx| tx.execute_batch(V10),
    |tx| tx.execute_batch(V11),
    |tx| tx.execute_batch(V12),
    |tx| tx.execute_batch(V13),
    |tx| tx.execute_batch(V14),
    |tx| tx.execute_batch(V15),
    |tx| tx.execute_batch(V16),
    |tx| tx.execute_batch(V17),
    |tx| {
        tx.execute_batch(V18)?;
        ledger::refresh_cells(tx, None)
    },
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Rewrites stored receipt times as UTC and fills `finished_ns` (migration to v2).
fn normalise_receipt_times(tx: &Transaction) -> rusqlite::Result<()> {
    let rows: Vec<(String, String, String)> = tx
        .prepare("SELECT id, started_at, finished_at FROM receipts")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = tx.prepare(
        "UPDATE receipts SET started_at = ?2, finished_at = ?3, finished_ns = ?4 WHERE id = ?1",
    )?;
    for (id, started, finished) in rows {
        // Stored times were checked as RFC 3339 on the way in; one that still does not
        // parse keeps its text and sorts first rather than stopping the upgrade.
        let (started, _) = utc_time(&started).unwrap_or((started, 0));
        let (finished, ns) = utc_time(&finished).unwrap_or((finished, 0));
        update.execute(rusqlite::params![id, started, finished, ns])?;
    }
    Ok(())
}

/// An RFC 3339 time (any offset, `t`/`z` in either case, any fraction) as UTC text
/// and as nanoseconds since the epoch, so that times compare as times.
pub fn utc_time(value: &str) -> Option<(String, i64)> {
    use time::format_description::well_known::Rfc3339;
    let parsed = time::OffsetDateTime::parse(value, &Rfc3339).ok()?;
    let utc = parsed.to_offset(time::UtcOffset::UTC);
    let nanos = i64::try_from(utc.unix_timestamp_nanos()).ok()?;
    Some((utc.format(&Rfc3339).ok()?, nanos))
}

/// Why a data folder's database cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database is at schema version {found}, newer than this build's {known}: a newer `stackpack-registry` wrote it")]
    Newer { found: u32, known: u32 },
    /// PostgreSQL refused, could not be reached, or holds a newer schema; `target`
    /// names host, port and database, never the password.
    #[error("{target}: {error}")]
    Postgres {
        target: pg_pool::PgTarget,
        error: sql::PgError,
    },
    #[error("{0}")]
    BadUrl(#[from] pg_pool::BadUrl),
    /// A PostgreSQL database no registry has used yet (no `schema_version` table):
    /// only `serve` and `init` create one there.
    #[error("there is no registry in {0}: it has no registry schema")]
    NoRegistry(pg_pool::PgTarget),
}

/// One writer and two pools of readers: SQLite in WAL mode lets readers run beside
/// the writer and never wait for it.
///
/// - [`Db::read`] is for quick, indexed lookups on the hot path (a manifest, a
///   blob's size, a token). It runs inline: WAL readers take no lock a writer
///   holds, and its pool is never held by a slow query.
/// - [`Db::scan`] is for queries that may take a while (the ledger's fleet-wide
///   answers, the catalog, gc's listings). Like [`Db::write`], it runs off the
///   async workers, on a pool of its own.
///
/// Support's ledger queries ([`Db::support`]) have a pool of their own, one
/// connection per two cores: however many support clients loop on the fleet, they
/// take turns on it, and the other cores stay free for `/v2/`.
pub struct Db {
    store: Store,
    /// Where each call's time goes (`/metrics`): waiting for a connection included,
    /// since that is what a request waits for.
    metrics: Arc<Metrics>,
}

/// The connections of whichever backend keeps the metadata; the same shapes on
/// both (one writer, readers, scanners, support's).
enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

struct SqliteStore {
    writer: Mutex<Connection>,
    readers: Pool,
    scanners: Pool,
    supporters: Pool,
}

struct PgStore {
    writer: pg_pool::PgPool,
    readers: pg_pool::PgPool,
    scanners: pg_pool::PgPool,
    supporters: pg_pool::PgPool,
}

/// Which database keeps the metadata and the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The kinds of database call [`Db`] runs, as `/metrics` labels them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Read,
    Scan,
    Support,
    Write,
}

impl Call {
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Read => "read",
            Call::Scan => "scan",
            Call::Support => "support",
            Call::Write => "write",
        }
    }
}

/// A few reader connections, handed out round robin.
struct Pool {
    connections: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl Pool {
    fn open(path: &Path, size: usize) -> rusqlite::Result<Pool> {
        Ok(Pool {
            connections: (0..size.max(1))
                .map(|_| connect(path, false).map(Mutex::new))
                .collect::<rusqlite::Result<_>>()?,
            next: AtomicUsize::new(0),
        })
    }

    fn run<T, E: Into<Error>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, Error> {
        let conn = pick(&self.connections, &self.next);
        f(&conn).map_err(Into::into)
    }
}

/// How long a statement waits for another connection's write lock (this process's
/// or another replica's) before it fails as busy.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn connect(path: &Path, create: bool) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_WAIT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: a write is on disk (the WAL synced) before we answer 201; NORMAL could
    // lose the last acknowledged pushes on a power loss.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// How many of support's queries may run at once: one per two cores, at least one.
pub fn support_connections() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// How long a process waits for another that is migrating the same database (its
/// steps hold the write lock): several replicas started at once on an old database
/// all come up, one migrating, the others waiting and then finding it current.
const MIGRATION_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Brings the database up to [`SCHEMA_VERSION`], one step per transaction. Each step
/// reads the version inside its own immediate transaction, so of two processes
/// migrating at once, the second waits for the first's step and then sees it done.
/// Returns the version the database was at when this process got to it.
fn migrate(conn: &mut Connection) -> Result<u32, OpenError> {
    conn.busy_timeout(MIGRATION_WAIT)?;
    let migrated = migrate_steps(conn);
    conn.busy_timeout(BUSY_WAIT)?;
    migrated
}

fn migrate_steps(conn: &mut Connection) -> Result<u32, OpenError> {
    let mut found = None;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let found = *found.get_or_insert(version);
        if version > SCHEMA_VERSION {
            return Err(OpenError::Newer {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let Some(step) = MIGRATIONS.get(version as usize) else {
            return Ok(found);
        };
        step(&tx)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

/// Brings the existing database at `path` to [`SCHEMA_VERSION`]; returns the
/// version it was at when this process got the write lock (another process may
/// have migrated it meanwhile: then this one found it current).
pub fn migrate_file(path: &Path) -> Result<u32, OpenError> {
    migrate(&mut connect(path, false)?)
}

/// The schema version of the database at `path`, read without changing anything.
pub fn stored_version(path: &Path) -> rusqlite::Result<u32> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(BUSY_WAIT)?;
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Runs blocking database work without stalling the async worker it is called from:
/// on the multi-threaded runtime the worker hands its other tasks to another thread
/// first, so `/healthz` and pulls keep answering while a writer waits for SQLite's
/// lock (held by `gc` in another process, say). Elsewhere it simply runs.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// [`blocking`] for PostgreSQL's sync client, which blocks on a runtime of its own:
/// on a current-thread runtime (no worker to hand the others to) that cannot run,
/// so the call is refused by name there rather than panicking.
fn blocking_pg<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if let Ok(handle) = Handle::try_current() {
        if handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
            return Err(Error::internal(
                "a PostgreSQL database is used from a current-thread tokio runtime, where its \
                 blocking client cannot run: use the multi-threaded runtime",
            ));
        }
    }
    blocking(f)
}

/// One of `slots`, handed out round robin: the first free one from `next` on, or,
/// when all are busy, the one `next` points at once it is free.
fn pick<'a, T>(slots: &'a [Mutex<T>], next: &AtomicUsize) -> std::sync::MutexGuard<'a, T> {
    let count = slots.len();
    let start = next.fetch_add(1, Ordering::Relaxed);
    (0..count)
        .find_map(|offset| slots[(start + offset) % count].try_lock().ok())
        .unwrap_or_else(|| {
            slots[start % count]
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        })
}

impl Db {
    /// Opens the database at `path`, creating it if needed, and migrates it forward.
    pub fn open(path: &Path, readers: usize) -> Result<Db, OpenError> {
        Db::open_with(path, readers, true)
    }

    /// Opens an existing database (a missing file is an error) and migrates it forward.
    pub fn open_existing(path: &Path, readers: usize) -> Result<Db, OpenError> {
        Db::open_with(path, readers, false)
    }

    fn open_with(path: &Path, readers: usize, create: bool) -> Result<Db, OpenError> {
        let mut writer = connect(path, create)?;
        migrate(&mut writer)?;
        Ok(Db {
            store: Store::Sqlite(SqliteStore {
                writer: Mutex::new(writer),
                readers: Pool::open(path, readers)?,
                scanners: Pool::open(path, 2)?,
                supporters: Pool::open(path, support_connections())?,
            }),
            metrics: Arc::default(),
        })
    }

    /// Opens the PostgreSQL database at `url` (`postgres://user[:password]@host[:port]/database`;
    /// the password from the URL or `PGPASSWORD`) and migrates it forward
    /// ([`pg::migrate`]); one a newer build migrated is refused.
    pub fn open_url(url: &str, readers: usize) -> Result<Db, OpenError> {
        Db::open_postgres(&pg_pool::PgTarget::parse(url)?, readers)
    }

    /// [`Db::open_url`] for a URL already read.
    pub fn open_postgres(target: &pg_pool::PgTarget, readers: usize) -> Result<Db, OpenError> {
        Db::open_postgres_with(target, readers, true)
    }

    /// Opens a PostgreSQL database a registry already uses and migrates it forward;
    /// one with no registry schema is [`OpenError::NoRegistry`] and nothing is
    /// created in it, as [`Db::open_existing`] leaves a missing file alone.
    pub fn open_postgres_existing(
        target: &pg_pool::PgTarget,
        readers: usize,
    ) -> Result<Db, OpenError> {
        Db::open_postgres_with(target, readers, false)
    }

    fn open_postgres_with(
        target: &pg_pool::PgTarget,
        readers: usize,
        create: bool,
    ) -> Result<Db, OpenError> {
        let failed = |error| OpenError::Postgres {
            target: target.clone(),
            error,
        };
        let epoch = Arc::default();
        let open = || {
            let mut client = target.connect()?;
            let found = create || pg::has_registry(&mut client)?;
            if found {
                pg::migrate(&mut client)?;
            }
            // Closed on a thread of its own, as `PgPool`'s clients are.
            std::thread::spawn(move || drop(client)).join().ok();
            if !found {
                return Ok(None);
            }
            Ok(Some(PgStore {
                writer: pg_pool::PgPool::open(target, 1, &epoch)?,
                readers: pg_pool::PgPool::open(target, readers, &epoch)?,
                scanners: pg_pool::PgPool::open(target, 2, &epoch)?,
                supporters: pg_pool::PgPool::open(target, support_connections(), &epoch)?,
            }))
        };
        let store = blocking(|| open().map_err(failed))?
            .ok_or_else(|| OpenError::NoRegistry(target.clone()))?;
        Ok(Db {
            store: Store::Postgres(store),
            metrics: Arc::default(),
        })
    }

    /// The same database, timing its calls into `metrics` (the registry's own, which
    /// `/metrics` renders) rather than into a set nobody reads.
    pub fn reporting_to(self, metrics: Arc<Metrics>) -> Db {
        Db { metrics, ..self }
    }

    pub fn backend(&self) -> Backend {
        match self.store {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    fn timed<T>(&self, call: Call, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let value = f();
        self.metrics
            .observe_database(self.backend().as_str(), call.as_str(), started.elapsed());
        value
    }

    /// Runs a quick, indexed lookup `f` on a reader connection (inline on SQLite).
    pub fn read_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => self.timed(Call::Read, || s.readers.run(|c| f(&Conn::Sqlite(c)))),
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Read, || Ok(p.readers.read(f)?)))
            }
        }
    }

    /// Runs a query `f` that may take a while, off the async workers.
    pub fn scan_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => {
                blocking(|| self.timed(Call::Scan, || s.scanners.run(|c| f(&Conn::Sqlite(c)))))
            }
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Scan, || Ok(p.scanners.read(f)?)))
            }
        }
    }

    /// Runs one of support's ledger queries `f`, off the async workers, on the
    /// support pool: at most [`support_connections`] run at once.
    pub fn support_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => {
                blocking(|| self.timed(Call::Support, || s.supporters.run(|c| f(&Conn::Sqlite(c)))))
            }
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Support, || Ok(p.supporters.read(f)?)))
            }
        }
    }

    /// Runs `f` in one write transaction: all of it or none of it. Writers take
    /// turns, on PostgreSQL across replicas too ([`pg_pool::WRITE_LOCK`]).
    pub fn write_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, Error>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(_) => self.write(|tx| f(&Conn::Sqlite(tx))),
            Store::Postgres(p) => blocking_pg(|| self.timed(Call::Write, || p.writer.write(f))),
        }
    }

    /// SQLite's connections, for the SQLite-only calls; on PostgreSQL a
    /// [`SqlError::NotOnPostgres`] naming `what`.
    fn sqlite(&self, what: &'static str) -> Result<&SqliteStore, Error> {
        match &self.store {
            Store::Sqlite(s) => Ok(s),
            Store::Postgres(_) => Err(SqlError::NotOnPostgres(what).into()),
        }
    }

    /// [`Db::read_any`] on SQLite only, for a closure that still calls a SQLite-only
    /// function or takes a `rusqlite::Connection` (listed in `POSTGRES.md`). A
    /// PostgreSQL `Db` refuses it ([`SqlError::NotOnPostgres`]); once none is left
    /// they become `sqlite_*` and the `*_any` methods take these names.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, Error> {
        let s = self.sqlite("a read through a SQLite connection")?;
        self.timed(Call::Read, || s.readers.run(f))
    }

    /// [`Db::scan_any`] for a closure that still calls a SQLite-only function.
    pub fn scan<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, Error> {
        let s = self.sqlite("a scan through a SQLite connection")?;
        blocking(|| self.timed(Call::Scan, || s.scanners.run(f)))
    }

    /// [`Db::support_any`] for a closure that still calls a SQLite-only function.
    pub fn support<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let s = self.sqlite("a support query through a SQLite connection")?;
        blocking(|| self.timed(Call::Support, || s.supporters.run(f)))
    }

    /// [`Db::write_any`] for a closure that still calls a SQLite-only function:
    /// one immediate write transaction.
    pub fn write<T>(&self, f: impl FnOnce(&Transaction) -> Result<T, Error>) -> Result<T, Error> {
        let s = self.sqlite("a write through a SQLite transaction")?;
        blocking(|| {
            self.timed(Call::Write, || {
                let mut conn = s
                    .writer
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = f(&tx)?;
                tx.commit()?;
                Ok(value)
            })
        })
    }

    /// `PRAGMA integrity_check`: `ok` when the file is sound (SQLite only).
    pub fn integrity_check(&self) -> Result<String, Error> {
        self.sqlite("PRAGMA integrity_check")?;
        self.scan(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
    }
}

/// A value the database keeps as its text (a receipt kind, an outcome, a role, a
/// digest, a version): written with `Display`, read back with `FromStr`, so a row
/// that does not parse fails where it is read instead of travelling on as a string.
pub struct Text<T>(pub T);

impl<T: std::fmt::Display> rusqlite::ToSql for Text<T> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::from(self.0.to_string()))
    }
}

impl<T> rusqlite::types::FromSql for Text<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        text.parse().map(Text).map_err(|e| {
            rusqlite::types::FromSqlError::Other(format!("stored `{text}`: {e}").into())
        })
    }
}

/// Column `index` of a row, read through its text into `T`.
pub fn parsed<T>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    Ok(row.get::<_, Text<T>>(index)?.0)
}

/// [`parsed`] for a column that may be `NULL`.
pub fn parsed_opt<T>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    Ok(row.get::<_, Option<Text<T>>>(index)?.map(|text| text.0))
}

/// The plan SQLite picks for `sql` with `values`, one line per step (`SCAN f`,
/// `SEARCH f USING INDEX …`, `USE TEMP B-TREE FOR ORDER BY`), for the tests that
/// hold statements to their indexes.
pub(crate) fn query_plan(
    conn: &Connection,
    sql: &str,
    values: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<String>> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
        .query_map(values, |r| r.get(3))?
        .collect()
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Now as RFC 3339, UTC, to the second.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("zero nanoseconds is valid");
    now.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}
