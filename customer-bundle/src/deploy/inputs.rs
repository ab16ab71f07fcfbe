//! The inputs read and checked against the bundle, every finding at once.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::files;
use crate::home::Home;
use crate::inputs;
use crate::unpack;
use stackpack_bundle::verify::VerifiedBundle;

/// Reads the inputs files (later ones win) and the `TF_VAR_` environment, and
/// refuses them, naming every finding, when they do not fit the bundle.
pub(super) fn read_inputs(
    home: &Home,
    bundle: &VerifiedBundle,
    files: &[PathBuf],
) -> Result<inputs::Inputs> {
    let mut parsed = inputs::read_all(files)?;
    parsed.add_environment(&bundle.config.interface);
    // When the bundle cannot be unpacked to read its rules (a full disk, a store
    // changed since verification), the unpack into the work folder below fails the
    // same way, and there it is recorded; the names and types are checked still.
    let findings = check_inputs(home, bundle, &parsed)
        .map(|checked| checked.findings)
        .unwrap_or_else(|_| inputs::check(&parsed, &bundle.config.interface));
    match findings_error(&findings) {
        Some(error) => Err(error),
        None => Ok(parsed),
    }
}

/// One error naming every finding; `None` when there are none.
pub fn findings_error(findings: &[inputs::Finding]) -> Option<Error> {
    let first = findings.first()?;
    if findings.len() == 1 {
        let mut error = Error::refused(first.message.clone()).at(&first.location);
        error.hint = first.hint.clone();
        return Some(error);
    }
    // Each problem with its own location and hint, in the order of the files (then
    // the inputs no file sets), as a compiler lists its errors.
    let mut message = format!(
        "{} with the inputs, in file order:",
        stackpack_terminal::words::count(findings.len() as u64, "problem")
    );
    for (number, finding) in findings.iter().enumerate() {
        message.push_str(&format!(
            "\n  {}. {}\n     --> {}",
            number + 1,
            finding.message,
            finding.location
        ));
        if let Some(hint) = &finding.hint {
            message.push_str(&format!("\n     hint: {hint}"));
        }
    }
    Some(Error::refused(message))
}

/// What checking inputs against a bundle found.
#[derive(Debug, Default)]
pub struct InputsChecked {
    /// Every mistake, at once: three mistakes take one run to see, not three.
    pub findings: Vec<inputs::Finding>,
    /// The rules only the engine can decide, which it checks when it plans.
    pub left_to_engine: Vec<inputs::RuleLeft>,
}

/// Checks inputs against the bundle: the interface's names and types, and the
/// stack's own `validation` rules, read from the verified, unpacked bundle.
pub fn check_inputs(
    home: &Home,
    bundle: &VerifiedBundle,
    inputs: &inputs::Inputs,
) -> Result<InputsChecked> {
    let mut checked = InputsChecked {
        findings: inputs::check(inputs, &bundle.config.interface),
        left_to_engine: Vec::new(),
    };
    let has_rules = bundle
        .config
        .interface
        .inputs
        .iter()
        .any(|i| !i.validations.is_empty());
    if !has_rules {
        return Ok(checked);
    }
    let scratch = files::work_folder(&home.work_root(), "check-inputs-")?;
    let dir = unpack::unpack_verified(home, bundle, scratch.path())?;
    let module = stackpack_interface::extract_module(&dir)
        .map_err(|e| Error::refused(format!("cannot read the stack's variables: {e}")))?;
    let stack = &bundle.config.entrypoint;
    let rules = inputs::validate(inputs, &module, stack);
    let rules = without_inputs_already_found(rules, &checked.findings);
    checked.findings.extend(rules);
    checked.left_to_engine = inputs::left_to_engine(inputs, &module, stack)
        .into_iter()
        .filter(|rule| checked.findings.iter().all(|f| f.input != rule.input))
        .collect();
    Ok(checked)
}

/// The rule findings for inputs the interface check found nothing wrong with: a
/// value of the wrong type has already been reported, and a rule run on it would
/// only repeat that in the stack's words (or judge a value the engine would never
/// have accepted).
pub(super) fn without_inputs_already_found(
    rules: Vec<inputs::Finding>,
    found: &[inputs::Finding],
) -> Vec<inputs::Finding> {
    rules
        .into_iter()
        .filter(|rule| found.iter().all(|f| f.input != rule.input))
        .collect()
}
