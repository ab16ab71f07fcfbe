//! Running Terraform or OpenTofu.
//!
//! The engine runs in a throwaway work folder holding the unpacked, verified bundle;
//! its state lives elsewhere (see [`super::home::BackendConfig`]), configured through
//! a `stackpack_backend_override.tf` file and `-backend-config`, which works the same
//! from Terraform 0.15 to OpenTofu. Output is streamed to stderr line by line. Some
//! vendor builds prefix stdout lines with `o:` and write debug logs to stderr; the
//! prefix is stripped and bare `[TRACE]`/`[DEBUG]`/`[INFO]` log lines are shown only
//! with `--verbose`.
//!
//! With `--engine-log FILE` (`STACKPACK_ENGINE_LOG`), the engine's output goes to
//! that file instead (appended, 0600), so a person reads the runner's summaries; an
//! engine error block is still shown, since it is what the person must act on.

pub use stackpack_bundle::engine_env::passes_to_engine;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stackpack_schema::bundle::EngineName;
use stackpack_schema::plan::{self, Action, PlannedChange, ResourceChange};
use stackpack_schema::receipt::PlanSummary;

use super::error::{Error, Result};
use super::files;
use super::home::Home;
use super::redact::Secrets;

/// The plan file's name inside the work folder.
pub const PLAN_FILE: &str = "stackpack.tfplan";

#[derive(Clone, Debug)]
pub struct Engine {
    pub name: EngineName,
    pub path: PathBuf,
    /// The CLI configuration every run uses (`TF_CLI_CONFIG_FILE`): provider
    /// installation only from the bundle's own packages.
    pub cli_config: Option<PathBuf>,
    /// Descriptors the engine inherits: the stack lock, so that it stays held for as
    /// long as the engine runs, even if the runner is killed.
    pub inherit_fds: Vec<std::os::fd::RawFd>,
    pub version: String,
    pub verbose: bool,
    /// The stack's inputs: `TF_VAR_<name>` of these reaches the engine (the runner
    /// checked it with the other inputs); no other `TF_VAR_` does.
    pub input_variables: Vec<String>,
    /// Where the engine's output goes instead of stderr (`--engine-log`).
    pub log: Option<PathBuf>,
    /// The stack it works on, for messages.
    pub stack: Option<String>,
    /// The sensitive values this run passes: replaced in every line relayed,
    /// logged or kept for a receipt, whatever the engine prints.
    pub secrets: Secrets,
    /// The error stream from the first `Error` on (at most `ERROR_LINES` lines)
    /// of the last run that printed one: what a failed receipt says the engine said.
    pub errors: std::sync::Arc<std::sync::Mutex<String>>,
    /// A file every line of the engine's output is also appended to (a run's
    /// transcript, kept for the support bundle when the run fails).
    pub transcript: Option<PathBuf>,
    /// The binary's digest when it is the engine a release carries (checked
    /// before this run): what receipts record.
    pub digest: Option<stackpack_schema::digest::Digest>,
}

/// Lines of an engine's error kept for the receipt; its summary and resource come
/// first, the rest is source context.
const ERROR_LINES: usize = 40;

/// The variable `--engine-log` sets; the engine itself never sees it (its
/// environment is allow-listed).
pub const ENGINE_LOG_VARIABLE: &str = "STACKPACK_ENGINE_LOG";

/// Where the engine's output goes: a file (shared by parallel runs: every line is
/// one append), or the runner's stderr.
#[derive(Clone)]
struct Relay {
    log: Option<std::sync::Arc<std::sync::Mutex<std::fs::File>>>,
    transcript: Option<std::sync::Arc<std::sync::Mutex<std::fs::File>>>,
    /// After the engine's first `Error`: shown on stderr too, even with a log.
    in_error: bool,
    secrets: Secrets,
}

impl Relay {
    fn open(path: Option<&Path>, secrets: &Secrets, transcript: Option<&Path>) -> Result<Relay> {
        use std::os::unix::fs::OpenOptionsExt;
        // A transcript that cannot be opened costs the support bundle its engine
        // output, never the run.
        let transcript = transcript
            .and_then(|path| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(path)
                    .ok()
            })
            .map(|file| std::sync::Arc::new(std::sync::Mutex::new(file)));
        let log = match path {
            None => None,
            Some(path) => {
                use std::os::unix::fs::OpenOptionsExt;
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| {
                        Error::usage(format!(
                            "cannot open the engine log `{}`: {e}",
                            path.display()
                        ))
                        .hint(format!("give `--engine-log` (or `{ENGINE_LOG_VARIABLE}`) a file in a folder you can write to"))
                    })?;
                Some(std::sync::Arc::new(std::sync::Mutex::new(file)))
            }
        };
        Ok(Relay {
            log,
            transcript,
            in_error: false,
            secrets: secrets.clone(),
        })
    }

    /// Relays one line (without its newline), each secret replaced.
    fn line(&mut self, line: &str) {
        let line = &self.secrets.redact(line);
        if let Some(Ok(mut file)) = self.transcript.as_ref().map(|t| t.lock()) {
            use std::io::Write;
            let _ = writeln!(file, "{line}");
        }
        let Some(log) = &self.log else {
            eprintln!("{line}");
            return;
        };
        use std::io::Write;
        if let Ok(mut file) = log.lock() {
            let _ = writeln!(file, "{line}");
        }
        // From the first `Error` on (boxed or not), the rest of the run is shown
        // too: the diagnostic, its source lines and the vendor's message (which
        // Terraform prints unindented), whatever the engine's version lays out.
        let trimmed = line.trim_start_matches(['\u{2502}', '\u{256d}', '\u{2577}', ' ']);
        if trimmed.starts_with("Error") {
            self.in_error = true;
        }
        if self.in_error {
            eprintln!("{line}");
        }
    }
}

/// The lines of an engine's error stream from its first `Error` on.
#[derive(Default)]
struct ErrorLines {
    text: String,
    lines: usize,
}

impl ErrorLines {
    fn line(&mut self, line: &str) {
        let trimmed = line.trim_start_matches(['\u{2502}', '\u{256d}', '\u{2577}', ' ']);
        let starts = trimmed.contains("Error") && !is_debug_log(line);
        if (self.lines > 0 || starts) && self.lines < ERROR_LINES {
            self.text.push_str(line);
            self.text.push('\n');
            self.lines += 1;
        }
    }

    /// Keeps the error for the receipt, when this run printed one.
    fn keep(self, into: &std::sync::Mutex<String>) {
        if self.lines > 0 {
            if let Ok(mut kept) = into.lock() {
                *kept = self.text;
            }
        }
    }
}

/// What one engine run printed and how it ended.
pub struct RunOutput {
    pub code: Option<i32>,
    pub stdout: String,
    /// The lock's id, when the engine could not take the state lock because another
    /// run holds it (from the `Lock Info:` the engine prints).
    pub lock_id: Option<String>,
    /// True when the engine ran but could not release the state lock afterwards
    /// ("Error releasing the state lock"): someone broke or replaced it meanwhile.
    pub lock_release_failed: bool,
}

/// Finds the lock's id in the engine's "Error acquiring the state lock" message.
#[derive(Default)]
struct LockErrorReader {
    in_lock_info: bool,
    id: Option<String>,
    /// The engine said it could not release the lock (the run itself went on).
    releasing: bool,
}

impl LockErrorReader {
    fn line(&mut self, line: &str) {
        let line = line.trim_start_matches(['\u{2502}', ' ']).trim_end();
        if line.contains("Error releasing the state lock") {
            self.releasing = true;
        }
        if line == "Lock Info:" {
            self.in_lock_info = true;
        } else if let Some(id) = line.strip_prefix("ID:").filter(|_| self.in_lock_info) {
            self.id = Some(id.trim().to_string());
            self.in_lock_info = false;
        }
    }
}

/// A plan's counts, and the outputs it changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanDetails {
    pub summary: PlanSummary,
    pub output_changes: u64,
    /// Every managed resource the plan changes, with what it does to it, sorted by
    /// address (the schema's reading, the one receipts and forecasts share).
    pub changes: Vec<ResourceChange>,
    /// `show -json` as the engine printed it: what policies read.
    pub json: String,
    /// What in the configuration runs commands on this machine when applied or
    /// planned: see [`runs_commands`].
    pub runs_commands: Vec<String>,
    /// The resources the refresh found changed outside the engine, with the
    /// attribute names that differ (never values), their addresses scrubbed of
    /// sensitive values.
    pub drift: Vec<stackpack_schema::plan::DriftedResource>,
}

impl PlanDetails {
    pub fn is_empty(&self) -> bool {
        self.summary.add + self.summary.change + self.summary.destroy + self.output_changes == 0
    }

    /// Each resource change as a receipt records it: address and action.
    pub fn planned(&self) -> Vec<PlannedChange> {
        self.changes.iter().map(PlannedChange::from).collect()
    }

    /// How many resources the plan does `action` to.
    pub fn count(&self, action: Action) -> usize {
        self.changes.iter().filter(|c| c.action == action).count()
    }

    /// "1 to add, 0 to change, 1 to replace, 0 to destroy": replacements counted
    /// apart (the engine counts each as an add and a destroy), the words every
    /// confirmation and listing of a plan uses.
    pub fn counts(&self) -> String {
        format!(
            "{} to add, {} to change, {} to replace, {} to destroy",
            self.count(Action::Create),
            self.count(Action::Update),
            self.count(Action::Replace),
            self.count(Action::Destroy)
        )
    }

    /// Each replacement, then each destruction, by address: what an operator must
    /// see before saying yes.
    pub fn destructive(&self) -> Vec<(Action, &str)> {
        let mut found: Vec<(Action, &str)> = self
            .changes
            .iter()
            .filter(|c| c.action.is_destructive())
            .map(|c| (c.action, c.address.as_str()))
            .collect();
        found.sort_by_key(|(action, _)| *action != Action::Replace);
        found
    }
}

impl Engine {
    /// Finds the engine `runner.toml` names and asks it its version.
    pub fn locate(home: &Home, verbose: bool) -> Result<Engine> {
        Engine::locate_for(home, None, verbose)
    }

    /// The engine for a run of a release carrying `carried`: when `runner.toml`
    /// names no engine path, the release's own (installed into the home, its
    /// digest checked before this run); else as [`Engine::locate`] finds it.
    pub fn locate_for(
        home: &Home,
        carried: Option<&stackpack_schema::release::ReleaseEngine>,
        verbose: bool,
    ) -> Result<Engine> {
        if let Some(found) = crate::carried_engine::for_run(home, carried)? {
            let mut engine = Engine::at(home, found.name, found.path, verbose)?;
            engine.digest = Some(found.digest);
            return Ok(engine);
        }
        let name = home.config.engine.name;
        let path = match &home.config.engine.path {
            Some(path) => path.clone(),
            None => files::find_on_path(name.as_str()).ok_or_else(|| {
                Error::refused(format!("engine `{name}` is not on `PATH`"))
                    .at(format!("`{}`", home.root.join("runner.toml").display()))
                    .hint("install it, or set `path` under `[engine]` in `runner.toml`")
            })?,
        };
        Engine::at(home, name, path, verbose)
    }

    /// The engine `name` at `path`, asked its version.
    fn at(home: &Home, name: EngineName, path: PathBuf, verbose: bool) -> Result<Engine> {
        let config_file = home.root.join("runner.toml");
        let missing = move |name: EngineName, path: &Path| {
            Error::refused(format!(
                "engine `{name}` was not found at `{}`",
                path.display()
            ))
            .at(format!("`{}`", config_file.display()))
            .hint("install it, or fix `path` under `[engine]` in `runner.toml`")
        };
        if !path.is_file() {
            return Err(missing(name, &path));
        }
        // The engine runs in the work folder: a relative path would resolve there.
        let path = std::path::absolute(&path).unwrap_or(path);
        let mut engine = Engine {
            name,
            path,
            cli_config: None,
            inherit_fds: Vec::new(),
            version: String::new(),
            verbose,
            input_variables: Vec::new(),
            stack: None,
            secrets: Secrets::default(),
            transcript: None,
            log: std::env::var_os(ENGINE_LOG_VARIABLE)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            errors: Default::default(),
            digest: None,
        };
        if let Some(version) = crate::engine_versions::cached(&home.root, &engine.path) {
            engine.version = version;
            return Ok(engine);
        }
        engine.version = engine.ask_version().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                missing(engine.name, &engine.path)
            }
            _ => Error::refused(format!(
                "engine `{}` at `{}` did not say its version: {e}",
                engine.name,
                engine.path.display()
            )),
        })?;
        crate::engine_versions::remember(&home.root, &engine.path, &engine.version);
        Ok(engine)
    }

    /// The engine's command, with an environment of the runner's variables that
    /// [`passes_to_engine`] allows and the runner's own settings: nothing else
    /// reaches the engine (`TF_CLI_ARGS_plan=-destroy` would make an apply destroy).
    fn command(&self, dir: &Path) -> Command {
        let mut command = Command::new(&self.path);
        command.current_dir(dir).env_clear();
        for (name, value) in std::env::vars_os() {
            if name
                .to_str()
                .is_some_and(|name| passes_to_engine(name, &self.input_variables))
            {
                command.env(name, value);
            }
        }
        command
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .stdin(Stdio::null());
        if let Some(config) = &self.cli_config {
            // Ours alone: a plugin cache or a user's configuration could let `init`
            // install something the bundle did not carry.
            command.env("TF_CLI_CONFIG_FILE", config);
        }
        command
    }

    /// `version -json`, falling back to parsing `version` (`Terraform v1.2.3`).
    fn ask_version(&self) -> std::io::Result<String> {
        let output = self
            .command(Path::new("."))
            .args(["version", "-json"])
            .stderr(Stdio::null())
            .output()?;
        let stdout = strip_prefixes(&String::from_utf8_lossy(&output.stdout));
        if output.status.success() {
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&stdout) {
                if let Some(version) = value["terraform_version"].as_str() {
                    return Ok(version.to_string());
                }
            }
        }
        let output = self
            .command(Path::new("."))
            .arg("version")
            .stderr(Stdio::null())
            .output()?;
        let stdout = strip_prefixes(&String::from_utf8_lossy(&output.stdout));
        parse_version_text(&stdout).ok_or_else(|| {
            std::io::Error::other(format!(
                "`version` printed `{}`",
                stdout.lines().next().unwrap_or("").trim()
            ))
        })
    }

    /// Refuses an engine whose version the stack's `required_version` excludes, before
    /// `init` says so less clearly.
    pub fn check_required_version(&self, constraint: Option<&str>) -> Result<()> {
        let Some(text) = constraint else {
            return Ok(());
        };
        let Some(parsed) = stackpack_interface::constraint::Constraint::parse(text) else {
            return Ok(());
        };
        if parsed.allows_version(&self.version) == Some(false) {
            return Err(Error::refused(format!(
                "engine `{}` {} does not satisfy the stack's `required_version = \"{text}\"`",
                self.name, self.version
            ))
            .at(format!("engine `{}`", self.path.display()))
            .hint(
                "install a version it allows, and set `path` under `[engine]` in `runner.toml`",
            ));
        }
        Ok(())
    }

    /// Runs the engine with `args` in `dir`, streaming its output to stderr.
    ///
    /// The engine never outlives the runner: it gets SIGTERM when the runner dies
    /// (the parent-death signal), and what is left of its process group is killed
    /// after it (see `GroupWatchdog`); it runs in a process group of its own so
    /// that a terminal's Ctrl-C reaches only the runner, which asks it once to stop,
    /// and inherits the stack lock. A SIGINT or SIGTERM to the runner during the run
    /// is passed on as one SIGINT to the engine's group, the engine is waited for,
    /// and the run fails as interrupted.
    pub fn run(&self, dir: &Path, args: &[String], quiet: bool) -> Result<RunOutput> {
        let relay = Relay::open(
            self.log.as_deref(),
            &self.secrets,
            self.transcript.as_deref(),
        )?;
        let _signals = super::interrupt::Guard::install();
        let mut command = self.command(dir);
        command
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.tie_to_runner(&mut command);
        let mut child = command.spawn().map_err(|e| {
            Error::refused(format!(
                "cannot run engine `{}` at `{}`: {e}",
                self.name,
                self.path.display()
            ))
        })?;
        // Dropped (and so stopped) when this function returns, the engine waited for.
        let _watchdog = GroupWatchdog::start(child.id());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = forward_interrupts(child.id(), stop.clone());
        let stderr = child.stderr.take().expect("piped");
        let verbose = self.verbose;
        let mut stderr_relay = relay.clone();
        let kept_errors = self.errors.clone();
        let secrets = self.secrets.clone();
        if let Ok(mut kept) = kept_errors.lock() {
            kept.clear();
        }
        let errors = std::thread::spawn(move || {
            // A debug log entry may run over many lines (graph dumps); it lasts until
            // the next line that starts a diagnostic.
            let mut in_log = false;
            let mut lock = LockErrorReader::default();
            let mut error = ErrorLines::default();
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                lock.line(&line);
                // Redacted before it is kept: the error goes into a signed receipt.
                error.line(&secrets.redact(&line));
                if is_debug_log(&line) {
                    in_log = true;
                } else if is_diagnostic(&line) {
                    in_log = false;
                }
                if verbose || !in_log {
                    stderr_relay.line(&line);
                }
            }
            error.keep(&kept_errors);
            lock
        });
        let mut stdout = String::new();
        let mut stdout_relay = relay;
        let mut reader = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut reader)
                .take(1 << 20)
                .read_until(b'\n', &mut line)
                .unwrap_or(0);
            if read == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.strip_prefix("o:").unwrap_or(&text);
            if !quiet {
                stdout_relay.line(text.strip_suffix('\n').unwrap_or(text));
            }
            stdout.push_str(text);
        }
        let status = child
            .wait()
            .map_err(|e| Error::refused(format!("engine `{}` failed: {e}", self.name)))?;
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let lock = errors.join().unwrap_or_default();
        let _ = watcher.join();
        if let Some(signal) = super::interrupt::received() {
            return Err(Error::refused(format!(
                "interrupted by {}: `{} {}` was asked to stop and has stopped; the state holds what it finished",
                super::interrupt::name(signal),
                self.name,
                args.first().map(String::as_str).unwrap_or_default()
            ))
            .hint("run `stackpack-runner plan` to see where the stack stands"));
        }
        Ok(RunOutput {
            code: status.code(),
            stdout,
            lock_id: lock.id.filter(|_| !lock.releasing),
            lock_release_failed: lock.releasing,
        })
    }

    /// The parent-death signal, a process group of its own, and the inherited lock.
    ///
    /// The parent-death signal is SIGTERM, not SIGKILL: the engine stops as on
    /// Ctrl-C, finishing the resource in flight and writing state, so that what it
    /// created is not lost. What it leaves behind (a provisioner's children, which
    /// no parent-death signal reaches) the [`GroupWatchdog`] kills.
    fn tie_to_runner(&self, command: &mut Command) {
        use std::os::unix::process::CommandExt;
        let inherit = self.inherit_fds.clone();
        let runner = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                // A runner that died before the line above sends no signal: the
                // engine is now a child of another process, and does not start.
                if libc::getppid() != runner {
                    return Err(std::io::Error::other("the runner has exited"));
                }
                for fd in &inherit {
                    libc::fcntl(*fd, libc::F_SETFD, 0);
                }
                Ok(())
            });
        }
    }

    /// Runs and requires exit code 0.
    pub fn run_ok(
        &self,
        dir: &Path,
        args: &[String],
        quiet: bool,
        step: &str,
    ) -> Result<RunOutput> {
        let output = self.run(dir, args, quiet)?;
        if let Some(id) = output.lock_id.as_deref().filter(|_| output.code != Some(0)) {
            let stack = self.stack.as_deref().unwrap_or("STACK");
            return Err(Error::refused(format!(
                "the state of stack `{stack}` is locked by another run (lock `{id}`), so `{} {step}` did not start",
                self.name
            ))
            .at(format!("work folder `{}`", dir.display()))
            .hint(format!("wait for that run and try again (the engine's lock information is above); if no run holds it any more, see `stackpack-runner unlock {stack} --lock-id {id}`")));
        }
        // Not when the state itself could not be saved: then what the run made is
        // only in `errored.tfstate`, which the failure's hint names first.
        if output.lock_release_failed && !dir.join("errored.tfstate").exists() {
            let stack = self.stack.as_deref().unwrap_or("STACK");
            return Err(Error::refused(format!(
                "`{} {step}` ran, but the engine could not release the state lock of stack `{stack}` afterwards: the lock it held was broken or replaced meanwhile (an `unlock` from another runner home, say), so another run may have written the same state",
                self.name
            ))
            .at(format!("work folder `{}`", dir.display()))
            .hint(format!("what `{step}` did is in the state (its messages are above); before the next run, check that no other run is working on `{stack}`, and `stackpack-runner plan` it")));
        }
        if output.code != Some(0) {
            return Err(Error::refused(format!(
                "`{} {step}` failed ({})",
                self.name,
                match output.code {
                    Some(code) => format!("exit code {code}"),
                    None => "killed by a signal".to_string(),
                }
            ))
            .at(format!("work folder `{}`", dir.display()))
            .hint(self.failure_hint(dir)));
        }
        Ok(output)
    }

    /// What to do after a failed run: the engine's messages, unless it could not
    /// save the state to the backend (an S3 endpoint lost mid-apply). Then what it
    /// made is only in the work folder's `errored.tfstate`, and the lock it took
    /// may be left in the bucket: both are named, in the order to undo them.
    fn failure_hint(&self, dir: &Path) -> String {
        if !dir.join("errored.tfstate").exists() {
            return "the engine's messages are above".into();
        }
        let stack = self.stack.as_deref().unwrap_or("STACK");
        format!(
            "the engine could not save the state: what it did is in `{}` only. Once the state's bucket answers again, run `{} state push -lock=false errored.tfstate` in that folder (the lock this run left still keeps other runs out), then `stackpack-runner unlock {stack}` shows that lock and its id to break it with `--lock-id`. Do not apply `{stack}` before: it would fork the state",
            dir.join("errored.tfstate").display(),
            self.path.display()
        )
    }

    /// `show -json PLANFILE`, summarised.
    pub fn show_plan(&self, dir: &Path) -> Result<PlanDetails> {
        let output = self.run_ok(
            dir,
            &[
                "show".into(),
                "-no-color".into(),
                "-json".into(),
                PLAN_FILE.into(),
            ],
            true,
            "show",
        )?;
        let mut details = parse_plan_json(&output.stdout).map_err(|e| {
            Error::refused(format!(
                "cannot read the plan `{} show -json` printed: {e}",
                self.name
            ))
        })?;
        // A resource address can hold a sensitive value (`for_each` over
        // `nonsensitive(var.db_password)`): what the runner records of the plan
        // (receipts, forecasts, its summary) never shows one.
        for change in &mut details.changes {
            change.address = self.secrets.redact(&change.address);
        }
        for command in &mut details.runs_commands {
            *command = self.secrets.redact(command);
        }
        for drifted in &mut details.drift {
            drifted.address = self.secrets.redact(&drifted.address);
        }
        details.json = output.stdout;
        Ok(details)
    }

    /// This engine's version as semver; a version it does not say in semver's form
    /// reads as the newest, so no feature is withheld on a misreading.
    fn semver(&self) -> semver::Version {
        semver::Version::parse(&self.version).unwrap_or_else(|_| semver::Version::new(99, 0, 0))
    }

    /// The state as the last apply left it, from `state pull` (which, unlike
    /// `show -json`, starts no provider); before the first apply, an empty one.
    pub fn applied_state(&self, dir: &Path) -> Result<crate::applied_state::AppliedState> {
        let output = self.run_ok(dir, &["state".into(), "pull".into()], true, "state pull")?;
        crate::applied_state::AppliedState::parse(&output.stdout)
            .map_err(|e| Error::refused(format!("cannot read `{} state pull`: {e}", self.name)))
    }

    /// `output -json`.
    pub fn outputs(&self, dir: &Path) -> Result<serde_json::Value> {
        self.run_json(dir, &["output", "-no-color", "-json"], "output")
    }

    /// Runs a command that prints one JSON document, and reads it.
    fn run_json(&self, dir: &Path, args: &[&str], step: &str) -> Result<serde_json::Value> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let output = self.run_ok(dir, &args, true, step)?;
        serde_json::from_str(output.stdout.trim()).map_err(|e| {
            Error::refused(format!(
                "cannot read `{} {}`: {e}",
                self.name,
                args.join(" ")
            ))
        })
    }
}

/// How long the engine has to stop once the runner has died, before what is left
/// of its process group is killed.
const ENGINE_GRACE_SECONDS: u32 = 30;

/// Kills the engine's whole process group once the runner is gone, however it went
/// (SIGKILL included, where the runner runs no code).
///
/// A small `sh` outside the group reads a pipe whose only writer is the runner: the
/// kernel closes it when the runner dies, `read` returns, and the watchdog waits for
/// the engine (which got its parent-death signal) to stop, at most
/// [`ENGINE_GRACE_SECONDS`], then sends SIGKILL to the group: provisioner commands
/// and their children, which the parent-death signal never reaches, go with it.
/// When the run ends normally the runner kills the watchdog instead.
struct GroupWatchdog {
    child: Option<std::process::Child>,
}

impl GroupWatchdog {
    const SCRIPT: &'static str = r#"trap '' INT TERM HUP
read _
i=0
while kill -0 "$1" 2>/dev/null && [ "$i" -lt "$2" ]; do sleep 0.1; i=$((i+1)); done
kill -s KILL -- "-$1" 2>/dev/null"#;

    fn start(engine: u32) -> GroupWatchdog {
        use std::os::unix::process::CommandExt;
        let child = Command::new("/bin/sh")
            .args(["-c", Self::SCRIPT, "stackpack-engine-watchdog"])
            .arg(engine.to_string())
            .arg((ENGINE_GRACE_SECONDS * 10).to_string())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: a terminal's Ctrl-C, sent to the runner's group, does
            // not reach it.
            .process_group(0)
            .spawn();
        // Without `sh` the engine still gets its parent-death signal; only its
        // children would be left.
        GroupWatchdog { child: child.ok() }
    }
}

impl Drop for GroupWatchdog {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Passes one SIGINT on to the engine's process group when the runner was
/// interrupted, as a terminal's Ctrl-C would (a provisioner's commands stop too;
/// providers ignore it), and keeps waiting: a second one would make the engine
/// abandon what it has in flight.
fn forward_interrupts(
    pid: u32,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut forwarded = false;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if !forwarded && super::interrupt::received().is_some() {
                if let Ok(pid) = i32::try_from(pid) {
                    // SAFETY: a signal to our own child's process group (it leads
                    // it: `setpgid(0, 0)` before exec).
                    unsafe {
                        libc::kill(-pid, libc::SIGINT);
                    }
                }
                forwarded = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    })
}

/// A log line: `[LEVEL] …`, or `<timestamp> [LEVEL] …` as Terraform writes with `TF_LOG`.
fn is_debug_log(line: &str) -> bool {
    let levels = ["[TRACE]", "[DEBUG]", "[INFO]", "[WARN]", "[ERROR]", "[ERR]"];
    let rest = match line.split_once(' ') {
        Some((first, rest)) if first.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => line,
    };
    levels.iter().any(|level| rest.starts_with(level))
}

/// The first line of an engine diagnostic (`Error: …`, `Warning: …`, or the box
/// Terraform ≥ 1.0 draws around them).
fn is_diagnostic(line: &str) -> bool {
    [
        "Error", "Warning", "\u{256d}", "\u{2577}", "\u{2502}", "\u{2575}",
    ]
    .iter()
    .any(|start| line.starts_with(start))
}

/// Removes the `o:` prefix some vendor builds put on stdout lines.
pub fn strip_prefixes(text: &str) -> String {
    text.lines()
        .map(|line| line.strip_prefix("o:").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Terraform v1.2.3` / `OpenTofu v1.8.0` → `1.2.3`.
pub fn parse_version_text(text: &str) -> Option<String> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let word = first
        .split_whitespace()
        .find(|w| w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit()))?;
    Some(word[1..].to_string())
}

/// Counts a `show -json` plan: resource changes by action (read by the schema's
/// [`stackpack_schema::plan::changes`]), and output changes.
pub fn parse_plan_json(text: &str) -> std::result::Result<PlanDetails, String> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
    if !value.is_object() {
        return Err("not a JSON object".into());
    }
    let mut details = PlanDetails {
        changes: plan::changes(text.trim())?,
        drift: plan::drift_details(text.trim()),
        ..PlanDetails::default()
    };
    for change in &details.changes {
        match change.action {
            Action::Create => details.summary.add += 1,
            Action::Update => details.summary.change += 1,
            Action::Destroy => details.summary.destroy += 1,
            Action::Replace => {
                details.summary.add += 1;
                details.summary.destroy += 1;
            }
        }
    }
    details.output_changes = stackpack_schema::plan::output_changes(&value);
    details.runs_commands = runs_commands(&value["configuration"]["root_module"], "");
    Ok(details)
}

/// The resources with a `local-exec` provisioner and the `external` data sources
/// of a plan's configuration (`show -json`'s `configuration.root_module`), modules
/// included, each with what it is: programs the engine starts on the runner's
/// machine, with its credentials, which no plan shows.
pub fn runs_commands(module: &serde_json::Value, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    for resource in module["resources"].as_array().into_iter().flatten() {
        let address = format!(
            "{prefix}{}",
            resource["address"].as_str().unwrap_or_default()
        );
        let local_exec = resource["provisioners"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["type"] == "local-exec");
        if local_exec {
            found.push(format!("`{address}` (local-exec provisioner)"));
        }
        if resource["mode"] == "data" && resource["type"] == "external" {
            found.push(format!("`{address}` (external data source)"));
        }
    }
    for (name, call) in module["module_calls"].as_object().into_iter().flatten() {
        let prefix = format!("{prefix}module.{name}.");
        found.extend(runs_commands(&call["module"], &prefix));
    }
    found
}

/// The backend override file and `-backend-config` arguments for `stack`.
pub fn backend_setup(home: &Home, engine: &Engine, stack: &str) -> Result<(String, Vec<String>)> {
    let backend = &home.config.backend;
    if let Some(s3) = backend.s3() {
        let settings = s3_settings(s3, &home.config.customer, stack, engine)?;
        return Ok((backend_file("s3", &settings), Vec::new()));
    }
    let mut args = Vec::new();
    if backend.kind == "local" {
        let dir = home.state_dir(stack);
        files::create_folder(&dir)?;
        args.push(format!(
            "-backend-config=path={}",
            dir.join("terraform.tfstate").display()
        ));
    }
    for (key, value) in &backend.config {
        args.push(format!(
            "-backend-config={key}={}",
            value.replace("{stack}", stack)
        ));
    }
    Ok((backend_file(&backend.kind, ""), args))
}

fn backend_file(kind: &str, settings: &str) -> String {
    format!(
        "# Written by stackpack-runner: state lives outside the work folder.\nterraform {{\n  backend \"{kind}\" {{\n{settings}  }}\n}}\n"
    )
}

/// An HCL string: JSON's quoting, with `${` and `%{` kept literal.
fn hcl_string(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_default()
        .replace("${", "$${")
        .replace("%{", "%%{")
}

/// The `s3` backend's settings, in the syntax of this engine's version: native
/// locking (`use_lockfile`) from Terraform 1.10 and OpenTofu 1.8, a DynamoDB table
/// before; `endpoints`/`use_path_style` from 1.6, `endpoint`/`force_path_style`
/// before. No credential is ever written here: the engine reads the environment.
fn s3_settings(
    s3: &crate::home::S3Backend,
    customer: &str,
    stack: &str,
    engine: &Engine,
) -> Result<String> {
    let version = engine.semver();
    let native_lock = match engine.name {
        EngineName::Terraform => version >= semver::Version::new(1, 10, 0),
        _ => version >= semver::Version::new(1, 8, 0),
    };
    let modern = version >= semver::Version::new(1, 6, 0);
    let mut lines = vec![
        ("bucket", hcl_string(&s3.bucket)),
        ("key", hcl_string(&s3.state_key(customer, stack))),
        ("region", hcl_string(&s3.region())),
        ("encrypt", "true".into()),
    ];
    match (&s3.dynamodb_table, native_lock) {
        (Some(table), _) => lines.push(("dynamodb_table", hcl_string(table))),
        (None, true) => lines.push(("use_lockfile", "true".into())),
        (None, false) => {
            return Err(Error::refused(format!(
                "engine `{}` {} cannot lock state in S3 by itself (native locking needs Terraform 1.10 or OpenTofu 1.8)",
                engine.name, engine.version
            ))
            .at("`[backend.s3]` in `runner.toml`")
            .hint("set `dynamodb-table` under `[backend.s3]` (a table with a string partition key `LockID`), or use a newer engine"))
        }
    }
    if let Some(endpoint) = &s3.endpoint {
        // An emulator: path-style requests, and none of the account lookups AWS
        // itself answers.
        let url = hcl_string(endpoint);
        let with_table = s3.dynamodb_table.is_some();
        if modern {
            let endpoints = if with_table {
                format!("{{ s3 = {url}, dynamodb = {url} }}")
            } else {
                format!("{{ s3 = {url} }}")
            };
            lines.push(("endpoints", endpoints));
            lines.push(("use_path_style", "true".into()));
            lines.push(("skip_requesting_account_id", "true".into()));
        } else {
            lines.push(("endpoint", url.clone()));
            lines.push(("force_path_style", "true".into()));
            if with_table {
                lines.push(("dynamodb_endpoint", url));
            }
        }
        for skip in [
            "skip_credentials_validation",
            "skip_metadata_api_check",
            "skip_region_validation",
        ] {
            lines.push((skip, "true".into()));
        }
    }
    Ok(lines
        .iter()
        .map(|(name, value)| format!("    {name} = {value}\n"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_variables_reach_the_engine() {
        let inputs = vec!["db_password".to_string()];
        for passed in [
            "PATH",
            "HOME",
            "LC_ALL",
            "HTTPS_PROXY",
            "AWS_ACCESS_KEY_ID",
            "AWS_ENDPOINT_URL_S3",
            "TF_VAR_db_password",
        ] {
            assert!(passes_to_engine(passed, &inputs), "{passed}");
        }
        for kept_out in [
            "TF_CLI_ARGS",
            "TF_CLI_ARGS_plan",
            "TF_CLI_ARGS_apply",
            "TF_WORKSPACE",
            "TF_DATA_DIR",
            "TF_PLUGIN_CACHE_DIR",
            "TF_CLI_CONFIG_FILE",
            "TF_LOG",
            "TF_LOG_PATH",
            "TF_STATE_PERSIST_INTERVAL",
            "TF_VAR_not_an_input",
            "STACKPACK_REGISTRY_TOKEN",
            "LD_PRELOAD",
        ] {
            assert!(!passes_to_engine(kept_out, &inputs), "{kept_out}");
        }
    }

    fn engine(name: EngineName, version: &str) -> Engine {
        Engine {
            name,
            path: PathBuf::from("/bin/false"),
            cli_config: None,
            inherit_fds: Vec::new(),
            version: version.into(),
            verbose: false,
            input_variables: Vec::new(),
            log: None,
            stack: None,
            secrets: Secrets::default(),
            errors: Default::default(),
            transcript: None,
            digest: None,
        }
    }

    #[test]
    fn s3_state_is_locked_natively_where_the_engine_can_and_through_dynamodb_before() {
        let mut s3 = crate::home::S3Backend {
            bucket: "globex-state".into(),
            region: Some("eu-west-1".into()),
            key_prefix: "/stackpack/".into(),
            endpoint: Some("http://127.0.0.1:5000".into()),
            dynamodb_table: None,
        };
        let modern = s3_settings(
            &s3,
            "globex",
            "network",
            &engine(EngineName::Terraform, "1.15.5"),
        )
        .unwrap();
        for line in [
            "key = \"stackpack/globex/network.tfstate\"",
            "use_lockfile = true",
            "endpoints = { s3 = \"http://127.0.0.1:5000\" }",
            "use_path_style = true",
            "encrypt = true",
        ] {
            assert!(modern.contains(line), "{line} in\n{modern}");
        }
        assert!(
            s3_settings(&s3, "globex", "network", &engine(EngineName::Tofu, "1.8.0"))
                .unwrap()
                .contains("use_lockfile = true")
        );
        // Terraform 0.15 knows neither native locking nor the newer settings' names.
        let old = s3_settings(
            &s3,
            "globex",
            "network",
            &engine(EngineName::Terraform, "0.15.5"),
        );
        assert!(old
            .unwrap_err()
            .to_string()
            .contains("cannot lock state in S3 by itself"));
        s3.dynamodb_table = Some("globex-locks".into());
        let old = s3_settings(
            &s3,
            "globex",
            "network",
            &engine(EngineName::Terraform, "0.15.5"),
        )
        .unwrap();
        assert!(old.contains("dynamodb_table = \"globex-locks\""), "{old}");
        assert!(
            old.contains("force_path_style = true") && !old.contains("use_lockfile"),
            "{old}"
        );
        assert!(
            old.contains("dynamodb_endpoint = \"http://127.0.0.1:5000\""),
            "{old}"
        );
    }

    #[test]
    fn the_lock_id_is_read_from_the_engines_lock_error() {
        let mut reader = LockErrorReader::default();
        for line in [
            "\u{2502} Error: Error acquiring the state lock",
            "\u{2502} ID:        not-this-one",
            "\u{2502} Lock Info:",
            "\u{2502}   ID:        5f1c2a0e-7d3b",
            "\u{2502}   Path:      globex-state/stackpack/globex/network.tfstate",
        ] {
            reader.line(line);
        }
        assert_eq!(reader.id.as_deref(), Some("5f1c2a0e-7d3b"));
        assert!(!reader.releasing);
    }

    #[test]
    fn a_lock_the_engine_could_not_release_is_told_from_one_it_could_not_take() {
        let mut reader = LockErrorReader::default();
        for line in [
            "\u{2502} Error: Error releasing the state lock",
            "\u{2502} Error message: failed to retrieve lock info for lock ID",
            "\u{2502} Lock Info:",
            "\u{2502}   ID:        5f1c2a0e-7d3b",
        ] {
            reader.line(line);
        }
        assert!(reader.releasing);
    }

    #[test]
    fn debug_logs_are_told_from_diagnostics() {
        assert!(is_debug_log("[TRACE] graph after …:"));
        assert!(is_debug_log("2026-01-01T00:00:00.000Z [DEBUG] provider"));
        assert!(!is_debug_log("Error: the cloud said no"));
        assert!(is_diagnostic("Error: the cloud said no"));
        assert!(is_diagnostic("\u{2577}"));
    }

    #[test]
    fn versions_are_read_from_either_form() {
        assert_eq!(
            parse_version_text("Terraform v0.15.0-rc2\non linux_amd64").as_deref(),
            Some("0.15.0-rc2")
        );
        assert_eq!(
            parse_version_text("OpenTofu v1.8.0\n").as_deref(),
            Some("1.8.0")
        );
        assert_eq!(strip_prefixes("o:{\no:}"), "{\n}");
    }

    #[test]
    fn plans_are_counted_by_action_and_output_only_plans_count_outputs() {
        let plan = r#"{"resource_changes":[
            {"change":{"actions":["create"]}},{"change":{"actions":["delete","create"]}},
            {"change":{"actions":["update"]}},{"change":{"actions":["no-op"]}},{"change":{"actions":["read"]}}],
            "output_changes":{"a":{"actions":["create"]},"b":{"actions":["no-op"]}}}"#;
        let details = parse_plan_json(plan).unwrap();
        assert_eq!(
            (
                details.summary.add,
                details.summary.change,
                details.summary.destroy
            ),
            (2, 1, 1)
        );
        assert_eq!(details.output_changes, 1);
        assert!(parse_plan_json(r#"{"format_version":"0.1"}"#)
            .unwrap()
            .is_empty());
    }
}
