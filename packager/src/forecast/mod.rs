//! Forecasts: each customer's plan along the path it will really take, from the
//! versions it runs (the registry's ledger) through every required version between,
//! to the candidate, with its own inputs, in an emulated account of its own.
//!
//! Built on the outcome witness's machinery ([`crate::witness::Witness`]): the same
//! `[witness]` account and engine, the same provider mirror and shared plugin cache,
//! the same rebuild of a released bundle from git checked file by file against its
//! signed config, and the same per-customer account (STS `AssumeRole` into a fresh
//! account id: an account reset between customers, not an emulator restart).

pub mod api;
pub mod cache;
mod path;
pub mod render;
pub mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use semver::Version;
use stackpack_bundle::policy::{self, PolicyFile};
use stackpack_schema::digest::Digest;
use stackpack_schema::forecast::{
    CustomerForecast, ForecastOutcome, ForecastTarget, ForecastTargets, ReleaseForecast,
    StackForecast, FORECAST_FORMAT,
};
use stackpack_schema::plan::{self, PlannedChange, ResourceChange};

use crate::error::Result;
use crate::releases::ReleaseSource;
use crate::witness::engine::PluginCache;
use crate::witness::{Files, Witness};
use path::{CustomerPath, Step};
pub use source::{Candidate, Hop, HopStack, ReleaseIndexes};

/// A released stack rebuilt from git: what a step writes and runs.
#[derive(Debug)]
pub struct Bundle {
    pub digest: Digest,
    pub entrypoint: String,
    pub files: Files,
    /// Declares the input that holds its providers to the forecast's account; a
    /// bundle with no provider at all (only Terraform's own resources) need not.
    pub takes_account_input: bool,
}

/// How a forecast runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Customers forecast at once.
    pub parallel: usize,
    /// Read and write the repository's forecast cache.
    pub cache: bool,
}

/// Addresses the candidate bundle's own policies deny in this plan, among those it
/// replaces or destroys: the vendor's word for what is stateful (the example's
/// `policies/stateful.rego` names buckets and databases). The policies are the
/// runner's (`<stack>/policies/*.rego`, evaluated by the same code), so a forecast
/// calls stateful exactly what the runner would refuse to replace unattended.
fn stateful(plan_json: &str, candidate: &Bundle, changes: &[ResourceChange]) -> Vec<String> {
    let folder = format!("{}/policies/", candidate.entrypoint.trim_end_matches('/'));
    let files: Vec<PolicyFile> = candidate
        .files
        .iter()
        .filter(|(path, _, _)| {
            path.strip_prefix(&folder)
                .is_some_and(|name| !name.contains('/') && name.ends_with(".rego"))
        })
        .map(|(path, bytes, _)| PolicyFile {
            owner: "vendor",
            name: path.clone(),
            text: String::from_utf8_lossy(bytes).into_owned(),
        })
        .collect();
    if files.is_empty() {
        return Vec::new();
    }
    let destructive: BTreeSet<&str> = changes
        .iter()
        .filter(|c| c.action.is_destructive())
        .map(|c| c.address.as_str())
        .collect();
    // A policy that cannot be read here fails the runner's plan too: nothing is
    // called stateful by it, and the runner says why when it runs.
    let Ok(verdict) = policy::evaluate(&files, plan_json, &[]) else {
        return Vec::new();
    };
    let mut out: Vec<String> = verdict
        .denied
        .iter()
        .filter_map(|d| d.address.clone())
        .filter(|a| destructive.contains(a.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Everything a forecast reads before any engine runs: the steps along the way and
/// the bundles rebuilt from git (or why each could not be).
struct Prepared<'a> {
    witness: &'a Witness,
    candidate: &'a Candidate,
    /// The step at each required version, or why it cannot be read.
    through: BTreeMap<Version, std::result::Result<Hop, String>>,
    /// By `(stack, version, digest)`.
    bundles: BTreeMap<(String, Version, Digest), std::result::Result<Arc<Bundle>, String>>,
    /// `customers/<id>/<stack>.tfvars[.json]`, repository-relative, by stack then customer.
    inputs: BTreeMap<String, BTreeMap<String, String>>,
    engine: String,
    account: String,
}

/// One customer's work, ready to run.
struct Job {
    index: usize,
    running: Vec<Step>,
    /// Each step along the way, the candidate last.
    path: Vec<Vec<Step>>,
    inputs: BTreeMap<String, PathBuf>,
    inputs_set: Vec<String>,
    key: Digest,
}

/// Forecasts `candidate` for every customer of `targets`.
pub fn forecast(
    witness: &Witness,
    indexes: &dyn ReleaseIndexes,
    bundles: &dyn ReleaseSource,
    candidate: &Candidate,
    targets: &ForecastTargets,
    options: &Options,
) -> Result<ReleaseForecast> {
    let prepared = Prepared::load(witness, indexes, bundles, candidate, targets);
    let mut results: Vec<Option<CustomerForecast>> = vec![None; targets.customers.len()];
    let mut jobs: Vec<Job> = Vec::new();
    for (index, target) in targets.customers.iter().enumerate() {
        match prepared.job(index, target) {
            Ok(job) => jobs.push(job),
            Err((outcome, reason)) => results[index] = Some(early(target, outcome, reason)),
        }
    }
    let folder = options.cache.then(|| cache::folder(witness.root()));
    // Customers alike in everything a forecast reads are forecast once.
    let mut unique: BTreeMap<Digest, usize> = BTreeMap::new();
    let mut to_run: Vec<&Job> = Vec::new();
    for job in &jobs {
        if unique.contains_key(&job.key) {
            continue;
        }
        unique.insert(job.key.clone(), job.index);
        match folder.as_deref().and_then(|f| cache::read(f, &job.key)) {
            Some(hit) => results[job.index] = Some(copied(hit, &targets.customers[job.index])),
            None => to_run.push(job),
        }
    }
    for (job, forecast) in prepared.run(&to_run, options.parallel, &targets.customers) {
        if let Some(folder) = &folder {
            cache::write(folder, &job.key, &forecast);
        }
        results[job.index] = Some(forecast);
    }
    for job in &jobs {
        let first = unique[&job.key];
        if results[job.index].is_none() {
            let original = results[first].clone().expect("the first of a kind ran");
            results[job.index] = Some(copied(original, &targets.customers[job.index]));
        }
    }
    Ok(ReleaseForecast {
        format: FORECAST_FORMAT,
        kind: candidate.kind,
        release: candidate.name.clone(),
        version: candidate.hop.version.clone(),
        digest: candidate.digest.clone(),
        channel: targets.channel.clone(),
        created_at: crate::build::rfc3339(time::OffsetDateTime::now_utc().unix_timestamp()),
        account: prepared.account.clone(),
        customers: results.into_iter().flatten().collect(),
    })
}

/// The forecast of a customer that could not run.
fn early(target: &ForecastTarget, outcome: ForecastOutcome, reason: String) -> CustomerForecast {
    CustomerForecast {
        customer: target.customer.clone(),
        wave: target.wave.clone(),
        running: target.running.clone(),
        through: target.through.clone(),
        outcome,
        stacks: Vec::new(),
        inputs_set: Vec::new(),
        reason: Some(reason),
        cached: false,
        seconds: 0.0,
    }
}

/// Another customer's forecast (or a cached one) as `target`'s.
fn copied(mut forecast: CustomerForecast, target: &ForecastTarget) -> CustomerForecast {
    forecast.customer = target.customer.clone();
    forecast.wave = target.wave.clone();
    forecast.running = target.running.clone();
    forecast.through = target.through.clone();
    forecast.cached = true;
    forecast.seconds = 0.0;
    forecast
}

impl<'a> Prepared<'a> {
    fn load(
        witness: &'a Witness,
        indexes: &dyn ReleaseIndexes,
        bundles: &dyn ReleaseSource,
        candidate: &'a Candidate,
        targets: &ForecastTargets,
    ) -> Prepared<'a> {
        let through: BTreeMap<Version, _> = targets
            .customers
            .iter()
            .flat_map(|t| t.through.iter())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|v| {
                (
                    v.clone(),
                    source::through_hop(indexes, bundles, candidate, v),
                )
            })
            .collect();
        let mut wanted: BTreeSet<(String, Version, Digest)> = BTreeSet::new();
        let hops = std::iter::once(&candidate.hop).chain(through.values().flatten());
        for stack in hops.flat_map(|h| h.stacks.iter()) {
            wanted.insert((
                stack.name.clone(),
                stack.version.clone(),
                stack.digest.clone(),
            ));
        }
        for running in targets.customers.iter().flat_map(|t| t.stacks.iter()) {
            wanted.insert((
                running.stack.clone(),
                running.version.clone(),
                running.digest.clone(),
            ));
        }
        let loaded = wanted
            .into_iter()
            .map(|(name, version, digest)| {
                let bundle = load_bundle(witness, bundles, &name, &version, &digest);
                ((name, version, digest), bundle.map(Arc::new))
            })
            .collect();
        let stacks: BTreeSet<&str> = std::iter::once(&candidate.hop)
            .chain(through.values().flatten())
            .flat_map(|h| h.stacks.iter().map(|s| s.name.as_str()))
            .chain(
                targets
                    .customers
                    .iter()
                    .flat_map(|t| t.stacks.iter().map(|s| s.stack.as_str())),
            )
            .collect();
        let inputs = stacks
            .into_iter()
            .map(|stack| {
                let files = crate::impact::customer_files(witness.root(), stack);
                (stack.to_string(), files.into_iter().collect())
            })
            .collect();
        Prepared {
            witness,
            candidate,
            through,
            bundles: loaded,
            inputs,
            engine: cache::engine_identity(&witness.engine().path),
            account: witness.account().describe(),
        }
    }

    fn step(&self, stack: &HopStack) -> std::result::Result<Step, String> {
        let key = (
            stack.name.clone(),
            stack.version.clone(),
            stack.digest.clone(),
        );
        match self.bundles.get(&key) {
            Some(Ok(bundle)) => Ok(Step {
                stack: stack.clone(),
                bundle: bundle.clone(),
            }),
            Some(Err(reason)) => Err(reason.clone()),
            None => Err(format!(
                "bundle `{}@{}` was not read",
                stack.name, stack.version
            )),
        }
    }

    /// `target`'s job, or why it cannot run (skipped, not forecast).
    fn job(
        &self,
        index: usize,
        target: &ForecastTarget,
    ) -> std::result::Result<Job, (ForecastOutcome, String)> {
        let mut hops: Vec<&Hop> = Vec::new();
        for version in &target.through {
            match &self.through[version] {
                Ok(hop) => hops.push(hop),
                Err(reason) => return Err((ForecastOutcome::NotForecast, reason.clone())),
            }
        }
        hops.push(&self.candidate.hop);
        let running = running_stacks(&self.candidate.hop, target);
        let not_forecast = |reason: String| (ForecastOutcome::NotForecast, reason);
        let running: Vec<Step> = running
            .iter()
            .map(|s| self.step(s))
            .collect::<std::result::Result<_, _>>()
            .map_err(not_forecast)?;
        let path: Vec<Vec<Step>> = hops
            .iter()
            .map(|hop| hop.stacks.iter().map(|s| self.step(s)).collect())
            .collect::<std::result::Result<_, _>>()
            .map_err(not_forecast)?;
        let stacks: BTreeSet<&str> = running
            .iter()
            .chain(path.iter().flatten())
            .map(|s| s.stack.name.as_str())
            .collect();
        let mut inputs = BTreeMap::new();
        for stack in stacks {
            let Some(file) = self.inputs.get(stack).and_then(|c| c.get(&target.customer)) else {
                return Err((
                    ForecastOutcome::Skipped,
                    format!(
                        "no inputs file `customers/{}/{stack}.tfvars`",
                        target.customer
                    ),
                ));
            };
            inputs.insert(stack.to_string(), file.clone());
        }
        Ok(self.finish_job(index, running, path, inputs))
    }

    fn finish_job(
        &self,
        index: usize,
        running: Vec<Step>,
        path: Vec<Vec<Step>>,
        inputs: BTreeMap<String, String>,
    ) -> Job {
        let root = self.witness.root();
        let mut inputs_set = BTreeSet::new();
        let mut hashed = Vec::new();
        for (stack, file) in &inputs {
            inputs_set.extend(crate::witness::set_inputs(&root.join(file)));
            let bytes = std::fs::read(root.join(file)).unwrap_or_default();
            hashed.push((stack.as_str(), Digest::of(&bytes)));
        }
        let pairs = |steps: &[Step]| -> Vec<(String, Digest)> {
            steps
                .iter()
                .map(|s| (s.stack.name.clone(), s.stack.digest.clone()))
                .collect()
        };
        let running_pairs = pairs(&running);
        let path_pairs: Vec<Vec<(String, Digest)>> = path.iter().map(|h| pairs(h)).collect();
        let key = cache::CacheKey {
            running: running_pairs.iter().map(|(s, d)| (s.as_str(), d)).collect(),
            path: path_pairs
                .iter()
                .map(|h| h.iter().map(|(s, d)| (s.as_str(), d)).collect())
                .collect(),
            inputs: hashed,
            engine: &self.engine,
            account: &self.account,
        }
        .digest();
        Job {
            index,
            running,
            path,
            inputs: inputs.into_iter().map(|(s, f)| (s, root.join(f))).collect(),
            inputs_set: inputs_set.into_iter().collect(),
            key,
        }
    }

    /// Runs `jobs` on `parallel` threads; each with its forecast.
    fn run<'j>(
        &self,
        jobs: &[&'j Job],
        parallel: usize,
        targets: &[ForecastTarget],
    ) -> Vec<(&'j Job, CustomerForecast)> {
        let next = AtomicUsize::new(0);
        let done = Mutex::new(Vec::new());
        let plugins = PluginCache::default();
        let progress = std::io::stderr().is_terminal();
        std::thread::scope(|scope| {
            for _ in 0..parallel.max(1).min(jobs.len()) {
                scope.spawn(|| {
                    while let Some(job) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let forecast = self.customer(job, &targets[job.index], &plugins);
                        if progress {
                            stackpack_terminal::status(&render::progress_line(&forecast));
                        }
                        done.lock()
                            .expect("no worker panics")
                            .push((*job, forecast));
                    }
                });
            }
        });
        done.into_inner().expect("no worker panics")
    }

    fn customer(
        &self,
        job: &Job,
        target: &ForecastTarget,
        plugins: &PluginCache,
    ) -> CustomerForecast {
        let started = Instant::now();
        let dir = self
            .witness
            .scratch()
            .join("forecast")
            .join(format!("{}-{}", job.index, target.customer));
        let session = self.witness.account().session(&target.customer);
        let mut path = CustomerPath::new(self.witness.engine(), plugins, session, &job.inputs, dir);
        let walked = walk(&mut path, job, target);
        // The forecast is known here; what follows is cleaning the account.
        // To the millisecond: a shorter decimal reads back as the same number, so the
        // JSON the registry keeps and gives back equals what was sent.
        let seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let left = path.destroy();
        let (stacks, failure) = walked;
        let outcome = match &failure {
            Some(_) => ForecastOutcome::NotForecast,
            None => stacks
                .iter()
                .map(|s| s.outcome)
                .max()
                .unwrap_or(ForecastOutcome::NoChange),
        };
        if let Some(left) = left {
            stackpack_terminal::warning(&format!(
                "could not destroy what the forecast applied for `{}` in the {}: {}",
                target.customer,
                self.account,
                path::reason(&left)
            ));
        }
        CustomerForecast {
            customer: target.customer.clone(),
            wave: target.wave.clone(),
            running: target.running.clone(),
            through: target.through.clone(),
            outcome,
            stacks,
            inputs_set: job.inputs_set.clone(),
            reason: failure.map(|f| path::reason(&f)),
            cached: false,
            seconds,
        }
    }
}

/// Applies what the customer runs, then each step; the last step's forecasts, and
/// the failure that stopped the walk, if one did.
fn walk(
    path: &mut CustomerPath,
    job: &Job,
    target: &ForecastTarget,
) -> (Vec<StackForecast>, Option<String>) {
    for step in &job.running {
        if let Err(e) = path.apply(0, step) {
            return (Vec::new(), Some(e));
        }
    }
    let mut stacks = Vec::new();
    let last = job.path.len() - 1;
    for (hop, steps) in job.path.iter().enumerate() {
        for step in steps {
            match path.plan(hop + 1, step, hop == last) {
                Ok(Some(planned)) => stacks.push(stack_forecast(step, planned, target)),
                Ok(None) => {}
                Err(e) => return (stacks, Some(e)),
            }
        }
    }
    (stacks, None)
}

fn stack_forecast(step: &Step, planned: path::Planned, target: &ForecastTarget) -> StackForecast {
    let running = target.stacks.iter().find(|s| s.stack == step.stack.name);
    let actions: Vec<PlannedChange> = planned.changes.iter().map(PlannedChange::from).collect();
    StackForecast {
        stack: step.stack.name.clone(),
        from: running.map(|r| r.version.clone()),
        from_digest: running.map(|r| r.digest.clone()),
        to: step.stack.version.clone(),
        to_digest: step.stack.digest.clone(),
        outcome: ForecastOutcome::of(planned.changes.iter().map(|c| &c.action)),
        changes_digest: plan::changes_digest(&actions),
        stateful: stateful(&planned.json, &step.bundle, &planned.changes),
        changes: planned.changes,
    }
}

/// What `target` runs, in the candidate's apply order (what the candidate does not
/// name last), wired as the candidate wires it: the ledger names versions, not the
/// wiring of the release they came in, and wiring changes are rare and additive.
fn running_stacks(candidate: &Hop, target: &ForecastTarget) -> Vec<HopStack> {
    let position = |name: &str| {
        candidate
            .stacks
            .iter()
            .position(|s| s.name == name)
            .unwrap_or(usize::MAX)
    };
    let mut running: Vec<HopStack> = target
        .stacks
        .iter()
        .map(|r| HopStack {
            name: r.stack.clone(),
            version: r.version.clone(),
            digest: r.digest.clone(),
            inputs_from: candidate
                .stacks
                .iter()
                .find(|s| s.name == r.stack)
                .map(|s| s.inputs_from.clone())
                .unwrap_or_default(),
        })
        .collect();
    running.sort_by_key(|s| position(&s.name));
    running
}

/// A bundle rebuilt from git, checked against the digest the ledger (or the release
/// index) pins; why not, in words.
fn load_bundle(
    witness: &Witness,
    source: &dyn ReleaseSource,
    name: &str,
    version: &Version,
    digest: &Digest,
) -> std::result::Result<Bundle, String> {
    let release = match source.release(name, version) {
        Ok(Some(release)) => release,
        Ok(None) => {
            return Err(format!(
                "bundle `{name}@{version}` is not in {}",
                source.describe()
            ))
        }
        Err(e) => {
            return Err(format!(
                "cannot read bundle `{name}@{version}`: {}",
                e.message
            ))
        }
    };
    if &release.manifest_digest != digest {
        return Err(format!(
            "the ledger says `{name}@{version}` is `{digest}`, but {} holds `{}`",
            source.describe(),
            release.manifest_digest
        ));
    }
    let input = witness.account().required_input();
    let takes_account_input = release
        .config
        .interface
        .inputs
        .iter()
        .any(|i| i.name == input);
    // A stack with providers but no way to point them at the account could reach a
    // real one; a stack without providers reaches nothing.
    if !takes_account_input && !release.config.providers.is_empty() {
        return Err(format!(
            "stack `{name}@{version}` uses providers but has no input `{input}`: the forecast cannot hold it to the {}",
            witness.account().describe()
        ));
    }
    let files = crate::witness::release_files(witness.root(), name, &release).map_err(|e| {
        format!(
            "cannot rebuild `{name}@{version}` (`{digest}`) from git: {}",
            e.message
        )
    })?;
    Ok(Bundle {
        digest: digest.clone(),
        entrypoint: release.config.entrypoint.clone(),
        files,
        takes_account_input,
    })
}
