//! One sync pass at a time per home: `<home>/sync.lock`, taken without waiting. A
//! second `sync` says who holds it and does nothing. The operating system releases
//! the lock when its holder exits, even when it is killed.

use crate::error::{Error, Result};
use crate::home::Home;
use crate::lock::PidFileLock;

pub struct SyncLock {
    _lock: PidFileLock,
}

impl SyncLock {
    pub fn acquire(home: &Home) -> Result<SyncLock> {
        let path = home.root.join("sync.lock");
        match PidFileLock::try_acquire(&path)? {
            Ok(lock) => Ok(SyncLock { _lock: lock }),
            Err(holder) => {
                let who = match holder.as_str() {
                    "" => "another `stackpack-runner sync`".to_string(),
                    pid => format!("another `stackpack-runner sync` (process {pid})"),
                };
                Err(
                    Error::refused(format!("{who} holds this home's lock: nothing was done"))
                        .at(format!("`{}`", path.display()))
                        .hint(
                            "one pass at a time per home; this one runs again at its next interval",
                        ),
                )
            }
        }
    }
}
