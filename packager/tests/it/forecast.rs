//! Forecasts against real Terraform and our registry: the two-stack release of
//! `tests/fixtures/rollout-vendor` (base → app, wired), published three times, and
//! customers running different versions of it.
//!
//! The registry's `GET /api/v1/forecast-targets` is built on another branch: these
//! tests hand the library op the `ForecastTargets` value that endpoint answers with,
//! and it reads release indexes and bundles from the registry as the command does.
//! The stacks use only built-in
//! `terraform_data` resources, so no emulator is started: the account is a loopback
//! endpoint nothing listens on, and no provider ever calls it.

use std::path::Path;

use semver::Version;
use stackpack_bundle::remote::{Credentials, RegistryAddress, Remote};
use stackpack_packager::config::RepoConfig;
use stackpack_packager::forecast::source::RegistryIndexes;
use stackpack_packager::forecast::{self, render, source, Options, ReleaseIndexes};
use stackpack_packager::releases::RegistryReleases;
use stackpack_packager::witness::Witness;
use stackpack_schema::forecast::{
    ForecastOutcome, ForecastTarget, ForecastTargets, ReleaseForecast, RunningStack,
};
use stackpack_schema::plan::Action;
use stackpack_test_support::servers::OurRegistry;
use stackpack_test_support::vendor::FixtureVendor;
use stackpack_test_support::{git, Run};

/// The vendor with `shop` built three times: 1 → 2 adds `triggers_replace` to the
/// app (a replacement), 2 → 3 changes the app's `input` (an update in place).
struct Shop {
    vendor: FixtureVendor,
    registry: OurRegistry,
    versions: Vec<Version>,
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn publish(vendor: &FixtureVendor, registry: &OurRegistry) -> Version {
    let run = Run::from(
        std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&vendor.repo)
            .args(["publish", "--json", "--insecure", "--registry"])
            .arg(format!("{}/vendor", registry.host()))
            .arg("--key")
            .arg(&vendor.key)
            .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token())
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    );
    let report = run.ok().json();
    let release = report["releases"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["release"] == "shop" && r["published"] == true)
        })
        .unwrap_or_else(|| panic!("no release `shop` built: {report}"));
    release["version"].as_str().unwrap().parse().unwrap()
}

fn shop() -> Shop {
    let registry = OurRegistry::start();
    let vendor = FixtureVendor::new("rollout-vendor");
    let root = vendor.repo.clone();
    let endpoint = "variable \"aws_endpoint\" {\n  type        = string\n  default     = \"\"\n  description = \"Where the account's API answers.\"\n}\n";
    write(&root, "stacks/base/account.tf", endpoint);
    write(&root, "stacks/app/account.tf", endpoint);
    let config = std::fs::read_to_string(root.join("stackpack.toml")).unwrap();
    let mirror = vendor.temp.path().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    write(
        &root,
        "stackpack.toml",
        &format!(
            "{config}\n[providers]\nmirror = {:?}\n\n[witness]\nendpoint = \"http://127.0.0.1:9\"\nengine = {:?}\nparallel = 3\n",
            mirror.display().to_string(),
            stackpack_test_support::terraform().display().to_string()
        ),
    );
    for (customer, replicas) in [
        ("acme", 2),
        ("acme-copy", 2),
        ("globex", 3),
        ("umbrella", 4),
        ("newco", 1),
    ] {
        write(
            &root,
            &format!("customers/{customer}/base.tfvars"),
            &format!("name = \"{customer}\"\n"),
        );
        write(
            &root,
            &format!("customers/{customer}/app.tfvars"),
            &format!("replicas = {replicas}\n"),
        );
    }
    // `acme-copy` sets what `acme` sets, byte for byte: forecast once.
    write(
        &root,
        "customers/acme-copy/base.tfvars",
        "name = \"acme\"\n",
    );
    // `initech` has no inputs for the app.
    write(
        &root,
        "customers/initech/base.tfvars",
        "name = \"initech\"\n",
    );
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "forecast settings"]);
    let mut versions = vec![publish(&vendor, &registry)];
    vendor.commit(
        "stacks/app/main.tf",
        "  input = \"${var.base_id}:${var.replicas}\"\n",
        "  input = \"${var.base_id}:${var.replicas}\"\n  triggers_replace = \"v2\"\n",
        "the app is replaced",
    );
    versions.push(publish(&vendor, &registry));
    vendor.commit(
        "stacks/app/main.tf",
        "\"${var.base_id}:${var.replicas}\"",
        "\"${var.base_id}/${var.replicas}\"",
        "the app's input changes",
    );
    versions.push(publish(&vendor, &registry));
    Shop {
        vendor,
        registry,
        versions,
    }
}

impl Shop {
    fn remote(&self) -> (Remote, RegistryAddress) {
        let address: RegistryAddress = format!("{}/vendor", self.registry.host()).parse().unwrap();
        let token = Credentials::Bearer(self.registry.publisher_token());
        (
            Remote::with_credentials(&address.host, true, token).unwrap(),
            address,
        )
    }

    /// What a customer running release version `v` runs, as the ledger says.
    fn running(&self, v: usize) -> Vec<RunningStack> {
        let (remote, address) = self.remote();
        let (description, _) = RegistryIndexes {
            remote: &remote,
            address: &address,
        }
        .release_index("shop", &self.versions[v])
        .unwrap()
        .unwrap();
        description
            .stacks
            .iter()
            .map(|s| RunningStack {
                stack: s.name.clone(),
                version: s.version.clone(),
                digest: s.digest.clone(),
            })
            .collect()
    }

    fn target(&self, customer: &str, running: Option<usize>, through: &[usize]) -> ForecastTarget {
        ForecastTarget {
            customer: customer.into(),
            channel: Some("stable".into()),
            wave: Some("early".into()),
            approve: None,
            running: running.map(|v| self.versions[v].clone()),
            stacks: running.map(|v| self.running(v)).unwrap_or_default(),
            through: through.iter().map(|v| self.versions[*v].clone()).collect(),
        }
    }

    fn forecast(&self, targets: &ForecastTargets) -> ReleaseForecast {
        let (remote, address) = self.remote();
        let indexes = RegistryIndexes {
            remote: &remote,
            address: &address,
        };
        let bundles = RegistryReleases {
            remote: &remote,
            address: &address,
        };
        let config = RepoConfig::load(&self.vendor.repo).unwrap();
        let witness = Witness::prepare(&self.vendor.repo, &config).unwrap();
        let candidate = source::candidate(&indexes, &bundles, "shop", &self.versions[2]).unwrap();
        let options = Options {
            parallel: 3,
            cache: true,
        };
        forecast::forecast(&witness, &indexes, &bundles, &candidate, targets, &options).unwrap()
    }
}

fn actions(forecast: &ReleaseForecast, customer: &str, stack: &str) -> Vec<(String, Action)> {
    let customer = forecast.customer(customer).unwrap();
    customer
        .stack(stack)
        .unwrap_or_else(|| panic!("no `{stack}` in {customer:?}"))
        .changes
        .iter()
        .map(|c| (c.address.clone(), c.action))
        .collect()
}

#[test]
fn each_customer_is_forecast_from_the_version_it_runs_and_a_second_forecast_is_cached() {
    let shop = shop();
    let targets = ForecastTargets {
        release: "shop".into(),
        version: shop.versions[2].clone(),
        channel: Some("stable".into()),
        customers: vec![
            shop.target("acme", Some(0), &[]),
            shop.target("acme-copy", Some(0), &[]),
            shop.target("globex", Some(1), &[]),
            shop.target("umbrella", Some(0), &[1]),
            shop.target("initech", Some(0), &[]),
            shop.target("newco", None, &[]),
        ],
    };
    let first = shop.forecast(&targets);
    let outcome = |f: &ReleaseForecast, c: &str| f.customer(c).unwrap().outcome;
    let json = serde_json::to_string_pretty(&first).unwrap();

    // From 1: the app is replaced (the trigger is new); from 2: updated in place.
    assert_eq!(outcome(&first, "acme"), ForecastOutcome::Replace, "{json}");
    assert_eq!(
        actions(&first, "acme", "app"),
        [("terraform_data.app".to_string(), Action::Replace)]
    );
    assert_eq!(actions(&first, "acme", "base"), []);
    assert_eq!(
        outcome(&first, "globex"),
        ForecastOutcome::InPlace,
        "{json}"
    );
    assert_eq!(
        actions(&first, "globex", "app"),
        [("terraform_data.app".to_string(), Action::Update)]
    );
    // Through the required 2, umbrella's last step is globex's: in place.
    assert_eq!(
        outcome(&first, "umbrella"),
        ForecastOutcome::InPlace,
        "{json}"
    );
    assert_eq!(
        first.customer("umbrella").unwrap().through,
        [shop.versions[1].clone()]
    );
    // Nothing running: everything is created.
    assert_eq!(outcome(&first, "newco"), ForecastOutcome::InPlace, "{json}");
    assert_eq!(
        actions(&first, "newco", "base"),
        [("terraform_data.base".to_string(), Action::Create)]
    );
    // No inputs for the app: skipped, the file named.
    let initech = first.customer("initech").unwrap();
    assert_eq!(initech.outcome, ForecastOutcome::Skipped);
    assert_eq!(
        initech.reason.as_deref(),
        Some("no inputs file `customers/initech/app.tfvars`")
    );
    // The same bundles and inputs bytes: forecast once, copied.
    let copy = first.customer("acme-copy").unwrap();
    assert!(
        copy.cached && copy.outcome == ForecastOutcome::Replace,
        "{json}"
    );
    assert!(!first.customer("acme").unwrap().cached);

    // The table: destructive first, then the summary line; JSON round-trips.
    let table = render::human(&first);
    assert!(table.contains("customer"), "{table}");
    assert!(
        table.contains("replace app: terraform_data.app (input, triggers_replace)"),
        "{table}"
    );
    assert!(
        table.contains("replace `app: terraform_data.app`")
            && table.contains("skipped (no inputs file"),
        "{table}"
    );
    let back: ReleaseForecast = serde_json::from_str(&json).unwrap();
    assert_eq!(back, first);
    assert_eq!(render::unknown(&first).len(), 1);

    // A second forecast of the same pairs is read from the cache.
    let started = std::time::Instant::now();
    let second = shop.forecast(&targets);
    assert!(started.elapsed().as_secs_f64() < 5.0);
    for customer in &second.customers {
        let before = first.customer(&customer.customer).unwrap();
        assert_eq!(customer.outcome, before.outcome);
        assert_eq!(customer.stacks, before.stacks);
        assert_eq!(customer.cached, customer.outcome.is_known(), "{customer:?}");
    }
}

#[test]
fn a_running_bundle_the_registry_holds_under_another_digest_is_not_forecast_and_named() {
    let shop = shop();
    let mut target = shop.target("acme", Some(0), &[]);
    let wrong = stackpack_schema::digest::Digest::of(b"not the bundle");
    target.stacks[0].digest = wrong.clone();
    let forecast = shop.forecast(&ForecastTargets {
        release: "shop".into(),
        version: shop.versions[2].clone(),
        channel: None,
        customers: vec![target],
    });
    let acme = forecast.customer("acme").unwrap();
    assert_eq!(acme.outcome, ForecastOutcome::NotForecast);
    let reason = acme.reason.as_deref().unwrap();
    assert!(reason.contains(&format!("`{wrong}`")), "{reason}");
}

#[test]
fn a_registry_that_cannot_be_reached_or_refuses_the_token_is_a_failure_with_a_hint() {
    let shop = shop();
    let port = stackpack_test_support::free_port();
    let forecast = |registry: &str, token: String| {
        Run::from(
            std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
                .current_dir(&shop.vendor.repo)
                .args([
                    "forecast",
                    &format!("shop@{}", shop.versions[2]),
                    "--registry",
                    registry,
                    "--insecure",
                    "--no-send",
                ])
                .env("STACKPACK_REGISTRY_TOKEN", token)
                .env("NO_COLOR", "1")
                .output()
                .unwrap(),
        )
    };
    // A token that may not read the ledger (a customer's) is refused, and said so
    // before anything is planned.
    let customer = shop.registry.token("customer", Some("acme"));
    let refused = forecast(&format!("{}/vendor", shop.registry.host()), customer);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("/api/v1/forecast-targets"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("STACKPACK_REGISTRY_TOKEN"),
        "{}",
        refused.stderr
    );
    let run = Run::from(
        std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&shop.vendor.repo)
            .args([
                "forecast",
                &format!("shop@{}", shop.versions[2]),
                "--registry",
                &format!("127.0.0.1:{port}/shop"),
                "--insecure",
                "--no-send",
            ])
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}
