//! SIGINT and SIGTERM while the engine runs.
//!
//! Killing the runner must never leave an engine applying with nobody to record what
//! it did. While an engine runs, the two signals are caught instead of ending the
//! runner: the engine is asked once to stop (SIGINT, which Terraform and OpenTofu
//! answer by finishing the resource in flight and writing state), the runner waits
//! for it, and the run ends with a truthful `failed` receipt. Outside engine runs the
//! signals keep their default effect.

use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(signal: libc::c_int) {
    // Only an atomic store: nothing else is safe inside a signal handler.
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM until dropped, then restores what was there before.
pub struct Guard {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Guard {
    pub fn install() -> Guard {
        RECEIVED.store(0, Ordering::SeqCst);
        let mut previous = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction with a handler that only stores an atomic.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Guard { previous }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the disposition saved by `install`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}

/// The signal received while a [`Guard`] was installed, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// `SIGTERM`, `SIGINT`, or the number.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// The exit status of a run `signal` stopped: 128 + its number, as a shell reports a
/// program the signal ended (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}
