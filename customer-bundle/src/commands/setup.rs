//! `init` and `trust add|list|remove`.

use stackpack_terminal::ExitStatus;
use std::path::Path;

use serde_json::json;
use stackpack_runner::home::{BackendConfig, Config, EngineConfig, Home, Policy};
use stackpack_runner::receipts;
use stackpack_runner::Result;

use super::{home_root, open_home, print_json, status, table};
use crate::cli::{GlobalArgs, InitArgs};

pub fn init(global: &GlobalArgs, args: &InitArgs) -> Result<ExitStatus> {
    let root = home_root(global)?;
    let config = Config {
        customer: args.customer.clone(),
        engine: EngineConfig {
            name: args.engine,
            path: args.engine_path.clone(),
        },
        work: args.work.clone(),
        backend: BackendConfig::default(),
        policy: Policy {
            allow_prereleases: args.allow_prereleases,
            max_latest_age: None,
            ..Policy::default()
        },
        sync: Default::default(),
    };
    let home = Home::init(&root, config)?;
    let key = receipts::installation_key(&home.key_path())?;
    let key_id = key.public_key().key_id();
    if args.json {
        print_json(&json!({
            "home": root.display().to_string(),
            "customer": home.config.customer,
            "installationKeyId": key_id,
        }));
    } else {
        println!("created runner home `{}`", root.display());
        println!("customer          {}", home.config.customer);
        println!("installation key  {key_id}");
        status("next: `stackpack-runner trust add vendor.pub`, then `stackpack-runner import FILE.tar`");
    }
    Ok(ExitStatus::Success)
}

pub fn trust_add(global: &GlobalArgs, file: &Path, json: bool) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let (id, new) = home.trust_add(file)?;
    if json {
        print_json(&json!({"keyId": id, "added": new}));
    } else if new {
        println!("trusted key `{id}`");
    } else {
        println!("key `{id}` was already trusted");
    }
    Ok(ExitStatus::Success)
}

pub fn trust_list(global: &GlobalArgs, json: bool) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let keys = home.trusted_keys()?;
    if json {
        print_json(&json!({
            "keys": keys.iter().map(|(id, _, path)| json!({"keyId": id, "path": path.display().to_string()})).collect::<Vec<_>>()
        }));
    } else if keys.is_empty() {
        status("no trusted keys; add one with `stackpack-runner trust add vendor.pub`");
    } else {
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|(id, _, path)| vec![id.clone(), path.display().to_string()])
            .collect();
        print!("{}", table(&["KEY ID", "FILE"], &rows));
    }
    Ok(ExitStatus::Success)
}

pub fn trust_remove(global: &GlobalArgs, id: &str, json: bool) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let removed = home.trust_remove(id)?;
    if json {
        print_json(&json!({"keyId": removed, "removed": true}));
    } else {
        println!("no longer trusting key `{removed}`");
    }
    Ok(ExitStatus::Success)
}
