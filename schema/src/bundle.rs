//! The bundle config: the JSON document a bundle manifest's `config` points at.
//! It says what the bundle holds and where it came from, and it is covered by the
//! signature (through the manifest), so every file digest in it is signed.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::interface::Interface;
use crate::rules::InterfaceChanges;

/// Version of the config document's own format, for bundles whose files all travel
/// in the stack layer. Bundles built before file layers existed have it, and a bundle
/// that carries no file layer keeps it, so that older runners still read it.
pub const CONFIG_FORMAT: u32 = 1;

/// The format of bundles where some files travel in layers of their own
/// ([`FileEntry::layer`]). A runner that only knows [`CONFIG_FORMAT`] would find those
/// files missing from the stack layer; the bump makes newer runners say why instead.
pub const FILE_LAYERS_FORMAT: u32 = 2;

/// The newest config format this code reads.
pub const NEWEST_FORMAT: u32 = FILE_LAYERS_FORMAT;

/// Files at least this large are considered for a layer of their own: below it, a
/// layer's descriptor, upload round trip and blob cost more than sharing saves.
pub const FILE_LAYER_MIN_SIZE: u64 = 1 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleConfig {
    /// [`CONFIG_FORMAT`].
    pub format: u32,
    pub stack: String,
    pub version: semver::Version,
    pub source: Source,
    /// RFC 3339, UTC: the source commit's time, so that builds are reproducible.
    pub created: String,
    pub engine: Engine,
    /// Where the stack sits inside the archive (`stacks/<stack>`): the folder the
    /// engine runs in. Vendored modules keep their repository paths beside it, so
    /// relative `source` paths resolve unchanged.
    pub entrypoint: String,
    pub interface: Interface,
    /// Local modules vendored into the bundle, sorted by path.
    pub modules: Vec<ModuleEntry>,
    /// Every file of the stack, sorted by path: those in the stack layer and those
    /// that travel as a layer of their own ([`FileEntry::layer`]).
    pub files: Vec<FileEntry>,
    /// The provider packages the stack's `.terraform.lock.hcl` pins, one per target
    /// platform, each carried as its own layer; sorted by source, version, platform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderPackage>,
    /// The customers this release was allowed to break (`stackpack publish
    /// --allow-breaking`), sorted: their inputs no longer fit the interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_breaking: Vec<String>,
    /// What the outcome witness saw before this release: the last release applied
    /// with each customer's inputs, this one planned on top. Absent when it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessSummary>,
    /// What the interface checker found since the last stable release, as the
    /// packager decided the version. Absent when the build had no stable release to
    /// compare with, and in bundles built before it was recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "changes_if_readable"
    )]
    pub changes: Option<InterfaceChanges>,
}

/// Reads `changes`, or `None` when it names a rule this build does not know: a
/// runner must still read a bundle from a newer packager, and the changes are a
/// record for people, not something a deployment needs.
fn changes_if_readable<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<InterfaceChanges>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.and_then(|value| serde_json::from_value(value).ok()))
}

/// The outcome witness's summary, so that support and customers see what an upgrade
/// will do before they run it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessSummary {
    /// The release applied first, which this one was planned on top of.
    pub release: String,
    /// Customers with inputs for this stack (those witnessed are in `customers`).
    pub customers_total: u64,
    /// The bump the interface rules required.
    pub rules: crate::version::Bump,
    /// The largest bump a customer's plan required.
    pub witness: crate::version::Bump,
    /// The bump the vendor chose knowingly (`--bump`), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<crate::version::Bump>,
    /// Per customer witnessed, sorted as witnessed.
    pub customers: Vec<WitnessCustomer>,
}

/// What the witness saw for one customer: counts, and `<action> <address>` per
/// resource changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessCustomer {
    pub customer: String,
    pub add: u64,
    pub change: u64,
    pub replace: u64,
    pub destroy: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
}

/// One provider package: the registry's own zip for one platform, stored as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderPackage {
    /// The provider's source address, fully qualified
    /// (`registry.terraform.io/hashicorp/aws`).
    pub source: String,
    pub version: String,
    /// `<os>_<arch>`, as Terraform names platforms (`linux_amd64`).
    pub platform: String,
    /// The hash the lock file pins it by that this package matched: `zh:<hex>` (the
    /// SHA-256 of the zip) or `h1:<base64>` (the hash of its contents).
    pub hash: String,
    /// The layer that carries the zip; also the SHA-256 of the zip, so `zh:` again.
    pub digest: Digest,
    pub size: u64,
}

impl ProviderPackage {
    /// The zip's name as registries and `terraform providers mirror` write it:
    /// `terraform-provider-<type>_<version>_<platform>.zip`.
    pub fn file_name(&self) -> String {
        package_file_name(&self.source, &self.version, &self.platform)
    }

    /// Where the zip sits in a packed `filesystem_mirror`:
    /// `<hostname>/<namespace>/<type>/<file name>`.
    pub fn mirror_path(&self) -> String {
        format!("{}/{}", self.source, self.file_name())
    }
}

/// `terraform-provider-<type>_<version>_<platform>.zip` for a source address.
pub fn package_file_name(source: &str, version: &str, platform: &str) -> String {
    let kind = source.rsplit('/').next().unwrap_or(source);
    format!("terraform-provider-{kind}_{version}_{platform}.zip")
}

/// Where the bundle was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The repository's address, without credentials.
    pub repository: String,
    pub commit: String,
    pub branch: String,
}

/// The engine the stack needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Engine {
    /// `terraform`, `tofu`, or absent when either works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<EngineName>,
    /// The `required_version` constraint, if the stack declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_constraint: Option<String>,
}

/// Which program runs a stack: Terraform or OpenTofu, by the name of its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineName {
    Terraform,
    Tofu,
}

impl EngineName {
    pub const ALL: [EngineName; 2] = [EngineName::Terraform, EngineName::Tofu];

    /// The command's name, as in configs and receipts: `terraform` or `tofu`.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineName::Terraform => "terraform",
            EngineName::Tofu => "tofu",
        }
    }
}

impl std::fmt::Display for EngineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EngineName {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        EngineName::ALL
            .into_iter()
            .find(|engine| engine.as_str() == name)
            .ok_or_else(|| format!("`{name}` is not an engine: `terraform` or `tofu`"))
    }
}

/// A vendored local module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleEntry {
    pub name: String,
    /// Path inside the archive, as in the repository (`modules/network`).
    pub path: String,
    /// The module's published version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Digest over the module's file list (see [`tree_digest`]).
    pub digest: Digest,
}

/// One file of the stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
    /// True when the file is not in the stack layer but travels as a layer of its
    /// own (media type [`crate::media_type::FILE_LAYER`]) holding exactly its bytes,
    /// so the layer's digest is `digest`: a large, already-compressed file shared by
    /// every version and stack that holds it. Absent (false) in older bundles.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub layer: bool,
}

/// The digest of a tree of files: SHA-256 over `<path>\0<digest>\n` lines in path
/// order. Two trees with the same files and contents have the same digest, wherever
/// and whenever they were packed.
pub fn tree_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a Digest)>) -> Digest {
    let mut entries: Vec<_> = files.into_iter().collect();
    entries.sort();
    let mut hasher = crate::digest::Sha256Hasher::new();
    for (path, digest) in entries {
        hasher.update(path.as_bytes());
        hasher.update(b"\0");
        hasher.update(digest.to_string().as_bytes());
        hasher.update(b"\n");
    }
    hasher.finish()
}

impl BundleConfig {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("config serialisation cannot fail")
    }

    /// The files that travel as layers of their own, in path order.
    pub fn file_layers(&self) -> impl Iterator<Item = &FileEntry> {
        self.files.iter().filter(|file| file.layer)
    }

    /// The format a config with these files must declare: [`FILE_LAYERS_FORMAT`]
    /// when any file travels as a layer, else [`CONFIG_FORMAT`].
    pub fn required_format(files: &[FileEntry]) -> u32 {
        if files.iter().any(|file| file.layer) {
            FILE_LAYERS_FORMAT
        } else {
            CONFIG_FORMAT
        }
    }

    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files
            .binary_search_by(|entry| entry.path.as_str().cmp(path))
            .ok()
            .map(|index| &self.files[index])
    }
}
