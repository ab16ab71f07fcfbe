//! The command line's shape (clap types). What each command does lives in
//! `commands/<verb>.rs`.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};
use stackpack_registry::auth::Role;
use stackpack_registry::config::TagPolicy;

/// An OCI registry with the release ledger: which version every customer runs.
///
/// Only `init` and `serve` create a registry; the other commands refuse a `--data`
/// folder that holds none (a mistyped path, say), or a `--database` no registry
/// has used, with exit status 2. Each takes `--database postgres://…` when the
/// registry's metadata lives in PostgreSQL, and `--config FILE`, the file
/// `serve --config` reads, for its `data`, `database` and `blobs`.
#[derive(Parser)]
#[command(
    name = "stackpack-registry",
    version = stackpack_terminal::VERSION,
    after_help = stackpack_terminal::EXIT_CODES_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Say nothing on stderr but errors and warnings.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Say more: the causes under an error.
    #[arg(long, short, global = true)]
    pub verbose: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Create a registry (its database and blob store) in a new `--data` folder.
    Init(InitArgs),
    /// Serve the OCI distribution API, the ledger API, `/healthz` and `/metrics`.
    /// Creates the registry if `--data` holds none yet.
    Serve(ServeArgs),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Register customers and see them: environment, last seen, history.
    #[command(subcommand)]
    Customer(CustomerCommand),
    /// Delete expired uploads and blobs that no manifest references.
    Gc(GcArgs),
    /// Bring the database to this build's schema and exit (`serve` does it too), or
    /// with `--check` only say whether it is current: exit 0 current, 3 behind
    /// (migrations to run), 1 written by a newer build. `--to postgres://…` copies
    /// a registry's SQLite database into an empty PostgreSQL one (exit 1 when
    /// refused or unreachable, nothing written); `--database postgres://…` works
    /// on a registry already there.
    Migrate(MigrateArgs),
    /// Write a consistent copy of the database while the registry serves: tokens,
    /// customers, receipts, manifests and tags. Blobs are not in it: copy the data
    /// folder's `blobs/` after it, or keep versioning on the bucket. SQLite only:
    /// a registry on PostgreSQL is backed up with `pg_dump`.
    Backup(BackupArgs),
    /// Work with deployment receipts.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Keep a runner's support bundle (`stackpack-runner support-bundle`) for a
    /// customer; its support page links the newest.
    #[command(subcommand)]
    SupportBundle(SupportBundleCommand),
    /// Show which version of which stack every customer runs (support's view), or
    /// with `--release NAME` which version of a release and which stacks are mixed.
    Fleet(FleetArgs),
    /// Show how many customers ran each version of each stack over time.
    Adoption(AdoptionArgs),
    /// See releases: a customer's whole environment as one version (stacks and
    /// services pinned by digest), recorded as their indexes are pushed.
    #[command(subcommand)]
    Release(ReleaseCommand),
    /// Channels (`stable`, `beta`, …): their ordered waves and soak time.
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Rollouts of what the vendor promoted, wave by wave: status, history, and
    /// pause, resume or abort one.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// Webhooks told when a customer's stack fails, drifts, falls behind, or the
    /// customer goes silent.
    #[command(subcommand)]
    Alert(AlertCommand),
}

#[derive(Subcommand)]
pub enum AlertCommand {
    /// Add a webhook (or set the events of one already added).
    Add(AlertAddArgs),
    /// List the webhooks: their events, deliveries, and the last error of a failing one.
    List(DataJsonArgs),
    /// Remove a webhook and the events still waiting for it.
    Remove(AlertRemoveArgs),
}

#[derive(Args)]
pub struct AlertAddArgs {
    /// Where to POST: an `http://` or `https://` address (a Slack incoming webhook works).
    #[arg(long)]
    pub webhook: String,
    /// The events it wants: `failed`, `drifted`, `silent`, `behind`, comma-separated.
    #[arg(long, value_name = "EVENTS")]
    pub on: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct AlertRemoveArgs {
    /// The webhook's id, as `alert list` shows it.
    pub id: i64,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ChannelCommand {
    /// Set a channel's waves (in order) and soak time; what is not given keeps its
    /// value. A channel never set has waves `canary,early,general` and soak `24h`.
    Set(ChannelSetArgs),
    /// List channels configured or in use: waves, soak time, customers.
    List(DataJsonArgs),
}

#[derive(Args)]
pub struct ChannelSetArgs {
    /// The channel (`stable`, `beta`, any name).
    pub name: String,
    /// The waves in the order they open: `canary,early,general`.
    #[arg(long, value_delimiter = ',', value_name = "WAVE,...")]
    pub waves: Option<Vec<String>>,
    /// How long a healthy wave soaks before the next opens: `24h`, `90m`, `30s`.
    #[arg(long, value_name = "AGE")]
    pub soak: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum RolloutCommand {
    /// Every rollout, newest first: release@version, channel, state, the wave open,
    /// when the next may open, why it halted.
    Status(RolloutStatusArgs),
    /// One rollout's history: who was assigned when, who failed, and why it halted.
    Show(RolloutIdArgs),
    /// Stop assigning anyone else until `resume`.
    Pause(RolloutIdArgs),
    /// Run a paused or halted rollout again; the health gate is read again, so a
    /// customer still failing halts it again.
    Resume(RolloutIdArgs),
    /// Stop the rollout for good: nobody else is assigned; who was keeps it.
    Abort(RolloutIdArgs),
}

#[derive(Args)]
pub struct RolloutStatusArgs {
    /// Only this channel's rollouts.
    #[arg(long)]
    pub channel: Option<String>,
    /// Only this release's (or stack's) rollouts.
    #[arg(long)]
    pub release: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct RolloutIdArgs {
    /// The rollout's id, as `rollout status` shows it.
    pub id: i64,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ReleaseCommand {
    /// List the recorded versions of every release (or of one), newest first.
    List(ReleaseListArgs),
    /// One release version: each stack's version and bundle digest, each service's
    /// digest, and which customers run it (with their mixed stacks).
    Show(ReleaseShowArgs),
}

#[derive(Args)]
pub struct ReleaseListArgs {
    /// Only this release (needed with `--url`).
    pub name: Option<String>,
    #[command(flatten)]
    pub source: Source,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ReleaseShowArgs {
    /// The release version as `NAME@VERSION` (`data-plane@1.4.0`).
    pub release: String,
    #[command(flatten)]
    pub source: Source,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct BackupArgs {
    /// The registry (it may be serving). One whose metadata lives in PostgreSQL
    /// (`--database`, or `database =` in `--config`) is refused: back that
    /// database up with `pg_dump`, and keep versioning on the blobs' bucket.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// The file to write; never overwritten.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// The data folder of an existing registry: its SQLite database, and its
    /// blobs unless they live in a bucket. Not needed with `--database` alone.
    #[arg(long, required_unless_present = "database")]
    pub data: Option<PathBuf>,
    /// Copy the registry (its SQLite database in `--data`, brought current first)
    /// into this EMPTY PostgreSQL database: `postgres://user@host:port/database`,
    /// the password in the URL or `PGPASSWORD` (never printed). Its schema is
    /// made first; a database already holding registry data is refused. The
    /// copy is one transaction, checked table by table (rows and SHA-256) before
    /// it commits; the data folder's registry is left as it was. Stop every
    /// replica first; then start them with `serve --database URL`.
    #[arg(long, value_name = "URL", conflicts_with_all = ["check", "database"], requires = "data")]
    pub to: Option<String>,
    /// The registry's metadata live in this PostgreSQL database (as with
    /// `serve --database`): bring its schema current, or with `--check` say where
    /// it stands. Replicas starting meanwhile wait for it.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// Change nothing; say whether the database is current (exit 3 when behind).
    #[arg(long, conflicts_with = "move_blobs_to")]
    pub check: bool,
    /// Then move every blob into this store (`s3://bucket/prefix`, or `data-folder`
    /// to bring them back) and record it as where the blobs live. Stop every
    /// replica first; start them again with the new `--blobs`. The old copies are
    /// left for you to remove. With `--to`, the blobs are copied before the
    /// database and the new store is recorded in PostgreSQL only, in the copy's
    /// transaction: until it commits, the registry in the data folder is exactly
    /// as it was. With `--database`, give `--data` too.
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub move_blobs_to: Option<String>,
    /// The URL of another S3 API (MinIO, Ceph, an emulator) for the bucket side of
    /// the move; AWS itself without it.
    #[arg(long, value_name = "URL", requires = "move_blobs_to")]
    pub s3_endpoint: Option<String>,
    /// The bucket's region; else `AWS_REGION`, `AWS_DEFAULT_REGION`, or `us-east-1`.
    #[arg(long, value_name = "REGION", requires = "move_blobs_to")]
    pub s3_region: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct InitArgs {
    /// The data folder to create the registry in.
    #[arg(long)]
    pub data: PathBuf,
    /// Create the registry's schema in this PostgreSQL database instead of SQLite
    /// in the data folder, as `serve --database` would on its first start:
    /// `postgres://user@host:port/database` (the password from the URL or
    /// `PGPASSWORD`; never printed).
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
}

/// Where an existing registry is, for every command but `init`, `serve` and
/// `migrate`: its data folder and, when its metadata lives in PostgreSQL, that
/// database; each from its flag, else from the `--config` file `serve` reads.
#[derive(Args, Clone, Debug, Default)]
pub struct RegistryArgs {
    /// The registry's configuration, the TOML file `serve --config` reads: its
    /// `data` and `database` (and `blobs`, `s3-endpoint`, `s3-region`, for a
    /// command that touches blobs) are used where no flag gives them.
    #[arg(long, value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub config: Option<PathBuf>,
    /// The data folder of an existing registry (here or in `--config`); not
    /// needed with `--database` but by `gc`, which deletes blobs.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The registry's PostgreSQL database, when `serve --database` keeps its
    /// metadata there: `postgres://user@host:port/database` (the password from the
    /// URL or `PGPASSWORD`; never printed). A database no registry has used is
    /// refused (exit 2), never created.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
}

/// Where blobs live, for the commands that read or delete them.
#[derive(Args, Clone, Debug, Default)]
pub struct BlobArgs {
    /// Keep blobs in an S3 bucket instead of the data folder: `s3://bucket/prefix`.
    /// Credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and
    /// `AWS_SESSION_TOKEN`). Every replica, and `gc`, must name the same.
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub blobs: Option<String>,
    /// The URL of another S3 API for `--blobs` (MinIO, Ceph, an emulator); AWS
    /// itself without it.
    #[arg(long, value_name = "URL", requires = "blobs")]
    pub s3_endpoint: Option<String>,
    /// The bucket's region; else `AWS_REGION`, `AWS_DEFAULT_REGION`, or `us-east-1`.
    #[arg(long, value_name = "REGION", requires = "blobs")]
    pub s3_region: Option<String>,
}

impl BlobArgs {
    pub fn location(&self) -> Result<stackpack_registry::storage::BlobLocation, String> {
        match &self.blobs {
            None => Ok(Default::default()),
            Some(text) => stackpack_registry::storage::BlobLocation::parse(
                text,
                self.s3_endpoint.as_deref(),
                self.s3_region.as_deref(),
            ),
        }
    }
}

/// `serve`'s options. Each may also be set in the file `--config` names (the same
/// names, in TOML); one given on the command line wins over the file's.
#[derive(Args)]
pub struct ServeArgs {
    /// A TOML file with any of these options under their own names
    /// (`data = "/srv/registry"`, `blobs = "s3://bucket/registry"`, `[[alert]]`
    /// tables with `webhook` and `on`), so that replicas share one.
    #[arg(long, value_name = "FILE", value_parser = stackpack_terminal::args::ExistingPath)]
    pub config: Option<PathBuf>,
    /// The data folder: `registry.db`, `blobs/`, `uploads/`. Created if new.
    /// Required here or in `--config`.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Keep the metadata in PostgreSQL instead of the data folder's SQLite:
    /// `postgres://user@host:port/database` (the password from the URL or
    /// `PGPASSWORD`; never printed). `--data` still holds the blobs (unless
    /// `--blobs` puts them elsewhere) and the upload parts.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    #[command(flatten)]
    pub blob_store: BlobArgs,
    /// Address to listen on [default: 127.0.0.1:5000].
    #[arg(long)]
    pub listen: Option<String>,
    /// Let anyone pull without a token.
    #[arg(long)]
    pub anonymous_pull: bool,
    /// Whether semver prerelease tags may move to another manifest [default: mutable].
    #[arg(long, value_enum)]
    pub prerelease_tags: Option<TagPolicy>,
    /// Whether other tags (`latest`, …) may move [default: mutable]. Stable `X.Y.Z`
    /// tags never do.
    #[arg(long, value_enum)]
    pub other_tags: Option<TagPolicy>,
    /// Largest manifest accepted, in bytes [default: 4 MiB].
    #[arg(long)]
    pub max_manifest_bytes: Option<u64>,
    /// Largest blob accepted, in bytes [default: 16 GiB].
    #[arg(long)]
    pub max_blob_bytes: Option<u64>,
    /// Seconds an upload session may sit untouched before it expires (and the longest
    /// one upload request may take) [default: 3600]. Expired sessions are swept in
    /// the background.
    #[arg(long)]
    pub upload_lifetime_secs: Option<u64>,
    /// Upload sessions one token may hold open at once [default: 256].
    #[arg(long)]
    pub max_upload_sessions_per_token: Option<u64>,
    /// Refuse writes while the data folder's disk has less free space than this
    /// [default: 1 GiB].
    #[arg(long)]
    pub min_free_bytes: Option<u64>,
    /// Seconds a connection may stay silent, or take to send a request's headers,
    /// before it is closed [default: 60].
    #[arg(long)]
    pub idle_timeout_secs: Option<u64>,
    /// The address clients use (for `WWW-Authenticate` realms), e.g. `https://registry.example`.
    #[arg(long)]
    pub public_url: Option<String>,
    /// Seconds between the scheduler's looks at rollouts (opening waves whose soak
    /// time passed) [default: 5]. Receipts and sync reports move rollouts on at once
    /// anyway.
    #[arg(long)]
    pub rollout_tick_secs: Option<u64>,
    /// Connections per pool to the database [default: 4]: readers, and on
    /// PostgreSQL also writers (receipts for different customers are stored side
    /// by side, one per connection). Each replica opens about three pools of this
    /// size plus support's: mind PostgreSQL's `max_connections`.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub database_connections: Option<u16>,
    /// A webhook told of customers' state changes, as `EVENTS=URL`
    /// (`failed,drifted,silent,behind=https://hooks.example/x`); repeat for more.
    /// Kept beside those `alert add` made and those of `--config`; replaced at each
    /// start.
    #[arg(long = "alert", value_name = "EVENTS=URL")]
    pub alerts: Vec<stackpack_registry::config::ConfiguredAlert>,
    /// A customer with no receipt for this long is announced `silent`: `24h`, `7d`
    /// [default: 7d].
    #[arg(long, value_name = "AGE")]
    pub silent_after: Option<String>,
    /// Milliseconds between looks at the alert outbox [default: 1000].
    #[arg(long)]
    pub alert_tick_ms: Option<u64>,
    /// Seconds a webhook may take to answer before its delivery counts as failed
    /// [default: 10].
    #[arg(long)]
    pub alert_timeout_secs: Option<u64>,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token. It is printed once, on stdout; only its hash is stored.
    Create(TokenCreateArgs),
    /// List tokens: id, name, role, customer, created, expiry, revocation. Never the
    /// token or its hash.
    List(DataJsonArgs),
    /// Revoke a token by its id (from `token list`): it is refused at once.
    Revoke(TokenRevokeArgs),
}

#[derive(Args)]
pub struct DataJsonArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct TokenRevokeArgs {
    /// The token's id, as `token list` shows it.
    pub id: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct TokenCreateArgs {
    /// What the token may do: `publisher` (push and pull), `reader` (pull), `support`
    /// (read the ledger), `customer` (pull, and report for `--customer`) or `admin`.
    #[arg(long, value_enum)]
    pub role: Role,
    /// A name to tell the token apart in `token list` (`ci`, `release laptop`):
    /// printable, at most 64 characters, unique in this registry (a revoked token
    /// keeps its name).
    #[arg(long)]
    pub name: Option<String>,
    /// The customer a `customer` token reports for.
    #[arg(long)]
    pub customer: Option<String>,
    /// The token stops working after this long: `30d`, `12h`, `90m`, `2w`.
    /// Without it, the token works until revoked.
    #[arg(long, value_name = "AGE")]
    pub expires_in: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum CustomerCommand {
    /// Register a customer (or update its name and environment) before it reports.
    Add(CustomerAddArgs),
    /// List customers: environment, last seen (last receipt), stale or not.
    List(CustomerListArgs),
    /// What exactly one customer runs, as one snapshot: each stack's version, bundle
    /// digest and last attempt; the release it runs (version, index digest), its
    /// mixed stacks, and its services by digest.
    Show(CustomerShowArgs),
    /// Every receipt of one customer, oldest first: applies, failures, rollbacks,
    /// drift reports, destroys.
    History(CustomerHistoryArgs),
    /// Trust or revoke a customer's installation keys (a second runner, a rotation).
    #[command(subcommand)]
    Key(CustomerKeyCommand),
    /// Set a customer's details (cloud account, region, environment, contact,
    /// notes; an empty value clears one), or put it in a rollout channel and wave
    /// (it is assigned what the channel's open waves already carry).
    Set(CustomerSetArgs),
}

#[derive(Args)]
pub struct CustomerSetArgs {
    /// The customer id.
    pub id: String,
    /// The channel (`stable`, `beta`, any name).
    #[arg(long)]
    pub channel: Option<String>,
    /// The wave (`canary`, `early`, `general`, or the channel's own); without it,
    /// the channel's last. Only with `--channel`.
    #[arg(long, requires = "channel")]
    pub wave: Option<String>,
    /// The cloud account the customer's environment lives in (searchable on `/ui/customers`).
    #[arg(long)]
    pub account: Option<String>,
    /// The cloud region (`eu-west-1`).
    #[arg(long)]
    pub region: Option<String>,
    /// `production`, `staging`, … (a name: `[a-z0-9]` with `.`, `_`, `-`).
    #[arg(long)]
    pub environment: Option<String>,
    /// Who to call: a name, an address, an on-call rota.
    #[arg(long)]
    pub contact: Option<String>,
    /// Free notes for support.
    #[arg(long)]
    pub notes: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum CustomerKeyCommand {
    /// Trust another installation key for the customer's receipts.
    Add(CustomerKeyAddArgs),
    /// Revoke an installation key: receipts signed with it are refused from now on.
    Revoke(CustomerKeyRevokeArgs),
}

#[derive(Args)]
pub struct CustomerKeyAddArgs {
    /// The customer id.
    pub id: String,
    /// The runner's public key, SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    #[arg(value_parser = stackpack_terminal::args::ExistingPath)]
    pub public_key: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CustomerKeyRevokeArgs {
    /// The customer id.
    pub id: String,
    /// The key id, as receipts and `customer key add` show it.
    pub key_id: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CustomerAddArgs {
    /// The customer id (`[a-z0-9]` with `.`, `_`, `-`), as its runner reports it.
    pub id: String,
    /// A name for people.
    #[arg(long)]
    pub name: Option<String>,
    /// `production`, `staging`, … (a name like the id).
    #[arg(long)]
    pub environment: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CustomerListArgs {
    /// A customer whose last receipt is older than this is stale: `7d`, `12h`, `2w`.
    #[arg(long, value_name = "AGE", default_value = "7d")]
    pub stale_after: String,
    /// Only stale customers (silent ones, and those that never reported).
    #[arg(long)]
    pub silent: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CustomerShowArgs {
    /// The customer id.
    pub id: String,
    #[command(flatten)]
    pub source: Source,
    /// Print one JSON document (the same as `GET /api/v1/customers/{id}`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CustomerHistoryArgs {
    /// The customer id.
    pub id: String,
    #[command(flatten)]
    pub source: Source,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct GcArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub blob_store: BlobArgs,
    /// Keep unreferenced blobs younger than this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub grace_secs: u64,
    /// Seconds after which an untouched upload session is expired.
    #[arg(long, default_value_t = 3600)]
    pub upload_lifetime_secs: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ReceiptsCommand {
    /// Import signed receipts (carried out of an airgapped site): all of them, or none
    /// if any is refused.
    Import(ReceiptsImportArgs),
}

#[derive(Subcommand)]
pub enum SupportBundleCommand {
    /// Import one support bundle file for a customer.
    Import(SupportBundleImportArgs),
}

#[derive(Args)]
pub struct SupportBundleImportArgs {
    /// The tar.gz `stackpack-runner support-bundle -o FILE` wrote.
    #[arg(value_parser = stackpack_terminal::args::ExistingPath)]
    pub file: PathBuf,
    /// The customer it comes from (known to this registry).
    #[arg(long, value_name = "ID")]
    pub customer: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ReceiptsImportArgs {
    /// One signed receipt, a JSON array of them, or JSON Lines.
    #[arg(value_parser = stackpack_terminal::args::ExistingPath)]
    pub file: PathBuf,
    /// The customer whose installation this file comes from (repeat for a file
    /// carrying several): its first installation key is pinned from the file. Without
    /// it, every receipt must be signed by a key already pinned to its customer.
    #[arg(long = "customer", value_name = "ID")]
    pub customers: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Where the ledger is read: the registry itself on its host (its data folder, or
/// the PostgreSQL database its replicas share), or the registry's HTTP API from
/// anywhere.
#[derive(Args)]
#[command(group(ArgGroup::new("source").required(true).multiple(true).args(["data", "database", "config", "url"])))]
pub struct Source {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// The registry's address, to ask over its HTTP API from anywhere
    /// (`https://registry.example`). Plain `http://` only to this machine
    /// (loopback): a token never crosses a network in clear; any other `http://`
    /// address is refused before anything is sent (exit 2).
    #[arg(long, conflicts_with_all = ["data", "database", "config"])]
    pub url: Option<String>,
    /// A `support` (or `admin`, or the customer's own) token, for `--url`.
    #[arg(long, env = "STACKPACK_REGISTRY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl Source {
    /// The registry to open itself, unless `--url` asks its API instead.
    pub fn local(&self) -> Option<&RegistryArgs> {
        match self.url {
            Some(_) => None,
            None => Some(&self.registry),
        }
    }
}

#[derive(Args)]
pub struct FleetArgs {
    #[command(flatten)]
    pub source: Source,
    /// Per customer, the version of this release (a whole environment, not a stack)
    /// it runs, and each stack that deviates from it ("mixed"). Takes
    /// `--customer` and `--environment`; the stack filters do not apply.
    #[arg(long, value_name = "NAME", conflicts_with_all = [
        "stack", "behind", "prerelease", "drifted", "silent", "failed", "below",
        "version", "digest", "module", "module_below",
    ])]
    pub release: Option<String>,
    /// Only this customer.
    #[arg(long)]
    pub customer: Option<String>,
    /// Only customers in this environment (`production`).
    #[arg(long)]
    pub environment: Option<String>,
    /// Only this stack.
    #[arg(long)]
    pub stack: Option<String>,
    /// Only customers behind the latest stable version.
    #[arg(long)]
    pub behind: bool,
    /// Only customers running a prerelease.
    #[arg(long)]
    pub prerelease: bool,
    /// Only customers whose last drift check found drift.
    #[arg(long)]
    pub drifted: bool,
    /// Only customers with no receipt within `--stale-after` (or none ever).
    #[arg(long)]
    pub silent: bool,
    /// Only stacks whose last attempt failed.
    #[arg(long)]
    pub failed: bool,
    /// A customer whose last receipt is older than this is silent: `7d`, `12h`, `2w`.
    #[arg(long, value_name = "AGE", default_value = "7d")]
    pub stale_after: String,
    /// Only customers running a version below this one (`2.0.0`: who still has the bug).
    #[arg(long, value_name = "VERSION")]
    pub below: Option<String>,
    /// Only customers running exactly this version.
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
    /// Only customers running this bundle digest (`sha256:…`).
    #[arg(long)]
    pub digest: Option<String>,
    /// Only customers running a bundle that vendors this module (`network`).
    #[arg(long)]
    pub module: Option<String>,
    /// With `--module`: only where the vendored module is below this version
    /// (`1.3.0`: who still carries the module's bug).
    #[arg(long, value_name = "VERSION", requires = "module")]
    pub module_below: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct AdoptionArgs {
    #[command(flatten)]
    pub source: Source,
    /// Only this stack.
    #[arg(long)]
    pub stack: Option<String>,
    /// One point per `day` or per `week` (weeks start on Monday).
    #[arg(long, default_value = "day", value_parser = ["day", "week"])]
    pub bucket: String,
    /// `table`, or `svg`: a stacked chart of customers per version over time.
    #[arg(long, default_value = "table", value_parser = ["table", "svg"])]
    pub format: String,
    /// Print one JSON document.
    #[arg(long, conflicts_with = "format")]
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

    /// Path arguments the command writes or creates, so may not exist yet (`--data`
    /// is made by `init` and `serve`; elsewhere a missing one is refused when the
    /// registry is opened, exit 2, with a hint of its own, as the cross-program test
    /// `missing_files` runs).
    const WRITTEN: &[&str] = &["--data", "backup --to"];
}
