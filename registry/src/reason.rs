//! Why a failed run failed, in the one wording every interface gives: the CLI's
//! tables and `--json`, the API (`lastAttempt.reason`), alerts and the pages (which
//! show the backticked address as code). Receipts come from customers' machines:
//! each text is cleaned and bounded again here, whatever the receipt holds.

use stackpack_schema::receipt::{Failure, SignedReceipt};

/// The longest address or summary shown, in characters.
pub const SHOWN: usize = stackpack_schema::receipt::REASON_SHOWN;

/// What a failed receipt without a failure says (its runner predates them).
pub const NONE_GIVEN: &str = "no reason in the receipt (its runner predates them)";

/// [`Failure::reason`]: the runner's words too.
pub fn failure(f: &Failure) -> String {
    f.reason()
}

/// The failure reason of the receipt in a stored document, if it reads and says one.
pub fn of_document(document: &str) -> Option<String> {
    let signed = serde_json::from_str::<SignedReceipt>(document).ok()?;
    signed.receipt.failure.as_ref().map(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reason_names_the_address_and_bounds_the_summary() {
        let f = Failure {
            summary: format!("boom\u{1b}[31m {}", "x".repeat(400)),
            address: Some("aws_vpc.`main`".into()),
        };
        let text = failure(&f);
        assert!(text.starts_with("`aws_vpc.'main'`: boom"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.chars().count() < 2 * SHOWN, "{text}");
        let bare = Failure {
            summary: "no engine".into(),
            address: None,
        };
        assert_eq!(failure(&bare), "no engine");
    }
}
