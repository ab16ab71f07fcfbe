//! A vendor and its customers' runners, as the fleet scenarios (rollout, forecast)
//! drive them: the vendor's `stackpack` against our registry, each customer a runner
//! home of its own with the real Terraform, syncing from the registry's assignment.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stackpack_test_support::servers::OurRegistry;
use stackpack_test_support::vendor::FixtureVendor;
use stackpack_test_support::{binary, terraform, Run};

/// A fixture's vendor, publishing release `release` into `namespace`.
pub struct Vendor {
    pub fixture: FixtureVendor,
    pub namespace: &'static str,
    pub release: &'static str,
}

impl std::ops::Deref for Vendor {
    type Target = FixtureVendor;

    fn deref(&self) -> &FixtureVendor {
        &self.fixture
    }
}

impl Vendor {
    pub fn new(fixture: &str, namespace: &'static str, release: &'static str) -> Vendor {
        Vendor {
            fixture: FixtureVendor::new(fixture),
            namespace,
            release,
        }
    }

    /// `HOST/NAMESPACE` of `registry`, as `--registry` takes it.
    pub fn at(&self, registry: &OurRegistry) -> String {
        format!("{}/{}", registry.host(), self.namespace)
    }

    pub fn stackpack(&self, registry: &OurRegistry, args: &[&str]) -> Run {
        self.stackpack_with(registry, args, &[])
    }

    pub fn stackpack_with(
        &self,
        registry: &OurRegistry,
        args: &[&str],
        env: &[(&str, String)],
    ) -> Run {
        run(Command::new(binary("stackpack"))
            .current_dir(&self.repo)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token()))
    }

    /// `stackpack publish`; the version it gave the release.
    pub fn publish(&self, registry: &OurRegistry) -> String {
        self.publish_with(registry, &[])
    }

    pub fn publish_with(&self, registry: &OurRegistry, env: &[(&str, String)]) -> String {
        let namespace = self.at(registry);
        let key = self.key.to_str().unwrap();
        let report = self
            .stackpack_with(
                registry,
                &[
                    "publish",
                    "--json",
                    "--insecure",
                    "--registry",
                    &namespace,
                    "--key",
                    key,
                ],
                env,
            )
            .ok()
            .json();
        let release = report["releases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["release"] == self.release && r["published"] == true)
            .unwrap_or_else(|| panic!("{} was not published: {report}", self.release));
        release["version"].as_str().unwrap().to_string()
    }

    /// `stackpack promote RELEASE@VERSION --channel stable`, with `extra` flags.
    pub fn promote(&self, registry: &OurRegistry, version: &str, extra: &[&str]) -> Run {
        let namespace = self.at(registry);
        let target = format!("{}@{version}", self.release);
        let key = self.key.to_str().unwrap();
        let mut args = vec![
            "promote",
            &target,
            "--channel",
            "stable",
            "--registry",
            &namespace,
            "--insecure",
            "--key",
            key,
            "--json",
        ];
        args.extend_from_slice(extra);
        self.stackpack(registry, &args)
    }
}

/// One customer's runner home, with the real Terraform, syncing from its `[sync]`
/// source with `approve = "auto"`.
pub struct Customer {
    pub id: &'static str,
    pub home: PathBuf,
    pub inputs: PathBuf,
    release: &'static str,
    token: String,
    env: Vec<(&'static str, String)>,
}

impl Customer {
    /// A runner home for `id` with `inputs` (file name, text) in its inputs folder;
    /// `env` goes to every run (an emulated account's endpoint and credentials).
    pub fn new(
        vendor: &Vendor,
        registry: &OurRegistry,
        id: &'static str,
        sync: &str,
        inputs: &[(&str, String)],
        env: Vec<(&'static str, String)>,
    ) -> Customer {
        let home = vendor.temp.path().join(format!("home-{id}"));
        let folder = vendor.temp.path().join(format!("inputs-{id}"));
        std::fs::create_dir_all(&folder).unwrap();
        let customer = Customer {
            id,
            home,
            inputs: folder,
            release: vendor.release,
            token: registry.token("customer", Some(id)),
            env,
        };
        for (file, text) in inputs {
            customer.write_input(file, text);
        }
        let engine = terraform();
        customer
            .run(&[
                "init",
                "--customer",
                id,
                "--engine-path",
                engine.to_str().unwrap(),
            ])
            .ok();
        customer
            .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
            .ok();
        let config = customer.home.join("runner.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "\n[sync]\n{sync}\ninputs = \"{}\"\nchannel = \"stable\"\napprove = \"auto\"\n",
            customer.inputs.display()
        ));
        std::fs::write(&config, text).unwrap();
        customer
    }

    pub fn write_input(&self, file: &str, text: &str) {
        std::fs::write(self.inputs.join(file), text).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Run {
        run(Command::new(binary("stackpack-runner"))
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("STACKPACK_RUNNER_HOME", &self.home)
            .env("STACKPACK_REGISTRY_TOKEN", &self.token)
            .env("CHECKPOINT_DISABLE", "1"))
    }

    /// One `sync` pass; the state it reports for the vendor's release and the version
    /// running after it.
    pub fn sync(&self) -> (String, Option<String>, Run) {
        self.sync_with(&[])
    }

    pub fn sync_with(&self, args: &[&str]) -> (String, Option<String>, Run) {
        let pass = self.run(&[&["sync", "--json"], args].concat());
        let json = pass.json();
        let release = json["report"]["releases"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["release"] == self.release).cloned());
        match release {
            Some(release) => (
                release["state"].as_str().unwrap().to_string(),
                release["running"].as_str().map(str::to_string),
                pass,
            ),
            None => ("nothing-assigned".into(), None, pass),
        }
    }
}

pub fn run(command: &mut Command) -> Run {
    Run::from(
        command
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("GITHUB_ACTOR")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap(),
    )
}

/// Waits (on the registry's clock, through its own scheduler) until the newest
/// rollout of `release` satisfies `done`.
pub fn wait_for_rollout(
    registry: &OurRegistry,
    release: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let current = registry.newest_rollout(release);
        if done(&current) {
            return current;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the rollout is {current}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

pub fn state(rollout: &Value) -> &str {
    rollout["state"].as_str().unwrap_or_default()
}

/// Our registry, its scheduler on a tick of a second, channel `stable` in three waves
/// (`canary`, `early`, `general`) with `soak` between them.
pub fn rollout_registry(soak: &str) -> OurRegistry {
    let registry = OurRegistry::start_with(&["--rollout-tick-secs", "1"]);
    registry
        .run(&[
            "channel",
            "set",
            "stable",
            "--waves",
            "canary,early,general",
            "--soak",
            soak,
        ])
        .ok();
    registry
}

/// `customer set ID --channel stable --wave WAVE`.
pub fn place(registry: &OurRegistry, customer: &str, wave: &str) {
    registry
        .run(&[
            "customer",
            "set",
            customer,
            "--channel",
            "stable",
            "--wave",
            wave,
        ])
        .ok();
}
