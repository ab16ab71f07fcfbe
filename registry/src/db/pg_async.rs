//! The pull's hot path on PostgreSQL, answered on the server's own runtime.
//!
//! Every other call goes through the blocking client ([`super::pg_pool`]), which
//! keeps the `Db` closures synchronous. For the one statement an authenticated
//! manifest pull makes, that costs more than the statement: `block_in_place`
//! hands the worker's other requests to another thread on every call, and a
//! pooled client carries one request at a time, so PostgreSQL wakes once per
//! statement. A `tokio_postgres` connection here is shared by every request
//! that picks it and pipelines their statements: no thread is handed off, and
//! PostgreSQL reads several statements per wake-up under load.
//!
//! Statements are prepared once per connection and kept by their text, which is
//! always one of the code's own (`&'static str`), so the cache cannot grow. A
//! connection found closed (PostgreSQL restarted, the network cut) is replaced on
//! the next call; the call that found it answers the error, which the edge turns
//! into a 503 as for every other call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::pg_pool::PgTarget;
use super::sql::{column_names, pg_params, pg_values, Param, PgError, Row};

/// A few pipelined connections, picked round robin.
pub struct PgPipelines {
    target: PgTarget,
    slots: Vec<Mutex<Option<Arc<Pipeline>>>>,
    next: AtomicUsize,
}

/// One connection and the statements prepared on it.
struct Pipeline {
    client: tokio_postgres::Client,
    statements: Mutex<HashMap<&'static str, Prepared>>,
}

/// A statement prepared on one connection, and its columns' names (every row of
/// it shares them).
type Prepared = (tokio_postgres::Statement, Arc<[String]>);

impl PgPipelines {
    /// `connections` connections at most, each opened on first use (on the
    /// runtime of the call that needs it).
    pub fn new(target: PgTarget, connections: usize) -> PgPipelines {
        PgPipelines {
            target,
            slots: (0..connections.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// Runs the statement `sql` with `params`: its one row, if any.
    pub async fn query_opt(
        &self,
        sql: &'static str,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, PgError> {
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        let pipeline = self.pipeline(slot).await?;
        let answer = pipeline.query_opt(sql, params).await;
        if answer.is_err() && pipeline.client.is_closed() {
            // Replaced on the next call; a newer one put there meanwhile stays.
            let mut held = lock(slot);
            if held.as_ref().is_some_and(|p| Arc::ptr_eq(p, &pipeline)) {
                *held = None;
            }
        }
        answer
    }

    /// The slot's open connection, or a new one put there.
    async fn pipeline(
        &self,
        slot: &Mutex<Option<Arc<Pipeline>>>,
    ) -> Result<Arc<Pipeline>, PgError> {
        if let Some(open) = lock(slot).as_ref().filter(|p| !p.client.is_closed()) {
            return Ok(open.clone());
        }
        let (client, connection) = self
            .target
            .pipelined()
            .connect(tokio_postgres::NoTls)
            .await?;
        // The connection's own task: it ends when the client is dropped or the
        // server goes away (then `is_closed` says so).
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %PgError::from(e), "a pipelined PostgreSQL connection closed");
            }
        });
        let pipeline = Arc::new(Pipeline {
            client,
            statements: Mutex::new(HashMap::new()),
        });
        *lock(slot) = Some(pipeline.clone());
        Ok(pipeline)
    }
}

impl Pipeline {
    async fn query_opt(
        &self,
        sql: &'static str,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, PgError> {
        let known = lock(&self.statements).get(sql).cloned();
        let (statement, names) = match known {
            Some(known) => known,
            None => {
                let statement = self.client.prepare(sql).await?;
                let names = column_names(&statement);
                let prepared = (statement, names);
                lock(&self.statements).insert(sql, prepared.clone());
                prepared
            }
        };
        match self
            .client
            .query_opt(&statement, &pg_params(params))
            .await?
        {
            Some(row) => Ok(Some(Row::new(names, pg_values(&row)?))),
            None => Ok(None),
        }
    }
}

/// A poisoned lock still holds a usable map or slot: nothing is left half-written
/// in either by a panic.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
