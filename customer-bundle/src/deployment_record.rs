//! What runs, kept beside the state in the customer's bucket: after every apply,
//! rollback or destroy the runner writes `<prefix>/<customer>/<stack>.stackpack.json`
//! (version, bundle digest, receipt id, when, and the inputs it ran with, sensitive
//! ones left out). A runner home made again after the old one was lost reads these
//! at `init`, so `status`, `drift` and `rollback` go on at once instead of after one
//! take-over apply per stack.
//!
//! The record is a convenience beside the state, not the truth: a run whose record
//! cannot be written still succeeded (the state is what the engine wrote), and says
//! so. Sensitive inputs never leave the home: a stack found this way gets them from
//! `TF_VAR_<name>` (or `--inputs`) again.

use semver::Version;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use stackpack_schema::interface::Interface;
use stackpack_schema::receipt::{Receipt, ReceiptKind};

use super::error::{Error, Result};
use super::files;
use super::home::{Home, S3Backend};
use super::inputs::Inputs;
use super::installation::Installation;
use super::ledger::Deployment;
use super::state_bucket;

/// One stack's record in the bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRecord {
    pub stack: String,
    /// Apply, rollback or destroy.
    pub kind: ReceiptKind,
    pub version: Version,
    pub bundle_digest: String,
    pub receipt_id: String,
    pub applied_at: String,
    /// The inputs from files, as the engine got them, without the sensitive ones.
    pub inputs: Map<String, Value>,
    /// Inputs left out: sensitive ones, and those from `TF_VAR_` variables.
    #[serde(default)]
    pub withheld: Vec<String>,
}

/// The inputs a record may keep: every value from a file whose input is not
/// sensitive; the names of the others.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordInputs {
    pub kept: Map<String, Value>,
    pub withheld: Vec<String>,
}

impl RecordInputs {
    pub fn of(inputs: &Inputs, interface: &Interface) -> RecordInputs {
        let sensitive = |name: &str| {
            interface
                .inputs
                .iter()
                .any(|input| input.name == name && input.sensitive)
        };
        let mut record = RecordInputs::default();
        for value in &inputs.values {
            if value.from_environment || sensitive(&value.name) {
                record.withheld.push(value.name.clone());
            } else {
                record.kept.insert(value.name.clone(), value.value.clone());
            }
        }
        record.withheld.sort();
        record
    }
}

/// The record's key: the state's, `.stackpack.json` for `.tfstate`.
pub fn record_key(backend: &S3Backend, customer: &str, stack: &str) -> String {
    let state = backend.state_key(customer, stack);
    format!("{}.stackpack.json", state.trim_end_matches(".tfstate"))
}

/// After a run that changed what runs: its record written beside the state. `None`
/// when the home keeps state locally (nothing to write) or the record was written;
/// else a warning for the run's output (the run itself succeeded).
pub fn after_run(home: &Home, receipt: &Receipt, inputs: &RecordInputs) -> Option<String> {
    let backend = home.config.backend.s3()?;
    if !receipt.kind.changes_deployment() {
        return None;
    }
    let record = DeploymentRecord {
        stack: receipt.stack.clone(),
        kind: receipt.kind,
        version: receipt.version.clone(),
        bundle_digest: receipt.bundle_digest.to_string(),
        receipt_id: receipt.id.clone(),
        applied_at: receipt.finished_at.clone(),
        inputs: inputs.kept.clone(),
        withheld: inputs.withheld.clone(),
    };
    let key = record_key(backend, &home.config.customer, &receipt.stack);
    let written = write(backend, &key, &record);
    written.err().map(|e| {
        format!(
            "warning: the deployment record `s3://{}/{key}` was not written ({}): a runner home made again finds this stack's state, but not its version until the next apply",
            backend.bucket, e.message
        )
    })
}

fn write(backend: &S3Backend, key: &str, record: &DeploymentRecord) -> Result<()> {
    let Some(client) = state_bucket::client(backend)? else {
        return Err(Error::refused(
            "no AWS credentials in the environment or in an AWS profile",
        ));
    };
    let text = serde_json::to_string_pretty(record).expect("a record serialises") + "\n";
    client
        .put_object(&backend.bucket, key, &text)
        .map_err(|e| state_bucket::bucket_error(backend, e))
}

/// The records of `stacks` (those whose state the bucket keeps), each written to the
/// ledger of a home that knows nothing of it yet, with its inputs saved in the home.
/// Returns the records taken; a stack with state but no record (applied before
/// records were written) is left to a take-over apply.
pub fn adopt(installation: &Installation, stacks: &[String]) -> Result<Vec<DeploymentRecord>> {
    let home = &installation.home;
    let Some(backend) = home.config.backend.s3() else {
        return Ok(Vec::new());
    };
    let Some(client) = state_bucket::client(backend)? else {
        return Ok(Vec::new());
    };
    let ledger = installation.ledger()?;
    let mut adopted = Vec::new();
    for stack in stacks {
        if ledger.current(stack)?.is_some() {
            continue;
        }
        let key = record_key(backend, &home.config.customer, stack);
        let Some(text) = client
            .get_object(&backend.bucket, &key)
            .map_err(|e| state_bucket::bucket_error(backend, e))?
        else {
            continue;
        };
        let record: DeploymentRecord = serde_json::from_str(&text).map_err(|e| {
            Error::refused(format!(
                "the deployment record `s3://{}/{key}` is not one: {e}",
                backend.bucket
            ))
            .hint(format!("delete it (the state beside it stays), then apply `{stack}` with its inputs to take it over"))
        })?;
        if record.stack != *stack || record.kind == ReceiptKind::Destroy {
            continue;
        }
        let text = serde_json::to_string_pretty(&Value::Object(record.inputs.clone()))
            .expect("inputs serialise")
            + "\n";
        let saved = save_inputs(home, &record.receipt_id, stack, &text)?;
        ledger.add_deployment(&Deployment {
            kind: record.kind,
            stack: stack.clone(),
            version: record.version.clone(),
            digest: record.bundle_digest.clone(),
            receipt_id: record.receipt_id.clone(),
            inputs_file: saved.display().to_string(),
            applied_at: record.applied_at.clone(),
        })?;
        adopted.push(record);
    }
    Ok(adopted)
}

/// Keeps the inputs a deployment used in the home, so `drift`, `rollback` and
/// `destroy` run with them.
pub fn save_inputs(
    home: &Home,
    receipt_id: &str,
    stack: &str,
    text: &str,
) -> Result<std::path::PathBuf> {
    let dir = home.inputs_dir();
    files::create_folder(&dir)?;
    let path = dir.join(format!("{stack}-{receipt_id}.tfvars.json"));
    files::write_private(&path, text)?;
    Ok(path)
}
