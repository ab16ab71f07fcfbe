//! How a transfer reports its progress: one observer for the whole transfer, told
//! the total bytes that will move (what the destination lacks, known from the
//! manifest) before the first byte, then every step as it moves, from whichever of
//! the parallel blob transfers moved it.
//!
//! Steps are increments, never positions: blobs move at the same time, so a
//! position that one blob reports would overwrite another's (a bar once ended at
//! one blob's size, "24 MiB", for 61 MB sent).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Hears one transfer.
pub trait TransferObserver: Send + Sync {
    /// Before [`TransferObserver::begin`]: `here` of the `of` blobs needed were
    /// already at the destination (checked), and will not move.
    fn already_here(&self, _here: usize, _of: usize) {}
    /// The transfer starts: `total_bytes` in `blobs` blobs will move.
    fn begin(&self, total_bytes: u64, blobs: usize);
    /// `bytes` more moved.
    fn advance(&self, bytes: u64);
    /// Every byte moved. Not called when the transfer failed.
    fn finish(&self);
}

/// Shared by the parallel blob transfers of one push or pull.
pub type Progress = Arc<dyn TransferObserver>;

/// Counts what a transfer announced and what it moved.
#[derive(Debug, Default)]
pub struct Tally {
    total: AtomicU64,
    moved: AtomicU64,
    blobs: AtomicUsize,
    begun: AtomicUsize,
    finished: AtomicUsize,
}

impl Tally {
    pub fn new() -> Arc<Tally> {
        Arc::new(Tally::default())
    }

    /// The total announced by the last `begin`.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }

    /// Bytes moved since the last `begin`.
    pub fn moved(&self) -> u64 {
        self.moved.load(Ordering::SeqCst)
    }

    /// Blobs announced by the last `begin`.
    pub fn blobs(&self) -> usize {
        self.blobs.load(Ordering::SeqCst)
    }

    /// How many transfers began and how many finished.
    pub fn transfers(&self) -> (usize, usize) {
        (
            self.begun.load(Ordering::SeqCst),
            self.finished.load(Ordering::SeqCst),
        )
    }
}

impl TransferObserver for Tally {
    fn begin(&self, total_bytes: u64, blobs: usize) {
        self.total.store(total_bytes, Ordering::SeqCst);
        self.moved.store(0, Ordering::SeqCst);
        self.blobs.store(blobs, Ordering::SeqCst);
        self.begun.fetch_add(1, Ordering::SeqCst);
    }

    fn advance(&self, bytes: u64) {
        self.moved.fetch_add(bytes, Ordering::SeqCst);
    }

    fn finish(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// How a [`Bar`] shows itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    /// A live bar on stderr (a terminal), then one summary line.
    Terminal,
    /// A line when the transfer starts and one when it ends (CI logs).
    Lines,
}

/// A progress bar for one transfer: its length is the total announced before the
/// first byte, and its clock starts then (not when the bar was made, which for a
/// publish is before the build), so the rate it shows is the transfer's own.
pub struct Bar {
    label: String,
    /// `pushed` or `pulled`, for the summary line.
    verb: &'static str,
    display: Display,
    tally: Tally,
    state: Mutex<Option<(Instant, Option<indicatif::ProgressBar>)>>,
    /// From [`TransferObserver::already_here`]: blobs not moved, of how many.
    here: Mutex<Option<(usize, usize)>>,
}

impl Bar {
    pub fn new(label: impl Into<String>, verb: &'static str, display: Display) -> Arc<Bar> {
        Arc::new(Bar {
            label: label.into(),
            verb,
            display,
            tally: Tally::default(),
            state: Mutex::new(None),
            here: Mutex::new(None),
        })
    }

    /// What this bar counted.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }
}

impl TransferObserver for Bar {
    fn already_here(&self, here: usize, of: usize) {
        if here == 0 {
            return;
        }
        if let Ok(mut noted) = self.here.lock() {
            *noted = Some((here, of));
        }
        // On a terminal the bar shows the rest; with nothing left, no bar comes.
        if self.display == Display::Terminal || here == of {
            eprintln!("`{}`: {}", self.label, here_text(here, of));
        }
    }

    fn begin(&self, total_bytes: u64, blobs: usize) {
        self.tally.begin(total_bytes, blobs);
        let bar = (self.display == Display::Terminal && total_bytes > 0).then(|| {
            let bar = indicatif::ProgressBar::new(total_bytes);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:20} {bar:30} {binary_bytes:>10}/{binary_total_bytes:10} {binary_bytes_per_sec}",
                )
                .expect("valid template"),
            );
            bar.set_message(self.label.clone());
            bar
        });
        if self.display == Display::Lines && total_bytes > 0 {
            let here = match self.here.lock().ok().and_then(|h| *h) {
                Some((here, of)) => format!("; {}", here_text(here, of)),
                None => String::new(),
            };
            eprintln!(
                "`{}`: {blobs} blob(s) to move, {} ({total_bytes} bytes){here}",
                self.label,
                indicatif::BinaryBytes(total_bytes)
            );
        }
        if let Ok(mut state) = self.state.lock() {
            if let Some((_, Some(old))) = state.take() {
                old.finish_and_clear();
            }
            *state = Some((Instant::now(), bar));
        }
    }

    fn advance(&self, bytes: u64) {
        self.tally.advance(bytes);
        if let Ok(state) = self.state.lock() {
            if let Some((_, Some(bar))) = state.as_ref() {
                bar.inc(bytes);
            }
        }
    }

    fn finish(&self) {
        self.tally.finish();
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let Some((started, bar)) = state.take() else {
            return;
        };
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let moved = self.tally.moved();
        if moved == 0 {
            return;
        }
        let seconds = started.elapsed().as_secs_f64().max(0.001);
        eprintln!(
            "`{}`: {} {} ({moved} bytes) in {seconds:.2} s, {}/s",
            self.label,
            self.verb,
            indicatif::BinaryBytes(moved),
            indicatif::BinaryBytes((moved as f64 / seconds) as u64)
        );
    }
}

/// `2 of 3 blobs already here`, or `all 3 blobs already here, nothing to move`.
fn here_text(here: usize, of: usize) -> String {
    if here == of {
        format!("all {of} blob(s) already here, checked: nothing to move")
    } else {
        format!("{here} of {of} blob(s) already here, checked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_from_parallel_blobs_add_up_to_the_announced_total() {
        let tally = Tally::new();
        tally.begin(61_000_000, 3);
        let blobs = [
            24 * 1024 * 1024u64,
            30_000_000,
            61_000_000 - 24 * 1024 * 1024 - 30_000_000,
        ];
        std::thread::scope(|scope| {
            for size in blobs {
                let tally = &tally;
                scope.spawn(move || {
                    let mut left = size;
                    while left > 0 {
                        let step = left.min(1 << 20);
                        tally.advance(step);
                        left -= step;
                    }
                });
            }
        });
        tally.finish();
        assert_eq!(
            tally.moved(),
            61_000_000,
            "every blob's bytes, not the last one's"
        );
        assert_eq!(tally.total(), 61_000_000);
        assert_eq!(tally.blobs(), 3);
        assert_eq!(tally.transfers(), (1, 1));
    }

    #[test]
    fn a_second_transfer_starts_counting_again() {
        let bar = Bar::new("data-plane", "pushed", Display::Lines);
        bar.begin(10, 1);
        bar.advance(10);
        bar.finish();
        bar.begin(4, 1);
        bar.advance(4);
        bar.finish();
        assert_eq!((bar.tally().total(), bar.tally().moved()), (4, 4));
        assert_eq!(bar.tally().transfers(), (2, 2));
    }
}
