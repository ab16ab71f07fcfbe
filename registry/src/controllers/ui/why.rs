//! Why a customer's stack stands as it does, from its receipts: the engine's error
//! of a failed run, the resources and attribute names of a drift, and the runner,
//! engine, providers and platform that reported. Receipts come from customers'
//! machines: every text is bounded again here and escaped, whatever the receipt
//! holds.

use stackpack_schema::receipt::{plain_text, Outcome, Receipt, SignedReceipt};

use super::html::{esc, prose};

/// The longest reason a page shows, in characters.
const SHOWN: usize = 300;
/// Drifted resources named before "and N more".
const DRIFT_SHOWN: usize = 5;

/// The receipt in a stored document, if it reads.
pub fn receipt(document: &str) -> Option<Receipt> {
    serde_json::from_str::<SignedReceipt>(document)
        .ok()
        .map(|s| s.receipt)
}

/// `text` bounded and on one line, as HTML.
fn shown(text: &str) -> String {
    prose(&plain_text(text, SHOWN))
}

/// Why a failed run failed: "`aws_eks_node_group.gpu`: InsufficientInstanceCapacity".
/// The wording is [`crate::reason::failure`]'s, as the CLI and the API give it.
pub fn failure(r: &Receipt) -> Option<String> {
    r.failure
        .as_ref()
        .map(|f| prose(&crate::reason::failure(f)))
}

/// What drifted: "`aws_vpc.main` (tags, cidr_block), `aws_subnet.a`", the first
/// few resources and how many more.
pub fn drift(r: &Receipt) -> Option<String> {
    let mut named: Vec<String> = if r.drift.is_empty() {
        r.drifted
            .iter()
            .map(|a| format!("<code>{}</code>", shown(a)))
            .collect()
    } else {
        r.drift
            .iter()
            .map(|d| {
                let attributes: Vec<String> = d.attributes.iter().map(|a| shown(a)).collect();
                if attributes.is_empty() {
                    format!("<code>{}</code>", shown(&d.address))
                } else {
                    format!(
                        "<code>{}</code> ({})",
                        shown(&d.address),
                        attributes.join(", ")
                    )
                }
            })
            .collect()
    };
    if named.is_empty() {
        return None;
    }
    let more = named.len().saturating_sub(DRIFT_SHOWN);
    named.truncate(DRIFT_SHOWN);
    let mut out = named.join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    Some(out)
}

/// The reason a receipt gives for its outcome, or nothing to say.
pub fn reason(r: &Receipt) -> String {
    let said = match r.outcome {
        Outcome::Failed => failure(r).or_else(|| Some(no_reason())),
        Outcome::Drifted => drift(r).or_else(|| Some(no_reason())),
        Outcome::Succeeded | Outcome::NoChanges => None,
    };
    said.map(|s| format!("<span class=\"why\">{s}</span>"))
        .unwrap_or_default()
}

fn no_reason() -> String {
    format!(
        "<span class=\"muted\">{}</span>",
        esc(crate::reason::NONE_GIVEN)
    )
}

/// What reported: "runner 0.4.0 · tofu 1.8.0 · linux_amd64 · hashicorp/aws 5.31.0".
pub fn runner(r: &Receipt) -> String {
    let mut parts = Vec::new();
    if let Some(runner) = &r.runner {
        parts.push(format!("runner {}", shown(&runner.version)));
    }
    parts.push(format!(
        "{} {}",
        esc(r.engine.name.as_str()),
        shown(&r.engine.version)
    ));
    if let Some(runner) = &r.runner {
        parts.push(shown(&runner.platform));
        for p in runner.providers.iter().take(DRIFT_SHOWN) {
            let short = p
                .source
                .strip_prefix("registry.terraform.io/")
                .or_else(|| p.source.strip_prefix("registry.opentofu.org/"))
                .unwrap_or(&p.source);
            parts.push(format!("{} {}", shown(short), shown(&p.version)));
        }
    }
    parts.join(" · ")
}
