//! Every flag of `stackpack-runner`, in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Verify and apply signed Stackpack bundles inside your own cloud account.
#[derive(Parser, Debug)]
#[command(name = "stackpack-runner", version = stackpack_terminal::VERSION, after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// The runner home (default: `$XDG_DATA_HOME/stackpack/runner`, or `~/.local/share/stackpack/runner`).
    #[arg(long, global = true, env = "STACKPACK_RUNNER_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Print nothing but results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more about what happens (including the engine's own debug log).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Append the engine's own output (init, plan, apply) to this file instead of
    /// printing it; an engine error is still shown. Keeps a scheduled `sync`'s or a
    /// script's log to the runner's summaries. `STACKPACK_ENGINE_LOG=FILE` does the
    /// same; set empty, it is off.
    #[arg(long, global = true, value_name = "FILE")]
    pub engine_log: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a runner home: `runner.toml`, the store, the ledger, the installation key.
    Init(InitArgs),
    /// Manage the vendor keys this runner trusts.
    #[command(subcommand)]
    Trust(TrustCommand),
    /// Import bundles from an image layout (a folder or a tar file), verifying every
    /// one before anything enters the store.
    Import(ImportArgs),
    /// Pull a bundle and its signatures from a registry, verifying it before it enters
    /// the store. Credentials: `STACKPACK_REGISTRY_TOKEN`, or
    /// `STACKPACK_REGISTRY_USERNAME`/`STACKPACK_REGISTRY_PASSWORD`, or `docker login`.
    Pull(PullArgs),
    /// Verify a bundle in the store: signature by a trusted key, every digest, archive safety.
    Verify(VerifyArgs),
    /// Check an inputs file against a bundle's interface.
    CheckInputs(CheckInputsArgs),
    /// Verify, then plan a bundle with your inputs and evaluate the policies on the
    /// plan (nothing is changed). Exits 1 when a policy denies the plan.
    Plan(PlanArgs),
    /// Verify, plan, show the plan, ask, and apply exactly that plan.
    Apply(ApplyArgs),
    /// Go back to the version applied before the current one, showing the plan first.
    Rollback(RollbackArgs),
    /// What runs here, since when, and which newer version the store holds.
    Status(StatusArgs),
    /// Copy a release's service artifacts (images, charts) into your own registry.
    MirrorServices(MirrorServicesArgs),
    /// Plan against the installed version to find changes made outside the runner.
    Drift(DriftArgs),
    /// Destroy everything a stack manages here, after the customer id is typed.
    Destroy(DestroyArgs),
    /// Break a stuck state lock: shows who holds it, refuses while that run is alive
    /// here, and unlocks through the engine once the lock's id is typed or given.
    Unlock(UnlockArgs),
    /// Write what the vendor's support needs into one tar.gz: status, receipts, the
    /// ledger's recent rows, the last failed run's engine output, engine and
    /// provider versions, preflight results, the state's resource addresses (no
    /// values) and `runner.toml` with secrets removed. No input value, environment
    /// or state attribute goes in.
    SupportBundle(SupportBundleArgs),
    /// Check the account against what a stack needs (VPC, NAT and Internet gateway
    /// quotas, instance types per zone, the network range against existing VPCs),
    /// without planning. Exit 1 when a check failed; a check whose API did not
    /// answer is `not-checked`.
    Preflight(PreflightArgs),
    /// Send receipts the registry has not acknowledged yet.
    Report(ReportArgs),
    /// Work with receipts.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Reconcile to what should run (the registry's assignment, a desired-state
    /// file, or the channel statements in the store), following `[sync]` in
    /// `runner.toml`: one pass, or one every `--every` interval. A plan the approval
    /// policy holds waits for `stackpack-runner approve ID` (exit 0, state
    /// `pending-approval`); exit 1 when a release failed or was refused, or the
    /// registry could not be reached.
    Sync(SyncArgs),
    /// Plans a sync pass held for approval.
    Pending(PendingArgs),
    /// Apply exactly the plan a sync pass held; refused when the release, the
    /// inputs or a stack's state moved since (the next pass plans again, new id).
    Approve(ApproveArgs),
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct SyncArgs {
    /// Keep syncing: a pass every DURATION (`1h`, `30m`, `1d`), ±10% jitter, and a
    /// doubling backoff after a failed pass (up to DURATION). SIGTERM or SIGINT ends
    /// the loop after the pass in progress, with exit 0.
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// Where the assignment comes from [default: `[sync] source`].
    #[arg(long, value_enum)]
    pub source: Option<SourceArg>,
    /// The registry, `HOST[:PORT]/NAMESPACE` [default: `[sync] registry`].
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub registry: Option<String>,
    /// Plain HTTP to the registry (loopback only).
    #[arg(long)]
    pub insecure: bool,
    /// A `customer` token for this customer.
    #[arg(long, env = "STACKPACK_REGISTRY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The desired-state file [default: `[sync] desired`].
    #[arg(long, value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub desired: Option<PathBuf>,
    /// The inputs folder, one `STACK.tfvars` per stack [default: `[sync] inputs`].
    #[arg(long, value_name = "DIR", value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs: Option<PathBuf>,
    /// One JSON document per pass (the sync report).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceArg {
    Registry,
    Desired,
    Store,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct PendingArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct ApproveArgs {
    /// The pending approval's id (as `stackpack-runner pending` lists it).
    pub id: String,
    /// Plain HTTP to `[sync] registry`, which the approval is reported to (loopback
    /// only).
    #[arg(long)]
    pub insecure: bool,
    /// A `customer` token for this customer, to report the approval.
    #[arg(long, env = "STACKPACK_REGISTRY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct InitArgs {
    /// Your customer id, as your vendor knows it.
    #[arg(long)]
    pub customer: String,
    /// `terraform` or `tofu`.
    #[arg(long, default_value = "terraform")]
    pub engine: stackpack_schema::bundle::EngineName,
    /// The engine binary (default: looked up on `PATH` at each run).
    #[arg(long, value_name = "FILE")]
    pub engine_path: Option<PathBuf>,
    /// Where work folders are made (default: `<home>/work`).
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Allow prerelease versions (default: stable versions only).
    #[arg(long)]
    pub allow_prereleases: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Where engine state lives: `local` (under the home, for tries and tests) or `s3`
/// (a bucket in your own account: versioned, encrypted, private, natively locked).
/// AWS credentials come from the environment (`AWS_ACCESS_KEY_ID`, …) and are never
/// written or printed.
#[derive(Args, Debug)]
pub struct BackendArgs {
    /// Where engine state lives: `local` (under the home) or `s3` (a bucket in your
    /// own account, with `--bucket`).
    #[arg(long, value_enum, default_value = "local")]
    pub backend: BackendKind,
    /// The state bucket (with `--backend s3`).
    #[arg(long, required_if_eq("backend", "s3"))]
    pub bucket: Option<String>,
    /// The bucket's region (default: `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`).
    #[arg(long, requires = "bucket")]
    pub region: Option<String>,
    /// State keys are `<prefix>/<customer>/<stack>.tfstate`.
    #[arg(long, default_value = "stackpack", requires = "bucket")]
    pub key_prefix: String,
    /// An S3 emulator's URL (path-style). Real accounts leave it unset.
    #[arg(long, value_name = "URL", requires = "bucket")]
    pub s3_endpoint: Option<String>,
    /// Lock through this DynamoDB table (engines before Terraform 1.10 / OpenTofu 1.8).
    #[arg(long, value_name = "TABLE", requires = "bucket")]
    pub dynamodb_table: Option<String>,
    /// Create the bucket if it is missing, and turn on versioning, default
    /// encryption and the public access block where they are off.
    #[arg(long, requires = "bucket")]
    pub create_bucket: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Local,
    S3,
}

#[derive(Subcommand, Debug)]
pub enum TrustCommand {
    /// Trust a vendor public key (SPKI PEM, as `stackpack keygen` writes `.pub`).
    Add {
        /// The vendor's public key file (`.pub`).
        #[arg(value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
        file: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// List trusted keys.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Stop trusting a key, by key id.
    Remove {
        /// The key id, as `trust list` shows it.
        #[arg(value_name = "KEY_ID")]
        key_id: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct ImportArgs {
    /// An image layout folder, a tar (or tar.gz) file of one, or a kit
    /// (`stackpack kit`), which is checked whole against the trusted keys first.
    #[arg(value_parser = stackpack_terminal::args::ExistingPath)]
    pub source: PathBuf,
    /// With a kit: also install the kit's runner program in place of this one, after
    /// everything else is imported (never an older runner).
    #[arg(long)]
    pub upgrade_runner: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct PullArgs {
    /// `HOST[:PORT]/NAMESPACE/stacks/STACK:VERSION`.
    pub reference: String,
    /// Plain HTTP, for registries on this machine's loopback only.
    #[arg(long)]
    pub insecure: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct VerifyArgs {
    /// `STACK@VERSION`.
    pub bundle: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Print the chain of checks one by one: signature, digests, provenance, SBOM,
    /// policy.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct CheckInputsArgs {
    /// `STACK@VERSION`.
    pub bundle: String,
    /// An inputs file (`.tfvars` or `.tfvars.json`); give it again for more files,
    /// later files win. `TF_VAR_<name>` sets an input no file sets (for secrets).
    #[arg(long, value_name = "FILE", required = true, value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs: Vec<PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct DeployArgs {
    /// `STACK@VERSION`, or a release's `NAME@VERSION` (its stacks in order), as
    /// imported or pulled.
    pub bundle: String,
    /// An inputs file (`.tfvars` or `.tfvars.json`); give it again for more files,
    /// later files win. `TF_VAR_<name>` sets an input no file sets (for secrets).
    #[arg(long, value_name = "FILE", required_unless_present = "inputs_dir", value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs: Vec<PathBuf>,
    /// For a release: the folder holding one `STACK.tfvars` (or `.tfvars.json`) per
    /// stack, as `customers/<id>/` does. Wired inputs are never set there: the runner
    /// passes them from the upstream stacks' outputs.
    #[arg(long, value_name = "DIR", conflicts_with = "inputs", value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs_dir: Option<PathBuf>,
    /// A resource the policies may see destroyed or replaced (their
    /// `data.stackpack.allow_replace`); give it again for more.
    #[arg(long, value_name = "ADDRESS")]
    pub allow_replace: Vec<String>,
    /// Wait up to this many seconds for another runner working on the same stack:
    /// one of this home (its lock file), or one elsewhere that holds the state's
    /// lock in a shared backend (the engine's `-lock-timeout`).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct PlanArgs {
    #[command(flatten)]
    pub deploy: DeployArgs,
    /// Write a reviewed plan: the saved plan and a record signed by this
    /// installation's key, for `apply --plan FILE`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// `text`, or `markdown` for a summary to paste into a change request.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text, conflicts_with = "json")]
    pub format: PlanFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanFormat {
    Text,
    Markdown,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub deploy: DeployArgs,
    /// Apply without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Allow applying a version older than the installed one.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// For a release: after the stacks are applied, copy its service artifacts into
    /// this registry (`HOST/NAMESPACE`), as `mirror-services` does.
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub mirror_services_to: Option<String>,
    /// Plain HTTP to the `--mirror-services-to` registry (loopback only).
    #[arg(long)]
    pub insecure: bool,
    /// For a release: how many independent stacks may be applied at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub parallel: usize,
    /// Apply exactly this reviewed plan (from `plan --out`); refused if the bundle,
    /// the inputs or the state changed since.
    #[arg(long, value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub plan: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct RollbackArgs {
    /// The stack (or release) to take back to the version applied before its
    /// current one.
    pub stack: String,
    /// Inputs to use, later files winning [default: the inputs saved when that
    /// version was applied].
    #[arg(long, value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs: Vec<PathBuf>,
    /// Roll back without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Wait up to this many seconds for another runner working on the same stack.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct MirrorServicesArgs {
    /// The release, `NAME@VERSION`, as imported or pulled.
    pub release: String,
    /// The customer's registry: `HOST[:PORT]/NAMESPACE`; each service goes to
    /// `NAMESPACE/<service>`, by digest.
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub to: String,
    /// Plain HTTP (loopback only).
    #[arg(long)]
    pub insecure: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct StatusArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct DestroyArgs {
    /// The stack (or release) whose resources are destroyed.
    pub stack: String,
    /// The customer id of this runner, to destroy without being asked (scripts).
    #[arg(long, value_name = "CUSTOMER")]
    pub confirm: Option<String>,
    /// Wait up to this many seconds for another runner working on the same stack.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct DriftArgs {
    /// The installed stack to compare with what its state and the account hold.
    pub stack: String,
    /// Wait up to this many seconds for another runner working on the same stack.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct ReportArgs {
    /// The registry: `HOST[:PORT]` (or `HOST[:PORT]/NAMESPACE`, as `pull` takes it),
    /// or a URL such as `https://registry.acme.example`.
    #[arg(long, value_name = "ADDRESS")]
    pub registry: String,
    /// Plain HTTP, for a registry on this machine (loopback) only.
    #[arg(long)]
    pub insecure: bool,
    /// A `customer` token for this customer.
    #[arg(long, env = "STACKPACK_REGISTRY_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ReceiptsCommand {
    /// Write receipts to a file for a registry this runner cannot reach.
    Export {
        /// One JSON array of signed receipts.
        #[arg(short, long, value_name = "FILE", required_unless_present = "dir")]
        out: Option<PathBuf>,
        /// Or one `<receipt-id>.json` per receipt, each a file
        /// `stackpack-registry receipts import FILE --customer ID` takes.
        #[arg(long, value_name = "DIR", conflicts_with = "out")]
        dir: Option<PathBuf>,
        /// Only receipts the registry has not acknowledged.
        #[arg(long)]
        unreported: bool,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// List receipts.
    List {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct UnlockArgs {
    /// The stack whose state lock is stuck.
    pub stack: String,
    /// The lock's id, as the engine's error or this command shows it. Without it,
    /// the id is asked for on the terminal.
    #[arg(long, value_name = "ID")]
    pub lock_id: Option<String>,
    /// Break it even though the run recorded beside the state (from any runner home
    /// sharing the bucket) may still be alive: only once you have checked it stopped.
    #[arg(long)]
    pub force: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct SupportBundleArgs {
    /// The file to write (a tar.gz, mode 0600; replaced atomically).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = stackpack_terminal::RUNNER_EXIT_CODES_HELP)]
pub struct PreflightArgs {
    /// `STACK@VERSION`, in the store.
    pub reference: String,
    /// Inputs files (`.tfvars` or `.tfvars.json`); later files win.
    #[arg(long = "inputs", value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub inputs: Vec<PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
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

    /// Path arguments the command writes or creates, so may not exist yet (`--home`
    /// is made by `init`; elsewhere a missing one is refused when the command opens
    /// it, exit 2, as the cross-program test `missing_files` runs), and `init
    /// --engine-path`, recorded for later runs (the engine may be installed after;
    /// a run without it is refused and recorded).
    const WRITTEN: &[&str] = &[
        "--home",
        "--engine-log",
        "--out",
        "init --work",
        "init --engine-path",
        "receipts export --dir",
    ];
}
