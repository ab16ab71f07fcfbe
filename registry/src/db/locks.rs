//! Locks keyed by what they protect (issue 42), for the writes that run beside
//! each other on PostgreSQL.
//!
//! Every write transaction ([`super::Db::write_keyed`]) holds, exclusively, one
//! advisory lock per [`Lock`] it names, and nothing wider: receipts for different
//! customers never wait on each other, nor pushes to different repositories, nor
//! blob uploads, token uses, support-page sessions, leases, a rollout's tick or a
//! person's command on another rollout or channel. There is no registry-wide
//! write lock (the one earlier releases took is still taken *shared*, for them
//! alone, see [`super::pg_pool::WRITE_LOCK`]). Whatever else a write touches is
//! either keyed by what it locked or changed by one statement the database keeps
//! whole (`INSERT … ON CONFLICT DO UPDATE SET n = t.n + excluded.n` on a shared
//! counter; claiming an alert event, `UPDATE … WHERE claimed_until_ns <= now`).
//!
//! What a write only finds by reading is held midway, once found, and read again
//! when it may have changed before it was held:
//!
//! - one rollout's state machine ([`Lock::Rollout`], in id order): a receipt
//!   reaching the customer's open rollouts, a placement moving its channel's, a
//!   promotion superseding the release's older ones (under the channel's lock, so
//!   no rollout starts in it meanwhile);
//! - the stacks and releases whose versions a manifest deleted by digest takes with
//!   it (under the repository's lock, so none is recorded there meanwhile);
//! - the blobs a manifest names, held *shared* ([`super::sql::Sql::share_all`]):
//!   pushes naming one go on together, and gc, which holds each blob it deletes
//!   exclusively, never deletes one between a push's check that it is there and the
//!   push's commit.
//!
//! Held at the start, locks are taken in one order ([`ordered`]). Held midway,
//! they come after every lock held at the start, in one order within their kind,
//! and no write holding one then waits for a lock another takes at the start. A
//! deadlock the database still finds between row locks runs the transaction again.
//!
//! On SQLite all of this is moot: one writer at a time (`BEGIN IMMEDIATE`), so
//! [`super::sql::Sql::lock`] does nothing there.

use sha2::{Digest, Sha256};

/// What a keyed write protects. Keys of one kind never collide with another's
/// (each has its own class number); two values of one kind that hash alike only
/// wait for each other, which is safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lock<'a> {
    /// One customer's receipts, cells, keys and alerts.
    Customer(&'a str),
    /// One receipt id: the same receipt sent twice at once is stored once.
    Receipt(&'a str),
    /// One installation key, pinned to at most one customer.
    InstallationKey(&'a str),
    /// One rollout's state machine (taken after the others, in id order).
    Rollout(i64),
    /// One repository's manifests and tags: a stable tag set once, prerelease
    /// numbers taken once, whoever pushes through whichever replica.
    Repository(&'a str),
    /// One stack's versions as the ledger knows them (`releases`, its modules).
    Stack(&'a str),
    /// One release's versions (`release_indexes`).
    Release(&'a str),
    /// One upload session's row: its segments recorded in order, its end once.
    Upload(&'a str),
    /// One blob by digest: its row and its bytes put in place once.
    Blob(&'a str),
    /// One owner's upload sessions, counted against its cap; or one token's row.
    Token(&'a str),
    /// One claimed alert event in the outbox: its delivery recorded once.
    Outbox(i64),
    /// One support-page session's row (by its id's hash, in hex).
    Session(&'a str),
    /// One lease's row (`gc`, the upload sweep): taken, renewed and given back by
    /// one holder at a time.
    Lease(&'a str),
    /// One channel: its waves, who is placed in it, and the rollouts promotions
    /// start in it (one running per release and kind; the one before superseded).
    Channel(&'a str),
    /// One registry-wide setting (where blobs live, the configured webhooks): set
    /// by a replica as it starts or by a person's command, one at a time.
    Setting(&'a str),
}

impl Lock<'_> {
    /// The two `int4` keys of `pg_advisory_xact_lock(int4, int4)`: the kind's class
    /// and 32 bits of the value's SHA-256. (The two-key space is apart from the
    /// one-key space the write and migration locks use.)
    pub fn key(&self) -> (i32, i32) {
        let (class, value) = match self {
            Lock::Customer(id) => (1, id.as_bytes().to_vec()),
            Lock::Receipt(id) => (2, id.as_bytes().to_vec()),
            Lock::InstallationKey(id) => (3, id.as_bytes().to_vec()),
            Lock::Rollout(id) => (4, id.to_be_bytes().to_vec()),
            Lock::Repository(name) => (5, name.as_bytes().to_vec()),
            Lock::Stack(name) => (6, name.as_bytes().to_vec()),
            Lock::Release(name) => (7, name.as_bytes().to_vec()),
            Lock::Upload(id) => (8, id.as_bytes().to_vec()),
            Lock::Blob(digest) => (9, digest.as_bytes().to_vec()),
            Lock::Token(id) => (10, id.as_bytes().to_vec()),
            Lock::Outbox(id) => (11, id.to_be_bytes().to_vec()),
            Lock::Session(id) => (12, id.as_bytes().to_vec()),
            Lock::Lease(name) => (13, name.as_bytes().to_vec()),
            Lock::Channel(name) => (14, name.as_bytes().to_vec()),
            Lock::Setting(name) => (15, name.as_bytes().to_vec()),
        };
        let hash = Sha256::digest(&value);
        (
            0x5354_4b00 | class,
            i32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]]),
        )
    }
}

/// `locks` in the one order every transaction takes them in, each once, so two
/// transactions waiting for each other's keys cannot happen.
pub fn ordered<'a>(locks: &[Lock<'a>]) -> Vec<Lock<'a>> {
    let mut locks = locks.to_vec();
    locks.sort_by_key(Lock::key);
    locks.dedup_by_key(|lock| lock.key());
    locks
}

#[cfg(test)]
mod tests {
    use super::{ordered, Lock};

    #[test]
    fn keys_are_stable_apart_by_kind_and_taken_once_in_one_order() {
        // Stable across builds and replicas: the key is the value's hash, not an
        // address or a random seed.
        assert_eq!(Lock::Customer("acme").key(), Lock::Customer("acme").key());
        assert_ne!(Lock::Customer("acme").key(), Lock::Receipt("acme").key());
        assert_ne!(Lock::Customer("acme").key(), Lock::Customer("globex").key());
        let a = ordered(&[
            Lock::Receipt("r1"),
            Lock::Customer("acme"),
            Lock::Customer("acme"),
        ]);
        let b = ordered(&[Lock::Customer("acme"), Lock::Receipt("r1")]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
    }
}
