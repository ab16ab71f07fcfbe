//! The `stackpack-registry` command line: `cli` says what it accepts, `commands`
//! does it.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{
    Cli, Command, CustomerCommand, CustomerKeyCommand, ReceiptsCommand, TokenCommand,
};
use crate::commands::{Refused, UsageError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The one-shot commands die quietly on a closed pipe (`fleet … | head`), as Unix
    // tools do, instead of panicking on the next write. The server keeps Rust's
    // default (SIGPIPE ignored): a client hanging up must never stop it.
    if !matches!(cli.command, Command::Serve(_)) {
        // SAFETY: restoring the default disposition of one signal before any thread
        // is started.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match &cli.command {
        Command::Init(args) => commands::init::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Token(TokenCommand::Create(args)) => commands::token::create(args),
        Command::Token(TokenCommand::List(args)) => commands::token::list(args),
        Command::Token(TokenCommand::Revoke(args)) => commands::token::revoke(args),
        Command::Customer(CustomerCommand::Add(args)) => commands::customer::add(args),
        Command::Customer(CustomerCommand::List(args)) => commands::customer::list(args),
        Command::Customer(CustomerCommand::History(args)) => commands::customer::history(args),
        Command::Customer(CustomerCommand::Key(CustomerKeyCommand::Add(args))) => {
            commands::customer::add_key(args)
        }
        Command::Customer(CustomerCommand::Key(CustomerKeyCommand::Revoke(args))) => {
            commands::customer::revoke_key(args)
        }
        Command::Gc(args) => commands::gc::run(args),
        Command::Receipts(ReceiptsCommand::Import(args)) => commands::receipts::import(args),
        Command::Fleet(args) => commands::fleet::run(args),
        Command::Adoption(args) => commands::adoption::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e),
    }
}

/// Prints an error, its causes and its hint; usage mistakes exit 2, the rest 1.
fn report(e: &anyhow::Error) -> ExitCode {
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
    if let Some(refused) = e.downcast_ref::<Refused>() {
        eprintln!("hint: {}", refused.1);
    }
    ExitCode::from(1)
}
