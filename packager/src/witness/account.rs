//! Where the witness may run, and nowhere else: an emulator endpoint on this
//! machine's loopback or listed in `[witness] allowed-endpoints`, or the sandbox
//! account `[witness] account-id` names. Anything else is refused before an engine
//! starts.
//!
//! Against an emulator the engine never sees the caller's own cloud credentials
//! (every `AWS_*` variable is dropped) and each customer gets an account of its own
//! (STS `AssumeRole` into a fresh account id, which moto and LocalStack honour), so
//! that names derived from inputs collide only where the cloud's namespace is global
//! (S3 buckets): what each customer applied is destroyed after its plan.

use std::path::Path;

use crate::config::WitnessSettings;
use crate::error::{Error, Result};

/// The account the witness was given.
#[derive(Clone, Debug)]
pub enum Target {
    /// An emulator of the cloud API, at this URL.
    Emulator { endpoint: String },
    /// A sandbox account reached with the ordinary provider credentials.
    Sandbox { account_id: String },
}

/// The checked `[witness]` account, and the stack inputs that point a stack at it.
#[derive(Clone, Debug)]
pub struct Account {
    pub target: Target,
    pub endpoint_input: String,
    pub account_input: String,
}

/// What one customer's engine runs get: variables to set and drop, and `-var`s.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub vars: Vec<(String, String)>,
}

impl Account {
    /// Checks `[witness]` and refuses an account it does not name explicitly.
    pub fn from_settings(settings: &WitnessSettings, config_file: &Path) -> Result<Account> {
        let at = config_file.display().to_string();
        let target = match (&settings.endpoint, &settings.account_id) {
            (Some(endpoint), _) => {
                let endpoint = endpoint.trim_end_matches('/').to_string();
                let Some(host) = host_of(&endpoint) else {
                    return Err(Error::usage(format!(
                        "`[witness] endpoint` `{endpoint}` is not an http:// or https:// URL"
                    ))
                    .at(at)
                    .hint("write it as the emulator prints it, such as `http://127.0.0.1:5000`"));
                };
                let listed = settings
                    .allowed_endpoints
                    .iter()
                    .any(|e| e.trim_end_matches('/') == endpoint);
                if !is_loopback(&host) && !listed {
                    return Err(Error::refused(format!(
                        "the witness was pointed at `{endpoint}`, which is not on this machine and not listed in `[witness] allowed-endpoints`"
                    ))
                    .at(at)
                    .hint(format!(
                        "the witness runs only in an account it was given: if `{endpoint}` is the emulator CI starts, add it to `allowed-endpoints`"
                    )));
                }
                Target::Emulator { endpoint }
            }
            (None, Some(account_id)) => {
                if account_id.len() != 12 || !account_id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Error::usage(format!(
                        "`[witness] account-id` `{account_id}` is not an account id"
                    ))
                    .at(at)
                    .hint("write the sandbox account's 12 digits, in quotes"));
                }
                Target::Sandbox {
                    account_id: account_id.clone(),
                }
            }
            (None, None) => {
                let credentials = ["AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_SESSION_TOKEN"]
                    .into_iter()
                    .filter(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
                    .collect::<Vec<_>>();
                let why = if credentials.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the credentials in this environment (`{}`) were not given to it, and it will not use them",
                        credentials.join("`, `")
                    )
                };
                return Err(Error::refused(format!(
                    "the witness has no account to run in: `[witness]` names neither `endpoint` nor `account-id`{why}"
                ))
                .at(at)
                .hint(format!(
                    "set `endpoint` (or `{}`) to the emulator CI starts, or `account-id` to a sandbox account",
                    crate::config::WITNESS_ENDPOINT_VARIABLE
                )));
            }
        };
        Ok(Account {
            target,
            endpoint_input: settings.endpoint_input.clone(),
            account_input: settings.account_input.clone(),
        })
    }

    /// Where it runs, for messages.
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Emulator { endpoint } => format!("emulator `{endpoint}`"),
            Target::Sandbox { account_id } => format!("sandbox account `{account_id}`"),
        }
    }

    /// The input a stack must declare so that the witness can hold it to this
    /// account: without it, its providers would go wherever their defaults lead.
    pub fn required_input(&self) -> &str {
        match self.target {
            Target::Emulator { .. } => &self.endpoint_input,
            Target::Sandbox { .. } => &self.account_input,
        }
    }

    /// The environment and variables for one customer's runs.
    pub fn session(&self, customer: &str) -> Session {
        match &self.target {
            Target::Emulator { endpoint } => {
                let env_remove = std::env::vars_os()
                    .filter_map(|(k, _)| k.into_string().ok())
                    .filter(|k| k.starts_with("AWS_"))
                    .collect();
                let mut env = vec![
                    ("AWS_EC2_METADATA_DISABLED".to_string(), "true".to_string()),
                    ("AWS_DEFAULT_REGION".to_string(), "us-east-1".to_string()),
                ];
                // An emulator without `AssumeRole` is one shared account.
                let credentials = assume_own_account(endpoint, customer).unwrap_or_else(|| {
                    vec![
                        ("AWS_ACCESS_KEY_ID", "stackpack-witness".to_string()),
                        ("AWS_SECRET_ACCESS_KEY", "stackpack-witness".to_string()),
                    ]
                });
                env.extend(credentials.into_iter().map(|(k, v)| (k.to_string(), v)));
                Session {
                    env,
                    env_remove,
                    vars: vec![(self.endpoint_input.clone(), endpoint.clone())],
                }
            }
            Target::Sandbox { account_id } => Session {
                env: Vec::new(),
                env_remove: Vec::new(),
                vars: vec![(self.account_input.clone(), account_id.clone())],
            },
        }
    }
}

/// Credentials for a fresh account of the emulator's (STS `AssumeRole` into an
/// account id never used before), or `None` when the emulator does not offer it.
fn assume_own_account(endpoint: &str, customer: &str) -> Option<Vec<(&'static str, String)>> {
    let mut bytes = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    // 12 digits, never starting with 0.
    let account = 100_000_000_000 + u64::from_le_bytes(bytes) % 900_000_000_000;
    let session: String = customer
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+=,.@-".contains(*c))
        .take(48)
        .collect();
    let body = format!(
        "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A{account}%3Arole%2Fstackpack-witness&RoleSessionName=witness-{session}"
    );
    let answer = stackpack_bundle::remote::http::post_form(
        &format!("{endpoint}/"),
        // Emulators read the caller from the credential scope; nothing is signed.
        &[(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=stackpack-witness/20000101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=0",
        )],
        body,
        std::time::Duration::from_secs(10),
    )
    .ok()
    .filter(|answer| answer.status < 300)?;
    let answer: AssumeRoleResponse = stackpack_aws::xml::read(&answer.body)?;
    let credentials = answer.result.credentials;
    Some(vec![
        ("AWS_ACCESS_KEY_ID", credentials.access_key_id),
        ("AWS_SECRET_ACCESS_KEY", credentials.secret_access_key),
        ("AWS_SESSION_TOKEN", credentials.session_token),
    ])
}

/// STS's answer to `AssumeRole`: only the credentials are read.
#[derive(serde::Deserialize)]
struct AssumeRoleResponse {
    #[serde(rename = "AssumeRoleResult")]
    result: AssumeRoleResult,
}

#[derive(serde::Deserialize)]
struct AssumeRoleResult {
    #[serde(rename = "Credentials")]
    credentials: AssumedCredentials,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumedCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
}

/// The host of an `http://` or `https://` URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?.to_string()
    } else {
        authority.split(':').next()?.to_string()
    };
    (!host.is_empty()).then_some(host)
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assume_role_answer_reads_as_its_three_credentials() {
        let xml = r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <SessionToken>token&amp;more</SessionToken>
      <SecretAccessKey>secret</SecretAccessKey>
      <Expiration>2026-12-06T03:00:00Z</Expiration>
      <AccessKeyId>ASIAEXAMPLE</AccessKeyId>
    </Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/x/y</Arn></AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>
</AssumeRoleResponse>"#;
        let answer: AssumeRoleResponse = stackpack_aws::xml::read(xml).unwrap();
        let credentials = answer.result.credentials;
        assert_eq!(credentials.access_key_id, "ASIAEXAMPLE");
        assert_eq!(credentials.secret_access_key, "secret");
        assert_eq!(credentials.session_token, "token&more");
        let refused = "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>";
        assert!(stackpack_aws::xml::read::<AssumeRoleResponse>(refused).is_none());
    }

    #[test]
    fn only_loopback_hosts_are_this_machine() {
        for url in [
            "http://127.0.0.1:5000",
            "http://localhost:4566/",
            "http://[::1]:5000",
        ] {
            assert!(is_loopback(&host_of(url).unwrap()), "{url}");
        }
        for url in [
            "http://10.0.0.5:4566",
            "https://sts.amazonaws.com",
            "http://127.0.0.1.example.com:80",
            "http://user@evil.example:5000",
        ] {
            assert!(!is_loopback(&host_of(url).unwrap()), "{url}");
        }
        assert_eq!(host_of("ftp://127.0.0.1"), None);
    }
}
