//! The `stackpack-registry` command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use stackpack_registry::auth::Role;
use stackpack_registry::config::{Config, TagPolicy};
use stackpack_registry::{db, gc};

/// An OCI registry with the release ledger: which version every customer runs.
///
/// Exit codes: 0 success; 1 the request was refused or failed; 2 the command was
/// wrong (bad flags, missing file).
#[derive(Parser)]
#[command(name = "stackpack-registry", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the OCI distribution API, the ledger API, `/healthz` and `/metrics`.
    Serve {
        /// The data folder: `registry.db`, `blobs/`, `uploads/`.
        #[arg(long)]
        data: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:5000")]
        listen: String,
        /// Let anyone pull without a token.
        #[arg(long)]
        anonymous_pull: bool,
        /// Whether semver prerelease tags may move to another manifest.
        #[arg(long, value_enum, default_value = "mutable")]
        prerelease_tags: TagPolicy,
        /// Whether other tags (`latest`, …) may move. Stable `X.Y.Z` tags never do.
        #[arg(long, value_enum, default_value = "mutable")]
        other_tags: TagPolicy,
        /// Largest manifest accepted, in bytes.
        #[arg(long, default_value_t = 4 * 1024 * 1024)]
        max_manifest_bytes: u64,
        /// Largest blob accepted, in bytes.
        #[arg(long, default_value_t = 16 * 1024 * 1024 * 1024)]
        max_blob_bytes: u64,
        /// Seconds an upload session may sit untouched before it expires.
        #[arg(long, default_value_t = 3600)]
        upload_lifetime_secs: u64,
        /// The address clients use (for `WWW-Authenticate` realms), e.g. `https://registry.example`.
        #[arg(long)]
        public_url: Option<String>,
    },
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Delete expired uploads and blobs that no manifest references.
    Gc {
        #[arg(long)]
        data: PathBuf,
        /// Keep unreferenced blobs younger than this many seconds.
        #[arg(long, default_value_t = 3600)]
        grace_secs: u64,
        /// Seconds after which an untouched upload session is expired.
        #[arg(long, default_value_t = 3600)]
        upload_lifetime_secs: u64,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Work with deployment receipts.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Show which version of which stack every customer runs (support's view).
    Fleet {
        #[arg(long)]
        data: PathBuf,
        /// Only customers behind the latest stable version.
        #[arg(long)]
        behind: bool,
        /// Only customers running a prerelease.
        #[arg(long)]
        prerelease: bool,
        /// Only customers whose last drift check found drift.
        #[arg(long)]
        drifted: bool,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token. It is printed once, on stdout; only its hash is stored.
    Create {
        #[arg(long, value_enum)]
        role: Role,
        /// The customer a `customer` token reports for.
        #[arg(long)]
        customer: Option<String>,
        #[arg(long)]
        data: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ReceiptsCommand {
    /// Import a signed receipt file (carried out of an airgapped site).
    Import {
        file: PathBuf,
        #[arg(long)]
        data: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

/// A usage mistake (exit 2) rather than a refusal (exit 1).
#[derive(Debug)]
struct UsageError(String, Option<String>);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            if let Some(usage) = e.downcast_ref::<UsageError>() {
                if let Some(hint) = &usage.1 {
                    eprintln!("hint: {hint}");
                }
                return ExitCode::from(2);
            }
            ExitCode::from(1)
        }
    }
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::env::var_os("NO_COLOR").is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

fn open(data: PathBuf) -> anyhow::Result<stackpack_registry::state::AppState> {
    stackpack_registry::open(Config::new(&data))
        .with_context(|| format!("cannot open the data folder `{}`", data.display()))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve {
            data,
            listen,
            anonymous_pull,
            prerelease_tags,
            other_tags,
            max_manifest_bytes,
            max_blob_bytes,
            upload_lifetime_secs,
            public_url,
        } => {
            init_logs();
            let mut config = Config::new(&data);
            config.anonymous_pull = anonymous_pull;
            config.prerelease_tags = prerelease_tags;
            config.other_tags = other_tags;
            config.max_manifest_bytes = max_manifest_bytes;
            config.max_blob_bytes = max_blob_bytes;
            config.upload_lifetime = Duration::from_secs(upload_lifetime_secs);
            config.public_url = public_url;
            let state = stackpack_registry::open(config)
                .with_context(|| format!("cannot open the data folder `{}`", data.display()))?;
            let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind(&listen).await.map_err(|e| {
                    UsageError(
                        format!("cannot listen on `{listen}`: {e}"),
                        Some("pick a free address with `--listen 127.0.0.1:5000`".into()),
                    )
                })?;
                let address = listener.local_addr()?;
                println!("listening on http://{address}");
                tracing::info!(%address, data = %data.display(), "stackpack-registry serving");
                stackpack_registry::serve(state, listener).await?;
                Ok::<_, anyhow::Error>(())
            })
        }
        Command::Token(TokenCommand::Create {
            role,
            customer,
            data,
            json,
        }) => {
            match (role, &customer) {
                (Role::Customer, None) => {
                    return Err(UsageError(
                        "a `customer` token needs the customer it reports for".into(),
                        Some("add `--customer <id>`".into()),
                    )
                    .into())
                }
                (Role::Customer, Some(id)) => stackpack_schema::reference::validate_name(id)
                    .map_err(|e| UsageError(e.to_string(), None))?,
                (_, Some(_)) => {
                    return Err(UsageError(
                        format!(
                            "`--customer` only applies to `customer` tokens, not `{}`",
                            role.as_str()
                        ),
                        None,
                    )
                    .into())
                }
                _ => {}
            }
            let state = open(data)?;
            let (token, hash, id) = stackpack_registry::auth::new_token();
            let now = db::now_rfc3339();
            state.db.write(|tx| {
                db::tokens::insert(tx, &id, &hash, role.as_str(), customer.as_deref(), &now)?;
                if let Some(customer) = &customer {
                    db::ledger::upsert_customer(tx, customer, None, &now)?;
                }
                Ok(())
            })?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"id": id, "role": role.as_str(), "customer": customer, "token": token})
                );
            } else {
                println!("{token}");
                eprintln!(
                    "created {} token `{id}`{}; it is shown only this once",
                    role.as_str(),
                    customer
                        .map(|c| format!(" for customer `{c}`"))
                        .unwrap_or_default()
                );
            }
            Ok(())
        }
        Command::Fleet {
            data,
            behind,
            prerelease,
            drifted,
            json,
        } => {
            let state = open(data)?;
            let rows: Vec<_> = stackpack_registry::controllers::ledger::running(&state, None)?
                .into_iter()
                .filter(|r| {
                    (!behind || r.behind)
                        && (!prerelease || r.prerelease)
                        && (!drifted || r.drifted)
                })
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(());
            }
            let table: Vec<[String; 5]> = rows
                .iter()
                .map(|r| {
                    let mut notes = Vec::new();
                    if r.behind {
                        notes.push(format!(
                            "behind {}",
                            r.latest_stable.as_deref().unwrap_or("?")
                        ));
                    }
                    if r.prerelease {
                        notes.push("prerelease".to_string());
                    }
                    if r.drifted {
                        notes.push("drifted".to_string());
                    }
                    [
                        r.customer.clone(),
                        r.stack.clone(),
                        r.version.clone(),
                        r.since.clone(),
                        notes.join(", "),
                    ]
                })
                .collect();
            let headers = ["CUSTOMER", "STACK", "VERSION", "SINCE", "NOTES"];
            let mut widths = headers.map(str::len);
            for row in &table {
                for (width, cell) in widths.iter_mut().zip(row) {
                    *width = (*width).max(cell.chars().count());
                }
            }
            let line = |cells: [&str; 5]| {
                let mut text = String::new();
                for (index, cell) in cells.iter().enumerate() {
                    text.push_str(cell);
                    if index + 1 < cells.len() {
                        text.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
                    }
                }
                println!("{}", text.trim_end());
            };
            line(headers);
            for row in &table {
                line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
            }
            if table.is_empty() {
                eprintln!("no deployments reported yet");
            }
            Ok(())
        }
        Command::Gc {
            data,
            grace_secs,
            upload_lifetime_secs,
            json,
        } => {
            let state = open(data)?;
            let report = gc::run(
                &state.db,
                &state.storage,
                Duration::from_secs(upload_lifetime_secs),
                Duration::from_secs(grace_secs),
            )?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!("expired uploads     {}", report.expired_uploads);
                println!("stray upload files  {}", report.stray_upload_files);
                println!("blobs deleted       {}", report.blobs_deleted);
                println!("stray blob files    {}", report.stray_blob_files);
                println!("bytes freed         {}", report.bytes_freed);
            }
            Ok(())
        }
        Command::Receipts(ReceiptsCommand::Import { file, data, json }) => {
            let bytes = std::fs::read(&file)
                .map_err(|e| UsageError(format!("cannot read `{}`: {e}", file.display()), None))?;
            let signed = stackpack_schema::receipt::SignedReceipt::from_bytes(&bytes)
                .with_context(|| format!("`{}` is not a signed receipt", file.display()))?;
            let state = open(data)?;
            let created = stackpack_registry::receipts::record(&state.db, &signed)
                .with_context(|| format!("receipt `{}` was refused", signed.receipt.id))?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"receiptId": signed.receipt.id, "created": created})
                );
            } else if created {
                println!("imported receipt `{}`", signed.receipt.id);
            } else {
                println!("receipt `{}` was already imported", signed.receipt.id);
            }
            Ok(())
        }
    }
}
