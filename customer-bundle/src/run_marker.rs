//! Who is running a stack whose state is in the customer's bucket, for every runner
//! home that shares the bucket: a small record beside the state
//! (`<key>.stackpack-run.json`: host, home, process, since), written when a run takes
//! its stack and marked finished when it ends. The engine's own lock record names
//! only `user@host`; with this, `unlock` from another home sees whether the lock's
//! holder is alive (on this machine: its process; on another: it cannot tell, and
//! says so) instead of breaking a live apply's lock.
//!
//! Best effort: a run whose record cannot be written still runs (the engine's lock
//! protects the state), and says nothing; a run killed with SIGKILL leaves its record
//! `running`, which `unlock` reads against the process table.

use serde::{Deserialize, Serialize};

use crate::home::{Home, S3Backend};

/// The record beside the state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMarker {
    pub host: String,
    pub home: String,
    pub pid: u32,
    /// RFC 3339, UTC.
    pub since: String,
    pub running: bool,
}

impl RunMarker {
    /// True when the run is alive on this machine: its process exists and is a
    /// runner.
    pub fn alive_here(&self) -> bool {
        self.host == hostname()
            && std::fs::read(format!("/proc/{}/cmdline", self.pid))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("stackpack-runner"))
    }

    /// True when it may still be running: marked running, and not a process of
    /// this machine that is gone.
    pub fn may_be_running(&self) -> bool {
        self.running && (self.host != hostname() || self.alive_here())
    }
}

/// This machine's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn key(s3: &S3Backend, customer: &str, stack: &str) -> String {
    let state = s3.state_key(customer, stack);
    format!(
        "{}.stackpack-run.json",
        state.strip_suffix(".tfstate").unwrap_or(&state)
    )
}

/// The record of `stack`'s last run, if the bucket holds one.
pub fn read(home: &Home, stack: &str) -> Option<RunMarker> {
    let s3 = home.config.backend.s3()?;
    let client = crate::state_bucket::client(s3).ok()??;
    let text = client
        .get_object(&s3.bucket, &key(s3, &home.config.customer, stack))
        .ok()??;
    serde_json::from_str(&text).ok()
}

/// A run's record, marked finished when dropped (however the run ends but SIGKILL).
pub struct Running {
    s3: S3Backend,
    key: String,
    marker: RunMarker,
}

/// Records that this process runs `stack`; `None` for a home whose state is not in
/// a bucket, or when the record cannot be written.
pub fn start(home: &Home, stack: &str) -> Option<Running> {
    let s3 = home.config.backend.s3()?.clone();
    // Another home's run that may be alive keeps its record: this run will meet its
    // state lock, and must not make it look finished when it stops.
    if read(home, stack).is_some_and(|other| other.may_be_running()) {
        return None;
    }
    let running = Running {
        key: key(&s3, &home.config.customer, stack),
        marker: RunMarker {
            host: hostname(),
            home: home.root.display().to_string(),
            pid: std::process::id(),
            since: crate::receipts::now(),
            running: true,
        },
        s3,
    };
    running.write().then_some(running)
}

impl Running {
    fn write(&self) -> bool {
        let Ok(Some(client)) = crate::state_bucket::client(&self.s3) else {
            return false;
        };
        let text = serde_json::to_string_pretty(&self.marker).expect("serialises") + "\n";
        client.put_object(&self.s3.bucket, &self.key, &text).is_ok()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.marker.running = false;
        let _ = self.write();
    }
}

/// Marks `stack`'s recorded run finished (after its lock was broken on purpose).
pub fn clear(home: &Home, stack: &str) {
    let Some(mut marker) = read(home, stack) else {
        return;
    };
    let Some(s3) = home.config.backend.s3() else {
        return;
    };
    marker.running = false;
    let done = Running {
        s3: s3.clone(),
        key: key(s3, &home.config.customer, stack),
        marker,
    };
    let _ = done.write();
    std::mem::forget(done);
}
