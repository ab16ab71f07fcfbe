//! Signed deployment receipts for tests, as a runner would post them: one builder, so
//! that a test names only the fields its scenario is about and a change to the
//! receipt format is made here once.

use stackpack_schema::receipt::{
    EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind, ReleaseRef, SignedReceipt,
    RECEIPT_FORMAT,
};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;

/// A receipt of `customer` running `stack` at `version`. Unless told otherwise: an
/// apply that succeeded, started and finished at 2026-02-01T00:00:00Z, OpenTofu
/// 1.8.0, a plan adding one resource, the bundle digest taken from the version and
/// one inputs hash for everyone.
#[derive(Clone, Debug)]
pub struct ReceiptBuilder {
    receipt: Receipt,
}

impl ReceiptBuilder {
    pub fn new(customer: &str, stack: &str, version: &str) -> ReceiptBuilder {
        ReceiptBuilder {
            receipt: Receipt {
                format: RECEIPT_FORMAT,
                id: format!("{customer}-{stack}-{version}"),
                customer: customer.into(),
                stack: stack.into(),
                version: semver::Version::parse(version)
                    .unwrap_or_else(|e| panic!("`{version}` is not a version: {e}")),
                bundle_digest: Digest::of(version.as_bytes()),
                inputs_hash: Digest::of(b"inputs"),
                engine: EngineRun {
                    name: stackpack_schema::bundle::EngineName::Tofu,
                    version: "1.8.0".into(),
                    digest: None,
                },
                plan: PlanSummary {
                    add: 1,
                    change: 0,
                    destroy: 0,
                },
                kind: ReceiptKind::Apply,
                outcome: Outcome::Succeeded,
                started_at: "2026-02-01T00:00:00Z".into(),
                finished_at: "2026-02-01T00:00:00Z".into(),
                key_id: String::new(),
                release: None,
                changes: Vec::new(),
                changes_digest: None,
                drifted: Vec::new(),
                failure: None,
                drift: Vec::new(),
                runner: None,
                preflight: Vec::new(),
                verified: None,
            },
        }
    }

    /// The receipt's id (the registry stores each id once).
    pub fn id(mut self, id: impl Into<String>) -> ReceiptBuilder {
        self.receipt.id = id.into();
        self
    }

    pub fn kind(mut self, kind: ReceiptKind, outcome: Outcome) -> ReceiptBuilder {
        self.receipt.kind = kind;
        self.receipt.outcome = outcome;
        self
    }

    /// Started and finished at `time` (RFC 3339).
    pub fn at(self, time: &str) -> ReceiptBuilder {
        self.started_at(time).finished_at(time)
    }

    pub fn started_at(mut self, time: &str) -> ReceiptBuilder {
        self.receipt.started_at = time.into();
        self
    }

    pub fn finished_at(mut self, time: &str) -> ReceiptBuilder {
        self.receipt.finished_at = time.into();
        self
    }

    pub fn bundle_digest(mut self, digest: Digest) -> ReceiptBuilder {
        self.receipt.bundle_digest = digest;
        self
    }

    pub fn inputs_hash(mut self, hash: Digest) -> ReceiptBuilder {
        self.receipt.inputs_hash = hash;
        self
    }

    /// The plan's counts: resources to add, change and destroy.
    pub fn plan(mut self, add: u64, change: u64, destroy: u64) -> ReceiptBuilder {
        self.receipt.plan = PlanSummary {
            add,
            change,
            destroy,
        };
        self
    }

    /// Applied as one of the stacks of release `name` at `version`, whose index has
    /// `digest`.
    pub fn release(mut self, name: &str, version: &str, digest: Digest) -> ReceiptBuilder {
        self.receipt.release = Some(ReleaseRef {
            name: name.into(),
            version: semver::Version::parse(version)
                .unwrap_or_else(|e| panic!("`{version}` is not a version: {e}")),
            digest,
        });
        self
    }

    /// Failed with the engine's error `summary` about `address`.
    pub fn failure(mut self, summary: &str, address: Option<&str>) -> ReceiptBuilder {
        self.receipt.outcome = Outcome::Failed;
        self.receipt.failure = Some(stackpack_schema::receipt::Failure::new(summary, address));
        self
    }

    /// Found `address` drifted in `attributes` (names only).
    pub fn drifted(mut self, address: &str, attributes: &[&str]) -> ReceiptBuilder {
        self.receipt.drifted.push(address.into());
        self.receipt
            .drift
            .push(stackpack_schema::plan::DriftedResource {
                address: address.into(),
                attributes: attributes.iter().map(|a| a.to_string()).collect(),
            });
        self
    }

    /// Reported by runner `version` on `platform`, with one provider.
    pub fn runner(
        mut self,
        version: &str,
        platform: &str,
        provider: (&str, &str),
    ) -> ReceiptBuilder {
        self.receipt.runner = Some(stackpack_schema::receipt::RunnerRun {
            version: version.into(),
            platform: platform.into(),
            providers: vec![stackpack_schema::receipt::ProviderRun {
                source: provider.0.into(),
                version: provider.1.into(),
            }],
        });
        self
    }

    /// The receipt as built, unsigned.
    pub fn build(self) -> Receipt {
        self.receipt
    }

    /// The receipt signed with the runner installation's `key`.
    pub fn sign(self, key: &PrivateKey) -> SignedReceipt {
        SignedReceipt::sign(self.receipt, key)
    }
}
