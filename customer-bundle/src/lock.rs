//! One runner at a time per stack: an exclusive file lock under `<home>/locks/`.
//! The holder writes its process id into the file, so the second runner can say who
//! holds it. The operating system releases the lock when the holder exits, even on a
//! crash, so a stale lock cannot block the next run. The engine inherits the lock's
//! descriptor, so a runner killed mid-apply leaves the stack locked until its engine
//! has stopped too.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use fs2::FileExt;

use super::error::{io, Error, Result};
use super::files;

/// An exclusive lock on a file that holds its holder's process id: what the stack
/// locks and the home's sync lock are both made of.
pub struct PidFileLock {
    file: File,
}

impl PidFileLock {
    /// Tries once: the lock, or `Err(holder)` with the holder's process id as the
    /// file says it (empty when unknown).
    pub fn try_acquire(path: &Path) -> Result<std::result::Result<PidFileLock, String>> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io("open", path, e))?;
        if file.try_lock_exclusive().is_err() {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Ok(Err(holder.trim().to_string()));
        }
        file.set_len(0).map_err(|e| io("write", path, e))?;
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(Ok(PidFileLock { file }))
    }

    /// The lock's file descriptor, for the engine to inherit: the lock is held until
    /// the engine exits too, even when the runner itself is killed.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}

impl Drop for PidFileLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = FileExt::unlock(&self.file);
    }
}

pub struct StackLock {
    lock: PidFileLock,
}

impl StackLock {
    /// Takes the lock for `stack`, waiting up to `wait` for another runner to finish.
    /// `on_wait` is called once when the lock is busy.
    pub fn acquire(
        dir: &Path,
        stack: &str,
        wait: Duration,
        on_wait: impl FnOnce(&str),
    ) -> Result<StackLock> {
        files::create_folder(dir)?;
        let path = dir.join(format!("{stack}.lock"));
        let start = Instant::now();
        let mut on_wait = Some(on_wait);
        loop {
            let holder = match PidFileLock::try_acquire(&path)? {
                Ok(lock) => return Ok(StackLock { lock }),
                Err(holder) => holder,
            };
            let who = if holder.is_empty() {
                "another runner".to_string()
            } else {
                format!("another runner (process {holder})")
            };
            if start.elapsed() >= wait {
                return Err(Error::refused(format!(
                    "stack `{stack}` is busy: {who} is working on it"
                ))
                .at(path.display())
                .hint("wait for it to finish, or pass `--wait SECONDS` to wait for it"));
            }
            if let Some(on_wait) = on_wait.take() {
                on_wait(&who);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Takes the lock for `stack` at once, or says which process holds it (its id
    /// as the lock file gives it, empty when unknown).
    pub fn try_take(dir: &Path, stack: &str) -> Result<std::result::Result<StackLock, String>> {
        files::create_folder(dir)?;
        let path = dir.join(format!("{stack}.lock"));
        Ok(PidFileLock::try_acquire(&path)?.map(|lock| StackLock { lock }))
    }

    /// The lock's file descriptor, for the engine to inherit.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.lock.raw_fd()
    }
}
