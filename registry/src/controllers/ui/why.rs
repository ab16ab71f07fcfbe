//! Why a customer's stack stands as it does, from its receipts: the engine's error
//! of a failed run, the resources and attribute names of a drift, and the runner,
//! engine, providers and platform that reported. Receipts come from customers'
//! machines: every text is bounded again here and escaped, whatever the receipt
//! holds.

use stackpack_schema::receipt::{plain_text, Outcome, Receipt, SignedReceipt};

use super::html::{html, joined, muted, prose, Markup};

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
fn shown(text: &str) -> Markup {
    prose(&plain_text(text, SHOWN))
}

/// Why a failed run failed: "`aws_eks_node_group.gpu`: InsufficientInstanceCapacity".
/// The wording is [`crate::reason::failure`]'s, as the CLI and the API give it.
pub fn failure(r: &Receipt) -> Option<Markup> {
    r.failure
        .as_ref()
        .map(|f| prose(&crate::reason::failure(f)))
}

/// What drifted: "`aws_vpc.main` (tags, cidr_block), `aws_subnet.a`", the first
/// few resources and how many more.
pub fn drift(r: &Receipt) -> Option<Markup> {
    let mut named: Vec<Markup> = if r.drift.is_empty() {
        r.drifted
            .iter()
            .map(|a| html! { code { (shown(a)) } })
            .collect()
    } else {
        r.drift
            .iter()
            .map(|d| {
                let attributes: Vec<Markup> = d.attributes.iter().map(|a| shown(a)).collect();
                html! {
                    code { (shown(&d.address)) }
                    @if !attributes.is_empty() {
                        " (" (joined(&attributes, &html! { ", " })) ")"
                    }
                }
            })
            .collect()
    };
    if named.is_empty() {
        return None;
    }
    let more = named.len().saturating_sub(DRIFT_SHOWN);
    named.truncate(DRIFT_SHOWN);
    Some(html! {
        (joined(&named, &html! { ", " }))
        @if more > 0 { " and " (more) " more" }
    })
}

/// The reason a receipt gives for its outcome, or nothing to say.
pub fn reason(r: &Receipt) -> Markup {
    let said = match r.outcome {
        Outcome::Failed => failure(r).or_else(|| Some(no_reason())),
        Outcome::Drifted => drift(r).or_else(|| Some(no_reason())),
        Outcome::Succeeded | Outcome::NoChanges => None,
    };
    html! {
        @if let Some(said) = said { span.why { (said) } }
    }
}

fn no_reason() -> Markup {
    muted(crate::reason::NONE_GIVEN)
}

/// What reported: "runner 0.4.0 · tofu 1.8.0 · linux_amd64 · hashicorp/aws 5.31.0".
pub fn runner(r: &Receipt) -> Markup {
    let mut parts = Vec::new();
    if let Some(runner) = &r.runner {
        parts.push(html! { "runner " (shown(&runner.version)) });
    }
    parts.push(html! { (r.engine.name.as_str()) " " (shown(&r.engine.version)) });
    if let Some(runner) = &r.runner {
        parts.push(shown(&runner.platform));
        for p in runner.providers.iter().take(DRIFT_SHOWN) {
            let short = p
                .source
                .strip_prefix("registry.terraform.io/")
                .or_else(|| p.source.strip_prefix("registry.opentofu.org/"))
                .unwrap_or(&p.source);
            parts.push(html! { (shown(short)) " " (shown(&p.version)) });
        }
    }
    joined(&parts, &html! { " · " })
}
