//! The in-toto Statement v1: what an attestation is about (its subjects, by digest)
//! and what it says (a predicate of a named type).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::AttestError;
use crate::digest::Digest;

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate of a statement that stands for a signature of its subject: cosign's
/// own for `cosign sign --new-bundle-format`, so Sigstore tools read it as one.
pub const SIGNATURE_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// SLSA provenance v1.
pub const PROVENANCE_PREDICATE: &str = "https://slsa.dev/provenance/v1";
/// A vendor's channel statement ("release R version V is approved for channel C"),
/// its predicate the statement itself.
pub const CHANNEL_PREDICATE: &str = "https://stackpack.dev/attestations/channel-statement/v1";
/// A stack's freshness statement ("the newest stable version is V, as of T").
pub const LATEST_PREDICATE: &str = "https://stackpack.dev/attestations/latest/v1";

/// One thing a statement is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// The repository path without the registry host (`acme/stacks/network`).
    pub name: String,
    /// Algorithm → lowercase hex (`sha256` → `…`).
    pub digest: BTreeMap<String, String>,
}

impl Subject {
    pub fn new(name: &str, digest: &Digest) -> Subject {
        Subject {
            name: name.to_string(),
            digest: BTreeMap::from([(digest.algorithm().to_string(), digest.hex().to_string())]),
        }
    }

    /// True when this subject names `digest`.
    pub fn is(&self, digest: &Digest) -> bool {
        self.digest.get(digest.algorithm()).map(String::as_str) == Some(digest.hex())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    pub predicate_type: String,
    pub predicate: serde_json::Value,
}

impl Statement {
    pub fn new(subject: Subject, predicate_type: &str, predicate: serde_json::Value) -> Self {
        Statement {
            statement_type: STATEMENT_TYPE.into(),
            subject: vec![subject],
            predicate_type: predicate_type.into(),
            predicate,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a statement serializes")
    }

    /// Parses a statement and checks that it is about `subject` and says
    /// `predicate_type`.
    pub fn parse_about(
        bytes: &[u8],
        subject: &Digest,
        predicate_type: &str,
    ) -> Result<Statement, AttestError> {
        let statement: Statement = serde_json::from_slice(bytes)
            .map_err(|e| AttestError::Malformed(format!("not an in-toto statement: {e}")))?;
        if statement.statement_type != STATEMENT_TYPE {
            return Err(AttestError::Malformed(format!(
                "its `_type` is `{}`, not `{STATEMENT_TYPE}`",
                statement.statement_type
            )));
        }
        if statement.predicate_type != predicate_type {
            return Err(AttestError::PredicateType {
                expected: predicate_type.into(),
                found: statement.predicate_type,
            });
        }
        if !statement.subject.iter().any(|s| s.is(subject)) {
            let found = statement
                .subject
                .iter()
                .flat_map(|s| s.digest.iter().map(|(a, h)| format!("{a}:{h}")))
                .collect::<Vec<_>>()
                .join("`, `");
            return Err(AttestError::SubjectMismatch {
                expected: subject.to_string(),
                found,
            });
        }
        Ok(statement)
    }
}
