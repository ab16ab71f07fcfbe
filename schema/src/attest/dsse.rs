//! DSSE (Dead Simple Signing Envelope) v1: the signature covers the
//! pre-authentication encoding of the payload type and the payload, so neither can
//! be swapped. The JSON is what `securesystemslib.dsse.Envelope.from_dict` and the
//! Sigstore bundle's `dsseEnvelope` both read.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::AttestError;
#[cfg(test)]
use crate::signature::PrivateKey;
use crate::signature::{PublicKey, SignError, SigningKey};

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// An in-toto statement's payload type.
pub const IN_TOTO_PAYLOAD: &str = "application/vnd.in-toto+json";

/// One signature of an envelope. `keyid` is the signer's Stackpack key id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    #[serde(default)]
    pub keyid: String,
    /// Base64 of the signature over [`pae`].
    pub sig: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Base64 of the payload bytes.
    pub payload: String,
    pub payload_type: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// The pre-authentication encoding: `DSSEv1 <len> <type> <len> <payload>`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

impl Envelope {
    /// Signs `payload` with `key`.
    pub fn sign(
        payload_type: &str,
        payload: &[u8],
        key: &dyn SigningKey,
    ) -> Result<Envelope, SignError> {
        let signature = key.try_sign(&pae(payload_type, payload))?;
        Ok(Envelope {
            payload: BASE64.encode(payload),
            payload_type: payload_type.to_string(),
            signatures: vec![EnvelopeSignature {
                keyid: key.public_key().key_id(),
                sig: BASE64.encode(signature),
            }],
        })
    }

    /// The payload's bytes.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, AttestError> {
        BASE64
            .decode(&self.payload)
            .map_err(|e| AttestError::Malformed(format!("the DSSE payload is not base64: {e}")))
    }

    /// The payload, when one of the signatures is `key`'s over it.
    pub fn verify(&self, key: &PublicKey) -> Result<Vec<u8>, AttestError> {
        let payload = self.payload_bytes()?;
        let message = pae(&self.payload_type, &payload);
        let signed = self.signatures.iter().any(|s| {
            BASE64
                .decode(&s.sig)
                .is_ok_and(|sig| key.verify_bytes(&message, &sig))
        });
        if signed {
            Ok(payload)
        } else {
            Err(AttestError::BadSignature)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PrivateKey {
        PrivateKey::from_secret_bytes([7; 32])
    }

    #[test]
    fn pae_matches_the_spec_example() {
        // From the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn a_signed_envelope_verifies_and_an_altered_one_does_not() {
        let envelope = Envelope::sign(IN_TOTO_PAYLOAD, b"{\"a\":1}", &key()).unwrap();
        assert_eq!(envelope.verify(&key().public_key()).unwrap(), b"{\"a\":1}");

        let mut altered = envelope.clone();
        altered.payload = BASE64.encode(b"{\"a\":2}");
        assert_eq!(
            altered.verify(&key().public_key()),
            Err(AttestError::BadSignature)
        );

        let mut retyped = envelope;
        retyped.payload_type = "text/plain".into();
        assert_eq!(
            retyped.verify(&key().public_key()),
            Err(AttestError::BadSignature)
        );
    }
}
