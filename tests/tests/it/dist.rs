//! The programs as a customer or a vendor's CI downloads them (`scripts/dist.sh`,
//! issue 40): archives built for glibc 2.17 through zig, `SHA256SUMS` signed with
//! the release key, checked with nothing but `openssl` and `sha256sum`, installed by
//! `scripts/install.sh` and by the install step of `docs/github-actions.yml`, each
//! refusing a release that does not verify before anything is installed.
//!
//! The suite runs the script's `--quick` path (one program, unoptimised: the same
//! zig link, archives, sums and signature in a fraction of a `dist` build); the full
//! `dist` build of the three programs is measured by `scripts/bench/dist.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use stackpack_test_support::{binary, free_port, have, repository_root, Run};

fn run(command: &mut Command) -> Run {
    Run::from(command.output().expect("the command starts"))
}

fn sh(dir: &Path, script: &str) -> Run {
    run(Command::new("bash").arg("-c").arg(script).current_dir(dir))
}

/// The test's own target folder, so a dist build is shared by nothing else.
fn dist_target() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    target.join("dist-zig")
}

fn dist(out: &Path, key: &str, extra_env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(repository_root().join("scripts/dist.sh"));
    command
        .args(["--quick", "--allow-dirty", "--key", key, "--out"])
        .arg(out)
        .env("STACKPACK_DIST_TARGET_DIR", dist_target())
        .current_dir(repository_root());
    for (name, value) in extra_env {
        command.env(name, value);
    }
    run(&mut command)
}

fn keygen(dir: &Path, name: &str) -> PathBuf {
    let prefix = dir.join(name);
    run(Command::new(binary("stackpack"))
        .arg("keygen")
        .arg("--out")
        .arg(&prefix))
    .ok();
    prefix
}

fn version() -> String {
    let out = run(Command::new(binary("stackpack")).arg("--version")).ok();
    out.stdout.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn dist_archive_runs_on_glibc_2_17_is_signed_and_packs_the_same_bytes_twice() {
    for tool in [
        "cargo-zigbuild",
        "openssl",
        "sha256sum",
        "objdump",
        "python3",
        "skopeo",
    ] {
        assert!(have(tool), "`{tool}` is needed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let key = keygen(tmp.path(), "release");
    let first = tmp.path().join("first");
    let built = dist(&first, key.with_extension("key").to_str().unwrap(), &[]);
    assert_eq!(built.code, 0, "dist.sh failed:\n{}", built.stderr);
    let version = version();
    let name = format!("stackpack-{version}-x86_64-linux");
    let archive = first.join(format!("{name}.tar.gz"));
    assert!(archive.is_file(), "no `{}`", archive.display());

    // What a customer runs, with only openssl and sha256sum.
    let public = key.with_extension("pub");
    let check = sh(
        &first,
        &format!(
            "openssl pkeyutl -verify -pubin -inkey {} -rawin -in SHA256SUMS -sigfile SHA256SUMS.sig && sha256sum -c SHA256SUMS",
            public.display()
        ),
    );
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains(&format!("{name}.tar.gz: OK")));
    assert!(check.stdout.contains("images.txt: OK"), "{}", check.stdout);

    // The same program as an OCI image, which a real client reads from the layout;
    // the signed `images.txt` names its manifest digest, so the signature covers it.
    let images = std::fs::read_to_string(first.join("images.txt")).unwrap();
    let reference = format!("stackpack-{version}");
    let listed = images
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{reference} ")))
        .unwrap_or_else(|| panic!("no `{reference}` in images.txt:\n{images}"));
    let inspected = run(Command::new("skopeo")
        .arg("inspect")
        .arg(format!("oci:{}:{reference}", first.join("oci").display())))
    .ok();
    let inspected: serde_json::Value = serde_json::from_str(&inspected.stdout).unwrap();
    assert_eq!(
        inspected["Digest"],
        listed.trim(),
        "images.txt names another manifest"
    );
    assert_eq!(
        inspected["Labels"]["org.opencontainers.image.version"],
        version
    );
    let config = run(Command::new("skopeo")
        .args(["inspect", "--config"])
        .arg(format!("oci:{}:{reference}", first.join("oci").display())))
    .ok();
    let config: serde_json::Value = serde_json::from_str(&config.stdout).unwrap();
    assert_eq!(
        config["config"]["User"], "65532:65532",
        "the image runs as root"
    );

    // The archive: binary, licence, README and SBOM, no owner.
    let listing = sh(&first, &format!("tar -tvzf {name}.tar.gz")).ok().stdout;
    for file in ["stackpack", "LICENSE", "README.md", "stackpack.cdx.json"] {
        assert!(
            listing.contains(&format!("{name}/{file}")),
            "{file} missing:\n{listing}"
        );
    }
    assert!(
        listing.lines().all(|l| l.contains(" 0/0 ")),
        "owners stored:\n{listing}"
    );

    // Runs, says its commit and target, and needs nothing newer than glibc 2.17.
    let unpacked = tmp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    sh(&unpacked, &format!("tar -xzf {}", archive.display())).ok();
    let program = unpacked.join(&name).join("stackpack");
    let said = run(Command::new(&program).arg("--version")).ok().stdout;
    let commit = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repository_root()))
    .ok()
    .stdout;
    assert!(
        said.contains(&commit.trim()[..12]),
        "--version names no commit: {said}"
    );
    assert!(
        said.contains("x86_64-unknown-linux-gnu, glibc 2.17"),
        "{said}"
    );
    let symbols = run(Command::new("objdump").arg("-T").arg(&program))
        .ok()
        .stdout;
    let newest = symbols
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .map(|v| {
            v.split('.')
                .map(|n| n.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .max()
        .expect("linked against glibc");
    assert!(newest <= vec![2, 17], "needs GLIBC_{newest:?}");

    // The SBOM is CycloneDX 1.6 by its official library, and lists what is linked.
    let sbom = unpacked.join(&name).join("stackpack.cdx.json");
    let validated = sh(
        &unpacked,
        &format!(
            "python3 -c \"import sys; from cyclonedx.validation.json import JsonStrictValidator; from cyclonedx.schema import SchemaVersion; e = JsonStrictValidator(SchemaVersion.V1_6).validate_str(open('{}').read()); sys.exit(str(e) if e else 0)\"",
            sbom.display()
        ),
    );
    assert_eq!(validated.code, 0, "{}", validated.stderr);
    let bom: serde_json::Value = serde_json::from_slice(&std::fs::read(&sbom).unwrap()).unwrap();
    let names: Vec<&str> = bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for linked in ["ed25519-dalek", "reqwest", "stackpack-schema"] {
        assert!(names.contains(&linked), "{linked} not in the SBOM");
    }
    assert!(
        !names.contains(&"serde_derive"),
        "a proc-macro is not linked"
    );

    // Packed again (the key now from the environment, as CI holds it): the same bytes.
    let pem = std::fs::read_to_string(key.with_extension("key")).unwrap();
    let second = tmp.path().join("second");
    let again = dist(
        &second,
        "env:RELEASE_KEY_FOR_TEST",
        &[("RELEASE_KEY_FOR_TEST", &pem)],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    for file in [
        format!("{name}.tar.gz"),
        "SHA256SUMS".into(),
        "SHA256SUMS.sig".into(),
        "images.txt".into(),
    ] {
        assert_eq!(
            std::fs::read(first.join(&file)).unwrap(),
            std::fs::read(second.join(&file)).unwrap(),
            "{file} differs between two runs on one commit"
        );
    }

    install_refuses_what_does_not_verify(tmp.path(), &first, &key, &name);
    workflow_installs_the_verified_release(tmp.path(), &first, &public, &archive, &version);
    if std::env::var_os("CI").is_some() {
        // A CI machine builds this once: its 0.6 GB of unoptimised artifacts would
        // only fill the disk the rest of the suite needs.
        let _ = std::fs::remove_dir_all(dist_target());
    }
}

/// `scripts/install.sh`: installs a verified release; refuses, installing nothing, an
/// edited `SHA256SUMS`, a signature by another key and a swapped archive.
fn install_refuses_what_does_not_verify(tmp: &Path, release: &Path, key: &Path, name: &str) {
    let install = repository_root().join("scripts/install.sh");
    let public = key.with_extension("pub");
    let bin = tmp.join("bin");
    let installed = run(Command::new(&install)
        .args(["--program", "stackpack", "--from"])
        .arg(release)
        .arg("--key")
        .arg(&public)
        .arg("--to")
        .arg(&bin));
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    assert!(
        installed.stdout.contains("installed stackpack "),
        "{}",
        installed.stdout
    );
    run(Command::new(bin.join("stackpack")).arg("--version")).ok();

    let other = keygen(tmp, "someone-else");
    type Damage<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, Damage); 3] = [
        ("an edited SHA256SUMS", &|dir: &Path| {
            let sums = dir.join("SHA256SUMS");
            let text = std::fs::read_to_string(&sums)
                .unwrap()
                .replacen('0', "1", 1);
            std::fs::write(sums, text).unwrap();
        }),
        ("a signature by another key", &|dir: &Path| {
            let status = Command::new("openssl")
                .args(["pkeyutl", "-sign", "-rawin", "-inkey"])
                .arg(other.with_extension("key"))
                .arg("-in")
                .arg(dir.join("SHA256SUMS"))
                .arg("-out")
                .arg(dir.join("SHA256SUMS.sig"))
                .status()
                .unwrap();
            assert!(status.success());
        }),
        ("a swapped archive", &|dir: &Path| {
            let archive = dir.join(format!("{name}.tar.gz"));
            let mut bytes = std::fs::read(&archive).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
            std::fs::write(archive, bytes).unwrap();
        }),
    ];
    for (what, damage) in cases {
        let copy = tmp.join("damaged");
        let _ = std::fs::remove_dir_all(&copy);
        stackpack_test_support::copy_dir(release, &copy);
        damage(&copy);
        let target = tmp.join("not-installed");
        let refused = run(Command::new(&install)
            .args(["--program", "stackpack", "--from"])
            .arg(&copy)
            .arg("--key")
            .arg(&public)
            .arg("--to")
            .arg(&target));
        assert_eq!(
            refused.code, 1,
            "{what} was not refused: {}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("nothing was installed"),
            "{what}: {}",
            refused.stderr
        );
        assert!(
            !target.join("stackpack").exists(),
            "{what}: installed anyway"
        );
    }
}

/// The install step of `docs/github-actions.yml`, run as GitHub would run it, against
/// the release served over HTTP on loopback: it checks and puts `stackpack` on PATH.
fn workflow_installs_the_verified_release(
    tmp: &Path,
    release: &Path,
    public: &Path,
    archive: &Path,
    version: &str,
) {
    let extract = "import yaml, sys; wf = yaml.safe_load(open(sys.argv[1])); \
        step = next(s for s in wf['jobs']['stackpack']['steps'] if s.get('name') == 'Install stackpack (verified)'); \
        print(step['run'])";
    let script = run(Command::new("python3")
        .args(["-c", extract])
        .arg(repository_root().join("docs/github-actions.yml")))
    .ok()
    .stdout;
    let served = tmp.join("served");
    stackpack_test_support::copy_dir(release, &served.join(version));
    let port = free_port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
        ])
        .current_dir(&served)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let digest = sh(
        tmp,
        &format!("sha256sum {} | cut -d' ' -f1", archive.display()),
    )
    .ok()
    .stdout;
    let github_path = tmp.join("github-path");
    let step = |sha: &str| {
        run(Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(tmp)
            .env("STACKPACK_VERSION", version)
            .env("STACKPACK_RELEASES", format!("http://127.0.0.1:{port}"))
            .env("STACKPACK_SHA256", sha)
            .env(
                "STACKPACK_RELEASE_KEY",
                std::fs::read_to_string(public).unwrap(),
            )
            .env(
                "STACKPACK_RELEASE_DIR",
                tmp.join(format!("cache-{}", &sha[..8])),
            )
            .env("GITHUB_PATH", &github_path))
    };
    // Wait for the server (bounded).
    for _ in 0..50 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pinned_wrong = step(&"0".repeat(64));
    let installed = step(digest.trim());
    let _ = server.kill();
    let _ = server.wait();
    assert_ne!(
        pinned_wrong.code, 0,
        "a release whose digest is not the pinned one ran"
    );
    assert_eq!(
        installed.code, 0,
        "{}{}",
        installed.stdout, installed.stderr
    );
    let path = std::fs::read_to_string(&github_path).unwrap();
    let program = PathBuf::from(path.lines().last().unwrap().trim()).join("stackpack");
    let said = run(Command::new(program).arg("--version")).ok().stdout;
    assert!(
        said.starts_with(&format!("stackpack {version} (commit ")),
        "{said}"
    );
}
