//! Keys in moto's KMS (the stand-in for AWS KMS here) and `stackpack` run against
//! it: what the tests signing through KMS share (`kms.rs`, `attested.rs`).

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use stackpack_test_support::servers::Moto;

use super::stackpack_bin;

/// In moto's KMS: a P-256 signing key `alias/stackpack-ci`, an RSA one `alias/rsa`
/// and an encryption key `alias/enc`. Returns the signing key's public key as KMS
/// gives it (DER).
pub fn kms_keys(moto: &Moto) -> Vec<u8> {
    let run = moto
        .python(
            r#"
import base64, boto3
kms = boto3.client("kms", endpoint_url=ENDPOINT, region_name="us-east-1")
for alias, spec, usage in [("stackpack-ci", "ECC_NIST_P256", "SIGN_VERIFY"),
                           ("rsa", "RSA_2048", "SIGN_VERIFY"),
                           ("enc", "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT")]:
    key = kms.create_key(KeySpec=spec, KeyUsage=usage)["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/" + alias, TargetKeyId=key)
print(base64.b64encode(kms.get_public_key(KeyId="alias/stackpack-ci")["PublicKey"]).decode())
"#,
        )
        .ok();
    base64::engine::general_purpose::STANDARD
        .decode(run.stdout.trim())
        .unwrap()
}

/// A public key KMS gave (DER, SPKI) as the PEM a runner's trusted keys take.
pub fn pem_of(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap());
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem
}

/// `stackpack` in `dir`, against moto's KMS and outside any CI (no branch or CI
/// variable of the machine running the tests reaches it).
pub fn stackpack_on_kms(dir: &Path, moto: &Moto) -> Command {
    let mut command = Command::new(stackpack_bin());
    command
        .current_dir(dir)
        .envs(moto.env())
        .env("AWS_ENDPOINT_URL", &moto.url)
        .env("NO_COLOR", "1");
    for variable in [
        "GITHUB_HEAD_REF",
        "GITHUB_REF_NAME",
        "CI_COMMIT_REF_NAME",
        "GITHUB_ACTIONS",
        "GITLAB_CI",
    ] {
        command.env_remove(variable);
    }
    command
}
