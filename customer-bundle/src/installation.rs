//! One opened installation: the runner home and its configuration, with the ledger
//! opened (and migrated) at most once per command, on first use. A command opens it
//! once and hands it to every operation it runs; nothing else opens the ledger.

use std::sync::{Mutex, OnceLock};

use super::error::Result;
use super::home::Home;
use super::ledger::Ledger;

pub struct Installation {
    pub home: Home,
    ledger: OnceLock<Ledger>,
    /// Held while the ledger is being opened, so that two stacks of a release
    /// starting at once never open it twice.
    opening: Mutex<()>,
}

impl Installation {
    /// The installation in `home`. The ledger is not touched yet: a command that
    /// never reads it (a fresh home's `status`, an import) never creates it.
    pub fn open(home: Home) -> Installation {
        Installation {
            home,
            ledger: OnceLock::new(),
            opening: Mutex::new(()),
        }
    }

    /// The ledger, opened and brought to the newest schema the first time it is asked
    /// for.
    pub fn ledger(&self) -> Result<&Ledger> {
        if let Some(ledger) = self.ledger.get() {
            return Ok(ledger);
        }
        let _opening = self
            .opening
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(ledger) = self.ledger.get() {
            return Ok(ledger);
        }
        let ledger = Ledger::open(&self.home.ledger_path())?;
        Ok(self.ledger.get_or_init(|| ledger))
    }
}

/// An installation is its home, opened: paths and settings are read through it.
impl std::ops::Deref for Installation {
    type Target = Home;

    fn deref(&self) -> &Home {
        &self.home
    }
}
