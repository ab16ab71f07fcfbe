//! The Sigstore bundle v0.3: a DSSE envelope with the material to check it, as
//! cosign writes with `--new-bundle-format` and `@sigstore/verify` reads. Ours name
//! the signing key by a `publicKey` hint (its Stackpack key id) rather than carry a
//! Fulcio certificate, and hold no transparency-log entry: a vendor's key is what a
//! customer trusts, handed over once, and the artifacts must verify offline. A
//! verifier is told so by its trust material (the key under its hint) and by
//! thresholds of zero for logs and timestamps.

use serde::{Deserialize, Serialize};

use super::dsse::{Envelope, IN_TOTO_PAYLOAD};
use super::statement::Statement;
use super::AttestError;
use crate::digest::Digest;
#[cfg(test)]
use crate::signature::PrivateKey;
use crate::signature::{PublicKey, SignError, SigningKey};

/// The bundle's own media type, also the OCI artifact and layer type cosign uses.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SigstoreBundle {
    pub media_type: String,
    pub verification_material: VerificationMaterial,
    pub dsse_envelope: Envelope,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationMaterial {
    pub public_key: PublicKeyHint,
    #[serde(default)]
    pub tlog_entries: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKeyHint {
    pub hint: String,
}

/// A statement whose signature checked, and the trusted key that made it.
#[derive(Clone, Debug)]
pub struct Opened {
    pub statement: Statement,
    pub key: PublicKey,
}

impl SigstoreBundle {
    /// Signs `statement` with `key` into a bundle.
    pub fn seal(statement: &Statement, key: &dyn SigningKey) -> Result<SigstoreBundle, SignError> {
        Ok(SigstoreBundle {
            media_type: BUNDLE_MEDIA_TYPE.into(),
            verification_material: VerificationMaterial {
                public_key: PublicKeyHint {
                    hint: key.public_key().key_id(),
                },
                tlog_entries: Vec::new(),
            },
            dsse_envelope: Envelope::sign(IN_TOTO_PAYLOAD, &statement.to_bytes(), key)?,
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a Sigstore bundle serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<SigstoreBundle, AttestError> {
        let bundle: SigstoreBundle = serde_json::from_slice(bytes)
            .map_err(|e| AttestError::Malformed(format!("not a Sigstore bundle: {e}")))?;
        if bundle.media_type != BUNDLE_MEDIA_TYPE {
            return Err(AttestError::Malformed(format!(
                "its media type is `{}`, not `{BUNDLE_MEDIA_TYPE}`",
                bundle.media_type
            )));
        }
        if bundle.dsse_envelope.payload_type != IN_TOTO_PAYLOAD {
            return Err(AttestError::Malformed(format!(
                "its payload type is `{}`, not `{IN_TOTO_PAYLOAD}`",
                bundle.dsse_envelope.payload_type
            )));
        }
        Ok(bundle)
    }

    /// Checks the bundle against `trusted` keys: the key its hint names must be
    /// trusted and must have signed it, and the statement must be about `subject`
    /// and of `predicate_type`.
    pub fn open(
        &self,
        subject: &Digest,
        predicate_type: &str,
        trusted: &[PublicKey],
    ) -> Result<Opened, AttestError> {
        let hint = &self.verification_material.public_key.hint;
        let signer = trusted
            .iter()
            .find(|k| self.dsse_envelope.verify(k).is_ok());
        let hinted = trusted.iter().find(|k| &k.key_id() == hint);
        let key = match (hinted, signer) {
            (Some(hinted), Some(signer)) if hinted == signer => signer,
            (_, Some(signer)) => {
                return Err(AttestError::HintMismatch {
                    hint: hint.clone(),
                    actual: signer.key_id(),
                })
            }
            (Some(_), None) => return Err(AttestError::BadSignature),
            (None, None) => return Err(AttestError::Untrusted(hint.clone())),
        };
        let payload = self.dsse_envelope.payload_bytes()?;
        let statement = Statement::parse_about(&payload, subject, predicate_type)?;
        Ok(Opened {
            statement,
            key: key.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attest::statement::{Subject, PROVENANCE_PREDICATE};

    fn key(n: u8) -> PrivateKey {
        PrivateKey::from_secret_bytes([n; 32])
    }

    fn sealed(subject: &Digest, signer: &PrivateKey) -> SigstoreBundle {
        let statement = Statement::new(
            Subject::new("acme/stacks/network", subject),
            PROVENANCE_PREDICATE,
            serde_json::json!({}),
        );
        SigstoreBundle::seal(&statement, signer).unwrap()
    }

    #[test]
    fn a_sealed_bundle_opens_with_its_key_and_round_trips() {
        let subject = Digest::of(b"manifest");
        let bundle = SigstoreBundle::from_bytes(&sealed(&subject, &key(1)).to_bytes()).unwrap();
        let opened = bundle
            .open(
                &subject,
                PROVENANCE_PREDICATE,
                &[key(2).public_key(), key(1).public_key()],
            )
            .unwrap();
        assert_eq!(opened.key, key(1).public_key());
    }

    #[test]
    fn refuses_another_subject_an_untrusted_key_and_a_false_hint() {
        let subject = Digest::of(b"manifest");
        let bundle = sealed(&subject, &key(1));
        let other = Digest::of(b"another");
        assert!(matches!(
            bundle.open(&other, PROVENANCE_PREDICATE, &[key(1).public_key()]),
            Err(AttestError::SubjectMismatch { .. })
        ));
        assert_eq!(
            bundle
                .open(&subject, PROVENANCE_PREDICATE, &[key(2).public_key()])
                .unwrap_err(),
            AttestError::Untrusted(key(1).public_key().key_id())
        );
        let mut hinted = bundle.clone();
        hinted.verification_material.public_key.hint = key(2).public_key().key_id();
        assert_eq!(
            hinted
                .open(
                    &subject,
                    PROVENANCE_PREDICATE,
                    &[key(1).public_key(), key(2).public_key()]
                )
                .unwrap_err(),
            AttestError::HintMismatch {
                hint: key(2).public_key().key_id(),
                actual: key(1).public_key().key_id(),
            }
        );
        assert!(matches!(
            bundle.open(
                &subject,
                "https://example.com/other",
                &[key(1).public_key()]
            ),
            Err(AttestError::PredicateType { .. })
        ));
    }
}
