//! The bucket that keeps engine state in the customer's own account (`[backend.s3]`):
//! checked before it is used (it exists, in the region named; versioning, default
//! encryption and the public access block are on), created and configured when asked,
//! and read for a state lock's own record.

use stackpack_aws::s3::{AwsCredentials, S3Client, S3Error};

use super::error::{Error, Result};
use super::home::S3Backend;

/// What a check found and did.
#[derive(Debug, Default)]
pub struct BucketCheck {
    /// Settings `--create-bucket` turned on (the bucket itself first, when made).
    pub configured: Vec<&'static str>,
    /// False when no credentials were in the environment to check with.
    pub checked: bool,
    /// Stacks of this customer whose state the bucket already keeps (a home
    /// initialised again after the old one was lost finds them here).
    pub stacks_with_state: Vec<String>,
}

/// The client for `backend`, or `None` when neither the environment nor an AWS
/// profile holds credentials (the engine may still find some: an instance
/// profile, a web identity).
pub fn client(backend: &S3Backend) -> Result<Option<S3Client>> {
    let credentials = AwsCredentials::load().map_err(|e| {
        Error::refused(e.to_string())
            .at(format!("bucket `{}`", backend.bucket))
            .hint("set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or name a profile with static keys in `AWS_PROFILE`")
    })?;
    let Some(credentials) = credentials else {
        return Ok(None);
    };
    S3Client::new(backend.endpoint.as_deref(), &backend.region(), credentials)
        .map(Some)
        .map_err(|e| bucket_error(backend, e))
}

/// Checks the bucket; with `create`, makes it and turns on what is missing.
/// Each missing setting is named with the command that fixes it.
pub fn check(backend: &S3Backend, customer: &str, create: bool) -> Result<BucketCheck> {
    let Some(client) = client(backend)? else {
        return Ok(BucketCheck::default());
    };
    let bucket = &backend.bucket;
    let mut check = BucketCheck {
        checked: true,
        ..BucketCheck::default()
    };
    let fail = |e| bucket_error(backend, e);
    if !client.bucket_exists(bucket).map_err(fail)? {
        if !create {
            return Err(Error::refused(format!(
                "bucket `{bucket}` does not exist in region `{}`",
                backend.region()
            ))
            .at(format!("bucket `{bucket}`"))
            .hint("pass `--create-bucket` to create it versioned, encrypted and private, or name an existing bucket"));
        }
        client.create_bucket(bucket).map_err(fail)?;
        check.configured.push("created");
    }
    let settings = client.bucket_settings(bucket).map_err(fail)?;
    type TurnOn = fn(&S3Client, &str) -> std::result::Result<(), S3Error>;
    let settings_and_fixes: [(bool, &'static str, String, TurnOn); 3] = [
        (settings.versioning, "versioning", format!("aws s3api put-bucket-versioning --bucket {bucket} --versioning-configuration Status=Enabled"), S3Client::enable_versioning),
        (settings.encryption, "default encryption", format!("aws s3api put-bucket-encryption --bucket {bucket} --server-side-encryption-configuration '{{\"Rules\":[{{\"ApplyServerSideEncryptionByDefault\":{{\"SSEAlgorithm\":\"AES256\"}}}}]}}'"), S3Client::enable_encryption),
        (settings.public_access_blocked, "public access block", format!("aws s3api put-public-access-block --bucket {bucket} --public-access-block-configuration BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true"), S3Client::block_public_access),
    ];
    let mut missing = Vec::new();
    for (on, name, fix, turn_on) in settings_and_fixes {
        if on {
            continue;
        }
        if !create {
            missing.push((name, fix));
            continue;
        }
        turn_on(&client, bucket).map_err(fail)?;
        check.configured.push(name);
    }
    if missing.is_empty() {
        let prefix = backend.state_key(customer, "");
        let prefix = prefix.trim_end_matches(".tfstate");
        check.stacks_with_state = client
            .list_keys(bucket, prefix)
            .map_err(fail)?
            .iter()
            .filter_map(|key| key.strip_prefix(prefix)?.strip_suffix(".tfstate"))
            .filter(|stack| !stack.contains('/'))
            .map(str::to_string)
            .collect();
        return Ok(check);
    }
    let names: Vec<String> = missing
        .iter()
        .map(|(name, _)| format!("{name} is off"))
        .collect();
    let fixes: Vec<String> = missing.iter().map(|(_, fix)| fix.clone()).collect();
    Err(Error::refused(format!(
        "bucket `{bucket}` cannot keep state safely: {}",
        names.join(", ")
    ))
    .at(format!("bucket `{bucket}`"))
    .hint(format!(
        "run `{}`, or pass `--create-bucket` to have the runner turn {} on",
        fixes.join("` and `"),
        if missing.len() == 1 { "it" } else { "them" }
    )))
}

/// The user's error for what S3 answered: which bucket, what to do.
pub fn bucket_error(backend: &S3Backend, error: S3Error) -> Error {
    let hint = match &error {
        S3Error::NoSuchBucket { .. } => {
            "pass `--create-bucket` to create it, or name an existing bucket".to_string()
        }
        S3Error::WrongRegion { actual, .. } => {
            format!("pass `--region {actual}` (or set `region` under `[backend.s3]`)")
        }
        S3Error::Denied { .. } => "check `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or `AWS_SESSION_TOKEN`): the apply role needs s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the bucket, and s3:GetBucket* to be checked".to_string(),
        S3Error::Unreachable { .. } => match &backend.endpoint {
            Some(endpoint) => format!("check that the S3 endpoint `{endpoint}` is up"),
            None => "check this machine's route (or proxy) to S3".to_string(),
        },
        S3Error::Failed { .. } => "check the bucket's settings and policy".to_string(),
    };
    Error::refused(error.to_string())
        .at(format!("bucket `{}`", backend.bucket))
        .hint(hint)
}

/// A state lock's record (the `.tflock` object beside the state), as the engine
/// wrote it.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct LockInfo {
    #[serde(rename = "ID")]
    pub id: String,
    #[serde(rename = "Operation", default)]
    pub operation: String,
    #[serde(rename = "Who", default)]
    pub who: String,
    #[serde(rename = "Created", default)]
    pub created: String,
    #[serde(rename = "Version", default)]
    pub version: String,
    #[serde(rename = "Path", default)]
    pub path: String,
}

/// The lock held on `key`'s state, if any (the lock file `use_lockfile` writes).
pub fn held_lock(backend: &S3Backend, key: &str) -> Result<Option<LockInfo>> {
    let Some(client) = client(backend)? else {
        return Err(Error::refused(
            "cannot read the state lock: no AWS credentials in the environment or in an AWS profile",
        )
        .hint("set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or `AWS_SESSION_TOKEN`), or pass `--lock-id` from the engine's error"));
    };
    let lock_key = format!("{key}.tflock");
    let Some(text) = client
        .get_object(&backend.bucket, &lock_key)
        .map_err(|e| bucket_error(backend, e))?
    else {
        return Ok(None);
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::refused(format!(
            "the state lock `s3://{}/{lock_key}` is not a lock record: {e}",
            backend.bucket
        ))
    })
}
