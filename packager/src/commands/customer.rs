//! `stackpack customer new`: a new customer's inputs file for one stack, in one
//! reviewed step, with a network range that collides with no one.

use stackpack_packager::Result;
use stackpack_terminal::ExitStatus;
use std::path::Path;

use serde_json::Value;
use stackpack_packager::config::CustomerSettings;
use stackpack_packager::customers::{self, Known};
use stackpack_packager::impact;
use stackpack_packager::repository::Repository;
use stackpack_packager::Error;

use crate::cli::CustomerNewArgs;
use crate::output;

pub fn new(args: &CustomerNewArgs) -> Result<ExitStatus> {
    let id = args.id.as_str();
    if !customers::valid_id(id) {
        return Err(Error::usage(format!("`{id}` is not a valid customer id"))
            .hint(format!(
                "a customer id is {} (it names a folder under `customers/` and ends up in resource names)",
                customers::ID_RULE
            )));
    }
    let repo = Repository::open(&args.repo)?;
    let root = repo.root.as_path();
    let stack = repo.stack(&args.stack)?;
    refuse_existing(root, id, &stack.name)?;
    let module = stackpack_interface::extract_module(&root.join(&stack.path))
        .map_err(|e| Error::usage_by(e).hint("fix the stack first (see `stackpack check`)"))?;
    let settings = &repo.config.customers;
    let has = |input: &str| module.variable(input).is_some();
    let mut known = Known::default();
    if has(&settings.id_input) {
        known
            .values
            .insert(settings.id_input.clone(), Value::String(id.to_string()));
    }
    let mut fill = |flag: &str, input: &str, value: &Option<String>| -> Result<()> {
        let Some(value) = value else {
            return Ok(());
        };
        if !has(input) {
            return Err(missing_input(flag, input, &stack.name, root));
        }
        known
            .values
            .insert(input.to_string(), Value::String(value.clone()));
        Ok(())
    };
    fill("--region", &settings.region_input, &args.region)?;
    fill(
        "--control-plane-region",
        &settings.control_plane_region_input,
        &args.control_plane_region,
    )?;
    let cidr = match &args.cidr {
        Some(flag) => {
            if !has(&settings.cidr_input) {
                return Err(missing_input(
                    "--cidr",
                    &settings.cidr_input,
                    &stack.name,
                    root,
                ));
            }
            let range = choose_range(root, &stack.name, settings, flag, args)?;
            known.values.insert(
                settings.cidr_input.clone(),
                Value::String(range.to_string()),
            );
            Some(range)
        }
        None => None,
    };

    let text = customers::scaffold(id, &stack.name, &module, &known);
    let rel = format!("customers/{id}/{}.tfvars", stack.name);
    write_new(&root.join(&rel), &text)?;

    let placeholders: Vec<String> = module
        .variables
        .iter()
        .filter(|v| v.is_required() && v.deprecated.is_none() && !v.sensitive && !v.ephemeral)
        .filter(|v| !known.values.contains_key(&v.name))
        .map(|v| v.name.clone())
        .collect();
    print_written(args, &stack.name, &rel, cidr, &placeholders);
    Ok(ExitStatus::Success)
}

/// What was written, for a script (`--json`) or a person: the file, its network
/// range, and the inputs still to fill in.
fn print_written(
    args: &CustomerNewArgs,
    stack: &str,
    rel: &str,
    cidr: Option<ipnet::Ipv4Net>,
    placeholders: &[String],
) {
    let id = args.id.as_str();
    if args.json {
        output::print_json(&serde_json::json!({
            "customer": id,
            "stack": stack,
            "file": rel,
            "cidr": cidr.map(|c| c.to_string()),
            "placeholders": placeholders,
        }));
    } else {
        println!("{rel}");
        output::status(&format!("wrote `{rel}`"));
        if let Some(cidr) = cidr {
            output::status(&format!("network range: `{cidr}`"));
        }
        if !placeholders.is_empty() {
            let names: Vec<String> = placeholders.iter().map(|p| format!("`{p}`")).collect();
            output::status(&format!(
                "fill in {}, then run `stackpack check` (it refuses the file until they are set)",
                names.join(", ")
            ));
        }
    }
}

/// A customer's inputs file is never overwritten.
fn refuse_existing(root: &Path, id: &str, stack: &str) -> Result<()> {
    for ext in ["tfvars", "tfvars.json"] {
        let existing = format!("customers/{id}/{stack}.{ext}");
        if root.join(&existing).exists() {
            return Err(Error::refused(format!(
                "customer `{id}` already has inputs for stack `{stack}`"
            ))
            .at(&existing)
            .hint("edit that file, or choose another customer id"));
        }
    }
    Ok(())
}

fn missing_input(flag: &str, input: &str, stack: &str, root: &Path) -> Error {
    Error::usage(format!(
        "`{flag}` fills input `{input}`, which stack `{stack}` does not declare"
    ))
    .at(root.join("stackpack.toml").display())
    .hint("name the input in `[customers]` in `stackpack.toml` (see `docs/configuration.md`), or leave the flag out")
}

/// `--cidr auto`: the first free range of the pool; `--cidr RANGE`: that range, if it
/// overlaps no customer reporting to the same control-plane region.
fn choose_range(
    root: &Path,
    stack: &str,
    settings: &CustomerSettings,
    flag: &str,
    args: &CustomerNewArgs,
) -> Result<ipnet::Ipv4Net> {
    let ranges = impact::customer_ranges(root, stack, settings);
    let region = args.control_plane_region.as_deref();
    let config = root.join("stackpack.toml");
    if flag == "auto" {
        let pool = settings.cidr_pool.ok_or_else(|| {
            Error::usage("`--cidr auto` needs a pool to allocate from")
                .at(config.display())
                .hint("add `[customers]` with `cidr-pool = \"10.0.0.0/8\"` and `cidr-prefix = 16` to `stackpack.toml`")
        })?;
        return customers::allocate(pool, settings.cidr_prefix, &ranges, region).map_err(|e| {
            let error = match e {
                customers::AllocationError::Prefix { .. } => Error::usage_by(e),
                customers::AllocationError::Exhausted { .. } => Error::refused_by(e),
            };
            error
                .at(config.display())
                .hint("widen `cidr-pool` or lengthen `cidr-prefix` in `[customers]`")
        });
    }
    let range: ipnet::Ipv4Net = flag.parse().map_err(|_| {
        Error::usage(format!("`{flag}` is not an IPv4 range"))
            .hint("pass a range such as `10.40.0.0/16`, or `--cidr auto`")
    })?;
    let range = range.trunc();
    let taken = customers::conflicts(&ranges, &range, region);
    if let Some(first) = taken.first() {
        let names: Vec<String> = taken
            .iter()
            .map(|r| format!("`{}` (`{}`)", r.customer, r.range))
            .collect();
        return Err(Error::refused(format!(
            "`{range}` overlaps the range of customer {}",
            names.join(", ")
        ))
        .at(format!("{}:{}", first.file, first.line))
        .hint(match region {
            Some(r) => format!("ranges of customers reporting to `{r}` must not overlap: pass another range, or `--cidr auto`"),
            None => "without `--control-plane-region` a range must overlap no customer's: pass another range, `--cidr auto`, or the control-plane region".to_string(),
        }));
    }
    Ok(range)
}

/// Writes a file that must not exist yet, whole or not at all.
fn write_new(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::refused(format!("cannot create `{}`: {e}", dir.display())))?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Error::refused(format!("cannot write in `{}`: {e}", dir.display())))?;
    std::io::Write::write_all(&mut temp, text.as_bytes())
        .map_err(|e| Error::refused(format!("cannot write `{}`: {e}", path.display())))?;
    temp.persist_noclobber(path)
        .map_err(|e| Error::refused(format!("cannot write `{}`: {}", path.display(), e.error)))?;
    Ok(())
}
