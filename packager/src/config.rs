//! `stackpack.toml` (the repository) and `stack.toml` (one stack).

use std::path::{Path, PathBuf};

use semver::Version;
use serde::Deserialize;

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
        Ok(config)
    }

    /// The namespace part of `registry` (`acme` in `127.0.0.1:5000/acme`).
    pub fn namespace(&self) -> Option<&str> {
        let registry = self.registry.as_deref()?;
        registry.split_once('/').map(|(_, namespace)| namespace)
    }

    /// Where the signing key comes from, per `[signing] key`: a file, or `env:VAR`
    /// holding either a path or the PEM itself (as CI secrets usually are).
    pub fn signing_key_source(&self, root: &Path) -> Result<Option<KeySource>> {
        let Some(key) = &self.signing.key else {
            return Ok(None);
        };
        let Some(variable) = key.strip_prefix("env:") else {
            return Ok(Some(KeySource::File(root.join(key))));
        };
        match std::env::var(variable) {
            Ok(value) if value.trim_start().starts_with("-----BEGIN") => Ok(Some(KeySource::Pem {
                variable: variable.to_string(),
                pem: value,
            })),
            Ok(value) if !value.is_empty() => Ok(Some(KeySource::File(PathBuf::from(value)))),
            _ => Err(Error::usage(format!(
                "`[signing] key` in `stackpack.toml` names `{key}`, and `{variable}` is not set"
            ))
            .at(root.join("stackpack.toml").display())
            .hint(format!(
                "set `{variable}` to the private key's path or to its PEM (make one with `stackpack keygen --out NAME`), or pass `--key FILE`"
            ))),
        }
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
}

/// `stacks/<name>/stack.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StackConfig {
    pub description: Option<String>,
    /// `terraform` or `tofu`; absent when either works.
    pub engine: Option<String>,
    /// The version of the first release (default `0.1.0`).
    pub initial_version: Option<Version>,
    /// Post-apply assertions on outputs (`[[smoke]]` with `name`, `condition`,
    /// `error-message`): read by the runner from the bundle's `stack.toml` after
    /// every apply (see `docs/runner.md`); the packager only carries them.
    #[serde(default)]
    pub smoke: Vec<toml::Table>,
}

impl StackConfig {
    pub fn load(path: &Path, display: &str) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::usage(format!("cannot read `{display}`: {e}")).at(display))?;
        let config: StackConfig = toml::from_str(&text).map_err(|e| {
            Error::usage(format!("`{display}` is invalid: {}", e.message()))
                .at(location_of(Path::new(display), &text, e.span()))
                .hint("`stack.toml` takes `description`, `engine`, `initial-version` and `[[smoke]]`; see `docs/configuration.md`")
        })?;
        if let Some(engine) = &config.engine {
            if engine != "terraform" && engine != "tofu" {
                return Err(
                    Error::usage(format!("`{display}`: engine `{engine}` is not known"))
                        .at(display)
                        .hint(
                            "use `engine = \"terraform\"` or `engine = \"tofu\"`, or leave it out",
                        ),
                );
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
