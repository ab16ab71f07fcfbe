//! The runner's policy on a bundle's attestations, on a bundle published to a real
//! CNCF Distribution (no referrers API: found by the tag fallback) and pulled:
//! `[policy] require` and `[policy.provenance]` accept a bundle built from the
//! pinned repository and ref and say so (`verify --explain`, the receipt), refuse
//! one built elsewhere with nothing imported, and refuse a bundle whose provenance
//! was swapped for another commit's.

use crate::common;

use std::process::Command;

use common::{kms, Runner, Vendor};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::servers::Distribution;
use stackpack_test_support::Run;

const REPOSITORY: &str = "https://git.acme.example/platform/acme-infra";

fn publish(vendor: &Vendor, registry: &Distribution) {
    Run::from(
        Command::new(common::stackpack_bin())
            .current_dir(&vendor.dir)
            .args([
                "publish",
                "--json",
                "--insecure",
                "--no-modules",
                "--stack",
                "data-plane",
            ])
            .args(["--registry", &format!("{}/acme", registry.host())])
            .args(["--key", vendor.key.to_str().unwrap()])
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITLAB_CI")
            .output()
            .unwrap(),
    )
    .ok();
}

/// A runner trusting the vendor, with `keys` under `[policy]` and `tables` (such as
/// `[policy.provenance]`) at the end of `runner.toml`.
fn runner_with_policy(vendor: &Vendor, keys: &str, tables: &str) -> Runner {
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.set_config("[policy]\n", &format!("[policy]\n{keys}"));
    let path = runner.home.join("runner.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n{tables}")).unwrap();
    runner
}

fn pull(runner: &Runner, registry: &Distribution) -> Run {
    let reference = format!("{}/acme/stacks/data-plane:0.1.0", registry.host());
    runner.run(&["pull", &reference, "--insecure"])
}

#[test]
fn a_runner_pinned_to_the_vendors_repository_and_branch_takes_its_bundle_and_refuses_another_branch(
) {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    publish(&vendor, &registry);
    let head = String::from_utf8(
        Command::new("git")
            .current_dir(&vendor.dir)
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();

    let pinned = format!(
        "[policy.provenance]\nrepository = \"{REPOSITORY}\"\nrefs = [\"refs/heads/main\"]\n"
    );
    let runner = runner_with_policy(&vendor, "require = [\"provenance\", \"sbom\"]\n", &pinned);
    pull(&runner, &registry).ok();
    let explained = runner
        .run(&["verify", "data-plane@0.1.0", "--explain"])
        .ok();
    assert!(
        explained.stdout.contains(&format!("3. provenance  SLSA v1, signed by the same trusted key: {REPOSITORY} at `{}` on `refs/heads/main`, built by a local build", head.trim())),
        "{}",
        explained.stdout
    );
    assert!(
        explained
            .stdout
            .contains("5. policy      requires provenance and SBOM: met"),
        "{}",
        explained.stdout
    );
    let json = runner
        .run(&["verify", "data-plane@0.1.0", "--json"])
        .ok()
        .json();
    assert_eq!(json["verification"]["provenance"]["commit"], head.trim());
    assert!(json["verification"]["sbom"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    // Pinned to a release branch: this build from `main` never enters the store.
    let elsewhere = runner_with_policy(
        &vendor,
        "",
        "[policy.provenance]\nrefs = [\"refs/heads/release\"]\n",
    );
    let refused = pull(&elsewhere, &registry);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("nothing was imported: `data-plane@0.1.0` was built from `refs/heads/main`, and this runner accepts only `refs/heads/release`"),
        "{}",
        refused.stderr
    );
    assert!(elsewhere
        .store()
        .find_bundle("data-plane", &"0.1.0".parse().unwrap())
        .unwrap()
        .is_none());

    // Another repository, the same way.
    let other = runner_with_policy(
        &vendor,
        "",
        "[policy.provenance]\nrepository = \"https://git.evil.example/acme-infra\"\n",
    );
    let refused = pull(&other, &registry);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("and this runner accepts only `https://git.evil.example/acme-infra`"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_bundle_without_attestations_is_refused_where_the_policy_requires_them() {
    // Signed as an older Stackpack signed, with no attestation beside it.
    let key = PrivateKey::from_secret_bytes([9; 32]);
    let scratch = tempfile::tempdir().unwrap();
    let public = scratch.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let source = tempfile::tempdir().unwrap();
    let layout = ImageLayout::create(source.path()).unwrap();
    common::write_signed_bundle(
        &layout,
        &key,
        "data-plane",
        "1.0.0",
        &common::raw_archive(&[]),
        vec![],
    );

    let runner = Runner::new("globex").without_account();
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    // Accepted where nothing is required, and said so.
    runner
        .run(&["import", source.path().to_str().unwrap()])
        .ok();
    let verified = runner.run(&["verify", "data-plane@1.0.0"]).ok();
    assert!(
        verified.stdout.contains("; no provenance"),
        "{}",
        verified.stdout
    );

    let strict = Runner::new("globex").without_account();
    strict.run(&["trust", "add", public.to_str().unwrap()]).ok();
    strict.set_config("[policy]\n", "[policy]\nrequire = [\"provenance\"]\n");
    let refused = strict.run(&["import", source.path().to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "`data-plane@1.0.0` carries no signed provenance, which this runner's policy requires"
        ),
        "{}",
        refused.stderr
    );
}

/// Puts beside the built `data-plane` a provenance signed by the vendor's own key
/// that names another commit: a provenance attached to the wrong build.
fn misattach_provenance(vendor: &Vendor, version: &str) {
    use stackpack_bundle::archive::Limits;
    use stackpack_bundle::layout::EntryKind;
    use stackpack_bundle::verify::{verify_bundle, Trust};
    use stackpack_schema::attest::{provenance, sbom};

    let layout = ImageLayout::open(vendor.layout()).unwrap();
    let version = version.parse().unwrap();
    let bundle = verify_bundle(
        &layout,
        "data-plane",
        &version,
        &Trust::ReportOnly,
        &Limits::default(),
    )
    .unwrap();
    layout
        .update_index(|index| {
            index.manifests.retain(|m| {
                !matches!(
                    stackpack_bundle::layout::entry_kind(m),
                    EntryKind::Attestation { .. }
                )
            })
        })
        .unwrap();
    let mut config = bundle.config.clone();
    config.source.commit = "0000000000000000000000000000000000000000".into();
    let key = PrivateKey::from_pem(&std::fs::read_to_string(&vendor.key).unwrap()).unwrap();
    let builder = provenance::Builder {
        id: "https://stackpack.dev/builders/local".into(),
        name: "a local build".into(),
        run: None,
        invocation: None,
    };
    let subject = &bundle.manifest_descriptor;
    let repository = "acme/stacks/data-plane";
    let bom = sbom::for_bundle(&bundle.config, &subject.digest, repository);
    let what = stackpack_bundle::attest::ToAttest {
        subject,
        repository,
        version: &config.version.to_string(),
        created: &config.created,
        sbom: &bom,
    };
    stackpack_bundle::attest::write_attestations(
        &layout,
        &what,
        |sbom| {
            let inputs = provenance::Inputs {
                builder: &builder,
                stackpack_version: "test",
                repository,
                sbom,
            };
            provenance::for_bundle(&config, &subject.digest, &inputs)
        },
        &key,
    )
    .unwrap();
}

#[test]
fn a_provenance_of_another_commit_is_refused_and_nothing_is_imported() {
    let vendor = Vendor::small();
    let built = vendor.build();
    let version = &built.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    misattach_provenance(&vendor, version);

    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let refused = runner.run(&["import", vendor.layout().to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("its provenance names commit `0000000000000000000000000000000000000000`, but the bundle was built from `"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("nothing was imported"),
        "{}",
        refused.stderr
    );
    assert!(runner
        .store()
        .find_bundle("data-plane", &version.parse().unwrap())
        .unwrap()
        .is_none());
}

fn publish_with_kms(
    vendor: &Vendor,
    registry: &Distribution,
    moto: &stackpack_test_support::servers::Moto,
    key: &str,
) -> Run {
    Run::from(
        kms::stackpack_on_kms(&vendor.dir, moto)
            .args([
                "publish",
                "--json",
                "--insecure",
                "--no-modules",
                "--stack",
                "data-plane",
            ])
            .args(["--registry", &format!("{}/acme", registry.host())])
            .args(["--key", key])
            .output()
            .unwrap(),
    )
}

/// Issue 41 §4, against moto (the stand-in for AWS KMS): a bundle signed through KMS
/// (ECDSA P-256, the CI never holding the private key) verifies on a runner that
/// trusts the key KMS gives, and with the customer's own tools; a key of another
/// spec or usage is refused before anything is pushed; a removed key is named.
#[test]
fn a_bundle_signed_through_kms_verifies_and_a_removed_key_is_named() {
    let registry = Distribution::require();
    let moto = stackpack_test_support::servers::Moto::start();
    let public_pem = kms::pem_of(&kms::kms_keys(&moto));
    let vendor = Vendor::small();
    let public = vendor.temp.path().join("kms.pub");
    std::fs::write(&public, &public_pem).unwrap();

    for (alias, says) in [
        ("alias/rsa", "is `RSA_2048` for `SIGN_VERIFY`"),
        ("alias/enc", "for `ENCRYPT_DECRYPT`"),
    ] {
        let refused = publish_with_kms(&vendor, &registry, &moto, &format!("awskms:///{alias}"));
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        assert!(refused.stderr.contains(says), "{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("aws kms create-key --key-spec ECC_NIST_P256"),
            "{}",
            refused.stderr
        );
    }
    let client = stackpack_bundle::remote::Remote::with_credentials(
        &registry.host(),
        true,
        stackpack_bundle::remote::Credentials::Anonymous,
    )
    .unwrap();
    assert!(
        client
            .tag_digest("acme/stacks/data-plane", "0.1.0")
            .unwrap()
            .is_none(),
        "nothing was pushed"
    );

    publish_with_kms(&vendor, &registry, &moto, "awskms:///alias/stackpack-ci").ok();

    let runner = Runner::new("globex").without_account();
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    let listed = runner.run(&["trust", "list", "--json"]).ok().json();
    assert_eq!(
        listed["keys"][0]["algorithm"], "ecdsa-p256-sha256",
        "{listed}"
    );
    assert!(
        listed["keys"][0]["origin"]
            .as_str()
            .unwrap()
            .ends_with("kms.pub"),
        "{listed}"
    );
    pull(&runner, &registry).ok();
    let verified = runner
        .run(&["verify", "data-plane@0.1.0", "--json"])
        .ok()
        .json();
    assert_eq!(
        verified["verification"]["algorithm"], "ecdsa-p256-sha256",
        "{verified}"
    );
    assert!(
        verified["verification"]["provenance"].is_object(),
        "{verified}"
    );

    // The customer's own tools check the KMS-signed attestations with the same key.
    let script = stackpack_test_support::repository_root().join("scripts/verify/attestations.py");
    Run::from(
        Command::new("python3")
            .arg(script)
            .args([
                "--registry",
                &registry.url(),
                "--repository",
                "acme/stacks/data-plane",
            ])
            .args(["--reference", "0.1.0", "--key", public.to_str().unwrap()])
            .output()
            .unwrap(),
    )
    .ok();

    // Removed (another key still trusted), the key is named as removed.
    let key_id = listed["keys"][0]["keyId"].as_str().unwrap().to_string();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["trust", "remove", &key_id]).ok();
    let refused = runner.run(&["verify", "data-plane@0.1.0"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "is signed by key `{key_id}`, which was removed from this runner's trusted keys"
        )),
        "{}",
        refused.stderr
    );
}
