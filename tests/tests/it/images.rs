//! The programs as OCI images (`scripts/dist/image.py`, which `scripts/dist.sh`
//! runs; issue 40). No container engine runs on these machines, so each image is
//! unpacked with `umoci` and its root run with `unshare --root` (own mount and PID
//! namespaces, a fresh `/proc`, the host's `/dev`) as the image's own non-root
//! user, as `docker run` would. The registry's image serves `/v2/`; the runner's
//! image verifies and applies a signed bundle with an engine mounted in (Terraform
//! 0.15, one static binary). Two builds of one image have one digest. The images
//! are made from the suite's own debug binaries, with the C library they link, as a
//! dist build's are.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stackpack_test_support::{binary, free_port, git, have, repository_root, Run};

fn run(command: &mut Command) -> Run {
    Run::from(command.output().expect("the command starts"))
}

/// The image's root run as a container runtime would: its own mount and PID
/// namespaces, a fresh `/proc` and the host's `/dev` mounted in (a runtime gives a
/// container `/dev/null` and `/dev/urandom`), the root changed to the image's, as
/// the image's user 65532, with an empty environment but what the image's config
/// sets.
///
/// A small `sh` outside the image stays the namespace's first process: it keeps
/// the parent-death signal `--kill-child` gives it (the user change of the inner
/// `unshare` would clear it), so killing the returned command's process ends
/// everything in the container, as stopping a container does.
fn in_container(root: &Path) -> Command {
    let unshare = run(Command::new("sh").args(["-c", "command -v unshare"]))
        .ok()
        .stdout
        .trim()
        .to_string();
    let mut command = Command::new(&unshare);
    command
        .args(["--mount", "--pid", "--fork", "--kill-child", "/bin/sh", "-c"])
        .arg(
            "set -e; root=$1; unshare=$2; shift 2; mount --make-rprivate /; \
             mount -t proc proc \"$root/proc\"; mount --rbind /dev \"$root/dev\"; \
             \"$unshare\" --root=\"$root\" --wd=/home/stackpack --setuid 65532 --setgid 65532 \"$@\"",
        )
        .arg("container")
        .arg(root)
        .arg(&unshare)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", "/home/stackpack")
        .env("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt");
    command
}

/// SHA-256 of `bytes` in hex, as `sha256sum` says it.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Writes `program`'s image into `layout`; returns its manifest digest.
fn image(layout: &Path, program: &str) -> String {
    let out = run(Command::new("python3")
        .arg(repository_root().join("scripts/dist/image.py"))
        .arg("--layout")
        .arg(layout)
        .args(["--program", program, "--binary"])
        .arg(binary(program))
        .args(["--version", "0.1.0", "--commit", &"a".repeat(40)])
        .args(["--source", "https://example.invalid/stackpack", "--license"])
        .arg(repository_root().join("LICENSE"))
        .env("SOURCE_DATE_EPOCH", "1764892800"))
    .ok();
    out.stdout.split_whitespace().nth(1).unwrap().to_string()
}

fn unpack(layout: &Path, program: &str, bundle: &Path) -> PathBuf {
    run(Command::new("umoci")
        .arg("unpack")
        .arg("--image")
        .arg(format!("{}:{program}-0.1.0", layout.display()))
        .arg(bundle))
    .ok();
    bundle.join("rootfs")
}

/// The image's process as the OCI runtime config umoci wrote says it.
fn process(bundle: &Path) -> serde_json::Value {
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("config.json")).unwrap()).unwrap();
    config["process"].clone()
}

#[test]
fn the_registry_image_serves_v2_as_a_non_root_user_and_builds_to_one_digest() {
    for tool in ["umoci", "unshare", "curl", "skopeo"] {
        assert!(have(tool), "`{tool}` is needed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("layout");
    let first = image(&layout, "stackpack-registry");
    let again = image(&tmp.path().join("again"), "stackpack-registry");
    assert_eq!(first, again, "two builds of one commit give two digests");

    // Pushed to a registry nobody here wrote (CNCF Distribution) with skopeo, as an
    // operator would: the same digest arrives, the one `images.txt` names.
    let distribution = stackpack_test_support::servers::Distribution::require();
    let target = format!(
        "docker://{}/stackpack/stackpack-registry:0.1.0",
        distribution.host()
    );
    run(Command::new("skopeo")
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:stackpack-registry-0.1.0", layout.display()))
        .arg(&target))
    .ok();
    let pushed = Command::new("skopeo")
        .args(["inspect", "--tls-verify=false", "--raw"])
        .arg(&target)
        .output()
        .unwrap();
    assert!(pushed.status.success());
    assert_eq!(
        format!("sha256:{}", sha256_hex(&pushed.stdout)),
        first,
        "the registry holds another manifest"
    );

    let bundle = tmp.path().join("registry");
    let root = unpack(&layout, "stackpack-registry", &bundle);
    let process = process(&bundle);
    assert_eq!(process["user"]["uid"], 65532, "the image runs as root");
    let args: Vec<String> = serde_json::from_value(process["args"].clone()).unwrap();
    assert_eq!(args[0], "/usr/local/bin/stackpack-registry");
    assert_eq!(args[1], "serve");
    let manifest = run(Command::new("sh").arg("-c").arg(format!(
        "cat {}/blobs/sha256/{}",
        layout.display(),
        first.trim_start_matches("sha256:")
    )))
    .ok();
    for label in [
        "title", "version", "revision", "source", "created", "licenses",
    ] {
        assert!(
            manifest
                .stdout
                .contains(&format!("org.opencontainers.image.{label}")),
            "no `{label}` label"
        );
    }

    // The image's own command, on a loopback port instead of 0.0.0.0:5000.
    let port = free_port();
    let mut command: Vec<String> = args.clone();
    let listen = command.iter().position(|a| a == "--listen").unwrap();
    command[listen + 1] = format!("127.0.0.1:{port}");
    let mut server = in_container(&root)
        .args(&command)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut code = String::new();
    for _ in 0..100 {
        code = run(Command::new("curl").args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://127.0.0.1:{port}/v2/"),
        ]))
        .stdout;
        if code != "000" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = server.kill();
    let output = server.wait_with_output().unwrap();
    // 401: the OCI distribution API answering, asking for a token, as it should.
    assert_eq!(code, "401", "{}", String::from_utf8_lossy(&output.stderr));
    // The registry's data went to the image's volume, owned by its user.
    let data = std::fs::metadata(root.join("var/lib/stackpack")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&data), 65532);
    assert!(root
        .join("var/lib/stackpack")
        .read_dir()
        .unwrap()
        .next()
        .is_some());
}

#[test]
fn the_runner_image_verifies_and_applies_a_signed_bundle_with_a_mounted_engine_as_a_non_root_user()
{
    for tool in ["umoci", "unshare"] {
        assert!(have(tool), "`{tool}` is needed");
    }
    let tmp = tempfile::tempdir().unwrap();
    // A vendor's provider-free stack, built and signed by the real packager.
    let vendor = tmp.path().join("vendor");
    std::fs::create_dir_all(vendor.join("stacks/hello")).unwrap();
    std::fs::write(
        vendor.join("stackpack.toml"),
        "registry = \"127.0.0.1:5000/acme\"\nrepository = \"https://git.acme.example/hello\"\nmain-branch = \"main\"\nstacks = [\"stacks/*\"]\n",
    )
    .unwrap();
    std::fs::write(vendor.join(".gitignore"), ".stackpack/\n").unwrap();
    std::fs::write(
        vendor.join("stacks/hello/stack.toml"),
        "description = \"hello\"\nengine = \"terraform\"\n",
    )
    .unwrap();
    std::fs::write(
        vendor.join("stacks/hello/main.tf"),
        "terraform {\n  required_version = \">= 0.15.0\"\n}\n\nvariable \"name\" {\n  type        = string\n  description = \"Who to greet.\"\n}\n\nlocals {\n  greeting = \"hello, ${var.name}\"\n}\n\noutput \"greeting\" {\n  value       = local.greeting\n  description = \"The greeting.\"\n}\n",
    )
    .unwrap();
    git(&vendor, &["init", "-q", "-b", "main"]);
    git(&vendor, &["add", "-A"]);
    git(&vendor, &["commit", "-q", "-m", "hello"]);
    let key = tmp.path().join("vendor");
    run(Command::new(binary("stackpack"))
        .arg("keygen")
        .arg("--out")
        .arg(&key))
    .ok();
    run(Command::new(binary("stackpack"))
        .args(["build", "--branch", "main", "--key"])
        .arg(key.with_extension("key"))
        .current_dir(&vendor))
    .ok();
    run(Command::new(binary("stackpack"))
        .args(["export", "hello@0.1.0", "-o", "hello.tar"])
        .current_dir(&vendor))
    .ok();

    let layout = tmp.path().join("layout");
    image(&layout, "stackpack-runner");
    let bundle = tmp.path().join("runner");
    let root = unpack(&layout, "stackpack-runner", &bundle);
    // What an operator mounts: the bundle, the vendor's key, inputs, an engine.
    let work = root.join("work");
    std::fs::create_dir_all(work.join("engine")).unwrap();
    std::fs::copy(vendor.join("hello.tar"), work.join("hello.tar")).unwrap();
    std::fs::copy(key.with_extension("pub"), work.join("vendor.pub")).unwrap();
    std::fs::write(work.join("hello.tfvars"), "name = \"initech\"\n").unwrap();
    let old =
        run(Command::new(repository_root().join("scripts/terraform-path.sh")).arg("0.15")).ok();
    std::fs::copy(old.stdout.trim(), work.join("engine/terraform")).unwrap();
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&work)).ok();

    let in_image = |args: &[&str]| {
        run(in_container(&root)
            .arg("/usr/local/bin/stackpack-runner")
            .args(args)
            .env("STACKPACK_RUNNER_HOME", "/home/stackpack/runner")
            .env("NO_COLOR", "1")
            .env("CHECKPOINT_DISABLE", "1"))
    };
    in_image(&[
        "init",
        "--customer",
        "initech",
        "--engine-path",
        "/work/engine/terraform",
    ])
    .ok();
    in_image(&["trust", "add", "/work/vendor.pub"]).ok();
    in_image(&["import", "/work/hello.tar"]).ok();
    in_image(&["verify", "hello@0.1.0"]).ok();
    let applied = in_image(&[
        "apply",
        "hello@0.1.0",
        "--inputs",
        "/work/hello.tfvars",
        "--yes",
        "--json",
    ]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let status = in_image(&["status", "--json"]).ok();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["stacks"][0]["stack"], "hello", "{status}");
    assert_eq!(status["stacks"][0]["version"], "0.1.0", "{status}");
    // The runner's home, its signed receipts among it, is the image user's.
    let home = std::fs::metadata(root.join("home/stackpack/runner")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&home), 65532);
}
