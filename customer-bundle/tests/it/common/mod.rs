//! Shared test harness: the real `stackpack-runner`, the real `stackpack` packager
//! (built into the same target folder), real Terraform, and a vendor repository made
//! from `examples/acme-infra` (or from the small `tests/fixtures/runner-vendor`) with
//! real git commits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use semver::Version;
use stackpack_bundle::layout::{self, ImageLayout};
use stackpack_schema::bundle::{BundleConfig, Engine, FileEntry, Source};
use stackpack_schema::digest::Digest;
use stackpack_schema::interface::Interface;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::signature::{PrivateKey, SignaturePayload};

pub mod hold_relay;
pub mod kms;
pub mod release;

pub use stackpack_test_support::servers::Moto;
pub use stackpack_test_support::{copy_dir, example_dir, have, terraform, Run};

pub fn globex_inputs() -> PathBuf {
    example_dir().join("customers/globex/data-plane.tfvars")
}

/// The packager, built into the same target folder.
pub fn stackpack_bin() -> PathBuf {
    stackpack_test_support::binary("stackpack")
}

pub fn git(dir: &Path, args: &[&str]) {
    stackpack_test_support::git(dir, args);
}

/// A vendor repository with its signing key.
pub struct Vendor {
    pub temp: tempfile::TempDir,
    pub dir: PathBuf,
    pub key: PathBuf,
    pub public_key: PathBuf,
}

impl Vendor {
    /// The AWS example, `examples/acme-infra`: for the tests of what the example and
    /// its provider do (with a [`Runner::new`], in the emulated account).
    pub fn new() -> Vendor {
        stackpack_test_support::use_provider_mirror();
        Vendor::copied_from(&example_dir(), &[])
    }

    /// `tests/fixtures/runner-vendor`: a `data-plane` stack with the example's
    /// inputs and rules, of built-in `terraform_data` resources (no provider, no
    /// network), for tests of the runner's own behaviour (locks, prompts, signals,
    /// tampering, pulls, input checks), which the example made seven times costlier.
    /// Its runner needs no cloud account: [`Runner::without_account`].
    pub fn small() -> Vendor {
        // The example's own inputs, byte for byte (so every input message, rule
        // and `variables.tf:LINE` is the example's), over `terraform_data`
        // resources: copied in, not kept as a second copy that could drift.
        let variables = "stacks/data-plane/variables.tf";
        Vendor::copied_from(
            &stackpack_test_support::repository_root().join("tests/fixtures/runner-vendor"),
            &[(example_dir().join(variables), variables)],
        )
    }

    fn copied_from(source: &Path, extra: &[(PathBuf, &str)]) -> Vendor {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("acme-infra");
        copy_dir(source, &dir);
        for (from, to) in extra {
            std::fs::copy(from, dir.join(to)).unwrap();
        }
        std::fs::write(dir.join(".gitignore"), ".stackpack/\n").unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "initial"]);
        let prefix = temp.path().join("vendor");
        Run::from(
            Command::new(stackpack_bin())
                .args(["keygen", "--out", prefix.to_str().unwrap()])
                .output()
                .unwrap(),
        )
        .ok();
        Vendor {
            dir,
            key: temp.path().join("vendor.key"),
            public_key: temp.path().join("vendor.pub"),
            temp,
        }
    }

    pub fn layout(&self) -> PathBuf {
        self.dir.join(".stackpack/bundles")
    }

    /// `customer`'s inputs to `data-plane`, in the vendor's repository.
    pub fn inputs(&self, customer: &str) -> PathBuf {
        self.dir
            .join("customers")
            .join(customer)
            .join("data-plane.tfvars")
    }

    /// Builds the changed stacks; returns `stack -> version` built.
    pub fn build(&self) -> Vec<(String, String)> {
        build_stacks(&self.dir, &self.key)
    }

    pub fn change(&self, path: &str, text: &str) {
        let path = self.dir.join(path);
        let existing = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, format!("{existing}{text}")).unwrap();
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "-m", "change"]);
    }

    /// The layout as a tar file, as carried into an airgapped site.
    pub fn export_tar(&self, name: &str) -> PathBuf {
        let tar = self.temp.path().join(name);
        let status = Command::new("tar")
            .arg("-cf")
            .arg(&tar)
            .arg("-C")
            .arg(self.layout())
            .arg(".")
            .status()
            .unwrap();
        assert!(status.success());
        tar
    }
}

/// A runner home in a temporary folder.
pub struct Runner {
    pub temp: tempfile::TempDir,
    pub home: PathBuf,
    account: Account,
}

/// The cloud account a runner's engine applies to.
enum Account {
    /// The customer's AWS account, emulated: started on the first engine run.
    Emulated(std::sync::OnceLock<std::sync::Arc<Moto>>),
    /// None: the stacks reach no cloud (built-in `terraform_data` resources), and an
    /// emulator would only cost its start.
    None,
}

impl Runner {
    /// `init` with the real Terraform.
    pub fn new(customer: &str) -> Runner {
        Runner::with_engine(customer, &terraform())
    }

    pub fn with_engine(customer: &str, engine: &Path) -> Runner {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let runner = Runner {
            temp,
            home,
            account: Account::Emulated(std::sync::OnceLock::new()),
        };
        runner
            .run(&[
                "init",
                "--customer",
                customer,
                "--engine-path",
                engine.to_str().unwrap(),
            ])
            .ok();
        runner
    }

    /// This runner with no cloud account, for the small vendor's stacks
    /// ([`Vendor::small`]): its engine runs start no emulator.
    pub fn without_account(mut self) -> Runner {
        self.account = Account::None;
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stackpack-runner"));
        command
            .args(args)
            .env("STACKPACK_RUNNER_HOME", &self.home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        let runs_engine = matches!(
            args.first().copied(),
            Some("plan" | "apply" | "rollback" | "drift" | "destroy")
        );
        // A runner whose state lives in the emulated account reaches it on every
        // command (`init` checks the bucket, `unlock` reads the lock).
        if let Account::Emulated(moto) = &self.account {
            if runs_engine || moto.get().is_some() {
                command.envs(self.moto().env());
            }
        }
        command
    }

    /// The emulated AWS account this runner applies to.
    pub fn moto(&self) -> &Moto {
        match &self.account {
            Account::Emulated(moto) => moto.get_or_init(|| std::sync::Arc::new(Moto::start())),
            Account::None => panic!("this runner was made `without_account`: it has no moto"),
        }
    }

    /// The environment that reaches this runner's account (none without one), for
    /// a command started by other means than [`Runner::command`].
    pub fn account_env(&self) -> Vec<(&'static str, String)> {
        match &self.account {
            Account::Emulated(_) => self.moto().env(),
            Account::None => Vec::new(),
        }
    }

    /// `init` with `extra` arguments against the emulated account `moto`, which
    /// several runners may share (one customer's account, several machines).
    /// Returns the runner and how `init` ended.
    pub fn on_account(customer: &str, moto: std::sync::Arc<Moto>, extra: &[&str]) -> (Runner, Run) {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let runner = Runner {
            temp,
            home,
            account: Account::Emulated(std::sync::OnceLock::from(moto)),
        };
        let engine = terraform();
        let mut args = vec![
            "init",
            "--customer",
            customer,
            "--engine-path",
            engine.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = runner.run(&args);
        (runner, run)
    }

    /// Trusts the vendor's key and imports its layout (a folder or a tar).
    pub fn trust_and_import(&self, public_key: &Path, layout: &Path) {
        self.run(&["trust", "add", public_key.to_str().unwrap()])
            .ok();
        self.run(&["import", layout.to_str().unwrap()]).ok();
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("stackpack-runner runs"))
    }

    pub fn store(&self) -> ImageLayout {
        ImageLayout::open(self.home.join("store")).unwrap()
    }

    /// Files and folders under the work root (should be none between runs).
    pub fn work_entries(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.home.join("work")) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => vec![],
        }
    }

    pub fn state_file(&self, stack: &str) -> PathBuf {
        self.home
            .join("state")
            .join(stack)
            .join("terraform.tfstate")
    }

    pub fn set_config(&self, from: &str, to: &str) {
        let path = self.home.join("runner.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{text}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    }
}

/// A stand-in engine: a shell script that writes a marker when run, then does
/// `body` (with `$REAL` the real Terraform). Named as what it is: not an engine.
pub fn fake_engine(dir: &Path, name: &str, body: &str) -> (PathBuf, PathBuf) {
    let script = dir.join(name);
    let marker = dir.join(format!("{name}.ran"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n# A stand-in for a broken or slow engine, for tests.\necho \"$@\" >> '{}'\nREAL='{}'\n{body}\n",
            marker.display(),
            terraform().display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (script, marker)
}

/// Writes a bundle signed by `key` into `layout` with the layer bytes given, as the
/// packager would, but with no checks on the layer: for hostile archives.
pub fn write_signed_bundle(
    layout: &ImageLayout,
    key: &PrivateKey,
    stack: &str,
    version: &str,
    layer: &[u8],
    files: Vec<FileEntry>,
) -> Digest {
    write_signed_bundle_with(
        layout,
        key,
        stack,
        version,
        layer,
        files,
        Interface::default(),
    )
}

/// [`write_signed_bundle`] with an interface.
pub fn write_signed_bundle_with(
    layout: &ImageLayout,
    key: &PrivateKey,
    stack: &str,
    version: &str,
    layer: &[u8],
    files: Vec<FileEntry>,
    interface: Interface,
) -> Digest {
    write_signed_bundle_tweaked(
        layout,
        key,
        stack,
        version,
        layer,
        files,
        interface,
        Tweaks::default(),
    )
}

/// What a hostile or broken packager might put in a validly signed bundle.
pub struct Tweaks {
    pub signed_at: String,
    /// `None`: `stacks/<stack>`.
    pub entrypoint: Option<String>,
    /// `None`: the format the files require, as the packager writes it.
    pub format: Option<u32>,
    /// File layers after the stack layer: their bytes and title (the path they claim).
    pub file_layers: Vec<(Vec<u8>, String)>,
}

impl Default for Tweaks {
    fn default() -> Self {
        Tweaks {
            signed_at: "2026-01-01T00:00:00Z".into(),
            entrypoint: None,
            format: None,
            file_layers: Vec::new(),
        }
    }
}

/// [`write_signed_bundle_with`], with [`Tweaks`].
#[allow(clippy::too_many_arguments)]
pub fn write_signed_bundle_tweaked(
    layout: &ImageLayout,
    key: &PrivateKey,
    stack: &str,
    version: &str,
    layer: &[u8],
    files: Vec<FileEntry>,
    interface: Interface,
    tweaks: Tweaks,
) -> Digest {
    let version = Version::parse(version).unwrap();
    let (layer_digest, layer_size) = layout.write_blob(layer).unwrap();
    let mut layers = vec![Descriptor::new(
        media_type::STACK_LAYER,
        layer_digest,
        layer_size,
    )];
    for (bytes, title) in &tweaks.file_layers {
        let (digest, size) = layout.write_blob(bytes).unwrap();
        let mut descriptor = Descriptor::new(media_type::FILE_LAYER, digest, size);
        let mut annotations = Annotations::new();
        annotations.insert(annotation::TITLE.into(), title.clone());
        descriptor.annotations = Some(annotations);
        layers.push(descriptor);
    }
    let config = BundleConfig {
        format: tweaks
            .format
            .unwrap_or_else(|| BundleConfig::required_format(&files)),
        stack: stack.into(),
        version: version.clone(),
        source: Source {
            repository: "https://git.acme.example/platform/acme-infra".into(),
            commit: "0".repeat(40),
            branch: "main".into(),
        },
        created: "2026-01-01T00:00:00Z".into(),
        engine: Engine {
            name: Some(stackpack_schema::bundle::EngineName::Terraform),
            version_constraint: None,
        },
        entrypoint: tweaks
            .entrypoint
            .unwrap_or_else(|| format!("stacks/{stack}")),
        interface,
        modules: vec![],
        files,
        providers: vec![],
        allowed_breaking: vec![],
        witness: None,
        changes: None,
    };
    let (config_digest, config_size) = layout.write_blob(&config.to_bytes()).unwrap();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::BUNDLE_ARTIFACT.into()),
        config: Descriptor::new(media_type::BUNDLE_CONFIG, config_digest, config_size),
        layers,
        subject: None,
        annotations: None,
    };
    let (manifest_digest, manifest_size) = layout.write_blob(&manifest.to_bytes()).unwrap();
    let mut subject = Descriptor::new(
        media_type::OCI_MANIFEST,
        manifest_digest.clone(),
        manifest_size,
    );
    subject.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
    let envelope = key.sign(SignaturePayload {
        manifest_digest: manifest_digest.clone(),
        repository: format!("acme/stacks/{stack}"),
        version: version.to_string(),
        key_id: String::new(),
        signed_at: tweaks.signed_at,
    });
    let (envelope_digest, envelope_size) = layout.write_blob(&envelope.to_bytes()).unwrap();
    layout.write_blob(media_type::EMPTY_BLOB).unwrap();
    let mut annotations = Annotations::new();
    annotations.insert(annotation::CREATED.into(), "2026-01-01T00:00:00Z".into());
    let signature = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::SIGNATURE_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![Descriptor::new(
            media_type::SIGNATURE_LAYER,
            envelope_digest,
            envelope_size,
        )],
        subject: Some(subject.clone()),
        annotations: Some(annotations),
    };
    let (signature_digest, signature_size) = layout.write_blob(&signature.to_bytes()).unwrap();
    let mut signature_entry =
        Descriptor::new(media_type::OCI_MANIFEST, signature_digest, signature_size);
    signature_entry.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
    signature_entry.annotations = Some(layout::signature_entry_annotations(&manifest_digest));
    layout.add_entry(signature_entry).unwrap();
    let mut entry = subject;
    entry.annotations = Some(layout::bundle_entry_annotations(stack, &version));
    layout.add_entry(entry).unwrap();
    manifest_digest
}

/// One raw archive entry: path, type, content, link target, declared size.
pub type RawEntry<'a> = (
    &'a str,
    tar::EntryType,
    &'a [u8],
    Option<&'a str>,
    Option<u64>,
);

/// A tar.gz with raw headers, so that `..`, `/`, links and devices survive.
pub fn raw_archive(entries: &[RawEntry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    for (path, kind, content, link, declared) in entries {
        let mut header = tar::Header::new_gnu();
        let name = &mut header.as_gnu_mut().unwrap().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_entry_type(*kind);
        header.set_size(declared.unwrap_or(content.len() as u64));
        header.set_mode(0o644);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        builder.append(&header, *content).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Builds the vendor's changed stacks, trusts the vendor and imports the layout;
/// returns `data-plane@VERSION` as built now.
pub fn build_and_import(vendor: &Vendor, runner: &Runner) -> String {
    let built = vendor.build();
    let version = &built
        .iter()
        .find(|(s, _)| s == "data-plane")
        .expect("data-plane was built")
        .1;
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .ok();
    format!("data-plane@{version}")
}

/// Replaces `from` with `to` in a file of the vendor's repository, and commits.
pub fn edit(vendor: &Vendor, path: &str, from: &str, to: &str) {
    let file = vendor.dir.join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "`{from}` is not in {path}");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
    git(&vendor.dir, &["commit", "-qam", &format!("edit {path}")]);
}

/// `stackpack build` on `main` in the vendor repository `dir`, signed with `key`;
/// returns `stack -> version` of every stack built.
pub fn build_stacks(dir: &Path, key: &Path) -> Vec<(String, String)> {
    let run = Run::from(
        Command::new(stackpack_bin())
            .current_dir(dir)
            .args([
                "build",
                "--json",
                "--key",
                key.to_str().unwrap(),
                "--branch",
                "main",
            ])
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .output()
            .unwrap(),
    )
    .ok();
    run.json()["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["built"] == true)
        .map(|s| {
            (
                s["stack"].as_str().unwrap().to_string(),
                s["version"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}
