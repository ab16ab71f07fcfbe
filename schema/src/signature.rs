//! Signing and verifying bundles.
//!
//! A signature is a separate OCI artifact whose `subject` is the bundle manifest and
//! whose one layer is a [`SignatureEnvelope`]: the [`SignaturePayload`], and an ed25519
//! signature over the payload's canonical JSON (keys sorted, no white space). The
//! envelope carries the signer's public key so a signature can be checked for
//! integrity anywhere; trust is a separate question, answered by the caller's list of
//! trusted keys, matched by the whole key, never by the key id alone.
//!
//! Keys are what `openssl genpkey -algorithm ed25519` makes: the private key as
//! PKCS#8 PEM, the public key as SPKI PEM. The key id is the first 16 hex characters
//! of the SHA-256 of the DER SubjectPublicKeyInfo, which a user can reproduce with
//! `openssl pkey -pubin -in key.pub -outform DER | sha256sum | cut -c1-16`.

use std::fmt;

use base64::Engine as _;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::Signer;
use serde::{Deserialize, Serialize};

use crate::digest::{Digest, Sha256Hasher};

/// What a signature vouches for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignaturePayload {
    /// The bundle manifest's digest.
    pub manifest_digest: Digest,
    /// The repository path without the registry host (`acme/stacks/data-plane`), so a
    /// signature stays valid when bundles are mirrored or carried offline.
    pub repository: String,
    pub version: String,
    pub key_id: String,
    /// RFC 3339, UTC. The source commit's time, so that signing is reproducible too.
    pub signed_at: String,
}

/// The signature layer's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureEnvelope {
    pub payload: SignaturePayload,
    /// Always `ed25519`.
    pub algorithm: String,
    /// Base64 of the 64-byte ed25519 signature over the payload's canonical bytes.
    pub signature: String,
    /// Base64 of the signer's DER SubjectPublicKeyInfo.
    pub public_key: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("not an ed25519 private key in PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`)")]
    PrivateKey,
    #[error("not an ed25519 public key in SPKI PEM (`-----BEGIN PUBLIC KEY-----`)")]
    PublicKey,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the signature envelope is malformed: {0}")]
    Malformed(String),
    #[error("the signature does not match its payload: the signature or the payload was altered")]
    Invalid,
    #[error("the payload names key `{claimed}`, but the envelope's key is `{actual}`")]
    KeyIdMismatch { claimed: String, actual: String },
    #[error("signed by key `{0}`, which is not trusted")]
    Untrusted(String),
}

/// An ed25519 public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: ed25519_dalek::VerifyingKey,
}

impl PublicKey {
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        ed25519_dalek::VerifyingKey::from_public_key_pem(pem.trim())
            .map(|key| PublicKey { key })
            .map_err(|_| KeyError::PublicKey)
    }

    pub fn from_der(der: &[u8]) -> Result<Self, KeyError> {
        ed25519_dalek::VerifyingKey::from_public_key_der(der)
            .map(|key| PublicKey { key })
            .map_err(|_| KeyError::PublicKey)
    }

    pub fn to_der(&self) -> Vec<u8> {
        self.key
            .to_public_key_der()
            .expect("an ed25519 key always encodes")
            .as_bytes()
            .to_vec()
    }

    pub fn to_pem(&self) -> String {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .expect("an ed25519 key always encodes")
    }

    /// First 16 hex characters of SHA-256 over the DER SubjectPublicKeyInfo.
    pub fn key_id(&self) -> String {
        let mut hasher = Sha256Hasher::new();
        hasher.update(&self.to_der());
        hasher.finish().hex()[..16].to_string()
    }
}

impl PublicKey {
    /// Checks a detached signature as signed documents carry it (`algorithm`,
    /// base64 `signature`, base64 DER `public_key`, and the `key_id` the document
    /// names) over `message`; returns the signer. Says nothing about trust.
    pub fn verify_detached(
        message: &[u8],
        algorithm: &str,
        signature: &str,
        public_key: &str,
        key_id: &str,
    ) -> Result<PublicKey, SignatureError> {
        if algorithm != "ed25519" {
            return Err(SignatureError::Malformed(format!(
                "algorithm `{algorithm}` is not supported, only `ed25519` is"
            )));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let der = b64
            .decode(public_key)
            .map_err(|_| SignatureError::Malformed("`publicKey` is not base64".into()))?;
        let signer = PublicKey::from_der(&der)
            .map_err(|_| SignatureError::Malformed("`publicKey` is not an ed25519 key".into()))?;
        let actual = signer.key_id();
        if actual != key_id {
            return Err(SignatureError::KeyIdMismatch {
                claimed: key_id.to_string(),
                actual,
            });
        }
        let bytes: [u8; 64] = b64
            .decode(signature)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| {
                SignatureError::Malformed("`signature` is not 64 base64 bytes".into())
            })?;
        signer
            .key
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| SignatureError::Invalid)?;
        Ok(signer)
    }
}

impl PublicKey {
    /// Checks a raw 64-byte ed25519 signature over `message`, the form
    /// `openssl pkeyutl -sign -rawin` writes (a kit's `SHA256SUMS.sig`).
    pub fn verify_bytes(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        self.key
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes))
            .is_ok()
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

/// An ed25519 private key. Its `Debug` never shows the secret.
pub struct PrivateKey {
    key: ed25519_dalek::SigningKey,
}

impl PrivateKey {
    /// From the 32 secret bytes (the caller draws them from the OS's random source).
    pub fn from_secret_bytes(secret: [u8; 32]) -> Self {
        PrivateKey {
            key: ed25519_dalek::SigningKey::from_bytes(&secret),
        }
    }

    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        ed25519_dalek::SigningKey::from_pkcs8_pem(pem.trim())
            .map(|key| PrivateKey { key })
            .map_err(|_| KeyError::PrivateKey)
    }

    /// PKCS#8 v1 PEM, byte for byte as `openssl genpkey -algorithm ed25519` writes it.
    /// (The v2 form with the public key embedded is not readable by OpenSSL 3.0.)
    pub fn to_pem(&self) -> String {
        // SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }
        const PREFIX: [u8; 16] = [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        let mut der = PREFIX.to_vec();
        der.extend_from_slice(self.key.as_bytes());
        let encoded = base64::engine::general_purpose::STANDARD.encode(&der);
        der.fill(0);
        format!("-----BEGIN PRIVATE KEY-----\n{encoded}\n-----END PRIVATE KEY-----\n")
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// The raw ed25519 signature over `message`, for signed documents other than a
    /// bundle signature (channel statements, receipts).
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// Signs `payload`. The payload's `key_id` must be this key's; it is set here.
    pub fn sign(&self, mut payload: SignaturePayload) -> SignatureEnvelope {
        let public_key = self.public_key();
        payload.key_id = public_key.key_id();
        let signature = self.key.sign(&canonical_json(&payload));
        let b64 = base64::engine::general_purpose::STANDARD;
        SignatureEnvelope {
            payload,
            algorithm: "ed25519".to_string(),
            signature: b64.encode(signature.to_bytes()),
            public_key: b64.encode(public_key.to_der()),
        }
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKey({})", self.public_key().key_id())
    }
}

impl SignatureEnvelope {
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SignatureError> {
        serde_json::from_slice(bytes).map_err(|e| SignatureError::Malformed(e.to_string()))
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("envelope serialisation cannot fail")
    }

    /// Checks the signature against the envelope's own key. Says nothing about trust.
    pub fn verify_integrity(&self) -> Result<PublicKey, SignatureError> {
        if self.algorithm != "ed25519" {
            return Err(SignatureError::Malformed(format!(
                "algorithm `{}` is not supported, only `ed25519` is",
                self.algorithm
            )));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let der = b64
            .decode(&self.public_key)
            .map_err(|_| SignatureError::Malformed("`publicKey` is not base64".into()))?;
        let public_key = PublicKey::from_der(&der)
            .map_err(|_| SignatureError::Malformed("`publicKey` is not an ed25519 key".into()))?;
        let actual = public_key.key_id();
        if actual != self.payload.key_id {
            return Err(SignatureError::KeyIdMismatch {
                claimed: self.payload.key_id.clone(),
                actual,
            });
        }
        let bytes: [u8; 64] = b64
            .decode(&self.signature)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| {
                SignatureError::Malformed("`signature` is not 64 base64 bytes".into())
            })?;
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        public_key
            .key
            .verify_strict(&canonical_json(&self.payload), &signature)
            .map_err(|_| SignatureError::Invalid)?;
        Ok(public_key)
    }

    /// Checks integrity, then that the signer is one of `trusted`.
    pub fn verify(&self, trusted: &[PublicKey]) -> Result<PublicKey, SignatureError> {
        let signer = self.verify_integrity()?;
        if trusted.contains(&signer) {
            Ok(signer)
        } else {
            Err(SignatureError::Untrusted(signer.key_id()))
        }
    }
}

/// Canonical JSON: object keys sorted by their UTF-8 bytes, no insignificant white
/// space. Written by hand rather than relying on `serde_json`'s map order, which a
/// feature elsewhere in the dependency graph could change.
pub fn canonical_json<T: Serialize>(value: &T) -> Vec<u8> {
    fn write(value: &serde_json::Value, out: &mut Vec<u8>) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push(b'{');
                for (index, key) in keys.into_iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    out.extend(serde_json::to_vec(key).expect("string serialises"));
                    out.push(b':');
                    write(&map[key], out);
                }
                out.push(b'}');
            }
            serde_json::Value::Array(items) => {
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write(item, out);
                }
                out.push(b']');
            }
            scalar => out.extend(serde_json::to_vec(scalar).expect("scalar serialises")),
        }
    }
    let value = serde_json::to_value(value).expect("payload serialises");
    let mut out = Vec::new();
    write(&value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> PrivateKey {
        PrivateKey::from_secret_bytes([seed; 32])
    }

    fn payload() -> SignaturePayload {
        SignaturePayload {
            manifest_digest: Digest::of(b"manifest"),
            repository: "acme/stacks/data-plane".into(),
            version: "1.4.0".into(),
            key_id: String::new(),
            signed_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_signature_verifies_with_its_trusted_key_and_not_with_another() {
        let signer = key(1);
        let envelope = signer.sign(payload());
        assert_eq!(
            envelope.verify(&[signer.public_key()]).unwrap(),
            signer.public_key()
        );
        assert_eq!(
            envelope.verify(&[key(2).public_key()]),
            Err(SignatureError::Untrusted(signer.public_key().key_id()))
        );
    }

    #[test]
    fn an_altered_payload_is_refused() {
        let signer = key(1);
        let mut envelope = signer.sign(payload());
        envelope.payload.version = "9.9.9".into();
        assert_eq!(
            envelope.verify(&[signer.public_key()]),
            Err(SignatureError::Invalid)
        );
    }

    #[test]
    fn a_swapped_public_key_is_refused_even_when_the_key_id_is_edited_to_match() {
        let signer = key(1);
        let attacker = key(2);
        let mut envelope = signer.sign(payload());
        let b64 = base64::engine::general_purpose::STANDARD;
        envelope.public_key = b64.encode(attacker.public_key().to_der());
        envelope.payload.key_id = attacker.public_key().key_id();
        assert_eq!(
            envelope.verify(&[attacker.public_key()]),
            Err(SignatureError::Invalid)
        );
    }

    #[test]
    fn keys_round_trip_through_pem() {
        let signer = key(7);
        let again = PrivateKey::from_pem(&signer.to_pem()).unwrap();
        assert_eq!(again.public_key(), signer.public_key());
        let public = PublicKey::from_pem(&signer.public_key().to_pem()).unwrap();
        assert_eq!(public.key_id().len(), 16);
        assert_eq!(PublicKey::from_pem("garbage"), Err(KeyError::PublicKey));
    }

    #[test]
    fn openssl_generated_keys_are_read_and_the_key_id_matches_openssl() {
        // Made with `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout`; the
        // id with `openssl pkey -pubin -outform DER | sha256sum | cut -c1-16`.
        let private = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIO8s7f+cVMEHjiMZIQkQom3zAoCQlVKs5DX+s3GHWDa1\n-----END PRIVATE KEY-----\n";
        let public = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAJi8FeG73UREC3ywaksliWoGXaWsDPOgpLXCuJHNUx3A=\n-----END PUBLIC KEY-----\n";
        let key = PrivateKey::from_pem(private).unwrap();
        assert_eq!(key.to_pem(), private, "we write what openssl writes");
        let public = PublicKey::from_pem(public).unwrap();
        assert_eq!(public, key.public_key());
        assert_eq!(public.key_id(), "874dc42fd5d99973");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let value = serde_json::json!({"b": 1, "a": {"d": [1, {"f": 1, "e": 2}], "c": "x"}});
        assert_eq!(
            String::from_utf8(canonical_json(&value)).unwrap(),
            r#"{"a":{"c":"x","d":[1,{"e":2,"f":1}]},"b":1}"#
        );
    }
}
