//! The registry side of a pass (connected mode): the customer's assignment, and
//! the reports a pass sends (stack receipts, release receipts, the sync report).
//! HTTP contract: `GET /api/v1/customers/{id}/assignment`, `POST
//! /api/v1/customers/{id}/sync`, `POST /api/v1/release-receipts`, `POST
//! /api/v1/receipts`; bearer token of a `customer` token for this customer.

use stackpack_bundle::remote::http::{self, HttpError};
use stackpack_bundle::remote::RegistryAddress;
use stackpack_schema::rollout::{AssignmentResponse, SyncReport};

use crate::error::{Error, Result};
use crate::ledger::Ledger;
use crate::receipts;

/// Where the registry is, and how to talk to it.
#[derive(Clone, Debug)]
pub struct Registry {
    pub address: RegistryAddress,
    pub insecure: bool,
    pub token: Option<String>,
}

impl Registry {
    pub fn new(address: &str, insecure: bool, token: Option<String>) -> Result<Registry> {
        let address: RegistryAddress = address
            .parse()
            .map_err(|e| Error::usage_by(e).hint("give the registry as `HOST[:PORT]/NAMESPACE`"))?;
        Ok(Registry {
            address,
            insecure,
            token,
        })
    }

    fn base(&self) -> String {
        let scheme = if self.insecure { "http" } else { "https" };
        format!("{scheme}://{}", self.address.host)
    }

    fn token(&self) -> Result<&str> {
        self.token.as_deref().ok_or_else(|| {
            Error::usage("the registry needs a token: `STACKPACK_REGISTRY_TOKEN` is not set")
                .hint("set `STACKPACK_REGISTRY_TOKEN` to a `customer` token for this customer")
        })
    }

    fn unreachable(&self, url: &str, error: HttpError) -> Error {
        Error::refused(format!(
            "cannot reach the registry: {error}; what runs is left as it is"
        ))
        .at(url)
        .hint(
            "the next pass tries again; check the address under `[sync] registry` and the network",
        )
    }

    /// The assignment for `customer`.
    pub fn assignment(&self, customer: &str) -> Result<AssignmentResponse> {
        let url = format!("{}/api/v1/customers/{customer}/assignment", self.base());
        let answer =
            http::get(&url, Some(self.token()?), 4 << 20).map_err(|e| self.unreachable(&url, e))?;
        match answer.status {
            200 => serde_json::from_str(&answer.body).map_err(|e| {
                Error::refused(format!("the registry's assignment is not readable: {e}")).at(&url)
            }),
            404 => Err(
                Error::refused(format!("the registry does not know customer `{customer}`"))
                    .at(&url)
                    .hint("check `customer` in `runner.toml` with your vendor"),
            ),
            401 | 403 => Err(Error::refused(format!(
                "the registry refused the token ({})",
                answer.status
            ))
            .at(&url)
            .hint("the token must be a `customer` token for this customer")),
            code => Err(Error::refused(format!(
                "the registry answered {code} for the assignment: what runs is left as it is"
            ))
            .at(&url)),
        }
    }

    fn post(&self, path: &str, body: Vec<u8>) -> Result<u16> {
        let url = format!("{}{path}", self.base());
        let answer =
            http::post_json(&url, self.token()?, body).map_err(|e| self.unreachable(&url, e))?;
        match answer.status {
            200..=299 => Ok(answer.status),
            code => Err(Error::refused(format!(
                "the registry refused `POST {path}` ({code}): {}",
                answer.body.chars().take(200).collect::<String>()
            ))
            .at(&url)),
        }
    }

    /// Sends every unreported stack and release receipt, marking each reported as
    /// the registry acknowledges it. Returns how many were sent.
    pub fn send_receipts(&self, ledger: &Ledger) -> Result<usize> {
        let mut sent = 0;
        for mut receipt in unreported(ledger)? {
            self.post(receipt.path, std::mem::take(&mut receipt.body))?;
            receipt.mark_reported(ledger)?;
            sent += 1;
        }
        Ok(sent)
    }

    pub fn send_report(&self, report: &SyncReport) -> Result<()> {
        let body = serde_json::to_vec(report).expect("a report serialises");
        self.post(&format!("/api/v1/customers/{}/sync", report.customer), body)?;
        Ok(())
    }
}

/// A receipt the registry has not acknowledged: a stack's or a release's, with the
/// path it is posted to. What `sync` and `report` both send.
pub struct Unreported {
    pub id: String,
    /// `stack` or `release`.
    pub kind: &'static str,
    /// `POST` it here, under the registry's base URL.
    pub path: &'static str,
    pub body: Vec<u8>,
}

impl Unreported {
    /// Records that the registry acknowledged it.
    pub fn mark_reported(&self, ledger: &Ledger) -> Result<()> {
        match self.kind {
            "release" => ledger.mark_release_reported(&self.id, &receipts::now())?,
            _ => ledger.mark_reported(&self.id, &receipts::now())?,
        }
        Ok(())
    }
}

/// Every receipt the registry has not acknowledged: the stacks' first, then the
/// releases', each oldest first.
pub fn unreported(ledger: &Ledger) -> Result<Vec<Unreported>> {
    let stacks = ledger.receipts(true)?.into_iter().map(|stored| Unreported {
        id: stored.signed.receipt.id.clone(),
        kind: "stack",
        path: "/api/v1/receipts",
        body: stored.signed.to_bytes(),
    });
    let releases = ledger
        .unreported_release_receipts()?
        .into_iter()
        .map(|signed| Unreported {
            id: signed.receipt.id.clone(),
            kind: "release",
            path: "/api/v1/release-receipts",
            body: serde_json::to_vec(&signed).expect("a receipt serialises"),
        });
    Ok(stacks.chain(releases).collect())
}
