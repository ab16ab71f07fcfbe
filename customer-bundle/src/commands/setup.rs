//! `init` and `trust add|list|remove`.

use stackpack_terminal::ExitStatus;
use std::path::Path;

use serde_json::json;
use stackpack_runner::deployment_record::{self, DeploymentRecord};
use stackpack_runner::home::{BackendConfig, Config, EngineConfig, Home, Policy, S3Backend};
use stackpack_runner::installation::Installation;
use stackpack_runner::receipts;
use stackpack_runner::state_bucket;
use stackpack_runner::{Error, Result};

use super::{home_root, open_installation, print_json, status, table};
use crate::cli::{BackendArgs, BackendKind, GlobalArgs, InitArgs};

/// `runner.toml`'s `[backend]` the flags ask for.
fn backend_config(args: &BackendArgs) -> Result<BackendConfig> {
    Ok(match (args.backend, &args.bucket) {
        (BackendKind::Local, Some(bucket)) => {
            return Err(Error::usage(format!(
                "`--bucket {bucket}` names a state bucket, but the backend is `local`"
            ))
            .hint("add `--backend s3`"))
        }
        (BackendKind::S3, Some(bucket)) => BackendConfig {
            kind: "s3".into(),
            s3: Some(S3Backend {
                bucket: bucket.clone(),
                region: args.region.clone(),
                key_prefix: args.key_prefix.clone(),
                endpoint: args.s3_endpoint.clone(),
                dynamodb_table: args.dynamodb_table.clone(),
            }),
            ..BackendConfig::default()
        },
        _ => BackendConfig::default(),
    })
}

pub fn init(global: &GlobalArgs, args: &InitArgs) -> Result<ExitStatus> {
    let root = home_root(global)?;
    let config = Config {
        customer: args.customer.clone(),
        engine: EngineConfig {
            name: args.engine,
            path: args.engine_path.clone(),
        },
        work: args.work.clone(),
        backend: backend_config(&args.backend)?,
        policy: Policy {
            allow_prereleases: args.allow_prereleases,
            max_latest_age: None,
            ..Policy::default()
        },
        sync: Default::default(),
    };
    // The bucket is checked (and made, when asked) before the home exists: a
    // refused bucket leaves nothing behind.
    let bucket = match config.backend.s3() {
        Some(s3) => Some(state_bucket::check(
            s3,
            &config.customer,
            args.backend.create_bucket,
        )?),
        None => None,
    };
    let installation = Installation::open(Home::init(&root, config)?);
    let home = &installation.home;
    // What runs, from the records beside the state: `status` and `drift` go on at once.
    let adopted = match &bucket {
        Some(check) => deployment_record::adopt(&installation, &check.stacks_with_state)?,
        None => Vec::new(),
    };
    let key = receipts::installation_key(&home.key_path())?;
    let key_id = key.public_key().key_id();
    if args.json {
        print_json(&json!({
            "home": root.display().to_string(),
            "customer": home.config.customer,
            "installationKeyId": key_id,
            "backend": home.config.backend.kind,
            "bucket": home.config.backend.s3().map(|s3| json!({
                "name": s3.bucket,
                "region": s3.region(),
                "keyPrefix": format!("{}/{}/", s3.key_prefix.trim_matches('/'), home.config.customer),
                "checked": bucket.as_ref().is_some_and(|b| b.checked),
                "configured": bucket.as_ref().map(|b| b.configured.clone()).unwrap_or_default(),
                "stacksWithState": bucket.as_ref().map(|b| b.stacks_with_state.clone()).unwrap_or_default(),
                "deploymentsFound": adopted.iter().map(|r| json!({
                    "stack": r.stack,
                    "version": r.version.to_string(),
                    "appliedAt": r.applied_at,
                    "withheldInputs": r.withheld,
                })).collect::<Vec<_>>(),
            })),
        }));
    } else {
        println!("created runner home `{}`", root.display());
        println!("customer          {}", home.config.customer);
        println!("installation key  {key_id}");
        if let (Some(s3), Some(check)) = (home.config.backend.s3(), &bucket) {
            println!(
                "state             s3://{}/{}",
                s3.bucket,
                s3.state_key(&home.config.customer, "<stack>")
            );
            for setting in &check.configured {
                status(&format!("bucket `{}`: {setting}", s3.bucket));
            }
            found_in_bucket(check, &adopted);
            if !check.checked {
                status(&format!("warning: bucket `{}` was not checked: no AWS credentials in the environment or in an AWS profile (the engine may still find some)", s3.bucket));
            }
        }
        status("next: `stackpack-runner trust add vendor.pub`, then `stackpack-runner import FILE.tar`");
    }
    Ok(ExitStatus::Success)
}

/// What a home made on a bucket that already keeps state found there.
fn found_in_bucket(check: &state_bucket::BucketCheck, adopted: &[DeploymentRecord]) {
    for record in adopted {
        let withheld = if record.withheld.is_empty() {
            String::new()
        } else {
            format!(
                "; give `{}` again as `TF_VAR_` variables (sensitive inputs never leave a home)",
                record.withheld.join("`, `")
            )
        };
        status(&format!(
            "found `{}@{}` in the bucket (applied {}): `status` and `drift` go on from it{withheld}",
            record.stack, record.version, record.applied_at
        ));
    }
    let untaken: Vec<String> = check
        .stacks_with_state
        .iter()
        .filter(|stack| !adopted.iter().any(|r| &r.stack == *stack))
        .map(|s| format!("`{s}`"))
        .collect();
    if !untaken.is_empty() {
        status(&format!(
            "the bucket keeps the state of {}, with no record of what runs: apply each with its inputs to take it over here (an unchanged stack plans no change)",
            untaken.join(", ")
        ));
    }
}

pub fn trust_add(global: &GlobalArgs, file: &Path, json: bool) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let (id, new) = home.trust_add(file)?;
    let algorithm = home
        .trusted_keys()?
        .into_iter()
        .find(|(key_id, _, _)| *key_id == id)
        .map(|(_, key, _)| key.algorithm())
        .unwrap_or_default();
    if json {
        print_json(&json!({"keyId": id, "algorithm": algorithm, "added": new}));
    } else if new {
        println!("trusted key `{id}` ({algorithm})");
    } else {
        println!("key `{id}` ({algorithm}) was already trusted");
    }
    Ok(ExitStatus::Success)
}

pub fn trust_list(global: &GlobalArgs, json: bool) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let keys = home.trusted_keys()?;
    let origin = |id: &str| home.key_origin(id).unwrap_or_else(|| "-".into());
    if json {
        print_json(&json!({
            "keys": keys.iter().map(|(id, key, path)| json!({
                "keyId": id,
                "algorithm": key.algorithm(),
                "origin": home.key_origin(id),
                "path": path.display().to_string(),
            })).collect::<Vec<_>>()
        }));
    } else if keys.is_empty() {
        status("no trusted keys; add one with `stackpack-runner trust add vendor.pub`");
    } else {
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|(id, key, _)| vec![id.clone(), key.algorithm().to_string(), origin(id)])
            .collect();
        print!("{}", table(&["KEY ID", "ALGORITHM", "ADDED FROM"], &rows));
    }
    Ok(ExitStatus::Success)
}

pub fn trust_remove(global: &GlobalArgs, id: &str, json: bool) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let removed = home.trust_remove(id)?;
    if json {
        print_json(&json!({"keyId": removed, "removed": true}));
    } else {
        println!("no longer trusting key `{removed}`");
    }
    Ok(ExitStatus::Success)
}
