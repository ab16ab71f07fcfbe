//! The outcome witness: what a release does to each customer, seen in a plan rather
//! than guessed from the interface.
//!
//! For every changed stack with a stable release, and each customer's inputs file
//! (`customers/<id>/<stack>.tfvars`; all, or the `[witness] sample`), in a fresh
//! scratch state: apply the last release with that customer's inputs, then plan the
//! work tree's version with the same inputs on top of it. An empty plan is compatible
//! (patch); only creations of resource kinds the interface rules call gated is
//! compatible too (minor); any update, replacement or destruction, or any other
//! creation, is an outcome change (major) for a customer who set nothing new. The
//! bump a stack needs is the larger of the rules' and the witness's.
//!
//! The last release is rebuilt from git at the commit its bundle config records, and
//! every file is checked against the digest the signed config holds, so what is
//! applied is what was released. Providers come from the build's mirror, offline.

pub(crate) mod account;
pub(crate) mod engine;
pub mod render;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use stackpack_schema::bundle::{WitnessCustomer, WitnessSummary};
use stackpack_schema::digest::Digest;
use stackpack_schema::version::Bump;

pub use account::{Account, Target};
use engine::{input_args, write_tree, Engine, Failed, PluginCache};
use stackpack_schema::plan::{self, Action, Counts, ResourceChange};

use crate::check::{Cache, Rule, RuleId, Tree};
use crate::config::RepoConfig;
use crate::error::{Error, Result};
use crate::releases::Release;

/// Customers witnessed at once unless `[witness] parallel` says otherwise.
pub const DEFAULT_PARALLEL: usize = 4;

/// One stack to witness: its last stable release, and what the rules found.
#[derive(Clone, Debug)]
pub struct StackJob {
    pub name: String,
    /// Repository-relative folder.
    pub path: String,
    pub release: Release,
    /// The bump the interface rules require.
    pub rules: Bump,
    /// Resource kinds the rules call gated (created only when a new input turns them on).
    pub gated_kinds: BTreeSet<String>,
}

impl StackJob {
    /// The gated kinds among `findings` of the rules.
    pub fn gated(findings: &[crate::check::Finding]) -> BTreeSet<String> {
        findings
            .iter()
            .filter(|f| f.rule == RuleId::Interface(Rule::ResourceKindAddedGated))
            .map(|f| f.item.clone())
            .collect()
    }
}

/// What the witness saw for one customer of one stack.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerOutcome {
    pub customer: String,
    /// Repository-relative path of the inputs file.
    pub file: String,
    /// The bump this customer's plan requires; absent when the witness failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bump: Option<Bump>,
    pub counts: Counts,
    pub changes: Vec<ResourceChange>,
    /// Inputs this customer sets that the last release does not declare: its plan
    /// follows its own new settings, so it cannot tell a breaking change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_inputs: Vec<String>,
    pub seconds: f64,
    /// Why the witness could not finish for this customer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Something left behind (a destroy that failed in a shared account).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What the witness saw for one stack.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackWitness {
    pub stack: String,
    pub path: String,
    /// The last stable release, applied first.
    pub release: String,
    /// Where it ran (`emulator `http://…``).
    pub account: String,
    /// Customers with an inputs file for this stack.
    pub customers_total: usize,
    pub customers: Vec<CustomerOutcome>,
    /// The bump the interface rules require.
    pub rules: Bump,
    /// The largest bump a customer's plan requires.
    pub witness: Bump,
    /// The larger of the two.
    pub required: Bump,
    pub notes: Vec<String>,
    pub seconds: f64,
}

impl StackWitness {
    pub fn failed(&self) -> impl Iterator<Item = &CustomerOutcome> {
        self.customers.iter().filter(|c| c.error.is_some())
    }

    /// The summary a bundle config records; `accepted` is the bump the vendor chose.
    pub fn summary(&self, accepted: Option<Bump>) -> WitnessSummary {
        WitnessSummary {
            release: self.release.clone(),
            customers_total: self.customers_total as u64,
            rules: self.rules,
            witness: self.witness,
            accepted,
            customers: self
                .customers
                .iter()
                .map(|c| WitnessCustomer {
                    customer: c.customer.clone(),
                    add: c.counts.add as u64,
                    change: c.counts.change as u64,
                    replace: c.counts.replace as u64,
                    destroy: c.counts.destroy as u64,
                    resources: c
                        .changes
                        .iter()
                        .map(|r| format!("{} {}", r.action, r.address))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// Scratch folders are named `stackpack-witness-<pid>-<random>`, so that a run can
/// tell the folders of witnesses that were killed (SIGKILL, or SIGTERM, which runs
/// no destructor) from those of witnesses still running.
const SCRATCH_PREFIX: &str = "stackpack-witness-";

/// Removes the scratch folders in `temp` that earlier witnesses left behind when they
/// were killed: those whose process is gone. A folder whose process id is in use
/// again is left for a later run; one that cannot be removed is left as it is.
fn sweep_abandoned_scratch(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A witness ready to run: the account checked, the engine found, a scratch folder.
pub struct Witness {
    root: PathBuf,
    account: Account,
    engine: Engine,
    scratch: tempfile::TempDir,
    sample: Option<usize>,
    parallel: usize,
}

impl Witness {
    /// Checks `[witness]` (refusing any account it does not name), the provider
    /// mirror and the engine, before anything runs.
    pub fn prepare(root: &Path, config: &RepoConfig) -> Result<Witness> {
        let config_file = root.join("stackpack.toml");
        let Some(settings) = &config.witness else {
            return Err(Error::usage("`--witness` needs a `[witness]` table in `stackpack.toml`")
                .at(config_file.display())
                .hint("name the account it runs in: `endpoint = \"http://127.0.0.1:5000\"` for an emulator, or `account-id` for a sandbox account (see `docs/configuration.md`)"));
        };
        let account = Account::from_settings(settings, &config_file)?;
        let Some(mirror) = &config.providers.mirror else {
            return Err(Error::usage("the witness needs the build's provider mirror, and `[providers] mirror` is not set")
                .at(config_file.display())
                .hint(format!("set `[providers] mirror`, or `{}`", crate::config::PROVIDER_MIRROR_VARIABLE)));
        };
        let mirror = std::path::absolute(root.join(mirror)).unwrap_or_else(|_| root.join(mirror));
        if !mirror.is_dir() {
            return Err(Error::usage(format!(
                "the provider mirror `{}` does not exist",
                mirror.display()
            ))
            .at(config_file.display())
            .hint("fill it with `terraform providers mirror DIR`, as CI does before `publish`"));
        }
        let engine_path = find_engine(root, settings.engine.as_deref()).ok_or_else(|| {
            let name = settings
                .engine
                .as_deref()
                .unwrap_or(Path::new("terraform"))
                .display()
                .to_string();
            Error::usage(format!("the witness's engine `{name}` was not found"))
                .at(config_file.display())
                .hint("install it, or set `[witness] engine` to its path")
        })?;
        sweep_abandoned_scratch(&std::env::temp_dir());
        let scratch = tempfile::Builder::new()
            .prefix(&format!("{SCRATCH_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|e| Error::refused(format!("cannot make a scratch folder: {e}")))?;
        let engine = Engine::new(engine_path, &mirror, scratch.path()).map_err(|e| {
            Error::refused(format!(
                "cannot write the engine configuration in `{}`: {e}",
                scratch.path().display()
            ))
        })?;
        Ok(Witness {
            // Engines run in scratch folders: every path handed to them is absolute.
            root: std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()),
            account,
            engine,
            scratch,
            sample: settings.sample,
            parallel: settings.parallel.unwrap_or(DEFAULT_PARALLEL).max(1),
        })
    }

    pub fn account(&self) -> &Account {
        &self.account
    }

    /// The repository's folder, absolute.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The scratch folder every engine run works in, removed with the witness.
    pub(crate) fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// `[witness] parallel`, else [`DEFAULT_PARALLEL`].
    pub fn parallel(&self) -> usize {
        self.parallel
    }

    /// Witnesses every stack in `jobs`, customers in parallel.
    pub fn run(&self, jobs: &[StackJob]) -> Result<Vec<StackWitness>> {
        jobs.iter().map(|job| self.run_stack(job)).collect()
    }

    fn run_stack(&self, job: &StackJob) -> Result<StackWitness> {
        let started = Instant::now();
        let old_files = release_files(&self.root, &job.name, &job.release)?;
        let mut cache = Cache::default();
        let new_tree = Tree::load_with(&self.root, &job.path, &mut cache)
            .map_err(|e| Error::refused_by(e).at(&job.path))?;
        let new_files = work_tree_files(&self.root, &new_tree)?;
        self.check_required_input(job, &new_tree)?;
        let all = crate::impact::customer_files(&self.root, &job.name);
        let run = Run {
            witness: self,
            job,
            old_files: &old_files,
            new_files: &new_files,
            plugins: &PluginCache::default(),
        };
        let customers = run.customers(&sample(&all, self.sample));
        let witness = customers
            .iter()
            .filter_map(|c| c.bump)
            .max()
            .unwrap_or(Bump::Patch);
        let required = job.rules.max(witness);
        let notes = notes(job, customers.len(), all.len(), witness);
        Ok(StackWitness {
            stack: job.name.clone(),
            path: job.path.clone(),
            release: job.release.version.to_string(),
            account: self.account.describe(),
            customers_total: all.len(),
            customers,
            rules: job.rules,
            witness,
            required,
            notes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Refuses a stack whose release or work tree does not declare the input the
    /// account's target is passed through: the witness could not hold it there.
    fn check_required_input(&self, job: &StackJob, new_tree: &Tree) -> Result<()> {
        let input = self.account.required_input();
        let old_declares = job
            .release
            .config
            .interface
            .inputs
            .iter()
            .any(|i| i.name == input);
        let new_declares = new_tree.root().variables.iter().any(|v| v.name == input);
        if old_declares && new_declares {
            return Ok(());
        }
        let which = if old_declares {
            "the work tree".to_string()
        } else {
            format!("release `{}`", job.release.version)
        };
        Err(Error::refused(format!(
            "stack `{}` in {which} has no input `{input}`: the witness cannot hold it to the {}",
            job.name,
            self.account.describe()
        ))
        .at(format!("{}/variables.tf", job.path))
        .hint(format!("declare `variable \"{input}\"` and pass it to the provider, or name the stack's input in `[witness]`")))
    }
}

/// What a stack's witness adds in words: a sample, and where the rules and the plans
/// disagree.
fn notes(job: &StackJob, witnessed: usize, total: usize, witness: Bump) -> Vec<String> {
    let mut notes = Vec::new();
    if witnessed < total {
        notes.push(format!(
            "witnessed a sample of {witnessed} of {} (`[witness] sample`)",
            stackpack_terminal::words::count(total as u64, "customer")
        ));
    }
    if job.rules == Bump::Major && witness < Bump::Major && witnessed > 0 {
        notes.push(
            "the rules call this change major, but no witnessed customer's plan changes: it stays major, since customers outside this repository may set what these do not; pass `--bump major` to accept it knowingly".to_string(),
        );
    }
    if witness > job.rules {
        notes.push(format!(
            "the rules see a {} change, the customers' plans a {witness} one: the plans decide",
            job.rules
        ));
    }
    notes
}

/// A tree's files: repository-relative path, bytes, executable.
pub(crate) type Files = Vec<(String, Vec<u8>, bool)>;

/// One stack's witness, shared by its worker threads.
struct Run<'a> {
    witness: &'a Witness,
    job: &'a StackJob,
    old_files: &'a Files,
    new_files: &'a Files,
    /// The first `init` of each tree (old, new) fills the shared plugin cache alone.
    plugins: &'a PluginCache,
}

impl Run<'_> {
    /// Witnesses `customers` (id, inputs file) on `parallel` threads; the outcomes in
    /// the order given.
    fn customers(&self, customers: &[(String, String)]) -> Vec<CustomerOutcome> {
        let old_inputs: BTreeSet<&str> = self
            .job
            .release
            .config
            .interface
            .inputs
            .iter()
            .map(|i| i.name.as_str())
            .collect();
        let next = AtomicUsize::new(0);
        let results = Mutex::new(vec![None; customers.len()]);
        std::thread::scope(|scope| {
            for _ in 0..self.witness.parallel.min(customers.len()) {
                scope.spawn(|| loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some((customer, file)) = customers.get(index) else {
                        break;
                    };
                    let outcome = self.customer(customer, file, &old_inputs);
                    stackpack_terminal::status(&render::progress_line(&self.job.name, &outcome));
                    results.lock().expect("no worker panics")[index] = Some(outcome);
                });
            }
        });
        results
            .into_inner()
            .expect("no worker panics")
            .into_iter()
            .flatten()
            .collect()
    }

    fn customer(&self, customer: &str, file: &str, old_inputs: &BTreeSet<&str>) -> CustomerOutcome {
        let started = Instant::now();
        let new_inputs = set_inputs(&self.witness.root.join(file))
            .into_iter()
            .filter(|name| !old_inputs.contains(name.as_str()))
            .collect();
        let mut outcome = CustomerOutcome {
            customer: customer.to_string(),
            file: file.to_string(),
            bump: None,
            counts: Counts::default(),
            changes: Vec::new(),
            new_inputs,
            seconds: 0.0,
            error: None,
            warning: None,
        };
        match self.plan(customer, file) {
            Ok((changes, warning)) => {
                outcome.bump = Some(classify(
                    &changes,
                    &outcome.new_inputs,
                    &self.job.gated_kinds,
                ));
                outcome.counts = Counts::of(&changes);
                outcome.changes = changes;
                outcome.warning = warning;
            }
            Err(e) => outcome.error = Some(e),
        }
        outcome.seconds = started.elapsed().as_secs_f64();
        outcome
    }

    /// Applies the release, plans the work tree; returns the plan's changes.
    fn plan(
        &self,
        customer: &str,
        file: &str,
    ) -> std::result::Result<(Vec<ResourceChange>, Option<String>), String> {
        let dir = self
            .witness
            .scratch
            .path()
            .join(&self.job.name)
            .join(customer);
        let io =
            |e: std::io::Error| format!("cannot write the scratch folder `{}`: {e}", dir.display());
        let old = write_tree(
            &dir.join("old"),
            self.old_files,
            &self.job.release.config.entrypoint,
        )
        .map_err(io)?;
        let new = write_tree(&dir.join("new"), self.new_files, &self.job.path).map_err(io)?;
        let state = dir.join("terraform.tfstate");
        let session = self.witness.account.session(customer);
        let runs = CustomerRuns {
            engine: &self.witness.engine,
            inputs: input_args(&session, &self.witness.root.join(file)),
            session: &session,
            log: dir.join("engine.log"),
            init: vec![
                "init".to_string(),
                "-input=false".into(),
                "-no-color".into(),
                format!("-backend-config=path={}", state.display()),
            ],
        };
        let release = format!("release `{}`", self.job.release.version);
        self.init(0, &old, &runs.init, &session, &runs.log)
            .map_err(|f| failed(&release, f))?;
        let applied = runs
            .with_inputs(
                &old,
                &["apply", "-auto-approve", "-input=false", "-no-color"],
            )
            .map_err(|f| failed(&release, f));
        let planned =
            applied.and_then(|_| self.plan_work_tree(&runs, &new, &dir.join("witness.tfplan")));
        // Nothing stays behind, whatever the plan said (a failed apply may have made
        // half the release): the account may be shared, and some names (S3 buckets)
        // are global even in an emulator.
        let warning = runs
            .with_inputs(
                &old,
                &[
                    "destroy",
                    "-auto-approve",
                    "-input=false",
                    "-no-color",
                    "-refresh=false",
                ],
            )
            .err()
            .map(|f| {
                format!(
                    "could not destroy what the witness applied for `{customer}` in the {}: {}",
                    self.witness.account.describe(),
                    f.tail
                )
            });
        planned.map(|changes| (changes, warning))
    }

    /// Plans the work tree `new` on top of the applied release; returns the plan's
    /// changes.
    fn plan_work_tree(
        &self,
        runs: &CustomerRuns,
        new: &Path,
        plan_file: &Path,
    ) -> std::result::Result<Vec<ResourceChange>, String> {
        let failed = |f: Failed| failed("the work tree", f);
        self.init(1, new, &runs.init, runs.session, &runs.log)
            .map_err(failed)?;
        let out = format!("-out={}", plan_file.display());
        runs.with_inputs(new, &["plan", "-input=false", "-no-color", out.as_str()])
            .map_err(failed)?;
        let json = runs
            .engine
            .run(
                new,
                &[
                    "show".into(),
                    "-json".into(),
                    "-no-color".into(),
                    plan_file.display().to_string(),
                ],
                runs.session,
                &runs.log,
            )
            .map_err(failed)?;
        plan::changes(&json)
    }

    fn init(
        &self,
        tree: usize,
        dir: &Path,
        args: &[String],
        session: &account::Session,
        log: &Path,
    ) -> std::result::Result<String, Failed> {
        let key = if tree == 0 { "old" } else { "new" };
        self.plugins
            .init(key, || self.witness.engine.run(dir, args, session, log))
    }
}

/// The engine runs for one customer: the same session, inputs file and log for each.
struct CustomerRuns<'a> {
    engine: &'a Engine,
    session: &'a account::Session,
    /// The customer's inputs, as engine arguments.
    inputs: Vec<String>,
    log: PathBuf,
    /// `init` with the customer's scratch state as backend.
    init: Vec<String>,
}

impl CustomerRuns<'_> {
    /// Runs `command` in `dir`, the customer's inputs after its own arguments.
    fn with_inputs(&self, dir: &Path, command: &[&str]) -> std::result::Result<String, Failed> {
        let args: Vec<String> = command
            .iter()
            .map(|s| s.to_string())
            .chain(self.inputs.iter().cloned())
            .collect();
        self.engine.run(dir, &args, self.session, &self.log)
    }
}

/// A failed engine run in `tree` (the release or the work tree), with its last lines.
pub(crate) fn failed(tree: &str, f: Failed) -> String {
    format!("`{}` of {tree} failed:\n{}", f.what, f.tail)
}

/// The bump one customer's plan requires.
pub fn classify(
    changes: &[ResourceChange],
    new_inputs: &[String],
    gated: &BTreeSet<String>,
) -> Bump {
    if changes.is_empty() {
        return Bump::Patch;
    }
    if !new_inputs.is_empty() {
        // The customer opted in to something new: its plan shows its own choice.
        return Bump::Minor;
    }
    let gated_creations = changes
        .iter()
        .all(|c| c.action == Action::Create && gated.contains(&c.kind));
    if gated_creations {
        Bump::Minor
    } else {
        Bump::Major
    }
}

/// At most `sample` of `customers`, spread evenly over the sorted list so that a
/// sample is the same on every run.
fn sample(customers: &[(String, String)], sample: Option<usize>) -> Vec<(String, String)> {
    match sample {
        Some(n) if n < customers.len() => (0..n)
            .map(|i| customers[i * customers.len() / n].clone())
            .collect(),
        _ => customers.to_vec(),
    }
}

/// The names of the inputs a `.tfvars` or `.tfvars.json` file sets; none when it
/// cannot be read (the customer check reports that).
pub(crate) fn set_inputs(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let parsed = if path.extension().is_some_and(|e| e == "json") {
        stackpack_interface::tfvars::parse_json(&text)
    } else {
        stackpack_interface::tfvars::parse_hcl(&text)
    };
    parsed
        .map(|values| values.into_iter().map(|v| v.name).collect())
        .unwrap_or_default()
}

/// The released files, from git at the commit the release was built from, each
/// checked against the digest its signed config records.
pub(crate) fn release_files(root: &Path, name: &str, release: &Release) -> Result<Files> {
    let config = &release.config;
    let label = format!("`{name}@{}`", release.version);
    let archive = crate::git::Git::open(root)
        .and_then(|git| git.archive(&config.source.commit))
        .map_err(|e| {
            Error::refused(format!(
                "cannot read release {label}'s commit `{}`: {}",
                config.source.commit, e.message
            ))
            .hint("the witness rebuilds the last release from git: fetch the full history (`git fetch --unshallow`)")
        })?;
    let mut files = Vec::new();
    let mut entries = tar::Archive::new(archive.as_slice());
    let unpack = |e: std::io::Error| Error::refused(format!("cannot unpack release {label}: {e}"));
    for entry in entries.entries().map_err(unpack)? {
        let mut entry = entry.map_err(unpack)?;
        let path = entry
            .path()
            .map_err(unpack)?
            .to_string_lossy()
            .replace('\\', "/");
        let Some(released) = config.file(&path) else {
            continue;
        };
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).map_err(unpack)?;
        if Digest::of(&bytes) != released.digest {
            return Err(Error::refused(format!(
                "`{path}` at commit `{}` is not the file release {label} holds",
                config.source.commit
            ))
            .hint("the release was built from uncommitted changes (`--allow-dirty`); witness against a release built from a commit"));
        }
        files.push((path, bytes, released.executable));
    }
    if files.len() != config.files.len() {
        return Err(Error::refused(format!(
            "commit `{}` lacks {} of release {label}'s files",
            config.source.commit,
            config.files.len() - files.len()
        ))
        .hint("the release was built from uncommitted changes (`--allow-dirty`); witness against a release built from a commit"));
    }
    Ok(files)
}

/// The work tree's files of a stack and the local modules it uses, as a build would
/// pack them (engine caches and state left out).
fn work_tree_files(root: &Path, tree: &Tree) -> Result<Files> {
    let mut dirs: Vec<&String> = tree.modules.keys().collect();
    dirs.push(&tree.root_dir);
    let mut files = std::collections::BTreeMap::new();
    for dir in dirs {
        collect(root, dir, &mut files)?;
    }
    Ok(files
        .into_iter()
        .map(|(path, (bytes, x))| (path, bytes, x))
        .collect())
}

fn collect(
    root: &Path,
    dir: &str,
    out: &mut std::collections::BTreeMap<String, (Vec<u8>, bool)>,
) -> Result<()> {
    let read = |path: &Path, e: std::io::Error| {
        Error::refused(format!("cannot read `{}`: {e}", path.display()))
    };
    let full = root.join(dir);
    for entry in std::fs::read_dir(&full).map_err(|e| read(&full, e))? {
        let entry = entry.map_err(|e| read(&full, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{dir}/{name}");
        if crate::pack::is_excluded(&rel) {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect(root, &rel, out)?;
        } else if path.is_file() {
            let bytes = std::fs::read(&path).map_err(|e| read(&path, e))?;
            out.insert(rel, (bytes, is_executable(&path)));
        }
    }
    Ok(())
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The engine: a path (relative to the repository), or a name on `PATH`.
fn find_engine(root: &Path, engine: Option<&Path>) -> Option<PathBuf> {
    let engine = engine.unwrap_or(Path::new("terraform"));
    if engine.components().count() > 1 || engine.is_absolute() {
        let path = root.join(engine);
        return path
            .is_file()
            .then(|| std::path::absolute(&path).unwrap_or(path));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(engine))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_folders_of_killed_witnesses_are_swept_and_live_ones_kept() {
        let temp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let abandoned = temp.path().join(format!("{SCRATCH_PREFIX}{gone}-abc"));
        let live = temp
            .path()
            .join(format!("{SCRATCH_PREFIX}{}-def", std::process::id()));
        let unrelated = temp.path().join("stackpack-witness-notes");
        for dir in [&abandoned, &live, &unrelated] {
            std::fs::create_dir_all(dir.join("stacks")).unwrap();
        }
        sweep_abandoned_scratch(temp.path());
        assert!(!abandoned.exists());
        assert!(live.exists());
        assert!(unrelated.exists());
    }

    fn change(action: Action, kind: &str) -> ResourceChange {
        ResourceChange {
            address: format!("{kind}.x"),
            kind: kind.into(),
            action,
            attributes: vec![],
        }
    }

    #[test]
    fn only_gated_creations_are_compatible_and_a_new_setting_is_the_customers_choice() {
        let gated = BTreeSet::from(["aws_route53_zone".to_string()]);
        assert_eq!(classify(&[], &[], &gated), Bump::Patch);
        let zone = change(Action::Create, "aws_route53_zone");
        assert_eq!(
            classify(std::slice::from_ref(&zone), &[], &gated),
            Bump::Minor
        );
        let subnet = change(Action::Create, "aws_subnet");
        assert_eq!(classify(&[zone, subnet.clone()], &[], &gated), Bump::Major);
        let update = change(Action::Update, "aws_vpc");
        assert_eq!(
            classify(std::slice::from_ref(&update), &[], &gated),
            Bump::Major
        );
        assert_eq!(
            classify(&[update], &["enable_dns".into()], &gated),
            Bump::Minor
        );
    }

    #[test]
    fn a_sample_is_spread_over_the_sorted_customers_and_never_larger() {
        let all: Vec<(String, String)> =
            (0..10).map(|i| (format!("c{i}"), String::new())).collect();
        let names = |s: Vec<(String, String)>| s.into_iter().map(|c| c.0).collect::<Vec<_>>();
        assert_eq!(names(sample(&all, Some(3))), ["c0", "c3", "c6"]);
        assert_eq!(sample(&all, Some(20)).len(), 10);
        assert_eq!(sample(&all, None).len(), 10);
    }
}
