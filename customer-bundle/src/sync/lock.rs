//! One sync pass at a time per home: `<home>/sync.lock`, taken without waiting. A
//! second `sync` says who holds it and does nothing. The operating system releases
//! the lock when its holder exits, even when it is killed.

use std::fs::File;
use std::io::{Read, Seek, Write};

use fs2::FileExt;

use crate::error::{io, Error, Result};
use crate::home::Home;

pub struct SyncLock {
    file: File,
}

impl SyncLock {
    pub fn acquire(home: &Home) -> Result<SyncLock> {
        let path = home.root.join("sync.lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("open", &path, e))?;
        if file.try_lock_exclusive().is_err() {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let who = match holder.trim() {
                "" => "another `stackpack-runner sync`".to_string(),
                pid => format!("another `stackpack-runner sync` (process {pid})"),
            };
            return Err(
                Error::refused(format!("{who} holds this home's lock: nothing was done"))
                    .at(format!("`{}`", path.display()))
                    .hint("one pass at a time per home; this one runs again at its next interval"),
            );
        }
        file.set_len(0).map_err(|e| io("write", &path, e))?;
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(SyncLock { file })
    }
}

impl Drop for SyncLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = FileExt::unlock(&self.file);
    }
}
