//! Signing keys in AWS KMS (issue 41 §4), against moto's KMS, the stand-in for AWS
//! KMS here: `stackpack key public` gives the PEM KMS holds, bundles built with
//! `[signing] key = "awskms:///…"` in `stackpack.toml` and a kit signed with
//! `--key env:VAR` (naming the KMS key) verify with `openssl` alone and on a runner
//! trusting that PEM; keys that cannot sign for Stackpack are refused, each with one
//! hint. (`attested.rs` publishes through KMS and names a removed key.)

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use stackpack_schema::signature::{canonical_json, SignatureEnvelope};
use stackpack_test_support::servers::Moto;
use stackpack_test_support::Run;

use crate::common::kms::{kms_keys, stackpack_on_kms};
use crate::common::release::{inputs_dir, ReleaseVendor};
use crate::common::{have, stackpack_bin, Runner};

const KEY: &str = "awskms:///alias/stackpack-ci";

/// `stackpack ARGS` in `dir`, against moto's KMS.
fn stackpack(dir: &Path, moto: &Moto, args: &[&str]) -> Run {
    Run::from(stackpack_on_kms(dir, moto).args(args).output().unwrap())
}

fn openssl_verifies(public: &Path, message: &[u8], signature: &[u8], dir: &Path) -> Run {
    let (message_file, signature_file) = (dir.join("message"), dir.join("message.sig"));
    std::fs::write(&message_file, message).unwrap();
    std::fs::write(&signature_file, signature).unwrap();
    Run::from(
        Command::new("openssl")
            .args(["dgst", "-sha256", "-verify"])
            .arg(public)
            .arg("-signature")
            .arg(&signature_file)
            .arg(&message_file)
            .output()
            .unwrap(),
    )
}

#[test]
fn keys_that_cannot_sign_for_stackpack_are_refused_with_one_hint() {
    let moto = Moto::start();
    let der = kms_keys(&moto);
    let dir = tempfile::tempdir().unwrap();

    let public = stackpack(dir.path(), &moto, &["key", "public", KEY, "--json"]).ok();
    let json = public.json();
    let kms_key = stackpack_schema::signature::PublicKey::from_der(&der).unwrap();
    assert_eq!(json["keyId"], kms_key.key_id().as_str(), "{json}");
    assert_eq!(json["algorithm"], "ecdsa-p256-sha256", "{json}");
    assert_eq!(json["publicKey"], kms_key.to_pem().as_str(), "{json}");

    for (key, code, says, hint) in [
        (
            "awskms:///alias/rsa",
            1,
            "KMS key `alias/rsa` is `RSA_2048` for `SIGN_VERIFY`",
            "aws kms create-key --key-spec ECC_NIST_P256 --key-usage SIGN_VERIFY",
        ),
        (
            "awskms:///alias/enc",
            1,
            "is `SYMMETRIC_DEFAULT` for `ENCRYPT_DECRYPT`",
            "aws kms create-key --key-spec ECC_NIST_P256 --key-usage SIGN_VERIFY",
        ),
        (
            "awskms:///alias/missing",
            1,
            "KMS key `alias/missing`",
            "aws kms list-aliases",
        ),
        ("awskms:///", 2, "`awskms:///` is not a KMS key", "alias"),
    ] {
        let refused = stackpack(dir.path(), &moto, &["key", "public", key]);
        assert_eq!(refused.code, code, "{key}: {}", refused.stderr);
        assert!(refused.stderr.contains(says), "{key}: {}", refused.stderr);
        assert_eq!(
            refused.stderr.matches("hint:").count(),
            1,
            "{key}: {}",
            refused.stderr
        );
        let said = refused.stderr.split("hint:").nth(1).unwrap();
        assert!(said.contains(hint), "{key}: {said}");
        assert!(refused.stdout.is_empty(), "{key}: {}", refused.stdout);
    }
}

#[test]
fn bundles_and_a_kit_signed_through_kms_verify_with_openssl_and_on_the_runner() {
    assert!(have("openssl"), "`openssl` is needed");
    let moto = Moto::start();
    kms_keys(&moto);
    let vendor = ReleaseVendor::new();
    let work = tempfile::tempdir().unwrap();
    let kms_pub = work.path().join("kms.pub");
    stackpack(
        &vendor.dir,
        &moto,
        &["key", "public", KEY, "-o", kms_pub.to_str().unwrap()],
    )
    .ok();

    // `[signing] key` in `stackpack.toml` names the KMS key: no `--key`.
    let config = vendor.dir.join("stackpack.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[signing]\nkey = \"{KEY}\"\n")).unwrap();
    stackpack(&vendor.dir, &moto, &["build", "--json", "--branch", "main"]).ok();
    vendor.write(
        &vendor.description(
            "platform",
            "1.0.0",
            &[
                ("network", "0.1.0"),
                ("cluster", "0.1.0"),
                ("gpu-pools", "0.1.0"),
            ],
        ),
        &[],
        None,
    );

    // A bundle's signature is a raw ASN.1 ECDSA signature over SHA-256 of the
    // canonical payload: `openssl dgst -sha256 -verify` checks it with KMS's key.
    let layout = vendor.layout();
    let bundle = layout
        .find_bundle("network", &"0.1.0".parse().unwrap())
        .unwrap()
        .unwrap();
    let signature = &layout.signatures_for(&bundle.digest).unwrap()[0];
    let manifest: stackpack_schema::oci::ImageManifest =
        serde_json::from_slice(&layout.read_blob(&signature.digest, 1 << 20).unwrap()).unwrap();
    let envelope = SignatureEnvelope::from_bytes(
        &layout
            .read_blob(&manifest.layers[0].digest, 1 << 20)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(envelope.algorithm, "ecdsa-p256-sha256");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&envelope.signature)
        .unwrap();
    let payload = canonical_json(&envelope.payload);
    openssl_verifies(&kms_pub, &payload, &raw, work.path()).ok();
    let mut tampered = payload.clone();
    tampered[10] ^= 1;
    assert_eq!(
        openssl_verifies(&kms_pub, &tampered, &raw, work.path()).code,
        1
    );

    // A kit whose `SHA256SUMS` KMS signs (`--key env:VAR` naming the KMS key).
    let kit_tar = work.path().join("kit.tar");
    Run::from(
        Command::new(stackpack_bin())
            .args(["kit", "platform@1.0.0", "--from"])
            .arg(vendor.layout_dir())
            .args(["--key", "env:VENDOR_SIGNING_KEY", "-o"])
            .arg(&kit_tar)
            .envs(moto.env())
            .env("AWS_ENDPOINT_URL", &moto.url)
            .env("VENDOR_SIGNING_KEY", KEY)
            .output()
            .unwrap(),
    )
    .ok();
    let unpacked = work.path().join("kit");
    std::fs::create_dir(&unpacked).unwrap();
    Run::from(
        Command::new("tar")
            .arg("-xf")
            .arg(&kit_tar)
            .arg("-C")
            .arg(&unpacked)
            .output()
            .unwrap(),
    )
    .ok();
    assert_eq!(
        std::fs::read_to_string(unpacked.join("vendor.pub")).unwrap(),
        std::fs::read_to_string(&kms_pub).unwrap()
    );
    // The kit's own `verify.sh` (`openssl pkeyutl -rawin`), and `openssl dgst`.
    Run::from(
        Command::new("sh")
            .arg("verify.sh")
            .arg(&kms_pub)
            .current_dir(&unpacked)
            .output()
            .unwrap(),
    )
    .ok();
    openssl_verifies(
        &kms_pub,
        &std::fs::read(unpacked.join("SHA256SUMS")).unwrap(),
        &std::fs::read(unpacked.join("SHA256SUMS.sig")).unwrap(),
        work.path(),
    )
    .ok();

    // A runner trusting the PEM KMS gives (and the key the release index is signed
    // with) imports the kit and verifies every bundle in it.
    let runner = Runner::new("initech").without_account();
    let added = runner
        .run(&["trust", "add", kms_pub.to_str().unwrap()])
        .ok();
    assert!(
        added.stdout.contains("(ecdsa-p256-sha256)"),
        "{}",
        added.stdout
    );
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let listed = runner.run(&["trust", "list"]).ok().stdout;
    assert!(
        listed.contains("ALGORITHM")
            && listed.contains("ecdsa-p256-sha256")
            && listed.contains("ed25519"),
        "{listed}"
    );
    assert!(listed.contains(kms_pub.to_str().unwrap()), "{listed}");
    let imported = runner
        .run(&["import", kit_tar.to_str().unwrap(), "--json"])
        .ok()
        .json();
    assert_eq!(
        imported["imported"].as_array().unwrap().len(),
        3,
        "{imported}"
    );
    let verified = runner
        .run(&["verify", "network@0.1.0", "--json"])
        .ok()
        .json();
    assert_eq!(
        verified["verification"]["algorithm"], "ecdsa-p256-sha256",
        "{verified}"
    );

    // The key that signed the release index removed, the release is refused naming it.
    let pem = std::fs::read_to_string(&vendor.public_key).unwrap();
    let file_key = stackpack_schema::signature::PublicKey::from_pem(&pem)
        .unwrap()
        .key_id();
    runner.run(&["trust", "remove", &file_key]).ok();
    let inputs = inputs_dir(work.path(), 1);
    let refused = runner.run(&[
        "plan",
        "platform@1.0.0",
        "--inputs-dir",
        inputs.to_str().unwrap(),
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "release `platform@1.0.0` is signed by key `{file_key}`, which was removed from this runner's trusted keys"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("hint: ask your vendor for this version signed by a key you trust"),
        "{}",
        refused.stderr
    );
}

/// A KMS that answers `GetPublicKey` with one P-256 key and signs with another (as
/// a misconfigured proxy or a hostile endpoint might): a stand-in served by Python
/// on loopback, reached through the `awskms://HOST:PORT/…` endpoint form.
struct LyingKms {
    child: std::process::Child,
    port: String,
}

impl LyingKms {
    fn start() -> LyingKms {
        use std::io::BufRead as _;
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(
                r#"
import base64, http.server, json
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
shown, signing = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
der = shown.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
class Kms(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.headers["x-amz-target"].endswith(".GetPublicKey"):
            answer = {"KeyId": request["KeyId"], "PublicKey": base64.b64encode(der).decode(),
                      "KeySpec": "ECC_NIST_P256", "KeyUsage": "SIGN_VERIFY",
                      "SigningAlgorithms": ["ECDSA_SHA_256"]}
        else:
            signature = signing.sign(base64.b64decode(request["Message"]), ec.ECDSA(hashes.SHA256()))
            answer = {"KeyId": request["KeyId"], "Signature": base64.b64encode(signature).decode(),
                      "SigningAlgorithm": "ECDSA_SHA_256"}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.1")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Kms)
print(server.server_port, flush=True)
server.serve_forever()
"#,
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        LyingKms {
            child,
            port: port.trim().to_string(),
        }
    }
}

impl Drop for LyingKms {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_kms_that_signs_with_another_key_is_refused_and_nothing_is_built() {
    let kms = LyingKms::start();
    let vendor = ReleaseVendor::new();
    let key = format!("awskms://127.0.0.1:{}/alias/stackpack-ci", kms.port);
    let built = Run::from(
        Command::new(stackpack_bin())
            .current_dir(&vendor.dir)
            .args(["build", "--branch", "main", "--key", &key])
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    );
    assert_eq!(built.code, 1, "{}", built.stderr);
    assert!(
        built.stderr.contains(
            "KMS key `alias/stackpack-ci` returned a signature (algorithm `ECDSA_SHA_256`) that its own public key"
        ),
        "{}",
        built.stderr
    );
    assert_eq!(built.stderr.matches("hint:").count(), 1, "{}", built.stderr);
    assert!(
        built.stderr.contains("hint: check the signing key"),
        "{}",
        built.stderr
    );
    let layout = stackpack_bundle::layout::ImageLayout::open(vendor.layout_dir());
    let bundles = layout
        .map(|l| l.versions("network").unwrap())
        .unwrap_or_default();
    assert!(bundles.is_empty(), "nothing was built: {bundles:?}");
}
