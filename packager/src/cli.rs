//! Every flag of `stackpack`, in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use stackpack_schema::version::Bump;

/// Package Terraform/OpenTofu stacks into signed, versioned bundles.
#[derive(Parser, Debug)]
#[command(name = "stackpack", version = stackpack_terminal::VERSION, after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Print nothing but results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more about what happens.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Make an ed25519 signing key pair.
    Keygen(KeygenArgs),
    /// Signing keys: print the public key customers trust.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Show, for every stack, whether it changed and the version a build would get.
    Version(VersionArgs),
    /// Build, sign and store the changed (or named) stacks in an image layout.
    Build(BuildArgs),
    /// Show a bundle (or every bundle) in an image layout, folder or tar, and verify it.
    Inspect(InspectArgs),
    /// Version, build, sign and push every changed stack to an OCI registry.
    Publish(PublishArgs),
    /// Write bundles and their signatures to an OCI image layout tar, for airgaps.
    Export(ExportArgs),
    /// Write one kit for an airgapped customer: the release's bundles, the runner
    /// program, the vendor's public key, `SHA256SUMS` signed with the vendor's key, and
    /// `VERIFY.md` + `verify.sh` that check it with only `sha256sum` and `openssl`.
    Kit(KitArgs),
    /// Approve a published release (or stack) version for a channel: sign the
    /// statement the registry's rollout and every runner act on, and push it beside it.
    Promote(PromoteArgs),
    /// Forecast every customer's plan from the versions it runs to a published
    /// release version, in an emulated account, and send it to the registry.
    Forecast(ForecastArgs),
    /// Check the interface contract of changed stacks and modules, and lint the repository.
    Check(crate::commands::check::CheckArgs),
    /// Customers: start one's inputs file for a stack.
    #[command(subcommand)]
    Customer(CustomerCommand),
}

#[derive(Subcommand, Debug)]
pub enum CustomerCommand {
    /// Write `customers/ID/STACK.tfvars` from the stack's interface: descriptions above
    /// each input, required inputs as `<fill in: …>` placeholders that `check` refuses
    /// until filled, defaults as comments.
    New(CustomerNewArgs),
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 written; 1 refused (the customer already has inputs for the stack, a range overlaps another customer's, the pool is full); 2 the command was wrong (bad id, unknown stack, no `[customers] cidr-pool` for `--cidr auto`)."
)]
pub struct CustomerNewArgs {
    /// The customer's id: 2 to 31 lowercase letters, digits and `-`, starting with a letter.
    #[arg(value_name = "ID")]
    pub id: String,
    /// The stack the inputs are for.
    #[arg(long, value_name = "STACK")]
    pub stack: String,
    /// The customer's region (fills `[customers] region-input`, default `region`).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// The control-plane region the customer reports to (fills `[customers]
    /// control-plane-region-input`); ranges are allocated apart from every customer
    /// reporting there, or from every customer when not given.
    #[arg(long, value_name = "REGION")]
    pub control_plane_region: Option<String>,
    /// The customer's network range: `auto` takes the first free one from `[customers]
    /// cidr-pool`; a range given is refused when it overlaps another customer's.
    #[arg(long, value_name = "auto|CIDR")]
    pub cidr: Option<String>,
    /// The vendor repository (the folder holding `stackpack.toml`).
    #[arg(long, default_value = ".", value_name = "DIR", value_parser = stackpack_packager::config::RepoRoot)]
    pub repo: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Where a registry is and how to reach it.
#[derive(Args, Debug, Clone)]
pub struct RegistryArgs {
    /// `HOST[:PORT]/NAMESPACE` (default: `registry` in `stackpack.toml`).
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub registry: Option<String>,
    /// Plain HTTP, for registries on this machine's loopback only.
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct PublishArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// The signing key: a private key file, `env:VAR` (holding its path or PEM), or a
    /// key in AWS KMS (`awskms:///alias/NAME`) [default: `[signing] key` in `stackpack.toml`].
    // A value starting with `-` (a pasted `-----BEGIN` PEM) is taken as the value, so
    // that our own check refuses it without printing it, as clap's error would.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub key: Option<PathBuf>,
    /// Do not publish modules as OpenTofu module packages (`NAMESPACE/modules/<module>`).
    #[arg(long)]
    pub no_modules: bool,
    /// A major release may break these customers' inputs; must name exactly those
    /// affected. Recorded in the bundle config.
    #[arg(long = "allow-breaking", value_name = "CUSTOMER", num_args = 1..)]
    pub allow_breaking: Vec<String>,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct ExportArgs {
    /// Bundles or releases to export, as `STACK@VERSION` or `RELEASE@VERSION`
    /// (repeatable). A release brings every bundle, signature and service it pins.
    #[arg(required = true, value_name = "NAME@VERSION")]
    pub bundles: Vec<String>,
    /// The tar file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Read from this image layout (default: `.stackpack/bundles`).
    #[arg(long, value_name = "DIR", conflicts_with = "registry", value_parser = stackpack_terminal::args::ExistingPath)]
    pub from: Option<PathBuf>,
    /// Read from this registry instead (`HOST[:PORT]/NAMESPACE`).
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub registry: Option<String>,
    /// Plain HTTP, for registries on this machine's loopback only.
    #[arg(long)]
    pub insecure: bool,
    /// Carry the vendor's signed approvals for this channel too (from `stackpack
    /// promote`), so an airgapped runner can follow the channel; refused when a named
    /// release has none.
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 the kit was written; 1 refused (a bundle does not verify, the registry cannot be reached or refused); 2 the command was wrong (no such release or version, no key, a runner archive that is not one).\n\nThe customer checks the kit with `sh verify.sh` (only `sha256sum` and `openssl`), then `stackpack-runner trust add vendor.pub` (after comparing its key id) and `stackpack-runner import kit.tar [--upgrade-runner]`."
)]
pub struct KitArgs {
    /// The release (or single stack) and version to carry, as `NAME@VERSION`.
    #[arg(value_name = "NAME@VERSION")]
    pub release: String,
    /// The kit to write (a tar); written whole or not at all.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// The runner program to carry: the `stackpack-runner-<version>-x86_64-linux.tar.gz`
    /// that `scripts/dist.sh` writes. Without it the kit holds no runner.
    #[arg(long, value_name = "ARCHIVE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub runner: Option<PathBuf>,
    /// The key that signs the kit's `SHA256SUMS` (the vendor's, which the customer
    /// trusts): a file, `env:VAR` holding the PEM or a path, or a key in AWS KMS
    /// (`awskms:///alias/NAME`).
    #[arg(long, value_name = "FILE|env:VAR|awskms://…")]
    pub key: Option<String>,
    /// Read the release from this image layout (default: `.stackpack/bundles`).
    #[arg(long, value_name = "DIR", conflicts_with = "registry", value_parser = stackpack_terminal::args::ExistingPath)]
    pub from: Option<PathBuf>,
    /// Read the release from this registry instead (`HOST[:PORT]/NAMESPACE`).
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub registry: Option<String>,
    /// Plain HTTP, for registries on this machine's loopback only.
    #[arg(long)]
    pub insecure: bool,
    /// Carry the vendor's signed approval for this channel too, so the customer's
    /// runner can follow the channel; refused when the release has none.
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    /// Leave out the layers this customer's runner already holds, by the receipts
    /// the registry's ledger has of it (needs `--registry` and a token with the
    /// `support` or `publish` role in `STACKPACK_REGISTRY_TOKEN`). A customer with
    /// no receipts gets a whole kit.
    #[arg(long = "for", value_name = "CUSTOMER", requires = "registry")]
    pub for_customer: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 promoted; 1 refused (the registry refused the promotion, the version is not a release or bundle, it cannot be reached, the forecast replaces stateful resources of customers who apply unattended and `--accept-forecast` was not given); 2 the command was wrong (bad name or channel, no such version, no key)."
)]
pub struct PromoteArgs {
    /// The published release (or single stack) and version, as `NAME@VERSION`.
    #[arg(value_name = "NAME@VERSION")]
    pub target: String,
    /// The channel it is approved for (`stable`, `beta`, …).
    #[arg(long, value_name = "CHANNEL")]
    pub channel: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Write the statement into this image layout instead of a registry, for an
    /// airgapped flow (the default, `<repo>/.stackpack/bundles`, when no registry is
    /// given or set in `stackpack.toml`); `stackpack export --channel` carries it.
    #[arg(long, value_name = "DIR", conflicts_with = "registry", value_parser = stackpack_terminal::args::ExistingPath)]
    pub layout: Option<PathBuf>,
    /// The signing key: a private key file, `env:VAR` (holding its path or PEM), or a
    /// key in AWS KMS (`awskms:///alias/NAME`) [default: `[signing] key` in `stackpack.toml`].
    // A value starting with `-` (a pasted `-----BEGIN` PEM) is taken as the value, so
    // that our own check refuses it without printing it, as clap's error would.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub key: Option<PathBuf>,
    /// A required step: a customer several versions behind passes through this
    /// version rather than skipping it.
    #[arg(long)]
    pub required: bool,
    /// Promote even when the registry's forecast replaces or destroys stateful
    /// resources for customers whose runners apply such plans on their own: the
    /// registry then asks those runners to hold the plan for a person.
    #[arg(long)]
    pub accept_forecast: bool,
    /// Who promotes, for the rollout's history (default: `$GITHUB_ACTOR`,
    /// `$GITLAB_USER_LOGIN`, then `$USER`).
    #[arg(long, value_name = "TEXT")]
    pub by: Option<String>,
    /// Also write the signed statement's JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The vendor repository, for `[signing] key` and `registry` in `stackpack.toml`
    /// (optional: without one, pass `--key` and `--registry`).
    #[arg(long, default_value = ".", value_name = "DIR", value_parser = stackpack_packager::config::RepoRoot)]
    pub repo: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 forecast made (customers skipped or not forecast are named on stderr, and the forecast says so); 1 refused or failed (the registry cannot be reached or refused, the account or engine is not usable); 2 the command was wrong (bad flags, no `[witness]` table, a release that does not exist)."
)]
pub struct ForecastArgs {
    /// The published release (or single stack) and version, as `NAME@VERSION`.
    #[arg(value_name = "NAME@VERSION")]
    pub target: String,
    /// Forecast only the customers on this channel (default: every customer the
    /// registry's ledger knows).
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Customers forecast at once (default: `[witness] parallel`, else 4).
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Print the forecast as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Do not send the forecast to the registry (`PUT /api/v1/forecasts/...`).
    #[arg(long)]
    pub no_send: bool,
    /// The vendor repository: `stackpack.toml`, git history, `customers/`.
    #[arg(long, default_value = ".", value_name = "DIR", value_parser = stackpack_packager::config::RepoRoot)]
    pub repo: PathBuf,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct KeygenArgs {
    /// Path prefix: writes `<PREFIX>.key` (private, mode 0600) and `<PREFIX>.pub`.
    #[arg(long, short = 'o', value_name = "PREFIX")]
    pub out: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print a signing key's public key (SPKI PEM): the `vendor.pub` customers trust
    /// with `stackpack-runner trust add`. Its id and algorithm go to stderr.
    Public(KeyPublicArgs),
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct KeyPublicArgs {
    /// The signing key: a private key file, `env:VAR`, or a key in AWS KMS
    /// (`awskms:///alias/NAME` or `awskms:///arn:aws:kms:REGION:ACCOUNT:key/ID`).
    #[arg(value_name = "KEY")]
    pub key: String,
    /// Also write the public key to this file (e.g. `vendor.pub`).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document: key id, algorithm and PEM.
    #[arg(long)]
    pub json: bool,
}

/// What selects stacks and versions; shared by `version` and `build`.
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// The vendor repository (the folder holding `stackpack.toml`).
    #[arg(long, default_value = ".", value_name = "DIR", value_parser = stackpack_packager::config::RepoRoot)]
    pub repo: PathBuf,
    /// Detect changes since this git ref instead of since each stack's latest release.
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// The branch being built (default: from CI variables, then git).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Ask for at least this bump (`patch`, `minor`, `major`).
    #[arg(long, value_name = "BUMP")]
    pub bump: Option<Bump>,
    /// Only these stacks (repeatable); they are built even if git shows no change.
    #[arg(long = "stack", value_name = "NAME")]
    pub stacks: Vec<String>,
    /// The image layout holding earlier builds (default: `<repo>/.stackpack/bundles`).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Pack uncommitted changes too (for local tries; never in CI).
    #[arg(long)]
    pub allow_dirty: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct VersionArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Read the last releases from this registry, as `publish` does; when it cannot
    /// be reached, versions come from the local layout only (said on stderr); when it
    /// refuses the credentials or needs `--insecure`, an error (exit 1).
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct BuildArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The signing key: a private key file, `env:VAR` (holding its path or PEM), or a
    /// key in AWS KMS (`awskms:///alias/NAME`) [default: `[signing] key` in `stackpack.toml`].
    // A value starting with `-` (a pasted `-----BEGIN` PEM) is taken as the value, so
    // that our own check refuses it without printing it, as clap's error would.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub key: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::EXIT_CODES_HELP)]
pub struct InspectArgs {
    /// `LAYOUT` to list its bundles, or `LAYOUT:STACK@VERSION` to verify and show one
    /// bundle. A layout is a folder (`build --out`) or a tar of one (`export`).
    pub target: String,
    /// A trusted public key (repeatable); without one, signatures are checked but
    /// not trusted.
    #[arg(long = "trust", value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub trust: Vec<PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Print the bundle's SBOM (CycloneDX 1.6 JSON) instead: with `--trust`, only
    /// the one its provenance, signed by a trusted key, names.
    #[arg(long)]
    pub sbom: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Issue 39 §6: every flag and positional argument of every command says what it
    /// is for in `--help`, `--json` included.
    #[test]
    fn every_argument_of_every_command_is_described_in_help() {
        stackpack_test_support::help::assert_every_argument_described(&super::Cli::command());
    }

    /// Issue 39 §6: a file or folder named on the command line that does not exist
    /// is refused with exit 2 before anything runs, for every argument that reads
    /// one (those listed here are written or created by the command).
    #[test]
    fn every_file_argument_read_is_refused_with_exit_2_when_missing() {
        stackpack_test_support::help::assert_every_read_path_checked(
            &super::Cli::command(),
            WRITTEN,
        );
    }

    /// Path arguments the command writes or creates, so may not exist yet, and
    /// `--key`, which the command checks itself (exit 2 too) to keep a pasted key's
    /// text out of the error, as `bad_input::a_missing_key_file_is_named` runs.
    const WRITTEN: &[&str] = &["--out", "--key"];
}
