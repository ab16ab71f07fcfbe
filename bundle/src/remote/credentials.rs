//! Registry credentials, found the way container tools find them:
//!
//! 1. `STACKPACK_REGISTRY_TOKEN`: a bearer token, sent as is;
//! 2. `STACKPACK_REGISTRY_USERNAME` and `STACKPACK_REGISTRY_PASSWORD`;
//! 3. the Docker config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`):
//!    a credential helper for the host (`credHelpers`, then `credsStore`), else the
//!    base64 `auth` entry under `auths`;
//! 4. anonymous.
//!
//! Username and password are offered to the registry's bearer-token challenge (the
//! `WWW-Authenticate` flow), as docker and skopeo do. Secrets are never logged.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde::Deserialize;

/// Credentials for one registry host.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    Anonymous,
    Basic { username: String, password: String },
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, even in debug output.
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Credentials::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

impl Credentials {
    /// Where these came from, for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Credentials::Anonymous => "no credentials",
            Credentials::Basic { .. } => "a username and password",
            Credentials::Bearer(_) => "a bearer token",
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    creds_store: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
    registrytoken: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HelperAnswer {
    username: String,
    secret: String,
}

/// Finds credentials for `host` (`registry.example.com` or `127.0.0.1:5000`).
pub fn resolve(host: &str) -> Credentials {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(token) = env("STACKPACK_REGISTRY_TOKEN") {
        return Credentials::Bearer(token);
    }
    if let (Some(username), Some(password)) = (
        env("STACKPACK_REGISTRY_USERNAME"),
        env("STACKPACK_REGISTRY_PASSWORD"),
    ) {
        return Credentials::Basic { username, password };
    }
    docker_config_credentials(host).unwrap_or(Credentials::Anonymous)
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

fn docker_config_credentials(host: &str) -> Option<Credentials> {
    let text = std::fs::read_to_string(docker_config_path()?).ok()?;
    let config: DockerConfig = serde_json::from_str(&text).ok()?;
    if let Some(helper) = config
        .cred_helpers
        .get(host)
        .or(config.creds_store.as_ref())
    {
        if let Some(credentials) = from_helper(helper, host) {
            return Some(credentials);
        }
    }
    let entry = config.auths.iter().find_map(|(key, auth)| {
        let key_host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or("");
        (key_host == host).then_some(auth)
    })?;
    if let Some(token) = &entry.registrytoken {
        return Some(Credentials::Bearer(token.clone()));
    }
    if let Some(encoded) = &entry.auth {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (username, password) = text.split_once(':')?;
        return Some(Credentials::Basic {
            username: username.to_string(),
            password: password.to_string(),
        });
    }
    match (&entry.username, &entry.password, &entry.identitytoken) {
        (Some(username), Some(password), _) => Some(Credentials::Basic {
            username: username.clone(),
            password: password.clone(),
        }),
        (_, _, Some(token)) => Some(Credentials::Basic {
            username: "<token>".to_string(),
            password: token.clone(),
        }),
        _ => None,
    }
}

/// Asks `docker-credential-<helper> get`, as the Docker CLI does.
fn from_helper(helper: &str, host: &str) -> Option<Credentials> {
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(host.as_bytes()).ok()?;
    let output = child.wait_with_output().ok()?;
    if !output.status.success() {
        return None;
    }
    let answer: HelperAnswer = serde_json::from_slice(&output.stdout).ok()?;
    Some(Credentials::Basic {
        username: answer.username,
        password: answer.secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret() {
        let basic = Credentials::Basic {
            username: "ci".into(),
            password: "hunter2".into(),
        };
        assert!(!format!("{basic:?}").contains("hunter2"));
        assert!(!format!("{:?}", Credentials::Bearer("tok".into())).contains("tok"));
    }
}
