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
    #[error("not an ed25519 or ECDSA P-256 public key in SPKI PEM (`-----BEGIN PUBLIC KEY-----`)")]
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
    key: KeyKind,
}

#[derive(Clone, PartialEq, Eq)]
enum KeyKind {
    Ed25519(ed25519_dalek::VerifyingKey),
    /// ECDSA over NIST P-256 (what AWS KMS signs with): its DER SubjectPublicKeyInfo
    /// and the uncompressed point inside it.
    P256 {
        der: Vec<u8>,
        point: Vec<u8>,
    },
}

/// `id-ecPublicKey` (1.2.840.10045.2.1) and `prime256v1` (1.2.840.10045.3.1.7).
const EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const PRIME256V1: &str = "1.2.840.10045.3.1.7";

/// The algorithm names a signed document carries.
pub const ED25519: &str = "ed25519";
pub const ECDSA_P256_SHA256: &str = "ecdsa-p256-sha256";

impl PublicKey {
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        if let Ok(key) = ed25519_dalek::VerifyingKey::from_public_key_pem(pem.trim()) {
            return Ok(PublicKey {
                key: KeyKind::Ed25519(key),
            });
        }
        let (label, document) = ed25519_dalek::pkcs8::spki::der::Document::from_pem(pem.trim())
            .map_err(|_| KeyError::PublicKey)?;
        if label != "PUBLIC KEY" {
            return Err(KeyError::PublicKey);
        }
        PublicKey::from_der(document.as_bytes())
    }

    pub fn from_der(der: &[u8]) -> Result<Self, KeyError> {
        if let Ok(key) = ed25519_dalek::VerifyingKey::from_public_key_der(der) {
            return Ok(PublicKey {
                key: KeyKind::Ed25519(key),
            });
        }
        use ed25519_dalek::pkcs8::spki::SubjectPublicKeyInfoRef;
        let info = SubjectPublicKeyInfoRef::try_from(der).map_err(|_| KeyError::PublicKey)?;
        let curve = info
            .algorithm
            .parameters_oid()
            .map(|oid| oid.to_string())
            .unwrap_or_default();
        let point = info.subject_public_key.raw_bytes();
        if info.algorithm.oid.to_string() != EC_PUBLIC_KEY
            || curve != PRIME256V1
            || point.len() != 65
            || point[0] != 4
        {
            return Err(KeyError::PublicKey);
        }
        Ok(PublicKey {
            key: KeyKind::P256 {
                der: der.to_vec(),
                point: point.to_vec(),
            },
        })
    }

    pub fn to_der(&self) -> Vec<u8> {
        match &self.key {
            KeyKind::Ed25519(key) => key
                .to_public_key_der()
                .expect("an ed25519 key always encodes")
                .as_bytes()
                .to_vec(),
            KeyKind::P256 { der, .. } => der.clone(),
        }
    }

    pub fn to_pem(&self) -> String {
        match &self.key {
            KeyKind::Ed25519(key) => key
                .to_public_key_pem(LineEnding::LF)
                .expect("an ed25519 key always encodes"),
            KeyKind::P256 { der, .. } => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(der);
                let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
                for line in b64.as_bytes().chunks(64) {
                    pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
                    pem.push('\n');
                }
                pem.push_str("-----END PUBLIC KEY-----\n");
                pem
            }
        }
    }

    /// [`ED25519`] or [`ECDSA_P256_SHA256`]: what its signatures are.
    pub fn algorithm(&self) -> &'static str {
        match self.key {
            KeyKind::Ed25519(_) => ED25519,
            KeyKind::P256 { .. } => ECDSA_P256_SHA256,
        }
    }

    /// First 16 hex characters of SHA-256 over the DER SubjectPublicKeyInfo.
    pub fn key_id(&self) -> String {
        let mut hasher = Sha256Hasher::new();
        hasher.update(&self.to_der());
        hasher.finish().hex()[..16].to_string()
    }

    /// The signer of a document that names `algorithm` and carries `public_key`
    /// (base64 DER), which must name `key_id`.
    fn of_document(
        algorithm: &str,
        public_key: &str,
        key_id: &str,
    ) -> Result<PublicKey, SignatureError> {
        if algorithm != ED25519 && algorithm != ECDSA_P256_SHA256 {
            return Err(SignatureError::Malformed(format!(
                "algorithm `{algorithm}` is not supported, only `{ED25519}` and `{ECDSA_P256_SHA256}` are"
            )));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(public_key)
            .map_err(|_| SignatureError::Malformed("`publicKey` is not base64".into()))?;
        let signer = PublicKey::from_der(&der).map_err(|_| {
            SignatureError::Malformed("`publicKey` is not an ed25519 or ECDSA P-256 key".into())
        })?;
        if signer.algorithm() != algorithm {
            return Err(SignatureError::Malformed(format!(
                "it says `{algorithm}`, but its key is an `{}` key",
                signer.algorithm()
            )));
        }
        let actual = signer.key_id();
        if actual != key_id {
            return Err(SignatureError::KeyIdMismatch {
                claimed: key_id.to_string(),
                actual,
            });
        }
        Ok(signer)
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
        let signer = PublicKey::of_document(algorithm, public_key, key_id)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(signature)
            .map_err(|_| SignatureError::Malformed("`signature` is not base64".into()))?;
        if !signer.verify_bytes(message, &bytes) {
            return Err(SignatureError::Invalid);
        }
        Ok(signer)
    }
}

impl PublicKey {
    /// Checks a raw 64-byte ed25519 signature over `message`, the form
    /// `openssl pkeyutl -sign -rawin` writes (a kit's `SHA256SUMS.sig`).
    pub fn verify_bytes(&self, message: &[u8], signature: &[u8]) -> bool {
        match &self.key {
            KeyKind::Ed25519(key) => {
                let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
                    return false;
                };
                key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes))
                    .is_ok()
            }
            // ASN.1 DER (r, s) over SHA-256 of the message: what KMS `Sign` with
            // `ECDSA_SHA_256` returns and `openssl dgst -sha256 -verify` checks.
            KeyKind::P256 { point, .. } => ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P256_SHA256_ASN1,
                point,
            )
            .verify(message, signature)
            .is_ok(),
        }
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
            key: KeyKind::Ed25519(self.key.verifying_key()),
        }
    }

    /// The raw ed25519 signature over `message`, for signed documents other than a
    /// bundle signature (channel statements, receipts).
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// Signs `payload`. The payload's `key_id` must be this key's; it is set here.
    pub fn sign(&self, payload: SignaturePayload) -> SignatureEnvelope {
        self.sign_payload(payload)
            .expect("an ed25519 key in memory always signs")
    }
}

/// Why a signature could not be made: a key held elsewhere (a KMS) that did not
/// answer, refused, or signed with another key or algorithm. Its text says which
/// key and how to fix it.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct SignError(pub String);

/// What signs for the vendor: a key in memory ([`PrivateKey`], ed25519) or one held
/// elsewhere that answers over the network (an AWS KMS key, ECDSA P-256), so that
/// CI never holds the private key. Every signature Stackpack makes goes through it.
pub trait SigningKey: Send + Sync {
    fn public_key(&self) -> PublicKey;

    /// A signature over `message`, in the form [`PublicKey::verify_bytes`] checks.
    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError>;

    /// Signs `payload` into an envelope; the payload's `key_id` is set here.
    fn sign_payload(&self, mut payload: SignaturePayload) -> Result<SignatureEnvelope, SignError> {
        let public_key = self.public_key();
        payload.key_id = public_key.key_id();
        let signature = self.try_sign(&canonical_json(&payload))?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Ok(SignatureEnvelope {
            payload,
            algorithm: public_key.algorithm().to_string(),
            signature: b64.encode(signature),
            public_key: b64.encode(public_key.to_der()),
        })
    }
}

/// A key chosen at run time (`--key FILE` or `--key awskms:///…`) signs as its own.
impl<K: SigningKey + ?Sized> SigningKey for Box<K> {
    fn public_key(&self) -> PublicKey {
        (**self).public_key()
    }

    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        (**self).try_sign(message)
    }
}

impl SigningKey for PrivateKey {
    fn public_key(&self) -> PublicKey {
        PrivateKey::public_key(self)
    }

    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(self.sign_bytes(message).to_vec())
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
        PublicKey::verify_detached(
            &canonical_json(&self.payload),
            &self.algorithm,
            &self.signature,
            &self.public_key,
            &self.payload.key_id,
        )
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

#[cfg(test)]
mod p256_tests {
    use super::*;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};

    /// A P-256 key as KMS holds one: its SPKI DER, and a signer.
    fn kms_like_key() -> (PublicKey, EcdsaKeyPair) {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        // SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (point) }
        let mut der = hex::decode("3059301306072a8648ce3d020106082a8648ce3d030107034200").unwrap();
        der.extend_from_slice(pair.public_key().as_ref());
        (PublicKey::from_der(&der).unwrap(), pair)
    }

    #[test]
    fn a_p256_key_reads_from_pem_verifies_its_signatures_and_refuses_a_tampered_one() {
        let (key, pair) = kms_like_key();
        assert_eq!(key.algorithm(), ECDSA_P256_SHA256);
        assert_eq!(PublicKey::from_pem(&key.to_pem()).unwrap(), key);
        let rng = ring::rand::SystemRandom::new();
        let signature = pair.sign(&rng, b"message").unwrap();
        assert!(key.verify_bytes(b"message", signature.as_ref()));
        assert!(!key.verify_bytes(b"messagE", signature.as_ref()));
        // An ed25519 key does not take a P-256 signature, nor the reverse.
        let ed = PrivateKey::from_secret_bytes([3; 32]);
        assert!(!ed.public_key().verify_bytes(b"message", signature.as_ref()));
        assert!(!key.verify_bytes(b"message", &ed.sign_bytes(b"message")));
    }

    #[test]
    fn other_curves_compressed_points_and_fixed_size_signatures_are_refused() {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        // A P-384 key (secp384r1), which KMS also offers: not one Stackpack takes.
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, &rng).unwrap();
        let p384 = EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut der = hex::decode("3076301006072a8648ce3d020106052b81040022036200").unwrap();
        der.extend_from_slice(p384.public_key().as_ref());
        assert_eq!(PublicKey::from_der(&der), Err(KeyError::PublicKey));
        // A P-256 point in compressed form: refused, not misread.
        let (key, pair) = kms_like_key();
        let point = pair.public_key().as_ref();
        let mut compressed =
            hex::decode("3039301306072a8648ce3d020106082a8648ce3d030107032200").unwrap();
        compressed.push(2 + (point[64] & 1));
        compressed.extend_from_slice(&point[1..33]);
        assert_eq!(PublicKey::from_der(&compressed), Err(KeyError::PublicKey));
        // r || s (64 bytes) is not the ASN.1 DER form KMS returns and openssl checks.
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let asn1 = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let fixed =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap();
        let mut der = hex::decode("3059301306072a8648ce3d020106082a8648ce3d030107034200").unwrap();
        der.extend_from_slice(asn1.public_key().as_ref());
        let same = PublicKey::from_der(&der).unwrap();
        assert!(same.verify_bytes(b"m", asn1.sign(&rng, b"m").unwrap().as_ref()));
        assert!(!same.verify_bytes(b"m", fixed.sign(&rng, b"m").unwrap().as_ref()));
        assert!(!key.verify_bytes(b"m", &[]));
        // A PEM of another label is not a public key.
        let pem = key.to_pem().replace("PUBLIC KEY", "CERTIFICATE");
        assert_eq!(PublicKey::from_pem(&pem), Err(KeyError::PublicKey));
    }

    #[test]
    fn a_document_naming_another_algorithm_than_its_key_is_refused() {
        let (key, pair) = kms_like_key();
        let rng = ring::rand::SystemRandom::new();
        let b64 = base64::engine::general_purpose::STANDARD;
        let signature = b64.encode(pair.sign(&rng, b"m").unwrap().as_ref());
        let public = b64.encode(key.to_der());
        assert!(PublicKey::verify_detached(
            b"m",
            ECDSA_P256_SHA256,
            &signature,
            &public,
            &key.key_id()
        )
        .is_ok());
        assert!(matches!(
            PublicKey::verify_detached(b"m", ED25519, &signature, &public, &key.key_id()),
            Err(SignatureError::Malformed(m)) if m.contains("its key is an `ecdsa-p256-sha256` key")
        ));
    }
}
