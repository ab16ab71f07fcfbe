//! `stackpack.toml` (the repository) and `stack.toml` (one stack).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use semver::Version;
use serde::Deserialize;
use stackpack_schema::release::Wire;

use crate::error::{Error, Result};

/// `stackpack.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RepoConfig {
    /// `HOST[:PORT]/NAMESPACE`.
    pub registry: Option<String>,
    /// The repository address recorded in bundles.
    pub repository: Option<String>,
    #[serde(default = "default_main_branch")]
    pub main_branch: String,
    #[serde(default = "default_stack_globs")]
    pub stacks: Vec<String>,
    #[serde(default = "default_module_globs")]
    pub modules: Vec<String>,
    #[serde(default)]
    pub environments: Vec<String>,
    #[serde(default)]
    pub signing: Signing,
    /// Per-rule levels for the interface checker and lints (`rule = "major"`).
    #[serde(default)]
    pub rules: toml::Table,
    /// Policy settings read by later stages.
    #[serde(default)]
    pub policy: toml::Table,
    /// Where provider packages come from, and for which platforms.
    #[serde(default)]
    pub providers: ProviderSettings,
    /// `[engines]`: the engine mirror releases take their engine from.
    #[serde(default)]
    pub engines: EngineSettings,
    /// `[witness]`: the account the outcome witness applies and plans in.
    pub witness: Option<WitnessSettings>,
    /// Which inputs name a customer and its network, and the pool new ranges come from.
    #[serde(default)]
    pub customers: CustomerSettings,
    /// `[releases.<name>]`: a customer environment shipped as one version (see
    /// `docs/releases.md`). Release and stack names share one namespace.
    #[serde(default)]
    pub releases: BTreeMap<String, ReleaseSettings>,
}

/// `[releases.<name>]`: the stacks and services of one release.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ReleaseSettings {
    pub description: Option<String>,
    /// The stacks, by name; each one's `depends-on` must be listed too.
    pub stacks: Vec<String>,
    /// `[releases.<name>.services]`: service name → an OCI reference
    /// (`HOST/REPO:TAG` or `HOST/REPO@sha256:…`); a tag is resolved to its digest
    /// when the release is published.
    #[serde(default)]
    pub services: BTreeMap<String, String>,
    /// The version of the first release (default `0.1.0`).
    pub initial_version: Option<Version>,
    /// `engine = { name = "tofu", version = "1.8.2" }`: the engine the release
    /// carries, per platform of `[providers] platforms`, from `[engines] mirror`.
    pub engine: Option<ReleaseEngineSettings>,
}

/// `[releases.<name>] engine`: which engine the release carries.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ReleaseEngineSettings {
    pub name: stackpack_schema::bundle::EngineName,
    pub version: Version,
}

/// Names an engine mirror that overrides `[engines] mirror`.
pub const ENGINE_MIRROR_VARIABLE: &str = "STACKPACK_ENGINE_MIRROR";

/// `[engines]`: where the engines releases carry are taken from.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct EngineSettings {
    /// A folder holding `<name>/<version>/<platform>/<name>` (the binary from the
    /// engine's release zip: `terraform/1.9.8/linux_amd64/terraform`), relative to
    /// the repository or absolute. Filled in CI; not committed.
    pub mirror: Option<PathBuf>,
}

impl ReleaseSettings {
    pub fn initial_version(&self) -> Version {
        self.initial_version
            .clone()
            .unwrap_or_else(|| Version::new(0, 1, 0))
    }
}

/// Names the witness's emulator endpoint, overriding `[witness] endpoint`: CI starts
/// the emulator on a port it learns only then.
pub const WITNESS_ENDPOINT_VARIABLE: &str = "STACKPACK_WITNESS_ENDPOINT";

/// `[witness]`: where the outcome witness may apply the last release and plan the new
/// one with each customer's inputs. It runs nowhere else: an emulator endpoint on this
/// machine's loopback (or one listed in `allowed-endpoints`), or the sandbox account
/// named by `account-id`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WitnessSettings {
    /// `publish` runs the witness too (as `check --witness` does).
    #[serde(default)]
    pub publish: bool,
    /// The URL of an emulator of the cloud API (moto, LocalStack) that CI starts.
    pub endpoint: Option<String>,
    /// Endpoints off this machine the witness may use, written exactly as `endpoint`.
    #[serde(default)]
    pub allowed_endpoints: Vec<String>,
    /// The stack input that points its providers at the endpoint.
    #[serde(default = "default_endpoint_input")]
    pub endpoint_input: String,
    /// A sandbox account (12 digits) reached with the ordinary provider credentials,
    /// when there is no endpoint.
    pub account_id: Option<String>,
    /// The stack input that names the account the provider must find itself in
    /// (`allowed_account_ids`): set to `account-id` in a sandbox account.
    #[serde(default = "default_account_input")]
    pub account_input: String,
    /// The engine: a name on `PATH` or a path (default: `terraform`).
    pub engine: Option<PathBuf>,
    /// Witness at most this many customers per stack (spread over the sorted list).
    pub sample: Option<usize>,
    /// Customers witnessed at once (default: 4).
    pub parallel: Option<usize>,
}

fn default_endpoint_input() -> String {
    "aws_endpoint".to_string()
}

fn default_account_input() -> String {
    "account_id".to_string()
}

/// `[customers]`: what `stackpack customer new` fills in, and what `check` compares
/// across customers. Input names default to the ones the example stacks use; an input
/// a stack does not declare is simply not filled or compared.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CustomerSettings {
    /// Where `--cidr auto` takes ranges from (`10.0.0.0/8`).
    pub cidr_pool: Option<ipnet::Ipv4Net>,
    /// The size of each allocated range, as a prefix length (`16` for a `/16`).
    #[serde(default = "default_cidr_prefix")]
    pub cidr_prefix: u8,
    /// The input holding a customer's network range.
    #[serde(default = "default_cidr_input")]
    pub cidr_input: String,
    /// The input naming the control-plane region a customer reports to: customers
    /// sharing one must not share addresses.
    #[serde(default = "default_control_plane_region_input")]
    pub control_plane_region_input: String,
    /// The input `--region` fills.
    #[serde(default = "default_region_input")]
    pub region_input: String,
    /// The input filled with the customer's id.
    #[serde(default = "default_id_input")]
    pub id_input: String,
}

impl Default for CustomerSettings {
    fn default() -> Self {
        CustomerSettings {
            cidr_pool: None,
            cidr_prefix: default_cidr_prefix(),
            cidr_input: default_cidr_input(),
            control_plane_region_input: default_control_plane_region_input(),
            region_input: default_region_input(),
            id_input: default_id_input(),
        }
    }
}

fn default_cidr_prefix() -> u8 {
    16
}

fn default_cidr_input() -> String {
    "vpc_cidr".to_string()
}

fn default_control_plane_region_input() -> String {
    "control_plane_region".to_string()
}

fn default_region_input() -> String {
    "region".to_string()
}

fn default_id_input() -> String {
    "customer_id".to_string()
}

/// Names a provider mirror that overrides `[providers] mirror`.
pub const PROVIDER_MIRROR_VARIABLE: &str = "STACKPACK_PROVIDER_MIRROR";

/// `[providers]`: the provider packages that travel inside bundles.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProviderSettings {
    /// A folder in the layout `terraform providers mirror` writes
    /// (`<hostname>/<namespace>/<type>/terraform-provider-…zip`), relative to the
    /// repository or absolute. Filled in CI; not committed.
    pub mirror: Option<PathBuf>,
    /// Target platforms, as Terraform names them.
    #[serde(default = "default_platforms")]
    pub platforms: Vec<String>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            mirror: None,
            platforms: default_platforms(),
        }
    }
}

fn default_platforms() -> Vec<String> {
    vec!["linux_amd64".to_string()]
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Signing {
    /// A path, or `env:VAR` naming a variable that holds the path.
    pub key: Option<String>,
}

fn default_main_branch() -> String {
    "main".to_string()
}

fn default_stack_globs() -> Vec<String> {
    vec!["stacks/*".to_string()]
}

/// The value parser of `--repo`: the folder named (it must exist, as every path a
/// command reads), or, when it holds no `stackpack.toml`, the nearest folder above it
/// that does, up to the git repository's root, as git and terraform find theirs: run
/// from `stacks/network`, `stackpack build` builds the whole repository.
#[derive(Clone, Copy, Debug, Default)]
pub struct RepoRoot;

impl clap::builder::TypedValueParser for RepoRoot {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<PathBuf, clap::Error> {
        let dir = stackpack_terminal::args::ExistingPath.parse_ref(command, arg, value)?;
        Ok(find_root(&dir))
    }
}

/// `dir` when it holds `stackpack.toml`, else the nearest folder above it that does,
/// not past the folder holding `.git`; `dir` itself when none does (its error then
/// names `dir`).
pub fn find_root(dir: &Path) -> PathBuf {
    if dir.join("stackpack.toml").is_file() {
        return dir.to_path_buf();
    }
    let Ok(absolute) = dir.canonicalize() else {
        return dir.to_path_buf();
    };
    for folder in absolute.ancestors() {
        if folder.join("stackpack.toml").is_file() {
            return folder.to_path_buf();
        }
        if folder.join(".git").exists() {
            break;
        }
    }
    dir.to_path_buf()
}

fn default_module_globs() -> Vec<String> {
    vec!["modules/*".to_string()]
}

impl RepoConfig {
    /// Reads `<root>/stackpack.toml`.
    pub fn load(root: &Path) -> Result<Self> {
        let path = root.join("stackpack.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::usage(format!("cannot read `stackpack.toml`: {e}"))
                .at(path.display())
                .hint("run stackpack in the root of the vendor repository, or pass `--repo DIR`")
        })?;
        let mut config: RepoConfig = toml::from_str(&text).map_err(|e| {
            Error::usage(format!("`stackpack.toml` is invalid: {}", e.message()))
                .at(location_of(&path, &text, e.span()))
                .hint("fix the value; every setting is described in `docs/configuration.md`")
        })?;
        // CI often keeps the mirror outside the checkout (a cache shared between
        // jobs): the variable names it without editing `stackpack.toml`.
        if let Some(mirror) = std::env::var_os(PROVIDER_MIRROR_VARIABLE).filter(|v| !v.is_empty()) {
            config.providers.mirror = Some(PathBuf::from(mirror));
        }
        if let Some(mirror) = std::env::var_os(ENGINE_MIRROR_VARIABLE).filter(|v| !v.is_empty()) {
            config.engines.mirror = Some(PathBuf::from(mirror));
        }
        if let Some(endpoint) = std::env::var(WITNESS_ENDPOINT_VARIABLE)
            .ok()
            .filter(|v| !v.is_empty())
        {
            if let Some(witness) = &mut config.witness {
                witness.endpoint = Some(endpoint);
            }
        }
        Ok(config)
    }

    /// The namespace part of `registry` (`acme` in `127.0.0.1:5000/acme`).
    pub fn namespace(&self) -> Option<&str> {
        let registry = self.registry.as_deref()?;
        registry.split_once('/').map(|(_, namespace)| namespace)
    }

    /// Where the signing key comes from, per `[signing] key`: a file, a key in AWS
    /// KMS (`awskms:///alias/NAME`), or `env:VAR` holding any of them or the PEM
    /// itself (as CI secrets usually are).
    pub fn signing_key_source(&self, root: &Path) -> Result<Option<KeySource>> {
        let Some(key) = &self.signing.key else {
            return Ok(None);
        };
        if key.starts_with(stackpack_aws::kms::SCHEME) {
            return Ok(Some(KeySource::Kms(key.clone())));
        }
        let Some(variable) = key.strip_prefix("env:") else {
            return Ok(Some(KeySource::File(root.join(key))));
        };
        KeySource::from_variable(variable).map(Some).map_err(|e| {
            Error::usage(format!(
                "`[signing] key` in `stackpack.toml` names `{key}`, and `{variable}` is not set"
            ))
            .at(root.join("stackpack.toml").display())
            .hint(e.hint)
        })
    }
}

/// Where a signing key is read from. Its content is never printed.
pub enum KeySource {
    File(PathBuf),
    /// The PEM, from the environment variable named.
    Pem {
        variable: String,
        pem: String,
    },
    /// A key held in AWS KMS: `awskms:///alias/NAME`, `awskms:///arn:…`.
    Kms(String),
}

/// An environment variable that names no key: what to set it to.
pub struct UnsetVariable {
    pub hint: String,
}

impl KeySource {
    /// The key `variable` holds: its PEM, a KMS key's URI, or a path.
    pub fn from_variable(variable: &str) -> std::result::Result<KeySource, UnsetVariable> {
        match std::env::var(variable) {
            Ok(value) if value.trim_start().starts_with("-----BEGIN") => Ok(KeySource::Pem {
                variable: variable.to_string(),
                pem: value,
            }),
            Ok(value) if value.trim().starts_with(stackpack_aws::kms::SCHEME) => {
                Ok(KeySource::Kms(value.trim().to_string()))
            }
            Ok(value) if !value.is_empty() => Ok(KeySource::File(PathBuf::from(value))),
            _ => Err(UnsetVariable {
                hint: format!(
                    "set `{variable}` to the private key's path or PEM (make one with `stackpack keygen --out NAME`) or to a KMS key (`awskms:///alias/NAME`), or pass `--key FILE`"
                ),
            }),
        }
    }
}

/// `stacks/<name>/stack.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StackConfig {
    pub description: Option<String>,
    /// `terraform` or `tofu`; absent when either works. Another name is refused
    /// where it is written, with the names that are known.
    pub engine: Option<stackpack_schema::bundle::EngineName>,
    /// The version of the first release (default `0.1.0`).
    pub initial_version: Option<Version>,
    /// Post-apply assertions on outputs (`[[smoke]]` with `name`, `condition`,
    /// `error-message`): read by the runner from the bundle's `stack.toml` after
    /// every apply (see `docs/runner.md`); the packager only carries them.
    #[serde(default)]
    pub smoke: Vec<toml::Table>,
    /// `[preflight]`: what the stack adds to the account (`vpcs`, `nat-gateways`,
    /// `internet-gateways`), read by the runner's `preflight` command from the
    /// bundle's `stack.toml`; the packager only carries it.
    #[serde(default)]
    pub preflight: Option<toml::Table>,
    /// Dotfiles and dot-folders to pack, relative to the stack folder: the engine
    /// never reads them, so they are left out unless named here (see
    /// [`crate::pack::is_hidden`]).
    #[serde(default)]
    pub include: Vec<String>,
    /// Stacks applied before this one, in the same release.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// `[inputs.from]`: inputs set from an upstream stack's output at apply time
    /// (`vpc_id = "network.vpc_id"`); the upstream stack is a dependency too.
    #[serde(default)]
    pub inputs: StackInputs,
    /// Lint levels for the files in this stack's folder, over the repository's
    /// (`runs-commands-on-runner = "off"` for a stack that means to run one).
    #[serde(default)]
    pub rules: toml::Table,
}

/// `[inputs]` of a `stack.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StackInputs {
    /// Input name → the upstream `stack.output` that sets it.
    #[serde(default)]
    pub from: BTreeMap<String, Wire>,
}

impl StackConfig {
    /// Every stack this one must be applied after: `depends-on` and the stacks its
    /// wiring reads from.
    pub fn dependencies(&self) -> BTreeSet<String> {
        self.depends_on
            .iter()
            .cloned()
            .chain(self.inputs.from.values().map(|w| w.stack.clone()))
            .collect()
    }

    pub fn load(path: &Path, display: &str) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::usage(format!("cannot read `{display}`: {e}")).at(display))?;
        let config: StackConfig = toml::from_str(&text).map_err(|e| {
            Error::usage(format!("`{display}` is invalid: {}", e.message()))
                .at(location_of(Path::new(display), &text, e.span()))
                .hint("`stack.toml` takes `description`, `engine`, `initial-version`, `include`, `depends-on`, `[inputs.from]`, `[rules]`, `[preflight]` and `[[smoke]]`; see `docs/configuration.md`")
        })?;
        if let Err(message) = crate::check::rule_config::RuleConfig::from_table(&config.rules)
            .and_then(|rules| rules.only_lints())
        {
            return Err(Error::usage(format!("`{display}` `[rules]`: {message}"))
                .at(display)
                .hint("a stack's `[rules]` sets lints only (`error`, `warn`, `off`); interface rules are set in `stackpack.toml`"));
        }
        for entry in &config.include {
            let escapes = entry.starts_with('/')
                || entry.split('/').any(|part| part == ".." || part.is_empty());
            if escapes {
                return Err(Error::usage(format!(
                    "`{display}`: `include` entry `{entry}` is not a path inside the stack folder"
                ))
                .at(display)
                .hint("name files or folders relative to the stack folder, such as `.config/app.json`"));
            }
        }
        Ok(config)
    }

    pub fn initial_version(&self) -> Version {
        self.initial_version
            .clone()
            .unwrap_or_else(|| Version::new(0, 1, 0))
    }
}

/// `path:line` for a byte span in a file.
pub fn location_of(path: &Path, text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("{}:{line}", path.display())
        }
        None => path.display().to_string(),
    }
}
