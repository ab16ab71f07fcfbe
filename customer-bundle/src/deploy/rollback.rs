//! The automatic rollback after an apply whose smoke checks failed, when
//! `runner.toml` says `on-failure = "rollback"`.

use crate::engine::PlanDetails;
use crate::error::{Error, Result};
use crate::home::OnFailure;
use crate::installation::Installation;
use stackpack_schema::receipt::ReceiptKind;

use super::request::{Options, Report, Request, Target, Ui};

/// After the apply `report` of `stack` whose smoke checks failed: rolls back at once
/// when the policy says so and there is an earlier version; either way an error
/// naming what failed.
pub(super) fn after_failed_smoke(
    installation: &Installation,
    stack: String,
    wait: std::time::Duration,
    mut report: Report,
    ui: &mut Ui,
) -> Result<Report> {
    let home = &installation.home;
    let r = &report.receipt.receipt;
    let failed = report
        .smoke
        .iter()
        .map(|f| format!("\n  {}: {}", f.check, f.message))
        .collect::<String>();
    let applied = format!(
        "smoke checks failed after applying `{stack}@{}` (receipt `{}`, outcome `failed`):{failed}",
        r.version, r.id
    );
    let can_roll_back = report.previous.as_ref().is_some_and(|p| *p != r.version);
    if home.config.policy.on_failure != OnFailure::Rollback || !can_roll_back {
        let hint = if can_roll_back {
            format!("run `stackpack-runner rollback {stack}` to go back, or set `on-failure = \"rollback\"` under `[policy]` in `runner.toml` to do it at once")
        } else {
            "there is no earlier version to roll back to; fix the inputs or ask the vendor".into()
        };
        return Err(Error::refused(applied).hint(hint));
    }
    (ui.status)(&format!(
        "smoke checks failed: rolling back `{stack}` to `{}` at once",
        report
            .previous
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default()
    ));
    let mut confirm_rollback = |_: &str, _: ReceiptKind, _: &PlanDetails| true;
    let mut rollback_ui = Ui {
        verbose: ui.verbose,
        quiet: ui.quiet,
        status: ui.status,
        confirm: &mut confirm_rollback,
    };
    let rollback = super::run_once(
        installation,
        Request {
            stack: stack.clone(),
            target: Target::Rollback { inputs: vec![] },
            wait,
            // What the failed apply created may go again, buckets included: the
            // policies see those addresses as named by the operator.
            options: Options {
                allow_replace: report
                    .plan
                    .changes
                    .iter()
                    .filter(|c| c.action == stackpack_schema::plan::Action::Create)
                    .map(|c| c.address.clone())
                    .collect(),
                ..Options::default()
            },
        },
        &mut rollback_ui,
    );
    match rollback {
        Ok(done) => {
            let message = format!(
                "{applied}\nrolled back to `{stack}@{}` (receipt `{}`, outcome `{}`)",
                done.receipt.receipt.version, done.receipt.receipt.id, done.receipt.receipt.outcome
            );
            report.rollback = Some(Box::new(done));
            Err(Error::refused(message).hint(
                "`stackpack-runner status` shows the last attempt; `stackpack-runner receipts list` both receipts",
            ))
        }
        Err(error) => Err(Error::refused(format!(
            "{applied}\nthe automatic rollback failed too: {}",
            error.message
        ))
        .hint(format!(
            "the stack is at `{stack}@{}`: run `stackpack-runner rollback {stack}` once the cause is fixed",
            r.version
        ))),
    }
}
