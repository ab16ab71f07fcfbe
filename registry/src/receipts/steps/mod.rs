//! What storing one receipt does, step by step, registered in one place
//! (`STEPS`) and run in order inside the receipt's one transaction: the ledger
//! learns of the customer, the signing key is checked (or pinned on first use),
//! the cell's alert flags are read, the receipt is filed (history, cells,
//! adoption), a real plan is held against its forecast, the customer's open
//! rollouts hear of it, and alerts are queued for the states its cell entered.
//! A step that fails rolls the whole transaction back.
//!
//! Each step is a module of its own that knows the database and the domain, never
//! the HTTP layer (no `AppState`, no extractors): the same steps run for
//! `POST /api/v1/receipts` and `receipts import`.

pub mod alert;
mod forecast;
mod key;
mod ledger;
mod rollout;

use crate::api::Deployment;
use crate::db::sql::Sql;
use crate::error::{Error, Result};
use crate::timestamp::Timestamp;

use super::{Checked, FirstUse};

/// One step of storing a receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The customer is noted (first seen, or seen again).
    Customer,
    /// The receipt's key is one of the customer's installation keys, or is pinned.
    InstallationKey,
    /// The cell's alert flags before the receipt, for [`Step::Alert`].
    AlertFlagsBefore,
    /// The receipt is filed: history, the customer's cell, adoption.
    Ledger,
    /// A real plan that differs from its forecast fails the customer's gate.
    ForecastHold,
    /// The customer's open rollouts refresh its gate and move on.
    RolloutRefresh,
    /// Alerts queued for each state the cell entered.
    Alert,
}

/// The steps, in the order they run.
pub(super) const STEPS: [Step; 7] = [
    Step::Customer,
    Step::InstallationKey,
    Step::AlertFlagsBefore,
    Step::Ledger,
    Step::ForecastHold,
    Step::RolloutRefresh,
    Step::Alert,
];

impl Step {
    pub(super) fn run<C: Sql + ?Sized>(self, tx: &C, s: &mut Storing<'_>) -> Result<()>
    where
        Error: From<C::Error>,
    {
        match self {
            Step::Customer => ledger::note_customer(tx, s),
            Step::InstallationKey => key::run(tx, s),
            Step::AlertFlagsBefore => alert::flags_before(tx, s),
            Step::Ledger => ledger::run(tx, s),
            Step::ForecastHold => forecast::run(tx, s),
            Step::RolloutRefresh => rollout::run(tx, s),
            Step::Alert => alert::run(tx, s),
        }
    }
}

/// What the steps share while one receipt is stored.
pub(super) struct Storing<'a> {
    checked: &'a Checked,
    /// The receipt's deployment as stored: stamped with the time it arrived.
    deployment: Deployment,
    now: &'a Timestamp,
    first_use: &'a FirstUse<'a>,
    /// Set by [`Step::AlertFlagsBefore`].
    flags_before: Option<(bool, bool, bool)>,
}

impl<'a> Storing<'a> {
    pub(super) fn new(
        checked: &'a Checked,
        now: &'a Timestamp,
        first_use: &'a FirstUse<'a>,
    ) -> Self {
        Storing {
            checked,
            deployment: Deployment {
                received_at: now.clone(),
                ..checked.deployment.clone()
            },
            now,
            first_use,
            flags_before: None,
        }
    }

    fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    fn document(&self) -> &str {
        &self.checked.document
    }
}
