//! Promotion, vendor side: `stackpack promote NAME@V --channel C` signs "this version
//! is approved for channel C" and pushes it as a referrer of the release index (or a
//! stack's bundle), on our registry through the referrers API and on Distribution
//! through the tag-schema fallback; or, airgapped, writes it into the local layout.
//! `stackpack export --channel C` carries those statements to an airgapped runner and
//! refuses a release the vendor never approved. Real registries on 127.0.0.1, small
//! `terraform_data` stacks.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::servers::{Distribution, FaultProxy, OurRegistry};
use common::{git, Run};
use stackpack_bundle::channel::statements_in;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::{Credentials, Remote};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{ImageIndex, ImageManifest};
use stackpack_schema::rollout::{ApprovedKind, SignedChannelStatement};
use stackpack_schema::signature::{PrivateKey, PublicKey};

/// A vendor repository: release `data-plane` of `network` and `cluster`, and a stack
/// `tools` in no release.
struct Vendor {
    temp: tempfile::TempDir,
    dir: PathBuf,
    key: PathBuf,
    public_key: PathBuf,
    /// A registry token (our registry wants one to push).
    token: Option<String>,
}

const STACK: &str = "resource \"terraform_data\" \"this\" {\n  input = \"x\"\n}\n";

impl Vendor {
    fn new() -> Vendor {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("vendor");
        let vendor = Vendor {
            key: temp.path().join("keys/vendor.key"),
            public_key: temp.path().join("keys/vendor.pub"),
            dir,
            temp,
            token: None,
        };
        vendor.write(
            "stackpack.toml",
            "repository = \"https://git.acme.example/infra\"\nmain-branch = \"main\"\nstacks = [\"stacks/*\"]\n\n\
             [releases.data-plane]\nstacks = [\"network\", \"cluster\"]\n",
        );
        for stack in ["network", "cluster", "tools"] {
            vendor.write(
                &format!("stacks/{stack}/stack.toml"),
                "engine = \"terraform\"\n",
            );
            vendor.write(&format!("stacks/{stack}/main.tf"), STACK);
        }
        vendor.write(".gitignore", ".stackpack/\n");
        git(&vendor.dir, &["init", "-q", "-b", "main"]);
        git(&vendor.dir, &["add", "-A"]);
        git(&vendor.dir, &["commit", "-q", "-m", "initial"]);
        let keys = vendor.temp.path().join("keys/vendor");
        common::stackpack(
            vendor.temp.path(),
            &["keygen", "--out", keys.to_str().unwrap()],
        )
        .ok();
        vendor
    }

    fn write(&self, path: &str, content: &str) {
        let path = self.dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Runs `stackpack` in the repository, with the registry token when there is one.
    fn run(&self, args: &[&str]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stackpack"));
        command
            .current_dir(&self.dir)
            .args(args)
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .env_remove("GITHUB_ACTOR")
            .env("NO_COLOR", "1");
        if let Some(token) = &self.token {
            command.env("STACKPACK_REGISTRY_TOKEN", token);
        }
        Run::from(command.output().expect("stackpack runs"))
    }

    /// Publishes everything; returns the release index's digest.
    fn publish(&self, host: &str) -> Digest {
        let report = self
            .run(&[
                "publish",
                "--json",
                "--insecure",
                "--registry",
                &format!("{host}/acme"),
                "--key",
                self.key.to_str().unwrap(),
            ])
            .ok()
            .json();
        assert_eq!(report["releases"][0]["version"], "0.1.0", "{report}");
        report["releases"][0]["digest"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    fn promote(&self, host: &str, target: &str, extra: &[&str]) -> Run {
        let registry = format!("{host}/acme");
        let mut args = vec![
            "promote",
            target,
            "--json",
            "--insecure",
            "--registry",
            &registry,
            "--key",
            self.key.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn vendor_key(&self) -> PublicKey {
        stackpack_bundle::trust::read_public_key(&self.public_key).unwrap()
    }

    fn layout(&self) -> PathBuf {
        self.dir.join(".stackpack/bundles")
    }
}

fn remote(host: &str, token: Option<&str>) -> Remote {
    let credentials = match token {
        Some(token) => Credentials::Bearer(token.to_string()),
        None => Credentials::Anonymous,
    };
    Remote::with_credentials(host, true, credentials).unwrap()
}

/// The channel statements the registry lists as referrers of `subject`, read back.
fn statements_of(
    remote: &Remote,
    repository: &str,
    subject: &Digest,
) -> Vec<SignedChannelStatement> {
    remote
        .referrers(
            repository,
            subject,
            Some(media_type::CHANNEL_STATEMENT_ARTIFACT),
        )
        .unwrap()
        .iter()
        .map(|referrer| {
            let (bytes, _) = remote
                .pull_manifest(repository, &referrer.digest.to_string())
                .unwrap()
                .unwrap();
            let manifest: ImageManifest = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(
                manifest.subject.as_ref().map(|s| &s.digest),
                Some(subject),
                "the statement's subject is what it approves"
            );
            assert_eq!(manifest.config.media_type, media_type::OCI_EMPTY);
            let layer = remote
                .pull_blob_bytes(repository, &manifest.layers[0], 64 * 1024)
                .unwrap();
            SignedChannelStatement::from_bytes(&layer).unwrap()
        })
        .collect()
}

fn untar(tar: &Path, into: &Path) -> ImageLayout {
    std::fs::create_dir_all(into).unwrap();
    let status = Command::new("tar")
        .arg("-xf")
        .arg(tar)
        .arg("-C")
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success());
    ImageLayout::open(into).unwrap()
}

/// The statements for `channel` in an exported layout, each verified with `trusted`.
fn exported_statements(
    layout: &ImageLayout,
    channel: &str,
    trusted: &PublicKey,
) -> Vec<SignedChannelStatement> {
    statements_in(layout, Some(channel))
        .unwrap()
        .into_iter()
        .map(|(_, read)| {
            let signed = read.unwrap();
            signed
                .verify(std::slice::from_ref(trusted), channel)
                .unwrap();
            signed
        })
        .collect()
}

#[test]
fn a_promotion_on_our_registry_is_a_signed_referrer_of_the_release_index() {
    let registry = OurRegistry::start();
    registry.run(&["channel", "set", "stable"]).ok();
    let host = registry.host();
    let mut vendor = Vendor::new();
    vendor.token = Some(registry.publisher_token());
    let index = vendor.publish(&host);
    let out = vendor.temp.path().join("statement.json");

    let report = vendor
        .promote(
            &host,
            "data-plane@0.1.0",
            &[
                "--channel",
                "stable",
                "--by",
                "release-bot",
                "--required",
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .ok()
        .json();
    assert_eq!(report["kind"], "release");
    assert_eq!(report["digest"], index.to_string());
    assert_eq!(report["referrersApi"], true, "{report}");

    let remote = remote(&host, vendor.token.as_deref());
    let found = statements_of(&remote, "acme/releases/data-plane", &index);
    assert_eq!(found.len(), 1);
    let signed = &found[0];
    signed.verify(&[vendor.vendor_key()], "stable").unwrap();
    let statement = &signed.statement;
    assert_eq!(statement.kind, ApprovedKind::Release);
    assert_eq!(statement.release, "data-plane");
    assert_eq!(statement.version.to_string(), "0.1.0");
    assert_eq!(statement.digest, index);
    assert!(statement.required);
    assert_eq!(statement.promoted_by.as_deref(), Some("release-bot"));
    assert!(
        stackpack_bundle::freshness::age_seconds(&statement.promoted_at)
            .is_some_and(|age| (0..600).contains(&age)),
        "promotedAt is now, in RFC 3339: {}",
        statement.promoted_at
    );
    // `--out` holds the same signed statement.
    let written = SignedChannelStatement::from_bytes(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(&written, signed);
    // For its own channel only: a runner following `beta` refuses it.
    assert!(signed.verify(&[vendor.vendor_key()], "beta").is_err());
}

#[test]
fn on_distribution_promotions_are_found_through_the_referrers_fallback_and_export_with_their_channel(
) {
    let registry = Distribution::require();
    let host = registry.host();
    let vendor = Vendor::new();
    let index = vendor.publish(&host);

    let report = vendor
        .promote(&host, "data-plane@0.1.0", &["--channel", "stable"])
        .ok()
        .json();
    assert_eq!(report["referrersApi"], false, "{report}");
    // A single stack is a release of one: its bundle is the subject.
    let stack = vendor
        .promote(&host, "tools@0.1.0", &["--channel", "stable"])
        .ok()
        .json();
    assert_eq!(stack["kind"], "stack");

    // Distribution has no referrers API: the `sha256-<hex>` index lists the statement.
    let remote = remote(&host, None);
    let repository = "acme/releases/data-plane";
    let (bytes, _) = remote
        .pull_manifest(repository, &index.referrers_tag())
        .unwrap()
        .expect("the referrers fallback tag exists");
    let fallback: ImageIndex = serde_json::from_slice(&bytes).unwrap();
    let listed = fallback
        .manifests
        .iter()
        .find(|d| d.artifact_type.as_deref() == Some(media_type::CHANNEL_STATEMENT_ARTIFACT))
        .expect("the fallback index lists the statement");
    assert_eq!(listed.annotation(annotation::CHANNEL), Some("stable"));
    let found = statements_of(&remote, repository, &index);
    assert_eq!(found.len(), 1);
    found[0].verify(&[vendor.vendor_key()], "stable").unwrap();
    let tools: Digest = stack["digest"].as_str().unwrap().parse().unwrap();
    let found = statements_of(&remote, "acme/stacks/tools", &tools);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].statement.kind, ApprovedKind::Stack);

    // The export carries both statements, listed in its index.json.
    let tar = vendor.temp.path().join("stable.tar");
    let exported = vendor
        .run(&[
            "export",
            "data-plane@0.1.0",
            "tools@0.1.0",
            "--channel",
            "stable",
            "--registry",
            &format!("{host}/acme"),
            "--insecure",
            "--json",
            "-o",
            tar.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(
        exported["statements"].as_array().unwrap().len(),
        2,
        "{exported}"
    );
    let layout = untar(&tar, &vendor.temp.path().join("airgap"));
    let statements = exported_statements(&layout, "stable", &vendor.vendor_key());
    let mut subjects: Vec<Digest> = statements
        .iter()
        .map(|s| s.statement.digest.clone())
        .collect();
    subjects.sort();
    let mut expected = vec![index.clone(), tools];
    expected.sort();
    assert_eq!(subjects, expected);
    let listed = layout
        .index()
        .unwrap()
        .manifests
        .iter()
        .filter(|d| d.artifact_type.as_deref() == Some(media_type::CHANNEL_STATEMENT_ARTIFACT))
        .count();
    assert_eq!(listed, 2);

    // A key the vendor never signed with does not verify them.
    let stranger = PrivateKey::from_secret_bytes([9; 32]).public_key();
    for (_, read) in statements_in(&layout, Some("stable")).unwrap() {
        assert!(read
            .unwrap()
            .verify(std::slice::from_ref(&stranger), "stable")
            .is_err());
    }

    // A channel the release was never promoted to is refused, naming the fix.
    let refused = vendor
        .run(&[
            "export",
            "data-plane@0.1.0",
            "--channel",
            "beta",
            "--registry",
            &format!("{host}/acme"),
            "--insecure",
            "-o",
            vendor.temp.path().join("beta.tar").to_str().unwrap(),
        ])
        .code(1);
    assert!(
        refused
            .stderr
            .contains("has no statement approving it for channel `beta`"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("stackpack promote data-plane@0.1.0 --channel beta"),
        "{}",
        refused.stderr
    );
    assert!(!vendor.temp.path().join("beta.tar").exists());
}

#[test]
fn an_airgapped_vendor_promotes_into_the_local_layout_and_exports_the_channel() {
    let registry = Distribution::require();
    let vendor = Vendor::new();
    // Publishing also keeps the release in the repository's layout.
    let index = vendor.publish(&registry.host());
    drop(registry);

    // No registry given or configured: the statement goes into `.stackpack/bundles`.
    let run = vendor
        .run(&[
            "promote",
            "data-plane@0.1.0",
            "--channel",
            "stable",
            "--key",
            vendor.key.to_str().unwrap(),
        ])
        .ok();
    assert!(
        run.stderr
            .contains("export data-plane@0.1.0 --channel stable"),
        "{}",
        run.stderr
    );
    let local = ImageLayout::open(vendor.layout()).unwrap();
    let found = exported_statements(&local, "stable", &vendor.vendor_key());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].statement.digest, index);

    // Security review §7.3: a key that did not sign the release cannot approve it.
    // `promote` refuses it before signing anything; a statement by such a key put
    // in the layout by other means is left out of the export, said.
    let stranger = vendor.temp.path().join("stranger");
    vendor
        .run(&["keygen", "--out", stranger.to_str().unwrap()])
        .ok();
    let stranger_key = stranger.with_extension("key");
    let refused = vendor.run(&[
        "promote",
        "data-plane@0.1.0",
        "--channel",
        "stable",
        "--key",
        stranger_key.to_str().unwrap(),
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("only a key that signed what a statement approves may approve it"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        exported_statements(&local, "stable", &vendor.vendor_key()).len(),
        1,
        "the refused promotion wrote a statement"
    );
    let foreign_key = stackpack_schema::signature::PrivateKey::from_pem(
        &std::fs::read_to_string(&stranger_key).unwrap(),
    )
    .unwrap();
    let foreign = stackpack_schema::rollout::SignedChannelStatement::sign(
        found[0].statement.clone(),
        &foreign_key,
    );
    let subject = local
        .index()
        .unwrap()
        .manifests
        .into_iter()
        .find(|d| d.digest == index)
        .unwrap();
    stackpack_bundle::channel::write_statement(&local, &foreign, &subject).unwrap();

    let tar = vendor.temp.path().join("stable.tar");
    let exported_run = vendor
        .run(&[
            "export",
            "data-plane@0.1.0",
            "--channel",
            "stable",
            "--from",
            vendor.layout().to_str().unwrap(),
            "-o",
            tar.to_str().unwrap(),
        ])
        .ok();
    assert!(
        exported_run.stderr.contains(&format!(
            "the channel statement is signed by key `{}`",
            foreign_key.public_key().key_id()
        )),
        "{}",
        exported_run.stderr
    );
    let layout = untar(&tar, &vendor.temp.path().join("airgap"));
    let exported = exported_statements(&layout, "stable", &vendor.vendor_key());
    assert_eq!(exported.len(), 1);
    assert_eq!(exported[0].statement.digest, index);
    assert_eq!(exported[0].statement.release, "data-plane");

    // Without `--channel`, an export carries no statement.
    let plain = vendor.temp.path().join("plain.tar");
    vendor
        .run(&[
            "export",
            "data-plane@0.1.0",
            "--from",
            vendor.layout().to_str().unwrap(),
            "-o",
            plain.to_str().unwrap(),
        ])
        .ok();
    let layout = untar(&plain, &vendor.temp.path().join("plain"));
    assert!(statements_in(&layout, None).unwrap().is_empty());

    // A stack built but never promoted is refused for the channel.
    let refused = vendor
        .run(&[
            "export",
            "tools@0.1.0",
            "--channel",
            "stable",
            "--from",
            vendor.layout().to_str().unwrap(),
            "-o",
            vendor.temp.path().join("tools.tar").to_str().unwrap(),
        ])
        .code(1);
    assert!(
        refused
            .stderr
            .contains("stackpack promote tools@0.1.0 --channel stable"),
        "{}",
        refused.stderr
    );
}

#[test]
fn promote_refuses_an_unknown_version_a_bad_channel_and_a_missing_key() {
    let registry = Distribution::require();
    let host = registry.host();
    let vendor = Vendor::new();
    vendor.publish(&host);

    let unknown = vendor
        .promote(&host, "data-plane@9.9.9", &["--channel", "stable"])
        .code(2);
    assert!(
        unknown
            .stderr
            .contains("`data-plane@9.9.9` is neither a release nor a stack bundle"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("stackpack publish"),
        "{}",
        unknown.stderr
    );
    // The versions that are published are named, newest first.
    assert!(
        unknown
            .stderr
            .contains("is neither a release nor a stack bundle in `"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("; its published versions: `0.1.0`"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("the newest is `data-plane@0.1.0`"),
        "{}",
        unknown.stderr
    );
    let never = vendor
        .promote(&host, "data-plan@0.1.0", &["--channel", "stable"])
        .code(2);
    assert!(
        never
            .stderr
            .contains("nothing named `data-plan` is published there"),
        "{}",
        never.stderr
    );

    let no_version = vendor
        .promote(&host, "data-plane", &["--channel", "stable"])
        .code(2);
    assert!(
        no_version.stderr.contains("has no version"),
        "{}",
        no_version.stderr
    );

    let bad_channel = vendor
        .promote(&host, "data-plane@0.1.0", &["--channel", "Stable!"])
        .code(2);
    assert!(
        bad_channel
            .stderr
            .contains("`Stable!` is not a channel name"),
        "{}",
        bad_channel.stderr
    );

    // No `--key` and no `[signing] key`: nothing is pushed unsigned.
    let no_key = vendor
        .run(&[
            "promote",
            "data-plane@0.1.0",
            "--channel",
            "stable",
            "--insecure",
            "--registry",
            &format!("{host}/acme"),
        ])
        .code(2);
    assert!(
        no_key.stderr.contains("no signing key"),
        "{}",
        no_key.stderr
    );
    assert!(no_key.stderr.contains("--key FILE"), "{}", no_key.stderr);

    // A public key given where the private one belongs is refused, not used.
    let wrong_key = vendor
        .run(&[
            "promote",
            "data-plane@0.1.0",
            "--channel",
            "stable",
            "--insecure",
            "--registry",
            &format!("{host}/acme"),
            "--key",
            vendor.public_key.to_str().unwrap(),
        ])
        .code(2);
    assert!(
        wrong_key.stderr.contains("is unusable"),
        "{}",
        wrong_key.stderr
    );

    // None of these left a statement behind.
    let remote = remote(&host, None);
    let (bytes, index) = remote
        .pull_manifest("acme/releases/data-plane", "0.1.0")
        .unwrap()
        .unwrap();
    drop(bytes);
    assert!(statements_of(&remote, "acme/releases/data-plane", &index).is_empty());
}

#[test]
fn promote_to_a_channel_the_registry_does_not_have_is_refused_with_did_you_mean() {
    let registry = OurRegistry::start();
    registry.run(&["channel", "set", "stable"]).ok();
    registry.run(&["channel", "set", "beta"]).ok();
    let host = registry.host();
    let mut vendor = Vendor::new();
    vendor.token = Some(registry.publisher_token());
    let index = vendor.publish(&host);

    // Not "completed 0/0" on a channel nobody is on: exit 2, in the registry's words.
    let refused = vendor
        .promote(&host, "data-plane@0.1.0", &["--channel", "stabel"])
        .code(2);
    assert!(
        refused.stderr.contains(
            "channel `stabel` does not exist in this registry; did you mean `stable`?; its channels: `beta`, `stable`; \
             to start a new channel, create it first with `stackpack-registry channel set stabel`"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("only moves forward"),
        "{}",
        refused.stderr
    );
    let remote = remote(&host, vendor.token.as_deref());
    assert!(statements_of(&remote, "acme/releases/data-plane", &index).is_empty());
    let rollouts = registry.run(&["rollout", "status", "--json"]).ok().json();
    assert_eq!(rollouts, serde_json::json!([]));
}

#[test]
fn a_promotion_the_registry_refuses_is_shown_in_the_registry_s_words() {
    let registry = Distribution::require();
    let vendor = Vendor::new();
    let index = vendor.publish(&registry.host());
    // Stands in for our registry's rollout refusing a version older than the
    // channel's newest: the statement manifest's `PUT` is answered with its 409.
    let proxy = FaultProxy::answering(
        registry.port,
        "PUT",
        "/manifests/sha256:",
        1,
        "409 Conflict",
        r#"{"errors":[{"code":"CONFLICT","message":"channel `stable` already carries `data-plane@0.2.0`, newer than `0.1.0`","detail":null}]}"#,
    );
    let refused = vendor
        .promote(&proxy.host(), "data-plane@0.1.0", &["--channel", "stable"])
        .code(1);
    assert!(
        refused.stderr.contains(
            "refused to promote release `data-plane@0.1.0` to channel `stable` (HTTP 409): channel `stable` already carries `data-plane@0.2.0`, newer than `0.1.0`"
        ),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("\"errors\""), "{}", refused.stderr);
    assert!(refused.stderr.contains("hint:"), "{}", refused.stderr);
    let remote = remote(&registry.host(), None);
    assert!(statements_of(&remote, "acme/releases/data-plane", &index).is_empty());
}

/// A forecast of `data-plane@0.1.0` (index `index`) replacing a bucket the bundle's
/// policies call stateful for `globex`, and changing nothing for `initech`.
fn stateful_forecast(index: &Digest) -> serde_json::Value {
    let customer =
        |id: &str, outcome: &str, changes: serde_json::Value, stateful: serde_json::Value| {
            serde_json::json!({
                "customer": id, "outcome": outcome, "seconds": 1.0,
                "stacks": [{
                    "stack": "network", "to": "0.1.0", "toDigest": index.to_string(),
                    "outcome": outcome, "changes": changes, "stateful": stateful,
                    "changesDigest": Digest::of(b"changes").to_string(),
                }],
            })
        };
    serde_json::json!({
        "format": 1, "kind": "release", "release": "data-plane", "version": "0.1.0",
        "digest": index.to_string(), "channel": "stable",
        "createdAt": "2026-12-02T00:00:00Z", "account": "emulator",
        "customers": [
            customer("globex", "replace",
                serde_json::json!([{"address": "aws_s3_bucket.models", "kind": "aws_s3_bucket", "action": "replace"}]),
                serde_json::json!(["aws_s3_bucket.models"])),
            customer("initech", "no-change", serde_json::json!([]), serde_json::json!([])),
            // The emulator could not make what umbrella's running version holds.
            serde_json::json!({
                "customer": "umbrella", "outcome": "not-forecast", "seconds": 1.0,
                "stacks": [],
                "reason": "applying its running version 0.0.9 failed: the emulator cannot create `aws_eks_addon`\n(more lines of the engine's error)",
            }),
        ],
    })
}

#[test]
fn promote_refuses_a_forecast_that_replaces_a_stateful_resource_of_a_customer_who_applies_unattended(
) {
    let registry = OurRegistry::start();
    let host = registry.host();
    let mut vendor = Vendor::new();
    vendor.token = Some(registry.publisher_token());
    let index = vendor.publish(&host);
    for id in ["globex", "initech", "umbrella"] {
        registry.run(&["customer", "add", id]).ok();
        registry
            .run(&[
                "customer",
                "set",
                id,
                "--channel",
                "stable",
                "--wave",
                "general",
            ])
            .ok();
    }
    registry.run(&["channel", "set", "beta"]).ok();
    // Without a forecast, promote says so and goes on: the forecast is the vendor's
    // tool, not a gate a registry without one could close.
    let unforecast = vendor
        .promote(&host, "data-plane@0.1.0", &["--channel", "beta"])
        .ok();
    assert!(
        unforecast
            .stderr
            .contains("no forecast of `data-plane@0.1.0`"),
        "{}",
        unforecast.stderr
    );

    let put = stackpack_bundle::remote::http::put_json(
        &format!("http://{host}/api/v1/forecasts/data-plane/0.1.0"),
        vendor.token.as_deref().unwrap(),
        serde_json::to_vec(&stateful_forecast(&index)).unwrap(),
    )
    .unwrap();
    assert!(
        (200..300).contains(&put.status),
        "{}: {}",
        put.status,
        put.body
    );

    // globex's runner never said its policy: it may apply on its own, so promote
    // refuses, naming it and the bucket, and signs nothing.
    let refused = vendor.promote(&host, "data-plane@0.1.0", &["--channel", "stable"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("`globex`: `network: aws_s3_bucket.models`"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("`initech`:"), "{}", refused.stderr);
    // A customer the emulator could not forecast is named with why, never passed
    // silently as if its plan were known.
    assert!(
        refused.stderr.contains(
            "`umbrella` has no forecast: not forecast: applying its running version 0.0.9 failed: the emulator cannot create `aws_eks_addon`"
        ),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("more lines"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("--accept-forecast"),
        "{}",
        refused.stderr
    );
    let remote = remote(&host, vendor.token.as_deref());
    let stable: Vec<_> = statements_of(&remote, "acme/releases/data-plane", &index)
        .into_iter()
        .filter(|s| s.statement.channel == "stable")
        .collect();
    assert!(stable.is_empty(), "nothing signed for stable: {stable:?}");

    // Accepted knowingly: promoted, and globex's assignment asks its runner to hold.
    let accepted = vendor
        .promote(
            &host,
            "data-plane@0.1.0",
            &["--channel", "stable", "--accept-forecast"],
        )
        .ok();
    assert!(
        accepted
            .stderr
            .contains("accepted with `--accept-forecast`"),
        "{}",
        accepted.stderr
    );
    let token = registry.token("customer", Some("globex"));
    let assignment = stackpack_bundle::remote::http::get(
        &format!("http://{host}/api/v1/customers/globex/assignment"),
        Some(&token),
        1 << 20,
    )
    .unwrap();
    assert!(assignment.body.contains("\"hold\""), "{}", assignment.body);
}

/// Issue 41 §4, against moto's KMS (the stand-in for AWS KMS): a release published
/// and promoted with `--key awskms:///alias/stackpack-ci` (the variables point the
/// AWS client at moto) is taken by our registry, which checks that the promotion's
/// signer signed the release; the statement verifies with the P-256 key
/// `stackpack key public` prints, and not for another channel.
#[test]
fn a_release_published_and_promoted_through_kms_is_taken_by_our_registry() {
    let moto = stackpack_test_support::servers::Moto::start();
    moto.python(
        r#"
import boto3
kms = boto3.client("kms", endpoint_url=ENDPOINT, region_name="us-east-1")
key = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
kms.create_alias(AliasName="alias/stackpack-ci", TargetKeyId=key)
"#,
    )
    .ok();
    // Each test is its own process under nextest: these reach only this test's
    // `stackpack` runs.
    for (name, value) in moto.env() {
        std::env::set_var(name, value);
    }
    std::env::set_var("AWS_ENDPOINT_URL", &moto.url);

    let registry = OurRegistry::start();
    registry.run(&["channel", "set", "stable"]).ok();
    let host = registry.host();
    let mut vendor = Vendor::new();
    vendor.token = Some(registry.publisher_token());
    vendor.key = PathBuf::from("awskms:///alias/stackpack-ci");
    let public = vendor
        .run(&["key", "public", "awskms:///alias/stackpack-ci", "--json"])
        .ok()
        .json();
    assert_eq!(public["algorithm"], "ecdsa-p256-sha256", "{public}");
    let kms_key = PublicKey::from_pem(public["publicKey"].as_str().unwrap()).unwrap();

    let index = vendor.publish(&host);
    let report = vendor
        .promote(&host, "data-plane@0.1.0", &["--channel", "stable"])
        .ok()
        .json();
    assert_eq!(report["digest"], index.to_string(), "{report}");
    let remote = remote(&host, vendor.token.as_deref());
    let found = statements_of(&remote, "acme/releases/data-plane", &index);
    assert_eq!(found.len(), 1);
    let signer = found[0]
        .verify(std::slice::from_ref(&kms_key), "stable")
        .unwrap();
    assert_eq!(signer.key_id(), kms_key.key_id());
    assert!(found[0].verify(&[kms_key], "beta").is_err());
    assert!(
        found[0].verify(&[vendor.vendor_key()], "stable").is_err(),
        "the file key signed nothing here"
    );
}
