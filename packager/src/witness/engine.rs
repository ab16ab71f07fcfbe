//! The engine runs of one witness: providers only from the build's mirror (offline),
//! unpacked once into a plugin cache every customer shares, and each customer's
//! state in its own file through a local backend.

use stackpack_bundle::engine_env::passes_to_engine;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::account::Session;

/// The override file that keeps each customer's state in its own file, whatever
/// backend the stack declares.
pub const BACKEND_OVERRIDE: &str = "stackpack_witness_override.tf";

/// Terraform or OpenTofu, configured for the witness.
#[derive(Clone, Debug)]
pub struct Engine {
    pub path: PathBuf,
    /// `TF_CLI_CONFIG_FILE`: the mirror, the shared plugin cache, nothing else.
    pub cli_config: PathBuf,
}

/// A run that failed: what it was and the last lines it printed.
#[derive(Debug)]
pub struct Failed {
    pub what: String,
    pub tail: String,
}

impl Engine {
    /// Writes the CLI configuration into `scratch`.
    pub fn new(path: PathBuf, mirror: &Path, scratch: &Path) -> std::io::Result<Engine> {
        let cache = scratch.join("plugin-cache");
        std::fs::create_dir_all(&cache)?;
        let cli_config = scratch.join("witness.tfrc");
        std::fs::write(
            &cli_config,
            stackpack_bundle::provider::mirror_cli_config(mirror, Some(&cache)),
        )?;
        Ok(Engine { path, cli_config })
    }

    /// Runs the engine with `args` in `dir`; appends what it printed to `log`;
    /// returns its stdout.
    pub fn run(
        &self,
        dir: &Path,
        args: &[String],
        session: &Session,
        log: &Path,
    ) -> Result<String, Failed> {
        let what = args.first().cloned().unwrap_or_default();
        let mut command = Command::new(&self.path);
        command
            .current_dir(dir)
            .args(args)
            .stdin(Stdio::null())
            // The allow-listed environment the runner gives the engine, then ours:
            // only our configuration decides where providers come from and where
            // runs go, and no `TF_CLI_ARGS*` or `TF_VAR_*` of the CI job changes them.
            .env_clear()
            .envs(std::env::vars_os().filter(|(name, _)| {
                name.to_str()
                    .is_some_and(|name| passes_to_engine(name, &[]))
            }))
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("CHECKPOINT_DISABLE", "1");
        for name in &session.env_remove {
            command.env_remove(name);
        }
        command.envs(session.env.iter().map(|(k, v)| (k, v)));
        // The engine never outlives `stackpack`: killed mid-witness, it would go on
        // applying into the emulator's account with nobody to destroy what it made.
        // The calling thread waits for it, so the signal only comes when we are gone.
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe, the only call between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
        }
        let output = command.output().map_err(|e| Failed {
            what: what.clone(),
            tail: format!("cannot run `{}`: {e}", self.path.display()),
        })?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let shown = if what == "show" { "" } else { stdout.as_str() };
            let _ = writeln!(
                file,
                "$ {} {}\n{shown}{stderr}",
                self.path.display(),
                args.join(" ")
            );
        }
        if output.status.success() {
            return Ok(stdout);
        }
        let text = format!("{stdout}{stderr}");
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        Err(Failed {
            what,
            tail: lines[lines.len().saturating_sub(12)..].join("\n"),
        })
    }
}

/// `-var NAME=VALUE` arguments, then the customer's inputs file.
pub fn input_args(session: &Session, inputs: &Path) -> Vec<String> {
    let mut args = vec![format!("-var-file={}", inputs.display())];
    for (name, value) in &session.vars {
        args.push("-var".into());
        args.push(format!("{name}={value}"));
    }
    args
}

/// Writes `files` (repository-relative path, bytes, executable) under `dir`, and the
/// backend override into `entrypoint`.
pub fn write_tree(
    dir: &Path,
    files: &[(String, Vec<u8>, bool)],
    entrypoint: &str,
) -> std::io::Result<PathBuf> {
    for (path, bytes, executable) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, bytes)?;
        #[cfg(unix)]
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
        }
        #[cfg(not(unix))]
        let _ = executable;
    }
    let work = dir.join(entrypoint);
    std::fs::create_dir_all(&work)?;
    std::fs::write(
        work.join(BACKEND_OVERRIDE),
        "# Written by the stackpack witness: this customer's scratch state, nowhere else.\nterraform {\n  backend \"local\" {}\n}\n",
    )?;
    Ok(work)
}

/// The plugin cache engines share: engines do not share it safely while they fill
/// it, so the first `init` of each tree (by key) runs alone; later ones in parallel.
#[derive(Debug, Default)]
pub struct PluginCache {
    warm: std::sync::Mutex<std::collections::BTreeSet<String>>,
    first_init: std::sync::Mutex<()>,
}

impl PluginCache {
    /// Runs `init` for the tree `key`: alone until one `init` of it has succeeded.
    pub fn init<T, E>(&self, key: &str, init: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let warm = |cache: &Self| {
            cache
                .warm
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(key)
        };
        if warm(self) {
            return init();
        }
        let _alone = self.first_init.lock().unwrap_or_else(|e| e.into_inner());
        let result = init();
        if result.is_ok() {
            self.warm
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.to_string());
        }
        result
    }
}
