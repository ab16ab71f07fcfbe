//! What `publish` (and `build`) refuse before anything is built or pushed: an
//! error-level lint, and (for `publish`) a release that would break a customer
//! whom `--allow-breaking` does not name.

use stackpack_packager::check::{lint, Inputs, LintOptions, RuleConfig, RuleId, Severity};
use stackpack_packager::discover::expand_globs;
use stackpack_packager::impact::{self, StackTarget};
use stackpack_packager::plan::Plan;
use stackpack_packager::repository::Repository;
use stackpack_packager::witness::{render as witness_render, StackJob, Witness};
use stackpack_packager::Error;
use stackpack_packager::Result;
use stackpack_schema::version::Bump;

use crate::output;

/// Runs the lints `check` runs; refuses on an error-level finding, naming each at
/// `file:line`. Warnings are printed and let through.
pub fn lints(repo: &Repository) -> Result<()> {
    let root = &repo.root;
    let rules = RuleConfig::from_table(&repo.config.rules).map_err(|e| {
        Error::usage(format!("`[rules]` in `stackpack.toml`: {e}"))
            .at(root.join("stackpack.toml").display())
    })?;
    let options = LintOptions {
        modules: expand_globs(root, &repo.config.modules),
        stacks: expand_globs(root, &repo.config.stacks),
        environments: repo.config.environments.clone(),
        rules,
    };
    let findings = lint(root, &options).map_err(Error::usage_by)?;
    let mut errors = Vec::new();
    for f in &findings {
        if f.severity == Severity::Error {
            errors.push(format!(
                "\n  --> `{}`: {} (rule: {})",
                f.location(),
                f.message,
                f.rule
            ));
        } else {
            output::warning(&format!(
                "`{}`: {} (rule: {})",
                f.location(),
                f.message,
                f.rule
            ));
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(Error::refused(format!(
        "{} lint finding{} at error level; nothing was built or pushed{}",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" },
        errors.concat()
    ))
    .hint("fix it (see `stackpack check`), or add `# stackpack:ignore <rule> reason: <why>` on or above the line"))
}

/// Checks every customer of every stack this plan releases against the interface it
/// would publish. Refuses when one would break, unless the release is major and
/// `allowed` names exactly those affected; then records them in each stack's plan.
pub fn customers(repo: &Repository, plan: &mut Plan, allowed: &[String]) -> Result<()> {
    let targets: Vec<StackTarget> = plan
        .stacks
        .iter()
        .filter_map(|s| {
            let next = s.next.as_ref()?;
            Some(StackTarget {
                name: s.stack.name.clone(),
                path: s.stack.path.clone(),
                aliases_end: Some(semver::Version::new(next.major + 1, 0, 0)),
                wired: s.stack.config.inputs.from.clone(),
            })
        })
        .collect();
    let root = &repo.root;
    let reports = impact::check_customers(root, &targets, &repo.config.customers, &mut |path| {
        stackpack_interface::extract_module(&root.join(path))
            .ok()
            .map(std::sync::Arc::new)
    });
    for f in reports.iter().flat_map(|r| &r.findings) {
        let line = format!("`{}`: {}", f.location(), f.message);
        match (f.severity, f.rule) {
            (Severity::Error, _) => {}
            (_, RuleId::Inputs(Inputs::DeprecatedInput)) => output::warning(&line),
            _ => output::detail(&line),
        }
    }
    if let Some((message, hint)) = impact::gate(&reports, allowed) {
        return Err(Error::refused(message).hint(hint));
    }
    for stack in plan.stacks.iter_mut() {
        let broken: Vec<String> = impact::affected(
            &reports
                .iter()
                .filter(|r| r.stack == stack.stack.name)
                .cloned()
                .collect::<Vec<_>>(),
        )
        .into_iter()
        .collect();
        if broken.is_empty() {
            continue;
        }
        if stack.bump != Bump::Major {
            return Err(Error::refused(format!(
                "`{}` would break {} as a {} release; only a major release may break customers",
                stack.stack.name,
                broken
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                stack.bump
            ))
            .hint("publish with `--bump major --allow-breaking ...`, or fix their inputs first"));
        }
        stack.allowed_breaking = broken;
    }
    Ok(())
}

/// With `[witness] publish = true`: witnesses every stack this plan releases after a
/// stable one (see `check --witness`), refuses when the customers' plans need a larger
/// bump than the release gets, and records the summary, with the bump asked for, in
/// each stack's bundle config.
pub fn witness(repo: &Repository, plan: &mut Plan, requested: Option<Bump>) -> Result<()> {
    if !repo.config.witness.as_ref().is_some_and(|w| w.publish) {
        return Ok(());
    }
    let jobs: Vec<StackJob> = plan
        .stacks
        .iter()
        .filter(|s| s.changed && s.next.is_some())
        .filter_map(|s| {
            let previous = s.previous.as_ref()?;
            (Some(&previous.version) == s.last_stable.as_ref()).then(|| StackJob {
                name: s.stack.name.clone(),
                path: s.stack.path.clone(),
                release: previous.clone(),
                rules: s.required_bump,
                gated_kinds: StackJob::gated(&s.findings),
            })
        })
        .collect();
    if jobs.is_empty() {
        return Ok(());
    }
    let witness = Witness::prepare(&repo.root, &repo.config)?;
    output::status(&format!(
        "witness: {} stack{} in the {}",
        jobs.len(),
        if jobs.len() == 1 { "" } else { "s" },
        witness.account().describe()
    ));
    for stack in witness.run(&jobs)? {
        eprint!("{}", witness_render::failures(&stack));
        if stack.failed().next().is_some() {
            return Err(Error::refused(format!(
                "the witness could not finish for every customer of `{}`; nothing was built or pushed",
                stack.path
            )));
        }
        let planned = plan
            .stacks
            .iter_mut()
            .find(|s| s.stack.path == stack.path)
            .expect("every witnessed stack comes from the plan");
        if planned.bump < stack.witness {
            let (message, hint) = witness_render::refusal_parts(&stack, planned.bump);
            return Err(Error::refused(message).hint(hint));
        }
        planned.witness = Some(stack.summary(requested));
    }
    Ok(())
}
