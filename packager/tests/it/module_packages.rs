//! Modules published as OpenTofu module packages, against a real CNCF Distribution
//! (Debian's `docker-registry`) on 127.0.0.1: every module pushed once, nothing on a
//! re-run, only the changed module's next version after a change, versions from the
//! interface checker, the zip identical across builds, and the Python `oras` client
//! pulling what we pushed.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::servers::Distribution;
use common::TestRepo;
use stackpack_bundle::remote::{Credentials, Remote};
use stackpack_schema::oci::ImageManifest;

const MODULES: [&str; 4] = ["cluster", "gpu-pool", "model-bucket", "network"];

fn publish(repo: &TestRepo, host: &str, namespace: &str, extra: &[&str]) -> serde_json::Value {
    let registry = format!("{host}/{namespace}");
    let mut args = vec![
        "publish",
        "--json",
        "--insecure",
        "--registry",
        &registry,
        "--key",
        repo.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    repo.run(&args).ok().json()
}

/// `module -> version` for the modules a publish pushed.
fn published_modules(report: &serde_json::Value) -> BTreeMap<String, String> {
    report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["published"] == true)
        .map(|m| {
            (
                m["module"].as_str().unwrap().to_string(),
                m["version"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn remote(host: &str) -> Remote {
    Remote::with_credentials(host, true, Credentials::Anonymous).unwrap()
}

fn manifest(host: &str, repository: &str, tag: &str) -> ImageManifest {
    let (bytes, _) = remote(host)
        .pull_manifest(repository, tag)
        .unwrap()
        .unwrap_or_else(|| panic!("{repository}:{tag} is missing"));
    serde_json::from_slice(&bytes).unwrap()
}

/// The module's tracked files, relative to its folder, with their contents.
fn module_files(repo: &TestRepo, module: &str) -> BTreeMap<String, Vec<u8>> {
    let dir = repo.dir.join("modules").join(module);
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        files.insert(
            entry.file_name().to_string_lossy().into_owned(),
            std::fs::read(entry.path()).unwrap(),
        );
    }
    files
}

fn unzip(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut files = BTreeMap::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).unwrap();
        files.insert(file.name().unwrap().into_owned(), bytes);
    }
    files
}

/// A registry, a repository, and every module published once at `0.1.0`.
fn published_once() -> (Distribution, TestRepo, serde_json::Value) {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let first = publish(&repo, &registry.host(), "acme", &[]);
    (registry, repo, first)
}

#[test]
fn every_module_is_published_once_as_an_opentofu_module_package() {
    let (registry, _repo, first) = published_once();
    let host = registry.host();
    let expected: BTreeMap<String, String> = MODULES
        .iter()
        .map(|m| (m.to_string(), "0.1.0".to_string()))
        .collect();
    assert_eq!(published_modules(&first), expected, "{first:#}");
    for module in MODULES {
        let repository = format!("acme/modules/{module}");
        let manifest = manifest(&host, &repository, "0.1.0");
        assert_eq!(
            manifest.artifact_type.as_deref(),
            Some("application/vnd.opentofu.modulepkg")
        );
        assert_eq!(
            manifest.config.media_type,
            "application/vnd.oci.empty.v1+json"
        );
        assert_eq!(manifest.config.size, 2);
        assert_eq!(manifest.layers.len(), 1);
        assert_eq!(manifest.layers[0].media_type, "archive/zip");
        for key in ["version", "revision", "source", "created", "title"] {
            assert!(
                manifest
                    .annotation(&format!("org.opencontainers.image.{key}"))
                    .is_some(),
                "{module}: no {key} annotation"
            );
        }
        assert!(manifest.annotation("dev.stackpack.tree-digest").is_some());
        assert_eq!(
            manifest.annotation("org.opencontainers.image.title"),
            Some(module)
        );
    }
}

#[test]
fn republishing_the_same_commit_publishes_no_module() {
    let (registry, repo, _) = published_once();
    let again = publish(&repo, &registry.host(), "acme", &[]);
    assert!(published_modules(&again).is_empty(), "{again:#}");
    for module in again["modules"].as_array().unwrap() {
        assert_eq!(module["version"], "0.1.0");
        assert!(
            module["reason"].as_str().unwrap().starts_with("unchanged"),
            "{module}"
        );
    }
}

#[test]
fn only_a_changed_module_moves_by_the_bump_its_interface_needs() {
    let (registry, repo, _) = published_once();
    let host = registry.host();

    // A comment in one module: only that module moves, by a patch.
    let variables = std::fs::read_to_string(repo.dir.join("modules/network/variables.tf")).unwrap();
    repo.write(
        "modules/network/variables.tf",
        &format!("{variables}\n# The network's inputs.\n"),
    );
    repo.commit("comment in network");
    let patch = publish(&repo, &host, "acme", &[]);
    assert_eq!(
        published_modules(&patch),
        BTreeMap::from([("network".to_string(), "0.1.1".to_string())]),
        "{patch:#}"
    );
    let client = remote(&host);
    assert_eq!(
        client.tags("acme/modules/network").unwrap(),
        vec!["0.1.0", "0.1.1"]
    );
    assert_eq!(client.tags("acme/modules/cluster").unwrap(), vec!["0.1.0"]);

    // An input added with a default: the interface checker asks for a minor release.
    repo.append(
        "modules/cluster/variables.tf",
        "\nvariable \"log_retention_days\" {\n  type        = number\n  default     = 30\n  description = \"Days to keep logs.\"\n}\n",
    );
    repo.commit("cluster: log retention input");
    let minor = publish(&repo, &host, "acme", &[]);
    assert_eq!(
        published_modules(&minor),
        BTreeMap::from([("cluster".to_string(), "0.2.0".to_string())]),
        "{minor:#}"
    );
    let cluster = minor["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["module"] == "cluster")
        .unwrap();
    assert_eq!(cluster["bump"], "minor");
}

#[test]
fn a_branch_publishes_module_prereleases_and_no_modules_leaves_them_alone() {
    let (registry, repo, _) = published_once();
    let host = registry.host();
    repo.checkout_new("feature/GPU_pool");
    repo.append("modules/gpu-pool/main.tf", "\n# spot instances next\n");
    repo.commit("gpu-pool comment");
    let branch = publish(&repo, &host, "acme", &[]);
    assert_eq!(
        published_modules(&branch),
        BTreeMap::from([(
            "gpu-pool".to_string(),
            "0.1.1-feature-gpu-pool.1".to_string()
        )]),
        "{branch:#}"
    );

    repo.append("modules/gpu-pool/main.tf", "\n# and more\n");
    repo.commit("gpu-pool comment 2");
    let skipped = publish(&repo, &host, "acme", &["--no-modules"]);
    assert!(skipped["modules"].as_array().unwrap().is_empty());
    assert_eq!(
        remote(&host).tags("acme/modules/gpu-pool").unwrap(),
        vec!["0.1.0", "0.1.1-feature-gpu-pool.1"]
    );
}

#[test]
fn a_module_that_uses_another_local_module_is_skipped_with_a_warning() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    repo.write(
        "modules/platform/main.tf",
        "module \"net\" {\n  source = \"../network\"\n  name   = \"x\"\n  cidr   = \"10.0.0.0/16\"\n}\n",
    );
    repo.commit("platform module");
    let registry_arg = format!("{}/acme", registry.host());
    let run = repo
        .run(&[
            "publish",
            "--insecure",
            "--registry",
            &registry_arg,
            "--key",
            repo.key.to_str().unwrap(),
        ])
        .ok();
    assert!(
        run.stderr.contains("warning") && run.stderr.contains("module `platform`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("`modules/network`"), "{}", run.stderr);
    assert!(run.stdout.contains("MODULE"), "{}", run.stdout);

    let report = publish(&repo, &registry.host(), "acme", &[]);
    let platform = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["module"] == "platform")
        .unwrap()
        .clone();
    assert_eq!(platform["skipped"], true);
    assert_eq!(platform["published"], false);
    assert!(remote(&registry.host())
        .tags("acme/modules/platform")
        .unwrap()
        .is_empty());
}

#[test]
fn the_zip_is_identical_across_builds_and_oras_pulls_it() {
    let registry = Distribution::require();
    let host = registry.host();
    let first = TestRepo::new();
    // A second checkout elsewhere, a second later (another commit time), with other
    // modes on disk (as another umask would leave them).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = TestRepo::new();
    for module in MODULES {
        for entry in std::fs::read_dir(second.dir.join("modules").join(module)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
        }
    }

    publish(&first, &host, "one", &[]);
    publish(&second, &host, "two", &[]);
    for module in MODULES {
        let a = manifest(&host, &format!("one/modules/{module}"), "0.1.0");
        let b = manifest(&host, &format!("two/modules/{module}"), "0.1.0");
        assert_eq!(
            a.layers[0].digest, b.layers[0].digest,
            "{module}: zips differ"
        );
        assert_eq!(
            a.annotation("dev.stackpack.tree-digest"),
            b.annotation("dev.stackpack.tree-digest")
        );
    }

    // The Python ORAS client pulls the package; the zip holds the module's files.
    let out = first.temp.path().join("oras-pull");
    let script = format!(
        "import oras.client\n\
         c = oras.client.OrasClient(hostname='{host}', insecure=True)\n\
         files = c.pull(target='{host}/one/modules/network:0.1.0', outdir='{}')\n\
         print('\\n'.join(files))\n",
        out.display()
    );
    let output = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "oras pull failed (run scripts/install-test-deps.sh): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let zip_path = out.join("network.zip");
    assert!(
        zip_path.is_file(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(unzip(&zip_path), module_files(&first, "network"));
    let pulled = std::fs::read(&zip_path).unwrap();
    assert_eq!(
        stackpack_schema::digest::Digest::of(&pulled),
        manifest(&host, "one/modules/network", "0.1.0").layers[0].digest
    );
}

/// A published bundle records the version of every module it vendors (the module
/// package with the same files), and our registry's ledger keeps it with the release.
#[test]
fn published_bundles_record_the_versions_of_the_modules_they_vendor() {
    let registry = common::servers::OurRegistry::start();
    let repo = TestRepo::new();
    // Our registry wants the publisher's token; `publish` reads it from the environment.
    let mut command = Command::new(env!("CARGO_BIN_EXE_stackpack"));
    command
        .current_dir(&repo.dir)
        .args(["publish", "--json", "--insecure", "--key"])
        .arg(&repo.key)
        .args(["--registry", &format!("{}/acme", registry.host())])
        .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token())
        .env_remove("GITHUB_HEAD_REF");
    let report = common::Run::from_output(command.output().unwrap())
        .ok()
        .json();
    let modules = published_modules(&report);
    assert!(!modules.is_empty());

    let support = registry.token("support", None);
    let answer = Command::new("curl")
        .args(["-fsS", "-H", &format!("Authorization: Bearer {support}")])
        .arg(format!("{}/api/v1/releases", registry.url()))
        .output()
        .unwrap();
    assert!(answer.status.success());
    let releases: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
    let mut recorded = 0;
    for release in releases.as_array().unwrap() {
        for module in release["modules"].as_array().into_iter().flatten() {
            let name = module["name"].as_str().unwrap();
            assert_eq!(
                module["version"].as_str(),
                modules.get(name).map(String::as_str),
                "{} vendors `{name}`: {module}",
                release["stack"]
            );
            recorded += 1;
        }
    }
    assert!(recorded > 0, "no release records a module: {releases}");
}

#[test]
fn a_module_packed_with_uncommitted_changes_gets_a_dirty_prerelease_never_a_plain_version() {
    let (registry, repo, _) = published_once();
    let host = registry.host();
    repo.append("modules/network/main.tf", "\n# not committed yet\n");
    let dirty = publish(&repo, &host, "acme", &["--allow-dirty"]);
    assert_eq!(
        published_modules(&dirty)["network"],
        "0.1.1-dirty.1",
        "{dirty:#}"
    );
    assert_eq!(
        remote(&host).tags("acme/modules/network").unwrap(),
        vec!["0.1.0", "0.1.1-dirty.1"]
    );
}
