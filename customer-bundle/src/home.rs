//! The runner home: everything one installation keeps.
//!
//! ```text
//! runner.toml            customer id, engine, work folder, backend, policy
//! trusted/<key-id>.pub   trusted vendor public keys (SPKI PEM)
//! store/                 the verified bundle store (an OCI image layout)
//! ledger.sqlite          every receipt, and what is deployed
//! installation.key       this installation's receipt signing key (mode 0600)
//! state/<stack>/         engine state, when the backend is `local` (the default)
//! inputs/                copies of the inputs each deployment used (mode 0600),
//!                        so rollback and drift run with the same inputs
//! work/                  throwaway work folders (unless `runner.toml` names another)
//! locks/<stack>.lock     one runner at a time per stack
//! sync.lock              one `sync` pass at a time per home
//! pending/<id>/          plans a sync pass holds for approval (mode 0700): meta.json,
//!                        review.md, one reviewed plan per stack
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use stackpack_schema::bundle::EngineName;
use stackpack_schema::signature::PublicKey;

use super::error::{io, Error, ErrorKind, Result};
use super::files;

pub const CONFIG_FILE: &str = "runner.toml";

/// `runner.toml`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// The customer id receipts are reported under.
    pub customer: String,
    #[serde(default)]
    pub engine: EngineConfig,
    /// Where throwaway work folders are made (default: `<home>/work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<PathBuf>,
    #[serde(default)]
    pub backend: BackendConfig,
    #[serde(default)]
    pub policy: Policy,
    /// `stackpack-runner sync`: where the assignment comes from and what a pass may
    /// do on its own.
    #[serde(default, skip_serializing_if = "SyncConfig::is_default")]
    pub sync: SyncConfig,
}

/// `[sync]`: how `stackpack-runner sync` reconciles this home.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SyncConfig {
    /// Where the assignment comes from (default: `registry` when `registry` is set,
    /// else `desired` when `desired` is set, else `store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SyncSource>,
    /// The registry: `HOST[:PORT]/NAMESPACE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Plain HTTP to `registry` (loopback only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// The folder of the customer's inputs: one `<stack>.tfvars` per stack.
    /// Relative to the home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<PathBuf>,
    /// The channel this runner accepts statements for (default `stable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The desired-state file (`desired.toml`, in a git checkout). Relative to the home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<PathBuf>,
    #[serde(default)]
    pub approve: Approve,
    /// Unset: a pass does not look for drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_drift: Option<OnDrift>,
    #[serde(default)]
    pub on_removal: OnRemoval,
    /// When applies may happen: `Sat 02:00-06:00 UTC`, `Mon-Fri 22:00-23:30 UTC`,
    /// `daily 01:00-03:00 UTC`. Unset: any time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// Apply an assignment older than what runs (default: refused).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_downgrade: bool,
}

impl SyncConfig {
    fn is_default(&self) -> bool {
        *self == SyncConfig::default()
    }

    /// The channel, `stable` unless set.
    pub fn channel(&self) -> &str {
        self.channel.as_deref().unwrap_or("stable")
    }

    /// The source, as set or as the other settings imply.
    pub fn source(&self) -> SyncSource {
        match (self.source, &self.registry, &self.desired) {
            (Some(source), _, _) => source,
            (None, Some(_), _) => SyncSource::Registry,
            (None, None, Some(_)) => SyncSource::Desired,
            (None, None, None) => SyncSource::Store,
        }
    }
}

/// Where a sync pass reads what should run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SyncSource {
    /// The registry's assignment for this customer, checked against the vendor's
    /// signed channel statement.
    Registry,
    /// A desired-state file (GitOps).
    Desired,
    /// The channel statements imported into the store (airgapped).
    Store,
}

impl SyncSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncSource::Registry => "registry",
            SyncSource::Desired => "desired",
            SyncSource::Store => "store",
        }
    }
}

/// Which plans a sync pass applies on its own (the schema's: the runner reports it).
pub use stackpack_schema::rollout::Approve;

/// What a pass does about changes made outside the runner.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OnDrift {
    /// A drift receipt, and the release reported `drifted`.
    Report,
    /// The installed version applied again, through the approval policy.
    Correct,
}

/// What a pass does with a release the desired state no longer names.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnRemoval {
    /// Leave it running, untouched: data is never destroyed unless asked.
    #[default]
    Keep,
    /// Destroy it, through the approval policy.
    Destroy,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EngineConfig {
    /// `terraform` or `tofu`; another name is refused where `runner.toml` says it.
    pub name: EngineName,
    /// The engine binary (default: `name` looked up on `PATH`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            name: EngineName::Terraform,
            path: None,
        }
    }
}

/// Where engine state lives. It never lives in the throwaway work folder, so an
/// upgrade and a rollback see the same state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BackendConfig {
    /// `local` (state under `<home>/state/<stack>/`), or any backend the engine
    /// knows (`s3`, `gcs`, `azurerm`, …), configured by `config`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `-backend-config` settings. `{stack}` in a value is replaced by the stack name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// `[backend.s3]`, with `type = "s3"`: state in a bucket of the customer's own
    /// account, checked by the runner and laid out by it (one key per customer and
    /// stack), natively locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Backend>,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            kind: "local".into(),
            config: BTreeMap::new(),
            s3: None,
        }
    }
}

impl BackendConfig {
    /// The state kept in a bucket, when `type = "s3"` and `[backend.s3]` is set.
    pub fn s3(&self) -> Option<&S3Backend> {
        self.s3.as_ref().filter(|_| self.kind == "s3")
    }
}

/// `[backend.s3]`: a versioned, encrypted, private bucket in the customer's account.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct S3Backend {
    pub bucket: String,
    /// The bucket's region (default: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else
    /// `us-east-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Keys are `<key-prefix>/<customer>/<stack>.tfstate` (default `stackpack`).
    #[serde(default = "default_key_prefix")]
    pub key_prefix: String,
    /// An S3 emulator's URL (path-style requests). Real accounts leave it unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Locking through a DynamoDB table instead of the lock object beside the state
    /// (`use_lockfile`): for engines before Terraform 1.10 / OpenTofu 1.8, which
    /// have no native S3 locking. The table needs a string partition key `LockID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamodb_table: Option<String>,
}

fn default_key_prefix() -> String {
    "stackpack".into()
}

impl S3Backend {
    pub fn region(&self) -> String {
        self.region
            .clone()
            .or_else(|| {
                ["AWS_REGION", "AWS_DEFAULT_REGION"]
                    .iter()
                    .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
            })
            .unwrap_or_else(|| "us-east-1".into())
    }

    /// The state object's key for one stack of one customer.
    pub fn state_key(&self, customer: &str, stack: &str) -> String {
        let prefix = self.key_prefix.trim_matches('/');
        if prefix.is_empty() {
            format!("{customer}/{stack}.tfstate")
        } else {
            format!("{prefix}/{customer}/{stack}.tfstate")
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Policy {
    /// Allow prerelease versions (`1.4.0-feat.2`). Off: stable versions only.
    #[serde(default)]
    pub allow_prereleases: bool,
    /// The oldest a registry's signed "newest version" statement may be when this
    /// runner pulls (`14d`, `12h`, `90m`): a registry that stopped getting fresh
    /// statements is refused as possibly frozen. Unset: statements are reported only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latest_age: Option<String>,
    /// A folder of the customer's own Rego policies (`*.rego`, conftest layout),
    /// evaluated on every plan beside the vendor's. Relative to the home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<PathBuf>,
    /// What to do when a smoke check fails after an apply: `stop` (the default:
    /// report it, change nothing more) or `rollback` (apply the previous version at
    /// once).
    #[serde(default, skip_serializing_if = "OnFailure::is_stop")]
    pub on_failure: OnFailure,
    /// Registry namespaces that mirror the vendor's: `"mirror-ns" = "vendor-ns"`
    /// lets `pull` take from `mirror-ns/stacks/<stack>` a bundle signed for
    /// `vendor-ns/stacks/<stack>`. Without an entry, a bundle is accepted only from
    /// the repository it was signed for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mirrors: BTreeMap<String, String>,
    /// What to do when an apply left the value of a sensitive input in the state:
    /// `deny` (the default: the run fails) or `warn`.
    #[serde(default, skip_serializing_if = "SecretsInState::is_deny")]
    pub secrets_in_state: SecretsInState,
    /// Attestations a bundle must carry, signed by a trusted key: `"provenance"`
    /// (SLSA v1) and `"sbom"` (CycloneDX). Whatever a bundle carries is checked
    /// either way; this refuses one without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require: Vec<Requirement>,
    /// Where a bundle's provenance must say it was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ProvenancePins>,
}

/// `[policy] require = [...]`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    Provenance,
    Sbom,
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Requirement::Provenance => "provenance",
            Requirement::Sbom => "SBOM",
        })
    }
}

/// `[policy.provenance]`: cosign's identity pinning, for a vendor's builds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProvenancePins {
    /// The source repository's address, as the provenance names it
    /// (`https://github.com/acme/infra`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The refs a stable version may be built from (`refs/heads/main`). A
    /// prerelease is exempt where `allow-prereleases` is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
}

/// `[policy] secrets-in-state`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SecretsInState {
    #[default]
    Deny,
    Warn,
}

impl SecretsInState {
    fn is_deny(&self) -> bool {
        *self == SecretsInState::Deny
    }
}

impl Policy {
    /// The repository a bundle pulled from `repository` must be signed for: the
    /// same one, or the vendor's that `mirrors` says this namespace copies.
    pub fn signed_for(&self, repository: &str) -> String {
        let (namespace, rest) = match repository.rsplit_once("/stacks/") {
            Some((namespace, stack)) => (namespace, format!("stacks/{stack}")),
            None => return repository.to_string(),
        };
        match self.mirrors.get(namespace) {
            Some(vendor) => format!("{}/{rest}", vendor.trim_end_matches('/')),
            None => repository.to_string(),
        }
    }
}

/// What follows a failed smoke check.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    #[default]
    Stop,
    Rollback,
}

impl OnFailure {
    fn is_stop(&self) -> bool {
        *self == OnFailure::Stop
    }
}

/// `14d`, `12h`, `90m` or `30s` as seconds.
pub fn parse_age(text: &str) -> Option<i64> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.len().checked_sub(1)?);
    let number: i64 = number.parse().ok()?;
    let seconds = match unit {
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return None,
    };
    number.checked_mul(seconds)
}

/// An opened runner home.
#[derive(Clone, Debug)]
pub struct Home {
    pub root: PathBuf,
    pub config: Config,
}

/// Makes the home readable by its owner only. A home made before this rule, or with a
/// loose umask, is repaired on the next start: the home, every folder in it and every
/// file holding state, inputs, plans, keys or the ledger are made private.
fn make_private(root: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(root) else {
        return Ok(());
    };
    if meta.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o700))
                .map_err(|e| io("make private", &path, e))?;
        }
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
    Ok(())
}

/// `path` made absolute against the current folder (without resolving links, so the
/// path the user gave stays recognisable in messages).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| io("find the absolute path of", path, e))
}

/// The default home: `$STACKPACK_RUNNER_HOME` is handled by the CLI; this is
/// `$XDG_DATA_HOME/stackpack/runner`, else `~/.local/share/stackpack/runner`.
pub fn default_root() -> Option<PathBuf> {
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(data).join("stackpack").join("runner"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".local/share/stackpack/runner"))
}

impl Home {
    /// Opens an initialised home.
    pub fn open(root: &Path) -> Result<Home> {
        // Every path the home hands to the engine must be absolute: a relative one
        // would resolve inside the throwaway work folder, and the state written there
        // would vanish with it.
        let root = &absolute(root)?;
        make_private(root)?;
        let path = root.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::usage(format!(
                    "`{}` is not a runner home: it has no `{CONFIG_FILE}`",
                    root.display()
                ))
                .hint(
                    "create one with `stackpack-runner init --customer <ID>`, or pass `--home DIR`",
                ))
            }
            Err(e) => return Err(io("read", &path, e)),
        };
        let config: Config = toml::from_str(&text).map_err(|e| {
            Error::refused(format!("`{CONFIG_FILE}` is not valid: {}", e.message()))
                .at(location_of(&path, &text, e.span()))
        })?;
        // What the file holds is refused (1), as with any other file's content.
        check_config(&config).map_err(|e| {
            Error {
                kind: ErrorKind::Refused,
                ..e
            }
            .at(path.display())
        })?;
        Ok(Home {
            root: root.to_path_buf(),
            config,
        })
    }

    /// Creates a home with `config`. Refuses to overwrite an existing `runner.toml`.
    pub fn init(root: &Path, config: Config) -> Result<Home> {
        check_config(&config)?;
        let root = &absolute(root)?;
        let path = root.join(CONFIG_FILE);
        if path.exists() {
            return Err(Error::refused(format!(
                "`{}` already has a `{CONFIG_FILE}`",
                root.display()
            ))
            .hint("edit it, or choose another folder with `--home DIR`"));
        }
        for dir in ["trusted", "state", "inputs", "locks"] {
            if dir == "state" && config.backend.s3().is_some() {
                // The bucket keeps the state: the home holds none of its own.
                continue;
            }
            let dir = root.join(dir);
            files::create_folder(&dir)?;
        }
        let text = format!(
            "# stackpack-runner configuration. See `stackpack-runner init --help`.\n{}",
            toml::to_string_pretty(&config).expect("config serialises")
        );
        stackpack_bundle::layout::write_atomically(&path, text.as_bytes())?;
        let home = Home {
            root: root.to_path_buf(),
            config,
        };
        home.store()?;
        make_private(&home.root)?;
        Ok(home)
    }

    pub fn store_path(&self) -> PathBuf {
        self.root.join("store")
    }

    pub fn store(&self) -> Result<stackpack_bundle::layout::ImageLayout> {
        Ok(stackpack_bundle::layout::ImageLayout::create(
            self.store_path(),
        )?)
    }

    pub fn ledger_path(&self) -> PathBuf {
        self.root.join("ledger.sqlite")
    }

    pub fn key_path(&self) -> PathBuf {
        self.root.join("installation.key")
    }

    pub fn trusted_dir(&self) -> PathBuf {
        self.root.join("trusted")
    }

    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    pub fn inputs_dir(&self) -> PathBuf {
        self.root.join("inputs")
    }

    pub fn pending_dir(&self) -> PathBuf {
        self.root.join("pending")
    }

    /// A path `runner.toml` gives, relative to the home.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        }
    }

    pub fn state_dir(&self, stack: &str) -> PathBuf {
        self.root.join("state").join(stack)
    }

    /// The engine's state file of `stack`, when the runner keeps it in the home
    /// (the `local` backend without a `path` of its own): readable without an engine.
    pub fn local_state_file(&self, stack: &str) -> Option<PathBuf> {
        let backend = &self.config.backend;
        (backend.kind == "local" && !backend.config.contains_key("path"))
            .then(|| self.state_dir(stack).join("terraform.tfstate"))
    }

    /// How many managed resource instances the state of `stack` holds, when the
    /// runner can read it without an engine (see [`Home::local_state_file`]) and it
    /// exists: what is known of the account without a plan.
    pub fn resources_in_state(&self, stack: &str) -> Option<usize> {
        let text = std::fs::read_to_string(self.local_state_file(stack)?).ok()?;
        let state: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(
            state["resources"]
                .as_array()?
                .iter()
                .filter(|r| r["mode"] == "managed")
                .map(|r| r["instances"].as_array().map_or(0, Vec::len))
                .sum(),
        )
    }

    pub fn work_root(&self) -> PathBuf {
        match &self.config.work {
            Some(work) if work.is_absolute() => work.clone(),
            Some(work) => self.root.join(work),
            None => self.root.join("work"),
        }
    }

    /// Trusted keys, by key id.
    pub fn trusted_keys(&self) -> Result<Vec<(String, PublicKey, PathBuf)>> {
        let dir = self.trusted_dir();
        let mut keys = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keys),
            Err(e) => return Err(io("read", &dir, e)),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("pub") {
                continue;
            }
            let key = stackpack_bundle::trust::read_public_key(&path).map_err(|e| {
                Error::refused_by(e).hint(format!(
                    "remove it with `stackpack-runner trust remove {}`",
                    path.file_stem().unwrap_or_default().to_string_lossy()
                ))
            })?;
            keys.push((key.key_id(), key, path));
        }
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keys)
    }

    /// Adds a trusted key; returns its id and whether it was new.
    pub fn trust_add(&self, file: &Path) -> Result<(String, bool)> {
        let key = stackpack_bundle::trust::read_public_key(file).map_err(|e| {
            Error::refused_by(e)
                .hint("a vendor public key is the `.pub` file `stackpack keygen` wrote")
        })?;
        let id = key.key_id();
        let dir = self.trusted_dir();
        files::create_folder(&dir)?;
        let target = dir.join(format!("{id}.pub"));
        let new = !target.exists();
        stackpack_bundle::layout::write_atomically(&target, key.to_pem().as_bytes())?;
        // Where it came from, for `trust list`; and trusted again if once removed.
        let origin = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        stackpack_bundle::layout::write_atomically(
            &dir.join(format!("{id}.origin")),
            origin.display().to_string().as_bytes(),
        )?;
        let _ = std::fs::remove_file(self.removed_dir().join(&id));
        Ok((id, new))
    }

    /// Where a trusted key was added from (`trust add FILE`), when recorded.
    pub fn key_origin(&self, id: &str) -> Option<String> {
        std::fs::read_to_string(self.trusted_dir().join(format!("{id}.origin")))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// Keys this runner once trusted and no longer does (`trust remove`), so that a
    /// bundle signed by one is refused saying so.
    fn removed_dir(&self) -> PathBuf {
        self.trusted_dir().join("removed")
    }

    /// True when `id` was removed with `trust remove`.
    pub fn key_removed(&self, id: &str) -> bool {
        self.removed_dir().join(id).exists()
    }

    /// Removes a trusted key by id (or a unique prefix of at least 4 characters).
    pub fn trust_remove(&self, id: &str) -> Result<String> {
        let keys = self.trusted_keys()?;
        let matching: Vec<_> = keys
            .iter()
            .filter(|(key_id, _, _)| id.len() >= 4 && key_id.starts_with(id))
            .collect();
        match matching.as_slice() {
            [(key_id, _, path)] => {
                let removed = self.removed_dir();
                files::create_folder(&removed)?;
                stackpack_bundle::layout::write_atomically(&removed.join(key_id), b"removed\n")?;
                std::fs::remove_file(path).map_err(|e| io("remove", path, e))?;
                let _ = std::fs::remove_file(self.trusted_dir().join(format!("{key_id}.origin")));
                Ok(key_id.clone())
            }
            [] => Err(Error::usage(format!("no trusted key has id `{id}`"))
                .hint("list them with `stackpack-runner trust list`")),
            _ => Err(Error::usage(format!("`{id}` matches several trusted keys"))
                .hint("give more of the key id")),
        }
    }
}

fn check_config(config: &Config) -> Result<()> {
    stackpack_schema::reference::validate_name(&config.customer)
        .map_err(|e| Error::usage(format!("customer: {e}")))?;
    if config.backend.kind != "local" && config.backend.kind.is_empty() {
        return Err(Error::usage("the backend type is empty"));
    }
    match (&config.backend.s3, config.backend.kind.as_str()) {
        (None, "s3") if !config.backend.config.contains_key("bucket") => Err(Error::refused(
            "`[backend]` has `type = \"s3\"` but no `[backend.s3]` with its `bucket`",
        )
        .at(format!("`{CONFIG_FILE}`"))
        .hint("add `[backend.s3]` with `bucket = \"…\"` (see `stackpack-runner init --help`)")),
        (Some(_), kind) if kind != "s3" => Err(Error::refused(format!(
            "`[backend.s3]` is set but the backend type is `{kind}`"
        ))
        .at(format!("`{CONFIG_FILE}`"))
        .hint("set `type = \"s3\"` under `[backend]`, or remove `[backend.s3]`")),
        (Some(_), _) if !config.backend.config.is_empty() => Err(Error::refused(format!(
            "`[backend.s3]` and `config` both configure the s3 backend: {}",
            config
                .backend
                .config
                .keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .at(format!("`{CONFIG_FILE}`"))
        .hint("keep `[backend.s3]` and remove `config` under `[backend]`")),
        _ => Ok(()),
    }
}

/// `file:line` of a byte offset in `text`.
pub fn location_of(path: &Path, text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => format!("{}:{}", path.display(), line_of(text, span.start)),
        None => path.display().to_string(),
    }
}

/// The 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_are_read_with_their_unit() {
        assert_eq!(super::parse_age("14d"), Some(14 * 86_400));
        assert_eq!(super::parse_age("12h"), Some(43_200));
        assert_eq!(super::parse_age("90m"), Some(5_400));
        assert_eq!(super::parse_age("1s"), Some(1));
        assert_eq!(super::parse_age("soon"), None);
        assert_eq!(super::parse_age(""), None);
    }
}
