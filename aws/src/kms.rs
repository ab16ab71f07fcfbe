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

use crate::api::{ApiError, AwsApi};
use crate::s3::AwsCredentials;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The longest message KMS signs as it is (`MessageType=RAW`).
const MAX_RAW_MESSAGE: usize = 4096;

/// The scheme of a key held in AWS KMS.
pub const SCHEME: &str = "awskms://";

/// How a KMS key must be made, for every refusal of one.
const CREATE_HINT: &str = "make one with `aws kms create-key --key-spec ECC_NIST_P256 --key-usage SIGN_VERIFY` and name it with `aws kms create-alias`";

/// Why a KMS key cannot sign for Stackpack, or a signature from it was not used.
#[derive(Debug, thiserror::Error)]
pub enum KmsError {
    #[error("`{uri}` is not a KMS key: expected `awskms:///alias/NAME` or `awskms:///arn:aws:kms:REGION:ACCOUNT:key/ID`")]
    BadUri { uri: String },
    #[error("no AWS credentials to reach KMS key `{key}`")]
    NoCredentials { key: String },
    #[error("cannot read AWS credentials for KMS key `{key}`: {detail}")]
    Credentials { key: String, detail: String },
    #[error("KMS key `{key}`: {source}")]
    Api {
        key: String,
        #[source]
        source: ApiError,
    },
    #[error("KMS key `{key}` is `{spec}` for `{usage}`, and Stackpack signs with `ECC_NIST_P256` keys for `SIGN_VERIFY`")]
    WrongKind {
        key: String,
        spec: String,
        usage: String,
    },
    #[error("KMS key `{key}` cannot sign with `ECDSA_SHA_256` (it offers {offered})")]
    NoEcdsa { key: String, offered: String },
    #[error("KMS gave no ECDSA P-256 public key for `{key}`")]
    NoPublicKey { key: String },
    #[error("KMS key `{key}` answered `Sign` without a signature")]
    NoSignature { key: String },
    #[error("KMS key `{key}` returned a signature (algorithm `{algorithm}`) that its own public key `{key_id}` does not verify: it was not used")]
    BadSignature {
        key: String,
        key_id: String,
        algorithm: String,
    },
}

impl KmsError {
    /// The one thing to do next.
    pub fn hint(&self) -> &'static str {
        match self {
            KmsError::BadUri { .. } => "name the key by alias (`awskms:///alias/stackpack-ci`) or ARN, as cosign does",
            KmsError::NoCredentials { .. } => "set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or `AWS_PROFILE`",
            KmsError::Credentials { .. } => "check `AWS_PROFILE` and `~/.aws/credentials`, or set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`",
            KmsError::Api { source: ApiError::Denied { .. }, .. } => "check the credentials, and that the key's policy allows `kms:GetPublicKey` and `kms:Sign` to them",
            KmsError::Api { source: ApiError::Failed { code, .. }, .. } if code == "NotFoundException" => "check the alias or ARN (`aws kms list-aliases`) and the region (`AWS_REGION`, or the ARN's)",
            KmsError::Api { source: ApiError::Unreachable { .. }, .. } => "check the region (`AWS_REGION`) and the endpoint (`AWS_ENDPOINT_URL_KMS`, `AWS_ENDPOINT_URL`), then run the same command again",
            KmsError::Api { .. } => "check the key's alias or ARN and its state (`aws kms describe-key`), then run the same command again",
            KmsError::WrongKind { .. } | KmsError::NoEcdsa { .. } | KmsError::NoPublicKey { .. } => CREATE_HINT,
            KmsError::NoSignature { .. } | KmsError::BadSignature { .. } => "check that the endpoint (`AWS_ENDPOINT_URL_KMS`, `AWS_ENDPOINT_URL`) is AWS KMS itself; nothing was signed with this answer",
        }
    }
}

/// A signature that could not be made says why; what to do is its caller's hint
/// (check the key, then run the same command again).
impl From<KmsError> for SignError {
    fn from(e: KmsError) -> SignError {
        SignError(e.to_string())
    }
}

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
    pub fn open(uri: &str) -> Result<KmsKey, KmsError> {
        let (endpoint, key_id) = parse_uri(uri).ok_or_else(|| KmsError::BadUri {
            uri: uri.to_string(),
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
            .map_err(|e| KmsError::Credentials {
                key: key_id.clone(),
                detail: e.to_string(),
            })?
            .ok_or_else(|| KmsError::NoCredentials {
                key: key_id.clone(),
            })?;
        let api_error = |source| KmsError::Api {
            key: key_id.clone(),
            source,
        };
        let api = AwsApi::new(
            endpoint.as_deref(),
            &region,
            credentials,
            Duration::from_secs(30),
        )
        .map_err(api_error)?;
        let answer = api
            .kms("GetPublicKey", &serde_json::json!({ "KeyId": key_id }))
            .map_err(api_error)?;
        let public = check_key(&key_id, &answer)?;
        Ok(KmsKey {
            api,
            key_id,
            public,
        })
    }

    /// Signs `message` (see [`SigningKey::try_sign`]), saying why it could not.
    pub fn sign_checked(&self, message: &[u8]) -> Result<Vec<u8>, KmsError> {
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
            .map_err(|source| KmsError::Api {
                key: self.key_id.clone(),
                source,
            })?;
        let signature = answer["Signature"]
            .as_str()
            .and_then(|b| B64.decode(b).ok())
            .ok_or_else(|| KmsError::NoSignature {
                key: self.key_id.clone(),
            })?;
        let algorithm = answer["SigningAlgorithm"]
            .as_str()
            .unwrap_or("ECDSA_SHA_256");
        if algorithm != "ECDSA_SHA_256" || !self.public.verify_bytes(message, &signature) {
            return Err(KmsError::BadSignature {
                key: self.key_id.clone(),
                key_id: self.public.key_id(),
                algorithm: algorithm.to_string(),
            });
        }
        Ok(signature)
    }
}

/// The public key of a `GetPublicKey` answer, once it is a P-256 signing key.
fn check_key(key_id: &str, answer: &serde_json::Value) -> Result<PublicKey, KmsError> {
    // `CustomerMasterKeySpec` is the older name, which AWS still sends and some
    // emulators send alone.
    let spec = answer["KeySpec"]
        .as_str()
        .or_else(|| answer["CustomerMasterKeySpec"].as_str())
        .unwrap_or("unknown");
    let usage = answer["KeyUsage"].as_str().unwrap_or("unknown");
    if spec != "ECC_NIST_P256" || usage != "SIGN_VERIFY" {
        return Err(KmsError::WrongKind {
            key: key_id.to_string(),
            spec: spec.to_string(),
            usage: usage.to_string(),
        });
    }
    let algorithms: Vec<&str> = answer["SigningAlgorithms"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if !algorithms.contains(&"ECDSA_SHA_256") {
        let offered: Vec<String> = algorithms.iter().map(|a| format!("`{a}`")).collect();
        return Err(KmsError::NoEcdsa {
            key: key_id.to_string(),
            offered: if offered.is_empty() {
                "none".to_string()
            } else {
                offered.join(", ")
            },
        });
    }
    answer["PublicKey"]
        .as_str()
        .and_then(|b| B64.decode(b).ok())
        .and_then(|der| PublicKey::from_der(&der).ok())
        .filter(|public| public.algorithm() == ECDSA_P256_SHA256)
        .ok_or_else(|| KmsError::NoPublicKey {
            key: key_id.to_string(),
        })
}

impl SigningKey for KmsKey {
    fn public_key(&self) -> PublicKey {
        self.public.clone()
    }

    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(self.sign_checked(message)?)
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
                .to_string()
                .contains("`alias/rsa` is `RSA_2048` for `SIGN_VERIFY`"),
            "{refused}"
        );
        assert!(
            refused
                .hint()
                .contains("aws kms create-key --key-spec ECC_NIST_P256"),
            "{refused}"
        );
        let refused = check_key(
            "alias/enc",
            &serde_json::json!({"KeySpec": "ECC_NIST_P256", "KeyUsage": "ENCRYPT_DECRYPT"}),
        )
        .unwrap_err();
        assert!(
            refused.to_string().contains("for `ENCRYPT_DECRYPT`"),
            "{refused}"
        );
    }
}
