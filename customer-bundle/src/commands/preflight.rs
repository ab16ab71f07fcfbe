//! `preflight STACK@VERSION --inputs F`: the account checked against what the
//! stack needs, without planning.

use stackpack_runner::Result;
use stackpack_terminal::ExitStatus;

use crate::cli::{GlobalArgs, PreflightArgs};

pub fn preflight(_global: &GlobalArgs, _args: &PreflightArgs) -> Result<ExitStatus> {
    todo!()
}
