//! What one engine run works with.

use std::path::Path;

use stackpack_schema::receipt::Outcome;

use super::request::Request;
use crate::engine::Engine;
use crate::home::Home;
use crate::inputs;
use crate::ledger::Ledger;
use crate::review;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::signature::PrivateKey;

/// The name of the inputs file inside the work folder: the merged values of the
/// user's files (never a `TF_VAR_` value, which stays in the environment).
pub(super) const INPUTS_FILE: &str = "stackpack.tfvars.json";

/// What one run works with.
pub(super) struct Context<'a> {
    pub(super) home: &'a Home,
    pub(super) bundle: &'a VerifiedBundle,
    pub(super) inputs_text: &'a str,
    /// The sensitive inputs' values, looked for in the state after an apply.
    pub(super) secrets: &'a [(String, String)],
    /// The inputs as read (files and `TF_VAR_`), for preflight.
    pub(super) inputs: &'a inputs::Inputs,
    pub(super) request: &'a Request,
    pub(super) ledger: &'a Ledger,
    pub(super) lock_fd: std::os::fd::RawFd,
    pub(super) key: &'a PrivateKey,
    /// `apply --plan`: the reviewed plan's record and the engine's plan file.
    pub(super) reviewed: Option<&'a (review::Record, Vec<u8>)>,
}

/// The engine, ready in its work folder.
pub(super) struct Workspace<'a> {
    pub(super) engine: &'a Engine,
    /// The stack's folder.
    pub(super) dir: &'a Path,
}

pub(super) enum Step {
    Declined,
    Done(Outcome, Option<serde_json::Value>),
}
