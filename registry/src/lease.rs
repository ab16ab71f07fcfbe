//! Jobs only one process runs at a time, whichever replica starts them: `gc` (the
//! command, or a replica's background sweep of expired uploads). The job holds a
//! lease row in the database ([`crate::db::leases`]) for [`TTL`], renewed by a
//! thread beside it every third of that, and given back when it ends; a process
//! killed mid-job stops renewing, and its lease lapses within [`TTL`] (at once for
//! the next job on the same host, which sees that the holder's process is gone).
//!
//! The lease saves work done twice; it is not what keeps gc safe. Each of gc's
//! deletions checks the database again under the write lock ([`crate::gc`]), so even
//! a lease lost to a stalled holder never deletes what a push just recorded.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use crate::db::leases::Held;
use crate::db::locks::Lock;
use crate::db::{self, Db};
use crate::error::Error;

/// How long a lease lasts without renewal.
pub const TTL: Duration = Duration::from_secs(30);

/// The name of gc's lease.
pub const GC: &str = "gc";

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into())
}

/// This process, as a lease names its holder: `pid N on HOST`, with a random
/// suffix so two runs of one process never mistake each other's lease.
pub fn holder() -> String {
    let mut nonce = [0u8; 4];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
    format!(
        "pid {} on {} ({})",
        std::process::id(),
        host(),
        hex::encode(nonce)
    )
}

/// A holder on this host whose process is gone (killed, say): its lease need not
/// be waited out. A holder elsewhere, or a pid in use (even reused), is taken as
/// alive: then the lease is waited out, which is only slower.
fn dead_here(holder: &str) -> bool {
    let Some((pid, rest)) = holder
        .strip_prefix("pid ")
        .and_then(|rest| rest.split_once(" on "))
    else {
        return false;
    };
    let on_this_host = rest
        .rsplit_once(" (")
        .is_some_and(|(host_name, _)| host_name == host());
    let pid_known = pid.parse::<u32>().is_ok();
    on_this_host && pid_known && !Path::new("/proc").join(pid).exists()
}

fn ttl_ns() -> i64 {
    i64::try_from(TTL.as_nanos()).unwrap_or(i64::MAX)
}

fn take(db: &Db, name: &str, holder: &str) -> Result<Result<(), Held>, Error> {
    let now = crate::rollout::now_ns();
    db.write_keyed(&[Lock::Lease(name)], |tx| {
        let until = now + ttl_ns();
        match db::leases::take(tx, name, holder, now, until)? {
            Err(held) if dead_here(&held.holder) => {
                match db::leases::take_over(tx, name, holder, &held.holder, until)? {
                    true => Ok(Ok(())),
                    false => Ok(Err(held)),
                }
            }
            taken => Ok(taken),
        }
    })
}

/// Runs `job` holding lease `name`, or returns who holds it now without running it.
pub fn hold<T>(db: &Db, name: &str, job: impl FnOnce() -> T) -> Result<Result<T, Held>, Error> {
    let holder = holder();
    if let Err(held) = take(db, name, &holder)? {
        return Ok(Err(held));
    }
    let (stop, stopped) = mpsc::channel::<()>();
    let value = std::thread::scope(|scope| {
        let holder = &holder;
        scope.spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(TTL / 3) {
                match take(db, name, holder) {
                    Ok(Ok(())) => {}
                    Ok(Err(other)) => {
                        tracing::warn!(lease = name, holder = %other.holder, "lost a lease to another process (this one stalled longer than its lease)");
                        return;
                    }
                    Err(e) => tracing::warn!(lease = name, error = %e.message, "renewing a lease failed"),
                }
            }
        });
        let value = job();
        drop(stop);
        value
    });
    db.write_keyed(&[Lock::Lease(name)], |tx| {
        Ok(db::leases::give_back(tx, name, &holder)?)
    })?;
    Ok(Ok(value))
}
