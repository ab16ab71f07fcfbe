//! One module per subcommand; each is a thin wrapper over the library.

pub mod build;
pub mod check;
pub mod customer;
pub mod export;
pub mod forecast;
pub mod gate;
pub mod inspect;
pub mod key;
pub mod keygen;
pub mod kit;
pub mod promote;
pub mod publish;
pub mod version;

use std::path::PathBuf;

use stackpack_packager::repository::Repository;

use stackpack_packager::Result;
use stackpack_terminal::ExitStatus;

use crate::cli::{Cli, Command, CustomerCommand, KeyCommand, PlanArgs};

/// Runs the command the line names: the one dispatch of `stackpack`.
pub fn run(cli: &Cli) -> Result<ExitStatus> {
    let global = &cli.global;
    match &cli.command {
        Command::Keygen(args) => keygen::run(args, global),
        Command::Key(KeyCommand::Public(args)) => key::public(args),
        Command::Version(args) => version::run(args, global),
        Command::Build(args) => build::run(args, global),
        Command::Inspect(args) => inspect::run(args, global),
        Command::Publish(args) => publish::run(args, global),
        Command::Export(args) => export::run(args, global),
        Command::Kit(args) => kit::run(args, global),
        Command::Promote(args) => promote::run(args, global),
        Command::Forecast(args) => forecast::run(args),
        Command::Check(args) => check::run(args),
        Command::Customer(CustomerCommand::New(args)) => customer::new(args),
    }
}

/// The image layout a plan reads earlier builds from.
pub fn layout_path(repo: &Repository, args: &PlanArgs) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| repo.root.join(".stackpack").join("bundles"))
}

/// The signing key: `--key`, else `[signing] key` in `stackpack.toml`.
pub fn signing_key(
    repo: &Repository,
    flag: Option<&std::path::Path>,
) -> Result<Box<dyn stackpack_schema::signature::SigningKey>> {
    if let Some(path) = flag {
        return stackpack_packager::keys::open_signing_key(path);
    }
    let source = repo.config.signing_key_source(&repo.root)?.ok_or_else(|| {
        stackpack_packager::Error::usage("no signing key: bundles are always signed")
            .hint("pass `--key FILE` (make one with `stackpack keygen --out NAME`), or set `[signing] key` in `stackpack.toml`")
    })?;
    if let stackpack_packager::config::KeySource::Pem { variable, .. } = &source {
        crate::output::detail(&format!("signing with the PEM key held in `{variable}`"));
    }
    stackpack_packager::keys::open_key_source(&source)
}

/// Parses a registry address, explaining a bad one.
pub fn registry_address(
    flag: Option<&str>,
    repo_config: Option<&stackpack_packager::config::RepoConfig>,
) -> Result<stackpack_bundle::remote::RegistryAddress> {
    let text = flag
        .map(str::to_string)
        .or_else(|| repo_config.and_then(|c| c.registry.clone()))
        .ok_or_else(|| {
            stackpack_packager::Error::usage("no registry given").hint(
                "pass `--registry HOST[:PORT]/NAMESPACE`, or set `registry` in `stackpack.toml`",
            )
        })?;
    text.parse()
        .map_err(|e: stackpack_bundle::remote::RemoteError| {
            let hint = e.hint().unwrap_or_default().to_string();
            stackpack_packager::Error::usage_by(e).hint(hint)
        })
}

/// How the packager talks to a registry host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Https,
    /// `--insecure`: plain HTTP, for registries on this machine's loopback only.
    PlainHttp,
}

impl Transport {
    /// The transport the `--insecure` flag asks for.
    pub fn from_insecure_flag(insecure: bool) -> Self {
        if insecure {
            Transport::PlainHttp
        } else {
            Transport::Https
        }
    }
}

/// Connects to a registry host, explaining refusals.
pub fn connect(host: &str, transport: Transport) -> Result<stackpack_bundle::remote::Remote> {
    let remote = stackpack_bundle::remote::Remote::new(host, transport == Transport::PlainHttp)?;
    // Before anything is built or pushed: is this a registry at all?
    remote.probe()?;
    Ok(remote)
}
