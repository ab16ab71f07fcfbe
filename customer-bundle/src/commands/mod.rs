//! The commands, and how `stackpack-runner` talks: errors with a location and a hint,
//! tables, colour only on a terminal and never with `NO_COLOR`.

pub mod approve;
pub mod deploy;
pub mod import;
pub mod inputs;
pub mod kit;
pub mod pending;
pub mod preflight;
pub mod receipts;
pub mod release;
pub mod release_status;
pub mod setup;
pub mod status;
pub mod support_bundle;
pub mod sync;
pub mod unlock;

use std::path::PathBuf;

use semver::Version;
use stackpack_runner::home::{self, Home};
use stackpack_runner::installation::Installation;
use stackpack_runner::{Error, Result};
use stackpack_schema::reference::StackRef;
use stackpack_terminal::ExitStatus;

use crate::cli::{Cli, Command, GlobalArgs, ReceiptsCommand, TrustCommand};

pub use stackpack_terminal::{print_json, quiet, status, table, verbose};

pub fn init_output(global: &GlobalArgs) {
    stackpack_terminal::Verbosity::from_flags(global.quiet, global.verbose).set();
}

pub fn run(cli: &Cli) -> Result<ExitStatus> {
    let g = &cli.global;
    match &cli.command {
        Command::Init(args) => setup::init(g, args),
        Command::Trust(TrustCommand::Add { file, json }) => setup::trust_add(g, file, *json),
        Command::Trust(TrustCommand::List { json }) => setup::trust_list(g, *json),
        Command::Trust(TrustCommand::Remove { key_id, json }) => {
            setup::trust_remove(g, key_id, *json)
        }
        // A kit is checked whole (`kit.rs`) before its bundles are imported.
        Command::Import(args) if stackpack_bundle::kit::is_kit(&args.source) => {
            kit::import(g, args)
        }
        Command::Import(args) => import::import(g, args),
        Command::Pull(args) => import::pull(g, args),
        Command::Verify(args) => import::verify(g, args),
        Command::CheckInputs(args) => inputs::check_inputs(g, args),
        Command::Plan(args) => deploy::plan(g, args),
        Command::Apply(args) => deploy::apply(g, args),
        Command::Rollback(args) => deploy::rollback(g, args),
        Command::Drift(args) => deploy::drift(g, args),
        Command::Destroy(args) => deploy::destroy(g, args),
        Command::Unlock(args) => unlock::unlock(g, args),
        Command::SupportBundle(args) => support_bundle::support_bundle(g, args),
        Command::Preflight(args) => preflight::preflight(g, args),
        Command::Status(args) => status::status(g, args),
        Command::MirrorServices(args) => release::mirror_services(g, args),
        Command::Report(args) => receipts::report(g, args),
        Command::Receipts(ReceiptsCommand::Export {
            out,
            dir,
            unreported,
            json,
        }) => receipts::export(g, out.as_deref(), dir.as_deref(), *unreported, *json),
        Command::Receipts(ReceiptsCommand::List { json }) => receipts::list(g, *json),
        Command::Sync(args) => sync::sync(g, args),
        Command::Pending(args) => pending::pending(g, args),
        Command::Approve(args) => approve::approve(g, args),
    }
}

/// The home folder the flags and environment name.
pub fn home_root(global: &GlobalArgs) -> Result<PathBuf> {
    global.home.clone().or_else(home::default_root).ok_or_else(|| {
        Error::usage("cannot tell where the runner home is: neither `--home`, `STACKPACK_RUNNER_HOME` nor `HOME` is set")
    })
}

fn open_home(global: &GlobalArgs) -> Result<Home> {
    Home::open(&home_root(global)?)
}

/// The home the flags name, opened once for the whole command (its ledger on first
/// use).
pub fn open_installation(global: &GlobalArgs) -> Result<Installation> {
    Ok(Installation::open(open_home(global)?))
}

/// `STACK@VERSION`.
pub fn parse_bundle(text: &str) -> Result<(String, Version)> {
    let reference: StackRef = text
        .parse()
        .map_err(|e: stackpack_schema::reference::ReferenceError| Error::usage_by(e))?;
    match reference.version {
        Some(version) => Ok((reference.stack, version)),
        None => Err(
            Error::usage(format!("`{text}` names no version")).hint(format!(
                "write `{text}@VERSION`; `stackpack-runner status` lists what the store holds"
            )),
        ),
    }
}

pub fn parse_stack(text: &str) -> Result<String> {
    stackpack_schema::reference::validate_name(text).map_err(Error::usage_by)?;
    Ok(text.to_string())
}
