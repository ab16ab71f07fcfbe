//! `stackpack-runner support-bundle -o FILE`: what a vendor's support engineer
//! needs from an airgapped account, in one `tar.gz` the customer can read before
//! sending: what runs (`status.json`), the receipts and the ledger's recent rows,
//! the last failed run's engine output, engine and provider versions, the preflight
//! results, the state's resource addresses and types (never an attribute value),
//! and `runner.toml` with secrets removed.
//!
//! Nothing secret goes in: no inputs file, no environment, no state values. And as
//! a second line, every text is scrubbed of the values this home knows are secret
//! before it is written: the sensitive inputs of every saved deployment and the
//! values of secret-looking environment variables (`TF_VAR_*`, `*TOKEN*`,
//! `*SECRET*`, `*PASSWORD*`, `AWS_SECRET_ACCESS_KEY`, …) of at least
//! [`crate::secrets_in_state::MIN_SECRET_LEN`] characters.
//!
//! Written atomically: a temporary file beside the target, mode 0600, renamed.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use stackpack_schema::receipt::Outcome;

use super::error::{io, Error, Result};
use super::home::Home;
use super::installation::Installation;
use super::ledger::Ledger;
use super::secrets_in_state::MIN_SECRET_LEN;

/// How many receipts (newest) the bundle holds.
pub const RECENT_RECEIPTS: usize = 200;
/// How many engine transcripts a home keeps (older ones are removed).
const KEPT_TRANSCRIPTS: usize = 20;
/// What replaces a secret found in a text.
const REDACTED: &str = "(redacted)";

/// What was written.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub entries: Vec<String>,
    /// How many places a known secret was replaced in.
    pub redactions: usize,
}

/// The transcript file of run `receipt_id` (every line of the engine's output),
/// in `<home>/runs/`; the oldest beyond `KEPT_TRANSCRIPTS` are removed. `None`
/// when the folder cannot be made (the run goes on without one).
pub fn transcript_for(home: &Home, receipt_id: &str) -> Option<PathBuf> {
    let dir = home.root.join("runs");
    std::fs::create_dir_all(&dir).ok()?;
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    kept.sort();
    while kept.len() >= KEPT_TRANSCRIPTS {
        let _ = std::fs::remove_file(kept.remove(0).1);
    }
    Some(dir.join(format!("{receipt_id}.log")))
}

/// Writes the support bundle of `home` to `out`.
pub fn write(installation: &Installation, out: &Path) -> Result<Written> {
    let home = &installation.home;
    let ledger = installation.ledger()?;
    let secrets = known_secrets(home, ledger);
    let mut entries: Vec<(String, String)> = vec![
        ("status.json".into(), pretty(&status(ledger)?)),
        ("receipts.json".into(), pretty(&receipts(ledger)?)),
        ("versions.json".into(), pretty(&versions(home, ledger))),
        ("preflight.json".into(), pretty(&preflight(ledger)?)),
        (
            "state-resources.json".into(),
            pretty(&state_resources(home, ledger)?),
        ),
        ("runner.toml".into(), runner_toml(home)),
    ];
    if let Some((id, text)) = last_failed_output(home, ledger)? {
        entries.push((format!("last-failed-run/{id}.log"), text));
    }
    let mut redactions = 0;
    for (_, text) in &mut entries {
        for secret in &secrets {
            let count = text.matches(secret.as_str()).count();
            if count > 0 {
                redactions += count;
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }
    let bytes = pack(out, &entries)?;
    Ok(Written {
        path: out.to_path_buf(),
        bytes,
        entries: entries.into_iter().map(|(name, _)| name).collect(),
        redactions,
    })
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// The tar.gz, through a 0600 temporary file renamed into place.
fn pack(out: &Path, entries: &[(String, String)]) -> Result<u64> {
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temp = tempfile::Builder::new()
        .prefix(".support-bundle-")
        .tempfile_in(&dir)
        .map_err(|e| io("create a file in", &dir, e))?;
    // tempfile makes it 0600 already; said here because it matters.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("set permissions of", temp.path(), e))?;
    }
    let gz = flate2::write::GzEncoder::new(temp.as_file(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let now = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
    for (name, text) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(now);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(
            &mut header,
            format!("support-bundle/{name}"),
            text.as_bytes(),
        )
        .map_err(|e| io("write", temp.path(), e))?;
    }
    let gz = tar.into_inner().map_err(|e| io("write", temp.path(), e))?;
    let mut file = gz.finish().map_err(|e| io("write", temp.path(), e))?;
    file.flush().map_err(|e| io("write", temp.path(), e))?;
    file.sync_all().map_err(|e| io("sync", temp.path(), e))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    temp.persist(out).map_err(|e| io("write", out, e.error))?;
    Ok(bytes)
}

/// What runs: each stack's current deployment and its last attempt.
fn status(ledger: &Ledger) -> Result<Value> {
    let mut stacks = Vec::new();
    for d in ledger.current_all()? {
        let last = ledger.last_attempt(&d.stack)?;
        stacks.push(json!({
            "stack": d.stack,
            "version": d.version.to_string(),
            "kind": d.kind,
            "receiptId": d.receipt_id,
            "appliedAt": d.applied_at,
            "lastAttempt": last.map(|s| json!({
                "id": s.receipt.id,
                "kind": s.receipt.kind,
                "outcome": s.receipt.outcome,
                "version": s.receipt.version.to_string(),
                "finishedAt": s.receipt.finished_at,
            })),
        }));
    }
    let interrupted: Vec<Value> = ledger
        .interrupted_runs()?
        .into_iter()
        .map(|r| json!({"id": r.id, "stack": r.stack, "version": r.version, "kind": r.kind, "startedAt": r.started_at}))
        .collect();
    Ok(json!({"stacks": stacks, "interrupted": interrupted}))
}

/// The newest receipts with their notes, and each stack's deployment history.
fn receipts(ledger: &Ledger) -> Result<Value> {
    let all = ledger.receipts(false)?;
    let recent = &all[all.len().saturating_sub(RECENT_RECEIPTS)..];
    let mut listed = Vec::new();
    for stored in recent {
        let notes: Vec<Value> = ledger
            .notes(&stored.signed.receipt.id)?
            .into_iter()
            .map(|n| json!({"kind": n.kind, "rule": n.rule, "address": n.address, "message": n.message}))
            .collect();
        listed.push(json!({
            "receipt": stored.signed,
            "reportedAt": stored.reported_at,
            "notes": notes,
        }));
    }
    let mut history = Vec::new();
    for current in ledger.current_all()? {
        for d in ledger.history(&current.stack)? {
            history.push(json!({
                "stack": d.stack, "version": d.version.to_string(), "kind": d.kind,
                "receiptId": d.receipt_id, "appliedAt": d.applied_at,
            }));
        }
    }
    Ok(json!({"receipts": listed, "deployments": history}))
}

/// The engine this home runs and, for each deployed stack, the providers its
/// bundle carries.
fn versions(home: &Home, ledger: &Ledger) -> Value {
    let engine = match super::engine::Engine::locate(home, false) {
        Ok(engine) => json!({"name": engine.name, "version": engine.version}),
        Err(error) => json!({"error": error.message}),
    };
    let mut stacks = Vec::new();
    for d in ledger.current_all().unwrap_or_default() {
        let providers = match verified(home, &d.stack, &d.version) {
            Ok(bundle) => json!(bundle
                .config
                .providers
                .iter()
                .map(|p| json!({"source": p.source, "version": p.version, "platform": p.platform}))
                .collect::<Vec<_>>()),
            Err(error) => json!({"error": error.message}),
        };
        stacks.push(
            json!({"stack": d.stack, "version": d.version.to_string(), "providers": providers}),
        );
    }
    json!({
        "runner": env!("CARGO_PKG_VERSION"),
        "engine": engine,
        "stacks": stacks,
    })
}

fn verified(
    home: &Home,
    stack: &str,
    version: &semver::Version,
) -> Result<stackpack_bundle::verify::VerifiedBundle> {
    super::store::verify_in(home, &home.store()?, stack, version)
}

/// The preflight results of each stack's newest receipt that has any.
fn preflight(ledger: &Ledger) -> Result<Value> {
    let mut by_stack = serde_json::Map::new();
    for stored in ledger.receipts(false)?.into_iter().rev() {
        let r = &stored.signed.receipt;
        if r.preflight.is_empty() || by_stack.contains_key(&r.stack) {
            continue;
        }
        by_stack.insert(
            r.stack.clone(),
            json!({"receiptId": r.id, "checks": r.preflight}),
        );
    }
    Ok(Value::Object(by_stack))
}

/// Each deployed stack's resources as addresses and types, read from its state
/// (the home's file, or the bucket's object); never an attribute.
fn state_resources(home: &Home, ledger: &Ledger) -> Result<Value> {
    let mut out = serde_json::Map::new();
    for d in ledger.current_all()? {
        let listed = match read_state(home, &d.stack) {
            Ok(Some(state)) => {
                // An address can hold a sensitive value (a `for_each` key).
                let secrets = secrets_of(home, &d);
                let mut listed = addresses(&state);
                for entry in &mut listed {
                    if let Some(address) = entry["address"].as_str() {
                        entry["address"] = secrets.redact(address).into();
                    }
                }
                json!(listed)
            }
            Ok(None) => json!([]),
            Err(error) => json!({"error": error.message}),
        };
        out.insert(d.stack, listed);
    }
    Ok(Value::Object(out))
}

/// The sensitive values `deployment` ran with: its saved inputs, read with the
/// interface of the bundle it runs (from the store). Nothing when either is gone.
fn secrets_of(home: &Home, deployment: &super::ledger::Deployment) -> crate::redact::Secrets {
    use stackpack_bundle::layout::{MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};
    let config = || -> Option<stackpack_schema::bundle::BundleConfig> {
        let store = home.store().ok()?;
        let digest = deployment.digest.parse().ok()?;
        let manifest: stackpack_schema::oci::ImageManifest =
            serde_json::from_slice(&store.read_blob(&digest, MAX_MANIFEST_SIZE).ok()?).ok()?;
        serde_json::from_slice(
            &store
                .read_blob(&manifest.config.digest, MAX_CONFIG_SIZE)
                .ok()?,
        )
        .ok()
    };
    let inputs = std::fs::read_to_string(&deployment.inputs_file).unwrap_or_default();
    match config() {
        Some(config) => crate::redact::Secrets::of_inputs(&config.interface, &inputs),
        None => crate::redact::Secrets::default(),
    }
}

fn read_state(home: &Home, stack: &str) -> Result<Option<Value>> {
    let text = match home.config.backend.s3() {
        Some(s3) => {
            let Some(client) = super::state_bucket::client(s3)? else {
                return Err(Error::refused(
                    "no AWS credentials to read the state bucket",
                ));
            };
            let key = s3.state_key(&home.config.customer, stack);
            client
                .get_object(&s3.bucket, &key)
                .map_err(|e| super::state_bucket::bucket_error(s3, e))?
        }
        None => {
            let path = home.state_dir(stack).join("terraform.tfstate");
            match std::fs::read_to_string(&path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io("read", &path, e)),
            }
        }
    };
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// `[{address, type, mode}]` of a state file's resources (format 4).
pub fn addresses(state: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for resource in state["resources"].as_array().into_iter().flatten() {
        let kind = resource["type"].as_str().unwrap_or("?");
        let name = resource["name"].as_str().unwrap_or("?");
        let mode = resource["mode"].as_str().unwrap_or("managed");
        let mut base = String::new();
        if let Some(module) = resource["module"].as_str() {
            base.push_str(module);
            base.push('.');
        }
        if mode == "data" {
            base.push_str("data.");
        }
        base.push_str(&format!("{kind}.{name}"));
        for instance in resource["instances"].as_array().into_iter().flatten() {
            let address = match &instance["index_key"] {
                Value::Number(n) => format!("{base}[{n}]"),
                Value::String(s) => format!("{base}[{s:?}]"),
                _ => base.clone(),
            };
            out.push(json!({"address": address, "type": kind, "mode": mode}));
        }
    }
    out
}

/// `runner.toml` with every secret-looking setting removed and passwords taken
/// out of URLs.
fn runner_toml(home: &Home) -> String {
    let path = home.root.join(super::home::CONFIG_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return String::new();
    };
    let Ok(mut value) = text.parse::<toml::Table>() else {
        return "# runner.toml could not be read as TOML; left out\n".into();
    };
    scrub_table(&mut value);
    toml::to_string_pretty(&value).unwrap_or_default()
}

fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "private",
    ]
    .iter()
    .any(|word| name.contains(word))
}

fn scrub_table(table: &mut toml::Table) {
    for (key, value) in table.iter_mut() {
        if secret_name(key) {
            *value = toml::Value::String(REDACTED.into());
            continue;
        }
        match value {
            toml::Value::Table(inner) => scrub_table(inner),
            toml::Value::String(text) => *text = without_userinfo(text),
            _ => {}
        }
    }
}

/// `https://user:pass@host/…` → `https://(redacted)@host/…`.
fn without_userinfo(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((userinfo, host)) if !userinfo.contains('/') => {
                format!("{scheme}://{REDACTED}@{host}")
            }
            _ => text.to_string(),
        },
        None => text.to_string(),
    }
}

/// The engine output of the newest failed run that left one.
fn last_failed_output(home: &Home, ledger: &Ledger) -> Result<Option<(String, String)>> {
    for stored in ledger.receipts(false)?.into_iter().rev() {
        let r = &stored.signed.receipt;
        if r.outcome != Outcome::Failed {
            continue;
        }
        let path = home.root.join("runs").join(format!("{}.log", r.id));
        if let Ok(text) = std::fs::read_to_string(&path) {
            return Ok(Some((r.id.clone(), text)));
        }
    }
    Ok(None)
}

/// Values this home knows are secret: the sensitive inputs of every saved
/// deployment, and secret-looking environment variables; longest first, so a
/// value inside another is replaced after it.
fn known_secrets(home: &Home, ledger: &Ledger) -> Vec<String> {
    let mut secrets: Vec<String> = std::env::vars()
        .filter(|(name, _)| {
            name.starts_with("TF_VAR_") || secret_name(name) || name.ends_with("_KEY")
        })
        .map(|(_, value)| value)
        .collect();
    let stacks = ledger.current_all().unwrap_or_default();
    for current in stacks {
        for d in ledger.history(&current.stack).unwrap_or_default() {
            let Ok(inputs) = super::inputs::read(Path::new(&d.inputs_file)) else {
                continue;
            };
            match verified(home, &d.stack, &d.version) {
                Ok(bundle) => secrets.extend(
                    super::secrets_in_state::sensitive_values(&inputs, &bundle.config.interface)
                        .into_iter()
                        .map(|(_, value)| value),
                ),
                // Without the interface, every value of the inputs is treated as one.
                Err(_) => secrets.extend(
                    inputs
                        .values
                        .iter()
                        .filter_map(|v| v.value.as_str().map(str::to_string)),
                ),
            }
        }
    }
    secrets.retain(|s| s.chars().count() >= MIN_SECRET_LEN);
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_resources_are_listed_by_address_and_type_without_values() {
        let state = json!({"version": 4, "resources": [
            {"module": "module.db", "mode": "managed", "type": "aws_db_instance", "name": "this",
             "instances": [{"attributes": {"password": "hunter2-long"}}]},
            {"mode": "data", "type": "aws_region", "name": "current", "instances": [{"attributes": {}}]},
            {"mode": "managed", "type": "aws_subnet", "name": "private",
             "instances": [{"index_key": 0, "attributes": {}}, {"index_key": "b", "attributes": {}}]}
        ]});
        let listed = serde_json::to_string(&addresses(&state)).unwrap();
        assert!(!listed.contains("hunter2"));
        let names: Vec<String> = addresses(&state)
            .iter()
            .map(|a| a["address"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "module.db.aws_db_instance.this",
                "data.aws_region.current",
                "aws_subnet.private[0]",
                "aws_subnet.private[\"b\"]"
            ]
        );
        assert_eq!(
            without_userinfo("https://ops:pa55@s3.example"),
            "https://(redacted)@s3.example"
        );
    }
}
