//! The README's tour, run on the example (issue 23, item 23): every command its two
//! tour blocks show is run as written, on a copy of `examples/acme-infra`, with only
//! what names this machine put in (the registry's address and `--insecure`, since it
//! is plain HTTP on loopback; the versions the example really gets; the tokens; the
//! data folder). A line the README adds or changes fails this test until it runs.
//! Steps the tour leaves to the reader (the `[witness]` table, filling a new
//! customer's placeholders, a second release to roll back from) are done between,
//! as the README's own comments say.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use stackpack_test_support::servers::{free_port, wait_for_port, Moto, Postgres};
use stackpack_test_support::{
    binary, copy_dir, example_dir, git, repository_root, terraform, use_provider_mirror, Run,
};

/// Every command of the README's tour blocks, comments removed, `a && b` split.
fn tour_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).unwrap();
    let mut lines = Vec::new();
    let mut in_tour = false;
    for line in readme.lines() {
        if line.starts_with("## Quick tour") {
            in_tour = true;
        } else if line.starts_with("## ") {
            in_tour = false;
        }
        let code = line.split("   #").next().unwrap_or(line);
        let code = code.split(" # ").next().unwrap_or(code).trim();
        if in_tour && code.starts_with("stackpack") {
            lines.extend(code.split(" && ").map(|c| c.trim().to_string()));
        }
    }
    assert!(lines.len() > 20, "the tour was not found: {lines:?}");
    lines
}

/// Splits a command line into words; `"…"` holds spaces.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The tour on this machine.
struct Tour {
    _work: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    data: PathBuf,
    port: u16,
    moto: Moto,
    /// README text → what it is here.
    here: Vec<(String, String)>,
    /// The README lines run, as written.
    ran: BTreeSet<String>,
    registry: Option<Child>,
}

impl Tour {
    fn new() -> Tour {
        use_provider_mirror();
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("acme-infra");
        copy_dir(&example_dir(), &repo);
        std::fs::write(
            repo.join(".gitignore"),
            ".stackpack/\nci.key\nci.pub\nvendor.pub\n*.tar\nreviewed.plan\n",
        )
        .unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "initial"]);
        let port = free_port();
        let data = work.path().join("registry-data");
        Tour {
            home: work.path().join("runner-home"),
            repo,
            data: data.clone(),
            port,
            moto: Moto::start(),
            here: vec![
                (
                    "https://registry.acme.example".into(),
                    format!("http://127.0.0.1:{port}"),
                ),
                (
                    "registry.acme.example/acme/stacks/data-plane:1.4.0".into(),
                    format!("127.0.0.1:{port}/acme/stacks/data-plane:0.1.0 --insecure"),
                ),
                (
                    "registry.acme.example/acme/releases/environment:2.3.0".into(),
                    format!("127.0.0.1:{port}/acme/releases/environment:0.1.0 --insecure"),
                ),
                (
                    "registry.acme.example/acme".into(),
                    format!("127.0.0.1:{port}/acme --insecure"),
                ),
                ("@1.4.0".into(), "@0.1.0".into()),
                ("@2.3.0".into(), "@0.1.0".into()),
                ("/srv/stackpack".into(), data.display().to_string()),
                ("0.0.0.0:5000".into(), format!("127.0.0.1:{port}")),
                (
                    "--inputs data-plane.tfvars".into(),
                    "--inputs customers/globex/data-plane.tfvars".into(),
                ),
            ],
            ran: BTreeSet::new(),
            registry: None,
            _work: work,
        }
    }

    /// Runs the README line `line` (as written, put on this machine), expecting
    /// success; records it as run.
    fn run(&mut self, line: &str) -> Run {
        let mut text = line.to_string();
        for (from, to) in &self.here {
            text = text.replace(from.as_str(), to);
        }
        let words = words(&text);
        let mut command = self.command(&words[0]);
        command.args(&words[1..]);
        let run = Run::from(command.output().unwrap());
        assert_eq!(
            run.code, 0,
            "`{line}` (`{text}`) failed:\n{}\n{}",
            run.stdout, run.stderr
        );
        self.ran.insert(line.to_string());
        run
    }

    /// One of the three programs, run in the repository, with the runner's home, the
    /// engine on `PATH` and the emulated account's credentials.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(binary(program));
        let engine_dir = terraform().parent().unwrap().to_path_buf();
        let path = format!(
            "{}:{}",
            engine_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .current_dir(&self.repo)
            .env("PATH", path)
            .env("STACKPACK_RUNNER_HOME", &self.home)
            .env("STACKPACK_WITNESS_ENDPOINT", &self.moto.url)
            // The emulated account's KMS, for `stackpack key public awskms:///…`.
            .env("AWS_ENDPOINT_URL_KMS", &self.moto.url)
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .envs(self.moto.env())
            .stdin(Stdio::null());
        command
    }

    /// `serve`, as the README writes it, on `port`, until the tour ends (or the
    /// next `serve`, which stops this one).
    fn serve(&mut self, line: &str, port: u16) {
        self.stop_registry();
        let mut text = line.to_string();
        for (from, to) in &self.here {
            text = text.replace(from.as_str(), to);
        }
        let words = words(&text);
        let child = self
            .command(&words[0])
            .args(&words[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.registry = Some(child);
        wait_for_port(port);
        self.ran.insert(line.to_string());
    }

    fn stop_registry(&mut self) {
        if let Some(mut child) = self.registry.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `stackpack-registry token create`: a token of `role`.
    fn token(&self, role: &str, customer: Option<&str>) -> String {
        let mut args = vec!["token", "create", "--role", role, "--json", "--data"];
        let data = self.data.display().to_string();
        args.push(&data);
        if let Some(customer) = customer {
            args.extend(["--customer", customer]);
        }
        let run = Run::from(
            self.command("stackpack-registry")
                .args(&args)
                .output()
                .unwrap(),
        )
        .ok();
        run.json()["token"].as_str().unwrap().to_string()
    }

    fn commit(&self, message: &str) {
        git(&self.repo, &["add", "-A"]);
        git(&self.repo, &["commit", "-q", "-m", message]);
    }

    /// Runs every README line starting with `prefix`, in README order.
    fn run_all(&mut self, lines: &[String], prefix: &str) {
        for line in lines.iter().filter(|l| l.starts_with(prefix)) {
            self.run(line);
        }
    }
}

impl Drop for Tour {
    fn drop(&mut self) {
        self.stop_registry();
    }
}

/// `customers/hooli/data-plane.tfvars` with its placeholders filled, as
/// `customer new` asks.
fn fill_placeholders(repo: &Path) {
    let path = repo.join("customers/hooli/data-plane.tfvars");
    let text = std::fs::read_to_string(&path).unwrap();
    let filled: Vec<String> = text
        .lines()
        .map(|line| {
            let Some((name, value)) = line.split_once(" = ") else {
                return line.to_string();
            };
            if !value.contains("<fill in") {
                return line.to_string();
            }
            let value = match name.trim() {
                "account_id" => "\"444455556666\"",
                "kubernetes_version" => "\"1.30\"",
                _ => "\"us-east-1\"",
            };
            format!("{name} = {value}")
        })
        .collect();
    std::fs::write(&path, filled.join("\n") + "\n").unwrap();
}

#[test]
fn every_command_of_the_readme_tour_runs_on_the_example() {
    let lines = tour_lines();
    let mut tour = Tour::new();
    let find = |start: &str| -> String {
        lines
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in the tour"))
            .clone()
    };
    let port = tour.port;
    tour.serve(&find("stackpack-registry serve"), port);
    let publisher = tour.token("publisher", None);
    let customer = tour.token("customer", Some("globex"));
    let support = tour.token("support", None);
    tour.here.push(("$TOKEN".into(), customer));
    tour.here.push(("$SUPPORT_TOKEN".into(), support));

    // The signing key the tour names in KMS (`alias/ci`), made in the emulated
    // account as `docs/publishing.md` makes it with the AWS CLI.
    tour.moto
        .python(
            "import boto3\n\
             kms = boto3.client('kms', endpoint_url=ENDPOINT, region_name='us-east-1')\n\
             key = kms.create_key(KeySpec='ECC_NIST_P256', KeyUsage='SIGN_VERIFY')['KeyMetadata']['KeyId']\n\
             kms.create_alias(AliasName='alias/ci', TargetKeyId=key)\n",
        )
        .ok();

    // The vendor, in README order; `[witness]` is the reader's to add.
    for line in lines
        .iter()
        .take_while(|l| !l.starts_with("stackpack check --witness"))
    {
        tour.run(line);
    }
    let kms_pub = std::fs::read_to_string(tour.repo.join("kms.pub")).unwrap();
    assert!(
        kms_pub.starts_with("-----BEGIN PUBLIC KEY-----"),
        "{kms_pub}"
    );
    let config = std::fs::read_to_string(tour.repo.join("stackpack.toml")).unwrap();
    std::fs::write(
        tour.repo.join("stackpack.toml"),
        format!("{config}\n[witness]\nsample = 1\n"),
    )
    .unwrap();
    tour.commit("witness: the emulator CI starts");
    tour.run(&find("stackpack check --witness"));
    tour.run(&find("stackpack customer new"));
    fill_placeholders(&tour.repo);
    tour.commit("hooli's inputs");
    let publish = find("stackpack publish");
    std::env::set_var("STACKPACK_REGISTRY_TOKEN", &publisher);
    tour.run(&publish);
    tour.run_all(&lines, "stackpack export");

    // The customer.
    for line in lines.iter().filter(|l| l.starts_with("stackpack-runner")) {
        if line.starts_with("stackpack-runner trust add") {
            std::fs::copy(tour.repo.join("ci.pub"), tour.repo.join("vendor.pub")).unwrap();
        }
        if line.starts_with("stackpack-runner pull registry.acme.example/acme/releases") {
            // The one-stack data plane makes way for the release's stacks.
            Run::from(
                tour.command("stackpack-runner")
                    .args(["destroy", "data-plane", "--confirm", "globex"])
                    .output()
                    .unwrap(),
            )
            .ok();
        }
        if line.starts_with("stackpack-runner rollback") {
            second_release(&tour);
        }
        tour.run(line);
    }
    // The embedded registry's views (the production layout's come after the move).
    let embedded: Vec<&String> = lines
        .iter()
        .filter(|l| {
            (l.starts_with("stackpack-registry fleet")
                || l.starts_with("stackpack-registry release"))
                && !l.contains("--config")
        })
        .collect();
    for line in embedded {
        tour.run(line);
    }
    production_layout(&mut tour, &lines);

    let missed: Vec<&String> = lines.iter().filter(|l| !tour.ran.contains(*l)).collect();
    assert!(missed.is_empty(), "tour lines never run: {missed:#?}");
}

/// The tour's production block on this machine: the embedded registry stopped, its
/// data moved by `migrate --to` into a PostgreSQL cluster of the test's own and a
/// bucket in moto's S3 (the S3 emulator), a replica served from the configuration
/// file the README names, and the fleet read through that file answering exactly
/// as the embedded registry did.
fn production_layout(tour: &mut Tour, lines: &[String]) {
    let find = |start: &str| -> String {
        lines
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in the tour"))
            .clone()
    };
    let data = tour.data.display().to_string();
    let fleet_json = |tour: &Tour, place: &[&str]| -> serde_json::Value {
        let mut command = tour.command("stackpack-registry");
        command.args(["fleet", "--behind", "--json"]).args(place);
        Run::from(command.output().unwrap()).ok().json()
    };
    let before = fleet_json(tour, &["--data", &data]);
    tour.stop_registry();

    let postgres = Postgres::start();
    tour.moto
        .python(
            "import boto3\nboto3.client('s3', endpoint_url=ENDPOINT, region_name='us-east-1').create_bucket(Bucket='acme-registry')",
        )
        .ok();
    let replica_port = free_port();
    let config = tour.repo.parent().unwrap().join("registry.toml");
    std::fs::write(
        &config,
        format!(
            "data = {:?}\ndatabase = {:?}\nblobs = \"s3://acme-registry/prod\"\ns3-endpoint = {:?}\ns3-region = \"us-east-1\"\n",
            tour.repo.parent().unwrap().join("replica-1").display().to_string(),
            postgres.url(),
            tour.moto.url,
        ),
    )
    .unwrap();
    let bucket = format!(
        "s3://acme-registry/prod --s3-endpoint {} --s3-region us-east-1",
        tour.moto.url
    );
    tour.here.extend([
        (
            "postgres://stackpack@db.acme.internal/registry".to_string(),
            postgres.url(),
        ),
        ("s3://acme-registry/prod".to_string(), bucket),
        (
            "/etc/stackpack/registry.toml".to_string(),
            config.display().to_string(),
        ),
        (
            "0.0.0.0:5001".to_string(),
            format!("127.0.0.1:{replica_port}"),
        ),
    ]);
    tour.run(&find("stackpack-registry migrate"));
    tour.serve(&find("stackpack-registry serve --config"), replica_port);
    tour.run(&find("stackpack-registry fleet --config"));
    let config = config.display().to_string();
    assert_eq!(fleet_json(tour, &["--config", &config]), before);
    // A new runner pulls and verifies from the replica what was pushed to the
    // embedded registry: its blobs now come from the bucket.
    let home = tour.repo.parent().unwrap().join("new-runner-home");
    let reference = format!("127.0.0.1:{replica_port}/acme/stacks/data-plane:0.1.0");
    let vendor_key = tour.repo.join("vendor.pub").display().to_string();
    for args in [
        vec!["init", "--customer", "globex"],
        vec!["trust", "add", vendor_key.as_str()],
        vec!["pull", reference.as_str(), "--insecure"],
    ] {
        let run = Run::from(
            tour.command("stackpack-runner")
                .env("STACKPACK_RUNNER_HOME", &home)
                .args(&args)
                .output()
                .unwrap(),
        )
        .ok();
        if args[0] == "pull" {
            assert!(
                format!("{}{}", run.stdout, run.stderr).contains("data-plane"),
                "{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
}

/// A second release of the environment (gpu-pools changed), published and applied,
/// so that the tour's rollback has a version to go back to.
fn second_release(tour: &Tour) {
    let path = tour.repo.join("stacks/gpu-pools/main.tf");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n# second release\n")).unwrap();
    tour.commit("gpu-pools: a second release");
    let registry = format!("127.0.0.1:{}/acme", tour.port);
    Run::from(
        tour.command("stackpack")
            .args([
                "publish",
                "--registry",
                &registry,
                "--insecure",
                "--key",
                "ci.key",
            ])
            .output()
            .unwrap(),
    )
    .ok();
    let reference = format!("{registry}/releases/environment:0.1.1");
    for args in [
        vec!["pull", reference.as_str(), "--insecure"],
        vec![
            "apply",
            "environment@0.1.1",
            "--inputs-dir",
            "customers/globex",
            "--yes",
        ],
    ] {
        Run::from(
            tour.command("stackpack-runner")
                .args(&args)
                .output()
                .unwrap(),
        )
        .ok();
    }
}
