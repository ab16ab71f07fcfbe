//! Customer impact: every customer's inputs (`customers/<id>/<stack>.tfvars` and
//! `.tfvars.json`) checked against the interface a build would publish, before it is
//! published. A customer's inputs file is the stack's public API in use, so a finding
//! at error level means this release would break that customer.
//!
//! Checked: required inputs missing, placeholders `stackpack customer new` wrote and
//! nobody filled, unknown inputs (with a did-you-mean, renamed inputs first), values of
//! the wrong type, `validation` conditions (evaluated with the interface reader's
//! evaluator; one it cannot evaluate statically is reported as not evaluated, naming
//! the function it gave up on, never a guess), a deprecated alias and its new name both
//! set, deprecated aliases still in use (a warning naming the release in which they stop
//! working), and network ranges that overlap another customer's reporting to the same
//! control-plane region (`[customers]` in `stackpack.toml`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hcl_edit::expr::Expression;
use serde::Serialize;
use stackpack_interface::eval::Evaluator;
use stackpack_interface::tfvars::{self, did_you_mean, InputValue, Verdict};
use stackpack_interface::{types, ModuleInterface, Variable};

use crate::check::finding::{findings_table, github_annotation, table, Finding, Severity};
use crate::check::rule_id::{Inputs, RuleId};
use crate::config::CustomerSettings;
use crate::customers::{self, CustomerRange};

/// A stack whose customers are checked.
#[derive(Clone, Debug)]
pub struct StackTarget {
    /// The stack's name: customers' files are named after it.
    pub name: String,
    /// Repository-relative folder (`stacks/data-plane`).
    pub path: String,
    /// The release in which deprecated aliases stop working (the next major), when known.
    pub aliases_end: Option<semver::Version>,
    /// Inputs set from an upstream stack's output (`[inputs.from]` in `stack.toml`):
    /// a customer must not set them, and need not.
    pub wired: BTreeMap<String, stackpack_schema::release::Wire>,
}

/// One customer's inputs file for one stack, and what checking it found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerReport {
    pub customer: String,
    pub stack: String,
    /// The stack's folder; empty for inputs named after no stack.
    #[serde(skip)]
    pub stack_path: String,
    /// Repository-relative path of the inputs file.
    pub file: String,
    /// True when this release would break the customer: an error-level finding.
    pub breaks: bool,
    /// How many of the customer's `validation` rules were not evaluated here (the
    /// engine checks them at plan time): "ok" is then only as sure as the rest.
    pub not_evaluated: usize,
    pub findings: Vec<Finding>,
}

impl CustomerReport {
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    fn new(target: &StackTarget, customer: &str, file: &str, findings: Vec<Finding>) -> Self {
        CustomerReport {
            customer: customer.to_string(),
            stack: target.name.clone(),
            stack_path: target.path.clone(),
            file: file.to_string(),
            breaks: findings.iter().any(|f| f.severity == Severity::Error),
            not_evaluated: findings
                .iter()
                .filter(|f| f.rule == RuleId::Inputs(NOT_EVALUATED))
                .count(),
            findings,
        }
    }

    /// `breaks`, `ok`, or `ok, N not evaluated`.
    pub fn result(&self) -> String {
        match (self.breaks, self.not_evaluated) {
            (true, _) => "breaks".to_string(),
            (false, 0) => "ok".to_string(),
            (false, n) => format!("ok, {n} not evaluated"),
        }
    }
}

/// The rule of a validation the evaluator gave up on.
pub const NOT_EVALUATED: Inputs = Inputs::ValidationNotEvaluated;

/// The inputs files of `stack`: `customers/<id>/<stack>.tfvars` and `.tfvars.json`,
/// by customer id, as `(customer, repository-relative path)`.
pub fn customer_files(root: &Path, stack: &str) -> Vec<(String, String)> {
    let mut customers: Vec<String> = std::fs::read_dir(root.join("customers"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    customers.sort();
    let mut files = Vec::new();
    for customer in customers {
        for ext in ["tfvars", "tfvars.json"] {
            let rel = format!("customers/{customer}/{stack}.{ext}");
            if root.join(&rel).is_file() {
                files.push((customer.clone(), rel));
            }
        }
    }
    files
}

/// Checks every customer of every stack in `targets` against the stack's interface
/// as it is in the work tree (what a build would publish), and the customers' network
/// ranges against each other.
pub fn check_customers(
    root: &Path,
    targets: &[StackTarget],
    settings: &CustomerSettings,
    interface: &mut dyn FnMut(&str) -> Option<std::sync::Arc<ModuleInterface>>,
) -> Vec<CustomerReport> {
    let mut reports = Vec::new();
    for target in targets {
        let files = customer_files(root, &target.name);
        if files.is_empty() {
            continue;
        }
        let Some(module) = interface(&target.path) else {
            // Never a silent pass: say that these customers were not checked.
            for (customer, file) in files {
                let message = format!(
                    "not evaluated: the interface of stack `{}` (`{}`) could not be read; run `stackpack check` for why",
                    target.name, target.path
                );
                let f = finding(
                    Inputs::InterfaceUnreadable,
                    &target.name,
                    &file,
                    0,
                    Severity::Warning,
                    message,
                );
                reports.push(CustomerReport::new(target, &customer, &file, vec![f]));
            }
            continue;
        };
        let mut ranges = Vec::new();
        let first = reports.len();
        for (customer, file) in files {
            let mut findings = match read_values(&root.join(&file), &file) {
                Ok(values) => {
                    let (range, invalid) = customer_range(settings, &customer, &file, &values);
                    ranges.extend(range);
                    let mut findings = check_values(target, &module, &file, &values);
                    findings.extend(invalid);
                    findings
                }
                Err(f) => vec![f],
            };
            findings.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
            reports.push(CustomerReport::new(target, &customer, &file, findings));
        }
        overlaps(settings, &ranges, &mut reports[first..]);
    }
    reports
}

/// The network ranges the customers of `stack` hold today (files that cannot be read,
/// and ranges that are not ranges, are left to `check` to report).
pub fn customer_ranges(
    root: &Path,
    stack: &str,
    settings: &CustomerSettings,
) -> Vec<CustomerRange> {
    customer_files(root, stack)
        .into_iter()
        .filter_map(|(customer, file)| {
            let values = read_values(&root.join(&file), &file).ok()?;
            customer_range(settings, &customer, &file, &values).0
        })
        .collect()
}

/// A customer's network range and control-plane region from their values, or the
/// finding for a range that is not one.
fn customer_range(
    settings: &CustomerSettings,
    customer: &str,
    file: &str,
    values: &[InputValue],
) -> (Option<CustomerRange>, Option<Finding>) {
    let get = |name: &str| values.iter().find(|v| v.name == name);
    let Some(cidr) = get(&settings.cidr_input).filter(|v| !customers::is_placeholder(&v.value))
    else {
        return (None, None);
    };
    let Some(text) = cidr.value.as_str() else {
        return (None, None);
    };
    let range = match text.parse::<ipnet::Ipv4Net>() {
        Ok(range) => range.trunc(),
        Err(_) => {
            let message = format!(
                "input `{}` is `{text}`, which is not an IPv4 range such as `10.40.0.0/16`",
                settings.cidr_input
            );
            let f = finding(
                Inputs::CidrInvalid,
                &settings.cidr_input,
                file,
                cidr.line,
                Severity::Error,
                message,
            );
            return (None, Some(f));
        }
    };
    let control_plane_region = get(&settings.control_plane_region_input)
        .filter(|v| !customers::is_placeholder(&v.value))
        .and_then(|v| v.value.as_str().map(str::to_string));
    let range = CustomerRange {
        customer: customer.to_string(),
        file: file.to_string(),
        line: cidr.line,
        range,
        control_plane_region,
    };
    (Some(range), None)
}

/// One error on each side of every pair of customers whose ranges overlap while they
/// report to the same control-plane region.
fn overlaps(settings: &CustomerSettings, ranges: &[CustomerRange], reports: &mut [CustomerReport]) {
    let input = &settings.cidr_input;
    for (a, b) in customers::overlapping_pairs(ranges) {
        let region = a
            .control_plane_region
            .as_deref()
            .or(b.control_plane_region.as_deref())
            .map_or("an unknown control-plane region".to_string(), |r| {
                format!("control-plane region `{r}`")
            });
        for (this, other) in [(a, b), (b, a)] {
            let message = format!(
                "`{input}` `{}` of customer `{}` overlaps `{}` of customer `{}` (`{}:{}`); both report to {region}",
                this.range, this.customer, other.range, other.customer, other.file, other.line
            );
            if let Some(report) = reports.iter_mut().find(|r| r.file == this.file) {
                report.findings.push(finding(
                    Inputs::CidrOverlap,
                    input,
                    &this.file,
                    this.line,
                    Severity::Error,
                    message,
                ));
                report.breaks = true;
            }
        }
    }
}

fn finding(
    rule: Inputs,
    item: &str,
    file: &str,
    line: usize,
    severity: Severity,
    message: String,
) -> Finding {
    Finding {
        rule: rule.into(),
        item: item.to_string(),
        file: file.to_string(),
        line,
        bump: None,
        severity,
        message,
        change: None,
        decisive: false,
    }
}

/// Inputs files named after no stack of this repository (a stack renamed or removed,
/// a typo), each as a report with one warning: nothing checks them.
pub fn stray_files(root: &Path, stacks: &[String]) -> Vec<CustomerReport> {
    let mut out = Vec::new();
    let customers = std::fs::read_dir(root.join("customers"))
        .into_iter()
        .flatten()
        .flatten();
    for customer in customers.filter(|e| e.path().is_dir()) {
        let id = customer.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(customer.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(stack) = name
                .strip_suffix(".tfvars.json")
                .or_else(|| name.strip_suffix(".tfvars"))
            else {
                continue;
            };
            if stacks.iter().any(|s| s == stack) || stack.ends_with(".auto") {
                continue;
            }
            let rel = format!("customers/{id}/{name}");
            let message = format!(
                "no stack `{stack}` in this repository, so nothing checks these inputs (stacks: {})",
                stacks.join(", ")
            );
            let f = finding(
                Inputs::InputsForNoStack,
                stack,
                &rel,
                0,
                Severity::Warning,
                message,
            );
            let target = StackTarget {
                name: stack.to_string(),
                path: String::new(),
                aliases_end: None,
                wired: BTreeMap::new(),
            };
            out.push(CustomerReport::new(&target, &id, &rel, vec![f]));
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

fn read_values(path: &Path, file: &str) -> Result<Vec<InputValue>, Finding> {
    let unreadable = |line: usize, message: String| {
        finding(
            Inputs::InputsUnreadable,
            "",
            file,
            line,
            Severity::Error,
            message,
        )
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| unreadable(0, format!("cannot read the inputs file: {e}")))?;
    let parsed = if file.ends_with(".json") {
        tfvars::parse_json(&text)
    } else {
        tfvars::parse_hcl(&text)
    };
    parsed.map_err(|e| unreadable(e.line, e.message))
}

/// Every finding for one file's values.
fn check_values(
    target: &StackTarget,
    module: &ModuleInterface,
    file: &str,
    values: &[InputValue],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let (placeholders, values): (Vec<&InputValue>, Vec<&InputValue>) = values
        .iter()
        .partition(|v| customers::is_placeholder(&v.value));
    for value in &placeholders {
        out.push(finding(
            Inputs::PlaceholderNotFilled,
            &value.name,
            file,
            value.line,
            Severity::Error,
            format!(
                "input `{}` is still the placeholder `{}`: set this customer's value",
                value.name,
                value.value.as_str().unwrap_or_default()
            ),
        ));
    }
    let values: Vec<InputValue> = values.into_iter().cloned().collect();
    let values = values.as_slice();
    let set: BTreeMap<&str, &InputValue> = values.iter().map(|v| (v.name.as_str(), v)).collect();
    for value in values {
        if let Some(wire) = target.wired.get(&value.name) {
            out.push(wired_input_set(target, file, value, wire));
            continue;
        }
        match module.variable(&value.name) {
            None => out.push(unknown_input(target, module, file, value)),
            Some(variable) => check_value(target, module, variable, file, value, &set, &mut out),
        }
    }
    for variable in module.variables.iter().filter(|v| v.is_required()) {
        let name = variable.name.as_str();
        if target.wired.contains_key(name) {
            continue;
        }
        if !set.contains_key(name) && !placeholders.iter().any(|p| p.name == name) {
            out.push(finding(
                Inputs::MissingInput,
                &variable.name,
                file,
                0,
                Severity::Error,
                format!(
                    "required input `{}` is not set (declared at `{}/{}`)",
                    variable.name, target.path, variable.location
                ),
            ));
        }
    }
    validations(module, file, values, &set, &mut out);
    out
}

/// A customer's value for an input the release sets from an upstream output: the
/// wiring would silently win, or the customer's value would; neither is what someone
/// meant.
fn wired_input_set(
    target: &StackTarget,
    file: &str,
    value: &InputValue,
    wire: &stackpack_schema::release::Wire,
) -> Finding {
    finding(
        Inputs::WiredInputSet,
        &value.name,
        file,
        value.line,
        Severity::Error,
        format!(
            "input `{}` of stack `{}` is set from `{wire}` (`[inputs.from]` in `{}/stack.toml`): remove it from this file",
            value.name, target.name, target.path
        ),
    )
}

fn unknown_input(
    target: &StackTarget,
    module: &ModuleInterface,
    file: &str,
    value: &InputValue,
) -> Finding {
    let renamed = module.renamed_to(&value.name).map(|v| v.name.as_str());
    let names: Vec<&str> = module.variables.iter().map(|v| v.name.as_str()).collect();
    let hint = match renamed.or_else(|| did_you_mean(&value.name, &names)) {
        Some(near) => format!("; did you mean `{near}`?"),
        None => String::new(),
    };
    finding(
        Inputs::UnknownInput,
        &value.name,
        file,
        value.line,
        Severity::Error,
        format!(
            "`{}` is not an input of stack `{}`{hint}",
            value.name, target.name
        ),
    )
}

fn check_value(
    target: &StackTarget,
    module: &ModuleInterface,
    variable: &Variable,
    file: &str,
    value: &InputValue,
    set: &BTreeMap<&str, &InputValue>,
    out: &mut Vec<Finding>,
) {
    let name = &variable.name;
    if value.value.is_null() && !variable.nullable {
        out.push(finding(
            Inputs::TypeMismatch,
            name,
            file,
            value.line,
            Severity::Error,
            format!("input `{name}` is `null`, but the stack declares it `nullable = false`"),
        ));
    } else if let Err(why) = variable.type_expr.check(&value.value) {
        out.push(finding(
            Inputs::TypeMismatch,
            name,
            file,
            value.line,
            Severity::Error,
            format!("input `{name}` must be `{}`: {why}", variable.type_expr),
        ));
    }
    if variable.deprecated.is_none() {
        return;
    }
    let replacement = module.renamed_to(name).map(|v| v.name.clone());
    if let Some(new) = replacement.as_deref().filter(|new| set.contains_key(new)) {
        out.push(finding(Inputs::AliasAndInputBothSet, name, file, value.line, Severity::Error,
            format!("deprecated input `{name}` and its replacement `{new}` are both set; set only `{new}`")));
        return;
    }
    let until = target
        .aliases_end
        .as_ref()
        .map_or("the next major release".to_string(), |v| format!("`{v}`"));
    let instead = replacement.map_or(String::new(), |new| format!("; set `{new}` instead"));
    out.push(finding(
        Inputs::DeprecatedInput,
        name,
        file,
        value.line,
        Severity::Warning,
        format!("input `{name}` is deprecated and stops working in {until}{instead}"),
    ));
}

/// Evaluates every `validation` of every input with this customer's values (converted
/// to their types) and the defaults of the inputs they leave unset.
fn validations(
    module: &ModuleInterface,
    file: &str,
    values: &[InputValue],
    set: &BTreeMap<&str, &InputValue>,
    out: &mut Vec<Finding>,
) {
    let mut inputs = module.default_inputs();
    for value in values {
        if let Some(variable) = module.variable(&value.name) {
            inputs.insert(
                value.name.clone(),
                types::convert(&value.value, &variable.type_expr),
            );
        }
    }
    for variable in &module.variables {
        if !inputs.contains_key(&variable.name) {
            continue;
        }
        let line = set.get(variable.name.as_str()).map_or(0, |v| v.line);
        // A validation that reads nothing this customer sets judges the vendor's
        // defaults, the same for everyone: not this customer's finding.
        let reads_customer = |condition: &str| set.keys().any(|n| references(condition, n));
        for validation in variable
            .validations
            .iter()
            .filter(|v| reads_customer(&v.condition))
        {
            let name = &variable.name;
            match tfvars::validation_verdict(module, validation, &inputs) {
                Verdict::Holds => {}
                Verdict::Fails => out.push(finding(
                    Inputs::ValidationFailed,
                    name,
                    file,
                    line,
                    Severity::Error,
                    format!(
                        "input `{name}` fails its validation `{}`: {}",
                        validation.condition,
                        validation
                            .error_message
                            .as_deref()
                            .unwrap_or("(no error message)")
                    ),
                )),
                Verdict::Unknown => {
                    let why = match gave_up_on(module, &validation.condition, &inputs) {
                        Some(call) => format!("stackpack cannot evaluate `{call}(…)`"),
                        None => "it needs what only a plan knows".to_string(),
                    };
                    out.push(finding(NOT_EVALUATED, name, file, line, Severity::Warning,
                        format!("not evaluated: the validation `{}` of input `{name}`: {why}; the engine checks it at plan time", validation.condition)));
                }
            }
        }
    }
}

/// The innermost function call of `condition` whose arguments are known but whose
/// result the evaluator could not give: what it gave up on, for the person reading.
fn gave_up_on(
    module: &ModuleInterface,
    condition: &str,
    inputs: &BTreeMap<String, serde_json::Value>,
) -> Option<String> {
    let expr = hcl_edit::parser::parse_expr(condition).ok()?;
    let mut evaluator = Evaluator::new(inputs, &module.locals);
    innermost_unknown_call(&expr, &mut evaluator)
}

fn innermost_unknown_call(expr: &Expression, evaluator: &mut Evaluator) -> Option<String> {
    let children: Vec<&Expression> = match expr {
        Expression::FuncCall(call) => call.args.iter().collect(),
        Expression::Parenthesis(p) => vec![p.inner()],
        Expression::Array(items) => items.iter().collect(),
        Expression::Object(obj) => obj.iter().map(|(_, v)| v.expr()).collect(),
        Expression::UnaryOp(op) => vec![&op.expr],
        Expression::BinaryOp(op) => vec![&op.lhs_expr, &op.rhs_expr],
        Expression::Conditional(c) => vec![&c.cond_expr, &c.true_expr, &c.false_expr],
        Expression::Traversal(t) => vec![&t.expr],
        _ => Vec::new(),
    };
    if let Some(found) = children
        .iter()
        .find_map(|c| innermost_unknown_call(c, evaluator))
    {
        return Some(found);
    }
    let Expression::FuncCall(call) = expr else {
        return None;
    };
    let args_known = call.args.iter().all(|a| evaluator.eval(a).is_some());
    let name = call.name.name.as_str();
    // `can` and `try` turn an argument's error into a value; an unknown one is not theirs.
    let wrapper = call.name.namespace.is_empty() && matches!(name, "can" | "try");
    (args_known && !wrapper && evaluator.eval(expr).is_none()).then(|| {
        let namespace: Vec<&str> = call.name.namespace.iter().map(|n| n.as_str()).collect();
        if namespace.is_empty() {
            name.to_string()
        } else {
            format!("{}::{name}", namespace.join("::"))
        }
    })
}

/// Does `condition` read `var.<name>` (not a longer name that starts the same)?
pub(crate) fn references(condition: &str, name: &str) -> bool {
    let needle = format!("var.{name}");
    condition.match_indices(&needle).any(|(at, _)| {
        let next = condition[at + needle.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
    })
}

/// The customers a release would break, sorted.
pub fn affected(reports: &[CustomerReport]) -> BTreeSet<String> {
    reports
        .iter()
        .filter(|r| r.breaks)
        .map(|r| r.customer.clone())
        .collect()
}

/// `--allow-breaking` must name exactly the customers affected: returns why not.
pub fn allowance_mismatch(affected: &BTreeSet<String>, allowed: &[String]) -> Option<String> {
    let allowed: BTreeSet<String> = allowed.iter().cloned().collect();
    let missing: Vec<String> = affected
        .difference(&allowed)
        .map(|c| format!("`{c}`"))
        .collect();
    let extra: Vec<String> = allowed
        .difference(affected)
        .map(|c| format!("`{c}`"))
        .collect();
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!(
            "it leaves out {}, whom this release breaks",
            missing.join(", ")
        ));
    }
    if !extra.is_empty() {
        why.push(format!(
            "it names {}, whom this release does not break",
            extra.join(", ")
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// For people: one line per customer and stack, then every finding.
pub fn human(reports: &[CustomerReport]) -> String {
    if reports.is_empty() {
        return "no customer inputs to check (`customers/<id>/<stack>.tfvars`)\n".into();
    }
    let mut rows = vec![vec![
        "CUSTOMER".to_string(),
        "STACK".to_string(),
        "RESULT".to_string(),
        "FINDINGS".to_string(),
    ]];
    for r in reports {
        let errors = r.errors().count();
        let warnings = r.findings.len() - errors;
        let result = r.result();
        let first = r.errors().next().or(r.findings.first());
        let summary = match first {
            None => "-".to_string(),
            Some(f) => {
                let more = r.findings.len() - 1;
                let more = if more > 0 {
                    format!(" (+{more} more)")
                } else {
                    String::new()
                };
                format!(
                    "{errors} error(s), {warnings} warning(s): `{}`: {}{more}",
                    f.location(),
                    f.message
                )
            }
        };
        rows.push(vec![r.customer.clone(), r.stack.clone(), result, summary]);
    }
    let mut out = table(&rows);
    let not_evaluated: usize = reports.iter().map(|r| r.not_evaluated).sum();
    if not_evaluated > 0 {
        out.push_str(&format!(
            "\nnot evaluated: {not_evaluated} validation rule{} of customers' inputs (the engine checks {} at plan time; see below)\n",
            if not_evaluated == 1 { "" } else { "s" },
            if not_evaluated == 1 { "it" } else { "them" },
        ));
    }
    let findings: Vec<Finding> = reports.iter().flat_map(|r| r.findings.clone()).collect();
    if !findings.is_empty() {
        out.push_str("\ncustomer findings:\n");
        out.push_str(&findings_table(&findings));
    }
    out
}

/// For CI: one workflow annotation per finding, errors where a customer would break.
pub fn github(reports: &[CustomerReport]) -> String {
    let mut out = String::new();
    for r in reports {
        for f in &r.findings {
            let level = if f.severity == Severity::Error {
                "error"
            } else {
                "warning"
            };
            let mut f = f.clone();
            f.message = format!(
                "customer `{}`, stack `{}`: {}",
                r.customer, r.stack, f.message
            );
            if f.line == 0 {
                f.line = 1;
            }
            out.push_str(&github_annotation(&f, level));
            out.push('\n');
        }
    }
    out
}

/// True when every error of `report` is an unfilled placeholder: a customer not yet
/// onboarded (a fresh `customer new`), which no release breaks and no release fixes.
fn only_placeholders(report: &CustomerReport) -> bool {
    report
        .errors()
        .all(|f| f.rule == RuleId::Inputs(Inputs::PlaceholderNotFilled))
}

/// The customers a release really breaks: those with an error other than an
/// unfilled placeholder.
fn broken(reports: &[CustomerReport]) -> BTreeSet<String> {
    reports
        .iter()
        .filter(|r| r.breaks && !only_placeholders(r))
        .map(|r| r.customer.clone())
        .collect()
}

/// Inputs that look renamed, `(old, new)`: a customer's file sets an input the
/// stack no longer has, and leaves out a required one it now has, and either they
/// are the only two such in that file or their names are alike.
fn renames(reports: &[CustomerReport]) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for report in reports {
        let of = |rule: Inputs| -> Vec<&str> {
            report
                .errors()
                .filter(|f| f.rule == RuleId::Inputs(rule))
                .map(|f| f.item.as_str())
                .collect()
        };
        let (unknown, missing) = (of(Inputs::UnknownInput), of(Inputs::MissingInput));
        for old in &unknown {
            let alike = did_you_mean(old, &missing);
            let only = (unknown.len() == 1 && missing.len() == 1).then(|| missing[0]);
            if let Some(new) = alike.or(only) {
                found.insert((old.to_string(), new.to_string()));
            }
        }
    }
    found
}

/// The refusal of a release that would break customers, without `error:` and the
/// hint: who, and every finding at `file:line` (lines after the first).
pub fn refusal_message(reports: &[CustomerReport], why: Option<&str>) -> String {
    let affected = affected(reports);
    let names: Vec<String> = affected.iter().map(|c| format!("`{c}`")).collect();
    let mut out = if affected.is_empty() {
        "`--allow-breaking` names customers this release does not break".to_string()
    } else if broken(reports).is_empty() {
        format!(
            "the inputs of {} customer{} still hold placeholders: {}",
            affected.len(),
            if affected.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    } else {
        format!(
            "this release would break {} customer{}: {}",
            affected.len(),
            if affected.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    };
    for r in reports.iter().filter(|r| r.breaks) {
        for f in r.errors() {
            out.push_str(&format!("\n  --> `{}`: {}", f.location(), f.message));
            out.push_str(&format!(
                "\n      customer `{}`, stack `{}`, rule: {}",
                r.customer, r.stack, f.rule
            ));
        }
    }
    if let Some(why) = why {
        out.push_str(&format!("\n`--allow-breaking` does not match: {why}"));
    }
    out
}

/// Why customers block a release: `None` when none would break and none are named, or
/// when `allowed` names exactly those who would; else `(message, hint)`.
pub fn gate(reports: &[CustomerReport], allowed: &[String]) -> Option<(String, String)> {
    let affected = affected(reports);
    if affected.is_empty() && allowed.is_empty() {
        return None;
    }
    let why = if allowed.is_empty() {
        None
    } else {
        Some(allowance_mismatch(&affected, allowed)?)
    };
    let hint = if affected.is_empty() {
        "drop `--allow-breaking`: this release breaks no customer".to_string()
    } else {
        refusal_hint(reports)
    };
    Some((refusal_message(reports, why.as_deref()), hint))
}

/// The hint for a refusal: fill in a new customer's placeholders; keep a renamed
/// input as an alias; else fix the inputs, or name exactly who a major release
/// breaks. A customer not yet onboarded is never a reason for a major release.
pub fn refusal_hint(reports: &[CustomerReport]) -> String {
    let mut parts = Vec::new();
    let unfilled: BTreeSet<&str> = reports
        .iter()
        .filter(|r| r.breaks && only_placeholders(r))
        .map(|r| r.file.as_str())
        .collect();
    if !unfilled.is_empty() {
        let files: Vec<String> = unfilled.iter().map(|f| format!("`{f}`")).collect();
        parts.push(format!(
            "fill in the placeholders in {}, then check again: a customer not yet onboarded needs no breaking release",
            files.join(", ")
        ));
    }
    let renames = renames(reports);
    if !renames.is_empty() {
        let pairs: Vec<String> = renames
            .iter()
            .map(|(old, new)| format!("`{old}` → `{new}`"))
            .collect();
        parts.push(format!(
            "{} looks like a rename: keep the old name as a deprecated alias for one release, and no customer breaks (rule `input-renamed-with-alias`, a minor release; see \"Renaming an input\" in `docs/check.md`)",
            pairs.join(", ")
        ));
    }
    let names: Vec<String> = broken(reports).into_iter().collect();
    if !names.is_empty() {
        parts.push(format!(
            "{}fix their inputs first, or release a major version naming exactly them: `--bump major --allow-breaking {}`",
            if renames.is_empty() { "" } else { "otherwise " },
            names.join(" ")
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_breaking_names_exactly_the_affected() {
        let affected: BTreeSet<String> = ["a".to_string(), "b".to_string()].into();
        assert_eq!(
            allowance_mismatch(&affected, &["b".into(), "a".into()]),
            None
        );
        let why = allowance_mismatch(&affected, &["a".into(), "c".into()]).unwrap();
        assert!(
            why.contains("leaves out `b`") && why.contains("names `c`"),
            "{why}"
        );
    }

    #[test]
    fn a_condition_references_whole_names_only() {
        assert!(references("var.region == \"x\"", "region"));
        assert!(!references("var.region_b == \"x\"", "region"));
        assert!(references("contains(var.a, var.region)", "region"));
    }
}
