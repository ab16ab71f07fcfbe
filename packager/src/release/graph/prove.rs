//! Proving each release: what `check` refuses before a release is published.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use stackpack_interface::tfvars::did_you_mean;
use stackpack_interface::ModuleInterface;
use stackpack_schema::release::{apply_order, GraphError};

use super::types::{fits, output_type};
use super::{locate, GraphStack, ReleaseGraph, ReleaseReport, ServiceReference};
use crate::check::{Finding, Graph, Severity};

/// Reads a stack's interface by its folder; `None` when it cannot be read (then its
/// wiring is not judged here: the stack's own check reports why).
pub type InterfaceOf<'a> = dyn FnMut(&str) -> Option<Arc<ModuleInterface>> + 'a;

/// Proves every release of `graph`, one report each, sorted by name.
pub fn prove(graph: &ReleaseGraph, interface: &mut InterfaceOf) -> Vec<ReleaseReport> {
    graph
        .releases
        .keys()
        .map(|release| prove_release(graph, release, interface))
        .collect()
}

fn prove_release(
    graph: &ReleaseGraph,
    release: &str,
    interface: &mut InterfaceOf,
) -> ReleaseReport {
    let mut findings = Vec::new();
    names_and_members(graph, release, &mut findings);
    services(graph, release, &mut findings);
    let members = graph.members(release);
    for stack in &members {
        dependencies_outside(graph, release, stack, &mut findings);
    }
    let order = cycle(graph, release, &members, &mut findings);
    for stack in &members {
        wiring(graph, stack, interface, &mut findings);
    }
    let settings = &graph.releases[release];
    let refused = findings.iter().any(|f| f.severity == Severity::Error);
    ReleaseReport {
        release: release.to_string(),
        stacks: order.unwrap_or_else(|| settings.stacks.clone()),
        services: settings.services.keys().cloned().collect(),
        bump: None,
        findings,
        refused,
    }
}

fn finding(rule: Graph, item: &str, file: &str, line: usize, message: String) -> Finding {
    Finding {
        rule: rule.into(),
        item: item.to_string(),
        file: file.to_string(),
        line,
        bump: None,
        severity: Severity::Error,
        message,
        change: None,
        decisive: false,
    }
}

/// One namespace for releases and stacks; every stack listed exists.
fn names_and_members(graph: &ReleaseGraph, release: &str, out: &mut Vec<Finding>) {
    let at = graph.release_line(release);
    if let Some(stack) = graph.stacks.get(release) {
        out.push(finding(Graph::ReleaseNamedLikeStack, release, "stackpack.toml", at, format!(
            "release `{release}` has the name of stack `{release}` (`{}`): releases and stacks share one namespace; rename the release",
            stack.path
        )));
    }
    let known: Vec<&str> = graph.stacks.keys().map(String::as_str).collect();
    for name in graph.releases[release].stacks.iter() {
        if graph.stacks.contains_key(name) {
            continue;
        }
        let line = locate::line_in_table(&graph.repo_text, at, &format!("\"{name}\""));
        let near =
            did_you_mean(name, &known).map_or(String::new(), |n| format!("; did you mean `{n}`?"));
        out.push(finding(Graph::ReleaseStackMissing, name, "stackpack.toml", line, format!(
            "release `{release}` lists stack `{name}`, which is not a stack of this repository (stacks: {}){near}",
            list(&known)
        )));
    }
}

/// Each service is an OCI reference a publisher can resolve, with no credentials.
fn services(graph: &ReleaseGraph, release: &str, out: &mut Vec<Finding>) {
    let table = locate::table_line(&graph.repo_text, &["releases", release, "services"]);
    for (name, reference) in &graph.releases[release].services {
        if let Err(why) = reference.parse::<ServiceReference>() {
            let line = locate::key_line(&graph.repo_text, table, name);
            // A refused reference may hold a secret: it is never repeated.
            out.push(finding(Graph::ServiceReferenceInvalid, name, "stackpack.toml", line, format!(
                "service `{name}` of release `{release}` is not an OCI reference (`HOST/REPO:TAG` or `HOST/REPO@sha256:…`): {why}"
            )));
        }
    }
}

/// Every dependency (`depends-on`, and the stacks a wiring reads) is in the release.
fn dependencies_outside(
    graph: &ReleaseGraph,
    release: &str,
    stack: &GraphStack,
    out: &mut Vec<Finding>,
) {
    let listed = &graph.releases[release].stacks;
    for dependency in stack.config.dependencies() {
        if listed.contains(&dependency) {
            continue;
        }
        let what = if graph.stacks.contains_key(&dependency) {
            format!(
                "which release `{release}` does not list; add it to `[releases.{release}] stacks`"
            )
        } else {
            "which is not a stack of this repository".to_string()
        };
        out.push(finding(
            Graph::DependencyOutsideRelease,
            &dependency,
            &stack.manifest(),
            stack.dependency_line(&dependency),
            format!(
                "stack `{}` (in release `{release}`) depends on `{dependency}`, {what}",
                stack.name
            ),
        ));
    }
}

/// The apply order, or the cycle that prevents one (`a → b → a`, with the
/// `stack.toml` line of each step).
fn cycle(
    graph: &ReleaseGraph,
    release: &str,
    members: &[&GraphStack],
    out: &mut Vec<Finding>,
) -> Option<Vec<String>> {
    let names: BTreeSet<&str> = members.iter().map(|s| s.name.as_str()).collect();
    // Dependencies outside the release are reported on their own.
    let edges: BTreeMap<String, BTreeSet<String>> = members
        .iter()
        .map(|s| {
            let inside = s
                .config
                .dependencies()
                .into_iter()
                .filter(|d| names.contains(d.as_str()));
            (s.name.clone(), inside.collect())
        })
        .collect();
    match apply_order(&edges) {
        Ok(order) => Some(order),
        Err(GraphError::Cycle(cycle)) => {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let from = &graph.stacks[&pair[0]];
                    format!("`{}:{}`", from.manifest(), from.dependency_line(&pair[1]))
                })
                .collect();
            let first = &graph.stacks[&cycle[0]];
            out.push(finding(
                Graph::DependencyCycle,
                &cycle[0],
                &first.manifest(),
                first.dependency_line(&cycle[1]),
                format!(
                    "the stacks of release `{release}` depend on each other in a cycle: {} ({})",
                    cycle.join(" → "),
                    steps.join(", ")
                ),
            ));
            None
        }
        Err(GraphError::Missing { .. }) => None,
    }
}

/// Every wiring of `stack` reads an output its upstream declares into an input the
/// stack declares, with a type that fits when both are known.
fn wiring(
    graph: &ReleaseGraph,
    stack: &GraphStack,
    interface: &mut InterfaceOf,
    out: &mut Vec<Finding>,
) {
    let Some(module) = interface(&stack.path) else {
        return;
    };
    for (input, wire) in &stack.config.inputs.from {
        let line = stack.input_line(input);
        let file = stack.manifest();
        let variable = module.variable(input);
        if variable.is_none() {
            let names: Vec<&str> = module.variables.iter().map(|v| v.name.as_str()).collect();
            let near = did_you_mean(input, &names)
                .map_or(String::new(), |n| format!("; did you mean `{n}`?"));
            out.push(finding(Graph::WiredInputMissing, input, &file, line, format!(
                "`[inputs.from]` wires `{wire}` to `{input}`, which is not an input of stack `{}`{near}",
                stack.name
            )));
        }
        let Some(upstream) = graph.stacks.get(&wire.stack) else {
            continue; // a dependency outside the release, reported there
        };
        let Some(upstream_module) = interface(&upstream.path) else {
            continue;
        };
        let Some(output) = upstream_module.output(&wire.output) else {
            let names: Vec<&str> = upstream_module
                .outputs
                .iter()
                .map(|o| o.name.as_str())
                .collect();
            out.push(finding(Graph::WiredOutputMissing, &wire.to_string(), &file, line, format!(
                "input `{input}` of stack `{}` is wired to `{wire}`, but stack `{}` has no output `{}` (outputs: {})",
                stack.name, wire.stack, wire.output, list(&names)
            )));
            continue;
        };
        let Some(variable) = variable else { continue };
        if output.sensitive && !variable.sensitive {
            let mut f = finding(Graph::WiredSensitiveOutput, input, &file, line, format!(
                "sensitive output `{wire}` sets input `{input}` of stack `{}`, which is not `sensitive = true`: plans would show the value",
                stack.name
            ));
            f.severity = Severity::Warning;
            out.push(f);
        }
        if let Some(ty) = output_type(&upstream_module, output) {
            if !fits(&ty, &variable.type_expr) {
                out.push(finding(
                    Graph::WiredTypeMismatch,
                    input,
                    &file,
                    line,
                    format!(
                    "input `{input}` of stack `{}` must be `{}`, but `{wire}` is `{ty}` (`{}/{}`)",
                    stack.name, variable.type_expr, upstream.path, output.location
                ),
                ));
            }
        }
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
