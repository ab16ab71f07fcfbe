//! The witness for people (a table: customer × stack → add / change / replace /
//! destroy, with the resources), for pull requests (GitHub markdown) and for the
//! refusal that names what breaks.

use stackpack_schema::version::Bump;

use super::{CustomerOutcome, StackWitness};

const HEADERS: [&str; 9] = [
    "customer",
    "stack",
    "add",
    "change",
    "replace",
    "destroy",
    "bump",
    "time",
    "resources",
];

/// One line of progress on stderr as each customer finishes.
pub fn progress_line(stack: &str, outcome: &CustomerOutcome) -> String {
    let what = match (&outcome.error, outcome.bump) {
        (Some(_), _) => "failed".to_string(),
        (None, Some(bump)) => format!(
            "{} to add, {} to change, {} to replace, {} to destroy: {bump}",
            outcome.counts.add,
            outcome.counts.change,
            outcome.counts.replace,
            outcome.counts.destroy
        ),
        (None, None) => String::new(),
    };
    format!(
        "witness: `{}` {stack}: {what} ({:.1} s)",
        outcome.customer, outcome.seconds
    )
}

fn rows(stacks: &[StackWitness]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for stack in stacks {
        for c in &stack.customers {
            rows.push(vec![
                c.customer.clone(),
                stack.stack.clone(),
                c.counts.add.to_string(),
                c.counts.change.to_string(),
                c.counts.replace.to_string(),
                c.counts.destroy.to_string(),
                c.bump.map_or("failed".to_string(), |b| b.to_string()),
                format!("{:.1} s", c.seconds),
                resources(c),
            ]);
        }
    }
    rows
}

/// `update module.x.aws_vpc.this (tags, tags_all); create …`, or why there is none.
fn resources(c: &CustomerOutcome) -> String {
    if let Some(error) = &c.error {
        return error.lines().next().unwrap_or_default().to_string();
    }
    let mut text = c
        .changes
        .iter()
        .map(|r| {
            if r.attributes.is_empty() {
                format!("{} {}", r.action, r.address)
            } else {
                format!("{} {} ({})", r.action, r.address, r.attributes.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    if !c.new_inputs.is_empty() {
        text = format!("[sets new `{}`] {text}", c.new_inputs.join("`, `"));
    }
    if text.is_empty() {
        "-".to_string()
    } else {
        text
    }
}

fn verdict(stack: &StackWitness) -> String {
    format!(
        "{}: rules {}, witness {} → {} (after {}, {} of {}, {}, {:.1} s)",
        stack.path,
        stack.rules,
        stack.witness,
        stack.required,
        stack.release,
        stack.customers.len(),
        stackpack_terminal::words::count(stack.customers_total as u64, "customer"),
        stack.account,
        stack.seconds
    )
}

/// The table and each stack's verdict, for a terminal.
pub fn human(stacks: &[StackWitness]) -> String {
    if stacks.is_empty() {
        return "witness: no changed stack has a stable release to witness against\n".into();
    }
    let mut out = stackpack_terminal::table(&HEADERS, &rows(stacks));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for stack in stacks {
        out.push_str(&verdict(stack));
        out.push('\n');
        for note in &stack.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
    }
    out
}

/// The same as GitHub markdown, for a pull request's summary.
pub fn markdown(stacks: &[StackWitness]) -> String {
    let mut out = String::from("### Outcome witness\n\n");
    if stacks.is_empty() {
        out.push_str("No changed stack has a stable release to witness against.\n");
        return out;
    }
    out.push_str("| stack | last release | customers | rules | witness | required |\n|---|---|---|---|---|---|\n");
    for s in stacks {
        out.push_str(&format!(
            "| `{}` | {} | {} of {} | {} | {} | **{}** |\n",
            s.stack,
            s.release,
            s.customers.len(),
            s.customers_total,
            s.rules,
            s.witness,
            s.required
        ));
    }
    out.push_str(&format!(
        "\n| {} |\n|{}\n",
        HEADERS.join(" | "),
        "---|".repeat(HEADERS.len())
    ));
    for row in rows(stacks) {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    for s in stacks {
        for note in &s.notes {
            out.push_str(&format!("\n> `{}`: {note}\n", s.stack));
        }
    }
    out
}

/// A pull request's summary: each changed stack's bump by the rules, then the witness.
pub fn markdown_check(
    output: &crate::check::render::CheckOutput,
    stacks: &[StackWitness],
) -> String {
    let mut out = String::from(
        "### Interface check\n\n| folder | kind | required | findings |\n|---|---|---|---|\n",
    );
    for unit in &output.units {
        let findings: Vec<String> = unit
            .findings
            .iter()
            .map(|f| format!("`{}` {} ({})", f.rule, f.item, f.location()))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | **{}** | {} |\n",
            unit.path,
            unit.kind,
            unit.required,
            if findings.is_empty() {
                "-".to_string()
            } else {
                findings.join("<br>").replace('|', "\\|")
            }
        ));
    }
    out.push('\n');
    out.push_str(&crate::release::graph::render::markdown(&output.releases));
    out.push_str(&markdown(stacks));
    out
}

/// Why a requested bump is too small for what the witness saw: every customer whose
/// plan needs more, with each resource, its action and the attributes it changes.
pub fn refusal(stack: &StackWitness, requested: Bump) -> String {
    let (message, hint) = refusal_parts(stack, requested);
    format!("error: {message}\nhint: {hint}\n")
}

/// [`refusal`]'s message (first line, then one line per resource) and hint.
pub fn refusal_parts(stack: &StackWitness, requested: Bump) -> (String, String) {
    let mut out = format!(
        "`{}`: customers' plans change under this release: it requires a {} version, not {requested}",
        stack.path, stack.witness
    );
    for c in stack.customers.iter().filter(|c| c.bump > Some(requested)) {
        for r in &c.changes {
            let attributes = if r.attributes.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", r.attributes.join("`, `"))
            };
            out.push_str(&format!(
                "\n  customer `{}`: `{}` {}{attributes}",
                c.customer, r.address, r.action
            ));
        }
    }
    let hint = format!(
        "release it as a {} version with `--bump {}`, or keep what these resources were",
        stack.witness, stack.witness
    );
    (out, hint)
}

/// Customers the witness could not finish, with the engine's last lines; and what it
/// could not clean up.
pub fn failures(stack: &StackWitness) -> String {
    let mut out = String::new();
    for warning in stack.customers.iter().filter_map(|c| c.warning.as_deref()) {
        out.push_str(&format!("warning: {warning}\n"));
    }
    for c in stack.failed() {
        out.push_str(&format!(
            "error: the witness failed for customer `{}` of `{}` ({})\n",
            c.customer, stack.path, c.file
        ));
        for line in c.error.as_deref().unwrap_or_default().lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if stack.failed().next().is_some() {
        out.push_str("hint: the last release must apply, and this version plan, with each customer's inputs: the lines above are the engine's\n");
    }
    out
}
