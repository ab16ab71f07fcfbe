//! Signing with a key held in AWS KMS, so that a vendor's CI never holds the
//! private key: `--key awskms:///alias/NAME` (or `awskms:///arn:aws:kms:…:key/ID`,
//! or `awskms://HOST:PORT/alias/NAME` for an endpoint), cosign's spelling.
//!
//! The key must be `ECC_NIST_P256` for `SIGN_VERIFY` (KMS has no ed25519 keys):
//! checked once, when the key is opened, through `GetPublicKey`, which also gives the
//! public key customers trust. Each `Sign` (`ECDSA_SHA_256`) sends the message
//! itself up to KMS's 4 KiB, its SHA-256 (`MessageType=DIGEST`) beyond, and its
//! answer is checked against that public key before it is used: a KMS that signs with another key or algorithm is refused, never
//! published. Credentials, region and endpoint come from the usual AWS variables.

use std::time::Duration;

use base64::Engine as _;
use stackpack_schema::digest::Digest;
use stackpack_schema::signature::{PublicKey, SignError, SigningKey, ECDSA_P256_SHA256};

use crate::aws_api::AwsApi;
use crate::s3::AwsCredentials;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The longest message KMS signs as it is (`MessageType=RAW`).
const MAX_RAW_MESSAGE: usize = 4096;

/// The scheme of a key held in AWS KMS.
pub const SCHEME: &str = "awskms://";

/// How a KMS key must be made, for every message that refuses one.
const CREATE_HINT: &str = "make one with `aws kms create-key --key-spec ECC_NIST_P256 --key-usage SIGN_VERIFY` and name it with `aws kms create-alias`";

/// A signing key in AWS KMS, checked when opened.
pub struct KmsKey {
    api: AwsApi,
    /// The alias or ARN, as KMS takes it as `KeyId`.
    key_id: String,
    public: PublicKey,
}

impl std::fmt::Debug for KmsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KmsKey({}, {})", self.key_id, self.public.key_id())
    }
}

/// `awskms://[HOST:PORT]/KEY` → (endpoint, key), or `None` when `uri` is not one.
pub fn parse_uri(uri: &str) -> Option<(Option<String>, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (host, key) = rest.split_once('/')?;
    let key = key.trim();
    if key.is_empty() {
        return None;
    }
    let endpoint = (!host.is_empty()).then(|| format!("http://{host}"));
    Some((endpoint, key.to_string()))
}

impl KmsKey {
    /// Opens the key `uri` names: asks KMS for its public key and checks that it
    /// signs with ECDSA P-256 and SHA-256.
    pub fn open(uri: &str) -> Result<KmsKey, SignError> {
        let (endpoint, key_id) = parse_uri(uri).ok_or_else(|| {
            SignError(format!(
                "`{uri}` is not a KMS key: expected `awskms:///alias/NAME` or `awskms:///arn:aws:kms:REGION:ACCOUNT:key/ID`"
            ))
        })?;
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let endpoint = endpoint
            .or_else(|| var("AWS_ENDPOINT_URL_KMS"))
            .or_else(|| var("AWS_ENDPOINT_URL"));
        // An ARN names its region; else the environment's, as the AWS CLI reads it.
        let region = key_id
            .strip_prefix("arn:aws:kms:")
            .and_then(|r| r.split(':').next())
            .map(str::to_string)
            .or_else(|| var("AWS_REGION"))
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let credentials = AwsCredentials::load()
            .map_err(|e| SignError(format!("cannot read AWS credentials for `{uri}`: {e}")))?
            .ok_or_else(|| {
                SignError(format!(
                    "no AWS credentials to sign with `{uri}`: set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or `AWS_PROFILE`"
                ))
            })?;
        let api = AwsApi::new(
            endpoint.as_deref(),
            &region,
            credentials,
            Duration::from_secs(30),
        )
        .map_err(|e| SignError(format!("cannot reach KMS for `{uri}`: {e}")))?;
        let answer = api
            .kms("GetPublicKey", &serde_json::json!({ "KeyId": key_id }))
            .map_err(|e| SignError(format!("KMS key `{key_id}`: {e}")))?;
        let public = check_key(&key_id, &answer)?;
        Ok(KmsKey {
            api,
            key_id,
            public,
        })
    }
}

/// The public key of a `GetPublicKey` answer, once it is a P-256 signing key.
fn check_key(key_id: &str, answer: &serde_json::Value) -> Result<PublicKey, SignError> {
    // `CustomerMasterKeySpec` is the older name, which AWS still sends and some
    // emulators send alone.
    let spec = answer["KeySpec"]
        .as_str()
        .or_else(|| answer["CustomerMasterKeySpec"].as_str())
        .unwrap_or("unknown");
    let usage = answer["KeyUsage"].as_str().unwrap_or("unknown");
    if spec != "ECC_NIST_P256" || usage != "SIGN_VERIFY" {
        return Err(SignError(format!(
            "KMS key `{key_id}` is `{spec}` for `{usage}`, and Stackpack signs with `ECC_NIST_P256` keys for `SIGN_VERIFY`; {CREATE_HINT}"
        )));
    }
    let algorithms: Vec<&str> = answer["SigningAlgorithms"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if !algorithms.contains(&"ECDSA_SHA_256") {
        return Err(SignError(format!(
            "KMS key `{key_id}` cannot sign with `ECDSA_SHA_256` (it offers {algorithms:?}); {CREATE_HINT}"
        )));
    }
    let der = answer["PublicKey"]
        .as_str()
        .and_then(|b| B64.decode(b).ok())
        .ok_or_else(|| SignError(format!("KMS gave no public key for `{key_id}`")))?;
    let public = PublicKey::from_der(&der).map_err(|_| {
        SignError(format!(
            "KMS's public key for `{key_id}` is not an ECDSA P-256 key"
        ))
    })?;
    if public.algorithm() != ECDSA_P256_SHA256 {
        return Err(SignError(format!(
            "KMS's public key for `{key_id}` is not an ECDSA P-256 key"
        )));
    }
    Ok(public)
}

impl SigningKey for KmsKey {
    fn public_key(&self) -> PublicKey {
        self.public.clone()
    }

    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        // KMS takes a message of up to 4 KiB as it is; a longer one goes as its
        // SHA-256 (`DIGEST`), which signs the same.
        let (sent, kind) = if message.len() <= MAX_RAW_MESSAGE {
            (message.to_vec(), "RAW")
        } else {
            let digest = Digest::of(message);
            (
                hex::decode(digest.hex()).expect("a digest is hex"),
                "DIGEST",
            )
        };
        let answer = self
            .api
            .kms(
                "Sign",
                &serde_json::json!({
                    "KeyId": self.key_id,
                    "Message": B64.encode(sent),
                    "MessageType": kind,
                    "SigningAlgorithm": "ECDSA_SHA_256",
                }),
            )
            .map_err(|e| SignError(format!("KMS key `{}` did not sign: {e}", self.key_id)))?;
        let signature = answer["Signature"]
            .as_str()
            .and_then(|b| B64.decode(b).ok())
            .ok_or_else(|| {
                SignError(format!(
                    "KMS key `{}` answered without a signature",
                    self.key_id
                ))
            })?;
        let algorithm = answer["SigningAlgorithm"]
            .as_str()
            .unwrap_or("ECDSA_SHA_256");
        if algorithm != "ECDSA_SHA_256" || !self.public.verify_bytes(message, &signature) {
            return Err(SignError(format!(
                "KMS key `{}` returned a signature that its own public key `{}` does not verify (algorithm `{algorithm}`): nothing was signed with it",
                self.key_id,
                self.public.key_id()
            )));
        }
        Ok(signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_an_alias_an_arn_or_an_endpoint() {
        assert_eq!(
            parse_uri("awskms:///alias/ci"),
            Some((None, "alias/ci".into()))
        );
        assert_eq!(
            parse_uri("awskms:///arn:aws:kms:eu-west-1:1:key/abc"),
            Some((None, "arn:aws:kms:eu-west-1:1:key/abc".into()))
        );
        assert_eq!(
            parse_uri("awskms://127.0.0.1:4566/alias/ci"),
            Some((Some("http://127.0.0.1:4566".into()), "alias/ci".into()))
        );
        assert_eq!(parse_uri("awskms:///"), None);
        assert_eq!(parse_uri("vendor.key"), None);
    }

    #[test]
    fn a_key_of_another_spec_or_usage_is_refused_naming_how_to_make_one() {
        let refused = check_key(
            "alias/rsa",
            &serde_json::json!({"KeySpec": "RSA_2048", "KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": ["RSASSA_PSS_SHA_256"]}),
        )
        .unwrap_err();
        assert!(
            refused
                .0
                .contains("`alias/rsa` is `RSA_2048` for `SIGN_VERIFY`"),
            "{refused}"
        );
        assert!(
            refused
                .0
                .contains("aws kms create-key --key-spec ECC_NIST_P256"),
            "{refused}"
        );
        let refused = check_key(
            "alias/enc",
            &serde_json::json!({"KeySpec": "ECC_NIST_P256", "KeyUsage": "ENCRYPT_DECRYPT"}),
        )
        .unwrap_err();
        assert!(refused.0.contains("for `ENCRYPT_DECRYPT`"), "{refused}");
    }
}
