//! One module per command; each is thin: read its arguments, call the library,
//! print. [`run`] dispatches; errors are `stackpack_terminal`'s one [`Error`] (what,
//! where, one hint), made from the library's typed errors at this edge.

pub mod adoption;
pub mod alert;
pub mod backup;
pub mod channel;
pub mod customer;
pub mod customer_show;
pub mod fleet;
pub mod gc;
pub mod init;
pub mod location;
pub mod migrate;
pub mod receipts;
pub mod release_fleet;
pub mod releases;
pub mod remote;
pub mod rollout;
pub mod serve;
pub mod serve_file;
pub mod support_bundle;
pub mod token;

use std::path::Path;

use stackpack_registry::config::Config;
use stackpack_registry::db::pg_pool::DatabaseLocation;
use stackpack_registry::db::sql::PgError;
use stackpack_registry::state::AppState;
use stackpack_registry::OpenError;
pub use stackpack_terminal::{print_json, status, table, Error, ExitStatus, Result};

use crate::cli::{
    AlertCommand, ChannelCommand, Cli, Command, CustomerCommand, CustomerKeyCommand,
    ReceiptsCommand, RegistryArgs, ReleaseCommand, RolloutCommand, TokenCommand,
};

/// Runs the command the command line names.
pub fn run(cli: &Cli) -> Result<ExitStatus> {
    match &cli.command {
        Command::Init(args) => init::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Token(TokenCommand::Create(args)) => token::create(args),
        Command::Token(TokenCommand::List(args)) => token::list(args),
        Command::Token(TokenCommand::Revoke(args)) => token::revoke(args),
        Command::Customer(CustomerCommand::Add(args)) => customer::add(args),
        Command::Customer(CustomerCommand::List(args)) => customer::list(args),
        Command::Customer(CustomerCommand::Show(args)) => customer_show::run(args),
        Command::Customer(CustomerCommand::History(args)) => customer::history(args),
        Command::Customer(CustomerCommand::Key(CustomerKeyCommand::Add(args))) => {
            customer::add_key(args)
        }
        Command::Customer(CustomerCommand::Key(CustomerKeyCommand::Revoke(args))) => {
            customer::revoke_key(args)
        }
        Command::Customer(CustomerCommand::Set(args)) => rollout::set(args),
        Command::Alert(AlertCommand::Add(args)) => alert::add(args),
        Command::Alert(AlertCommand::List(args)) => alert::list(args),
        Command::Alert(AlertCommand::Remove(args)) => alert::remove(args),
        Command::Channel(ChannelCommand::Set(args)) => channel::set(args),
        Command::Channel(ChannelCommand::List(args)) => channel::list(args),
        Command::Rollout(RolloutCommand::Status(args)) => rollout::status(args),
        Command::Rollout(RolloutCommand::Show(args)) => rollout::show(args),
        Command::Rollout(RolloutCommand::Pause(args)) => {
            rollout::control(args, stackpack_registry::rollout::Control::Pause)
        }
        Command::Rollout(RolloutCommand::Resume(args)) => {
            rollout::control(args, stackpack_registry::rollout::Control::Resume)
        }
        Command::Rollout(RolloutCommand::Abort(args)) => {
            rollout::control(args, stackpack_registry::rollout::Control::Abort)
        }
        Command::Gc(args) => gc::run(args),
        Command::Migrate(args) => return migrate::run(args),
        Command::Backup(args) => backup::run(args),
        Command::Receipts(ReceiptsCommand::Import(args)) => receipts::import(args),
        Command::SupportBundle(crate::cli::SupportBundleCommand::Import(args)) => {
            support_bundle::import(args)
        }
        Command::Fleet(args) => fleet::run(args),
        Command::Adoption(args) => adoption::run(args),
        Command::Release(ReleaseCommand::List(args)) => releases::list(args),
        Command::Release(ReleaseCommand::Show(args)) => releases::show(args),
    }?;
    Ok(ExitStatus::Success)
}

/// The location line of an error about the registry in `data`.
pub fn data_folder(data: &Path) -> String {
    format!("registry data folder `{}`", data.display())
}

/// A refusal of the registry library (a database or storage failure), located at
/// the data folder it happened in; the typed error is kept as the cause.
pub fn refused_in(data: &Path) -> impl Fn(stackpack_registry::error::Error) -> Error + '_ {
    move |error| Error::refused_by(error).at(data_folder(data))
}

/// Where `config`'s metadata lives, as an error's location line: the data folder,
/// or the PostgreSQL database by host, port and name (never its password).
pub fn place(config: &Config) -> String {
    match &config.database {
        DatabaseLocation::Sqlite => data_folder(&config.data),
        DatabaseLocation::Postgres(target) => format!("registry database ({target})"),
    }
}

/// [`refused_in`] located where `config`'s metadata lives.
pub fn refused_at(config: &Config) -> impl Fn(stackpack_registry::error::Error) -> Error + '_ {
    move |error| Error::refused_by(error).at(place(config))
}

/// [`refused_at`], except that a name the registry does not have (`NOT_FOUND`: a
/// customer, stack, release or channel the command named) is the command's mistake,
/// exit 2, as over `--url`.
pub fn named_at(config: &Config) -> impl Fn(stackpack_registry::error::Error) -> Error + '_ {
    move |error| match error.code {
        stackpack_registry::error::Code::NotFound => Error::usage_by(error).at(place(config)),
        _ => Error::refused_by(error).at(place(config)),
    }
}

/// [`on_registry`] for a question that names things: an unknown name is exit 2
/// ([`named_at`]).
pub fn ask_registry<T>(
    args: &RegistryArgs,
    f: impl FnOnce(&AppState) -> std::result::Result<T, stackpack_registry::error::Error>,
) -> Result<T> {
    let state = open_registry(args)?;
    f(&state).map_err(named_at(&state.config))
}

/// Opens the existing registry that `--data`, `--database` and `--config` name
/// (see [`crate::cli::RegistryArgs`]), for a command that only reads and writes
/// rows: its database alone, no blob store (on PostgreSQL, no data folder either).
pub fn open_registry(args: &RegistryArgs) -> Result<AppState> {
    let config = args.config(None)?;
    let opened = stackpack_registry::open_existing_rows(config.clone());
    opened.map_err(|error| cannot_open_at(&config, error))
}

/// Runs `f` on the existing registry `args` name; a refusal of the library is
/// located where its metadata lives.
pub fn on_registry<T>(
    args: &RegistryArgs,
    f: impl FnOnce(&AppState) -> std::result::Result<T, stackpack_registry::error::Error>,
) -> Result<T> {
    let state = open_registry(args)?;
    f(&state).map_err(refused_at(&state.config))
}

/// Opens the existing registry `config` names, in its data folder's SQLite or in
/// PostgreSQL: none there is a usage error (exit 2), as for [`open_existing`].
pub fn open_registry_with(config: Config) -> Result<AppState> {
    let opened = stackpack_registry::open_existing(config.clone());
    opened.map_err(|error| cannot_open_at(&config, error))
}

/// [`cannot_open`], saying what to do about a PostgreSQL database that does not
/// answer or holds no registry, and located there.
pub fn cannot_open_at(config: &Config, error: OpenError) -> Error {
    use stackpack_registry::db::OpenError as DbError;
    if let DatabaseLocation::Sqlite = &config.database {
        return cannot_open(&config.data, error);
    }
    let at = place(config);
    match &error {
        OpenError::Db(DbError::NoRegistry(_)) => Error::usage_by(error).at(at).hint(
            "check `--database` (or `database =` in `--config`): the URL `serve --database` \
             was given; to start a new registry there, run `stackpack-registry serve --database URL`",
        ),
        OpenError::Db(DbError::Postgres { error: cause, .. }) => {
            let hint = match cause {
                PgError::Newer { .. } => "run the newer `stackpack-registry` that last opened it; this build never changes a newer schema",
                _ => "check that PostgreSQL runs and answers there, and the user, password (in the URL or PGPASSWORD) and database name in `--database`",
            };
            Error::refused(format!("cannot open the registry: {error}"))
                .caused_by(error)
                .at(at)
                .hint(hint)
        }
        _ => cannot_open(&config.data, error),
    }
}

/// Opens the registry in `data`, which must exist: only `init` and `serve` create
/// one, so a mistyped `--data` is a usage error (exit 2) rather than a new, empty
/// registry.
pub fn open_existing(data: &Path) -> Result<AppState> {
    open_registry_with(Config::new(data))
}

/// A registry that cannot be opened: none there is a usage error (exit 2); a
/// database from a newer build says what to run instead; a blob store that cannot
/// be used says what to do.
pub fn cannot_open(data: &Path, error: OpenError) -> Error {
    match &error {
        OpenError::Missing(_) => Error::usage_by(error).at(data_folder(data)).hint(format!(
            "check `--data`; to start a new registry there, run `stackpack-registry init --data {}`",
            data.display()
        )),
        OpenError::Blobs(blobs) => {
            let hint = blobs_hint(blobs);
            Error::refused(format!("cannot open the registry: {error}"))
                .caused_by(error)
                .hint(hint)
        }
        OpenError::BlobsElsewhere { recorded, .. } => {
            let hint = match recorded.as_str() {
                "data-folder" => "start it without `--blobs`, as every other replica of it; to move its blobs into a bucket, run `stackpack-registry migrate --move-blobs-to s3://…` first".to_string(),
                bucket => format!("start it with `--blobs {bucket}`, as every other replica of it; to move its blobs, run `stackpack-registry migrate --move-blobs-to …` first"),
            };
            Error::refused(format!("cannot open the registry: {error}"))
                .caused_by(error)
                .at(data_folder(data))
                .hint(hint)
        }
        OpenError::Db(stackpack_registry::db::OpenError::Newer { .. }) => {
            Error::refused(format!("cannot open the registry: {error}"))
                .caused_by(error)
                .at(data_folder(data))
                .hint("run the newer `stackpack-registry` that last opened it; this build never changes a newer schema")
        }
        _ => Error::refused(format!("cannot open the registry: {error}"))
            .caused_by(error)
            .at(data_folder(data)),
    }
}

/// What to do when the blob store cannot be used.
pub fn blobs_hint(error: &stackpack_registry::storage::OpenError) -> &'static str {
    use stackpack_aws::s3::S3Error;
    use stackpack_registry::storage::OpenError;
    match error {
        OpenError::NoCredentials { .. } => {
            "export `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` for a key that may read and write the bucket, or name a profile with `AWS_PROFILE`"
        }
        OpenError::Profile { .. } => {
            "give the profile static keys in `~/.aws/credentials`, or export `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`"
        }
        OpenError::S3 { source, .. } => match source {
            S3Error::NoSuchBucket { .. } => "create the bucket first, or correct `--blobs`",
            S3Error::Denied { .. } => {
                "check `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`: the key must be allowed to list, read and write the bucket"
            }
            S3Error::WrongRegion { .. } => "give the bucket's own region with `--s3-region`",
            S3Error::Unreachable { .. } => "check `--s3-endpoint` and that the S3 service answers",
            S3Error::Failed { .. } => "check the bucket's settings and the key's permissions",
        },
        OpenError::Io(_) => "check that the data folder is writable",
    }
}

/// A refusal of a rollout operation: a request the registry calls malformed is a
/// usage error (exit 2), anything else a refusal; located where `config`'s
/// metadata lives.
pub fn rollout_refused_at(
    config: &Config,
) -> impl Fn(stackpack_registry::error::Error) -> Error + '_ {
    use stackpack_registry::error::Code;
    move |error| {
        let base = match error.code {
            Code::BadRequest => Error::usage(error.message.clone()),
            Code::Internal => return Error::refused_by(error).at(place(config)),
            _ => Error::refused(error.message.clone()),
        };
        base.at(place(config))
    }
}

/// The hint for a duration flag that is not one.
pub const AGE_HINT: &str = "give a number and a unit: `s`, `m`, `h`, `d` or `w`";

/// A write to stdout that failed: a reader that hung up (`… | head`) ends the
/// program quietly, as `println!` does under `die_quietly_on_closed_pipe`; any other
/// failure is an error.
fn stdout_failed(error: std::io::Error) -> Error {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(ExitStatus::ClosedPipe.code().into());
    }
    Error::refused(format!("cannot write to stdout: {error}")).caused_by(error)
}

/// Writes a JSON array to stdout one page of elements at a time, so a whole-fleet
/// answer is never held in memory: `[`, the elements as they come, `]`. Nothing is
/// written before the first page arrives, so a refusal leaves stdout empty.
pub struct JsonArray {
    out: std::io::BufWriter<std::io::Stdout>,
    written: usize,
    opened: bool,
}

impl JsonArray {
    pub fn start() -> JsonArray {
        JsonArray {
            out: std::io::BufWriter::new(std::io::stdout()),
            written: 0,
            opened: false,
        }
    }

    fn open(&mut self) -> std::io::Result<()> {
        use std::io::Write as _;
        if !self.opened {
            self.out.write_all(b"[")?;
            self.opened = true;
        }
        Ok(())
    }

    pub fn push<T: serde::Serialize>(&mut self, elements: &[T]) -> Result<()> {
        use std::io::Write as _;
        self.open().map_err(stdout_failed)?;
        for element in elements {
            self.out
                .write_all(if self.written == 0 { b"\n" } else { b",\n" })
                .map_err(stdout_failed)?;
            serde_json::to_writer_pretty(&mut self.out, element).map_err(|error| {
                match error.io_error_kind() {
                    Some(_) => stdout_failed(error.into()),
                    None => Error::refused(format!("cannot write JSON: {error}")).caused_by(error),
                }
            })?;
            self.written += 1;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        use std::io::Write as _;
        self.open().map_err(stdout_failed)?;
        self.out
            .write_all(if self.written == 0 { b"]\n" } else { b"\n]\n" })
            .map_err(stdout_failed)?;
        self.out.flush().map_err(stdout_failed)
    }
}
