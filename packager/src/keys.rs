//! Signing keys: making them and reading them.

use std::io::Write;
use std::path::{Path, PathBuf};

use stackpack_schema::signature::{PrivateKey, PublicKey, SigningKey};

use crate::config::KeySource;
use crate::error::{Error, Result};

/// Paths of a key pair made by [`generate`].
pub struct KeyPair {
    pub private_path: PathBuf,
    pub public_path: PathBuf,
    pub key_id: String,
}

/// Writes `<prefix>.key` (PKCS#8 PEM, mode 0600) and `<prefix>.pub` (SPKI PEM).
/// Refuses to overwrite an existing key: a lost signing key cannot be recovered.
pub fn generate(prefix: &Path) -> Result<KeyPair> {
    let private_path = with_suffix(prefix, "key");
    let public_path = with_suffix(prefix, "pub");
    for path in [&private_path, &public_path] {
        if path.exists() {
            return Err(Error::usage(format!("`{}` already exists", path.display()))
                .hint("choose another `--out` prefix; stackpack never overwrites a key"));
        }
    }
    let mut secret = [0u8; 32];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut secret);
    let key = PrivateKey::from_secret_bytes(secret);
    secret.fill(0);
    if let Some(parent) = private_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::usage(format!("cannot create `{}`: {e}", parent.display())))?;
    }
    refuse_committable(&private_path)?;
    write_new(&private_path, key.to_pem().as_bytes(), 0o600)?;
    write_new(&public_path, key.public_key().to_pem().as_bytes(), 0o644)?;
    Ok(KeyPair {
        private_path,
        public_path,
        key_id: key.public_key().key_id(),
    })
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .map_err(|e| Error::usage(format!("cannot write `{}`: {e}", path.display())))?;
    file.write_all(bytes)
        .and_then(|_| file.sync_all())
        .map_err(|e| Error::usage(format!("cannot write `{}`: {e}", path.display())))
}

/// The vendor's signing key `--key` names: a key file (ed25519), a key held in AWS
/// KMS (`awskms:///alias/NAME`, `awskms:///arn:…`), or `env:VAR` holding either (or
/// the PEM itself), checked before anything is built.
pub fn open_signing_key(path: &Path) -> Result<Box<dyn SigningKey>> {
    open_key_source(&key_source(&path.to_string_lossy())?)
}

/// Where `--key` says the key is: `env:VAR`, `awskms://…`, or a file.
pub fn key_source(flag: &str) -> Result<KeySource> {
    if flag.starts_with(stackpack_aws::kms::SCHEME) {
        return Ok(KeySource::Kms(flag.to_string()));
    }
    let Some(variable) = flag.strip_prefix("env:") else {
        return Ok(KeySource::File(PathBuf::from(flag)));
    };
    KeySource::from_variable(variable)
        .map_err(|e| Error::usage(format!("`--key {flag}`: `{variable}` is not set")).hint(e.hint))
}

/// Opens a key in AWS KMS, checked: a P-256 key for signing, whose public key KMS gives.
fn open_kms(uri: &str) -> Result<stackpack_aws::kms::KmsKey> {
    stackpack_aws::kms::KmsKey::open(uri).map_err(|e| {
        let error = match e {
            stackpack_aws::kms::KmsError::BadUri { .. } => Error::usage(e.to_string()),
            _ => Error::refused(format!("cannot sign with `{uri}`: {e}")),
        };
        error.hint(e.hint())
    })
}

/// Reads a private signing key.
pub fn read_private_key(path: &Path) -> Result<PrivateKey> {
    let shown = shown_path(path);
    if looks_like_a_key(&path.to_string_lossy()) {
        return Err(Error::usage(format!(
            "the signing key path {shown}: a key's content was given where its path belongs"
        ))
        .hint("pass the key's file with `--key FILE`, or its PEM in the variable `[signing] key = \"env:VAR\"` names"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(format!("cannot read signing key {shown}: {e}"))
            .hint("pass the private key made by `stackpack keygen` with `--key FILE`")
    })?;
    refuse_tracked(path)?;
    parse_private_key(&text, &format!("signing key {shown}"))
}

/// The git work tree `path` (a file that may not exist yet) is in, if any, from
/// the folder it is in. No git on the machine: no work tree to protect.
fn work_tree_of(path: &Path) -> Option<PathBuf> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let out = git(folder, &["rev-parse", "--show-toplevel"])?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn git(folder: &Path, args: &[&str]) -> Option<std::process::Output> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
}

/// Refuses to write a private key where one `git add -A` would commit it: inside a
/// work tree, not ignored.
fn refuse_committable(private_path: &Path) -> Result<()> {
    let Some(tree) = work_tree_of(private_path) else {
        return Ok(());
    };
    let folder = private_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = private_path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    let ignored =
        git(folder, &["check-ignore", "-q", "--", &name]).is_some_and(|o| o.status.success());
    if ignored {
        return Ok(());
    }
    Err(Error::usage(format!(
        "`{}` would be written inside the git work tree `{}`, where it is not ignored: one `git add -A` would commit the signing key",
        private_path.display(),
        tree.display()
    ))
    .hint(format!(
        "write it outside the repository (`--out ~/keys/{stem}`), or ignore it first (`echo '{name}' >> .gitignore`)",
        stem = name.trim_end_matches(".key")
    )))
}

/// Refuses a signing key git tracks: everyone with the repository holds it.
fn refuse_tracked(path: &Path) -> Result<()> {
    let Some(tree) = work_tree_of(path) else {
        return Ok(());
    };
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tracked = git(folder, &["ls-files", "--error-unmatch", "--", &name])
        .is_some_and(|o| o.status.success());
    if !tracked {
        return Ok(());
    }
    Err(Error::usage(format!(
        "the signing key `{}` is tracked by git in `{}`: everyone with the repository can sign as you",
        path.display(),
        tree.display()
    ))
    .hint(format!(
        "stop tracking it (`git rm --cached {name}`, and ignore it), then make a new key with `stackpack keygen --out` outside the repository: the old one stays in the history"
    )))
}

/// Opens a signing key from where `--key` or `stackpack.toml` says.
pub fn open_key_source(source: &KeySource) -> Result<Box<dyn SigningKey>> {
    Ok(match source {
        KeySource::File(path) => Box::new(read_private_key(path)?),
        KeySource::Pem { variable, pem } => Box::new(parse_private_key(
            pem,
            &format!("the PEM signing key in `{variable}`"),
        )?),
        KeySource::Kms(uri) => Box::new(open_kms(uri)?),
    })
}

fn parse_private_key(text: &str, what: &str) -> Result<PrivateKey> {
    PrivateKey::from_pem(text).map_err(|e| {
        Error::usage(format!("{what} is unusable: {e}")).hint(
            "make one with `stackpack keygen --out NAME` or `openssl genpkey -algorithm ed25519`",
        )
    })
}

/// True for text that is a key rather than a path (a PEM block, or base64 too long
/// for a file name): such text is never printed.
fn looks_like_a_key(text: &str) -> bool {
    text.contains("-----BEGIN") || text.contains('\n') || text.len() > 1024
}

/// A path in backticks, or a note that it is not shown when it looks like a key.
fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if looks_like_a_key(&text) {
        "(not shown: it looks like a key)".to_string()
    } else {
        format!("`{text}`")
    }
}

/// Reads a public key.
pub fn read_public_key(path: &Path) -> Result<PublicKey> {
    stackpack_bundle::trust::read_public_key(path)
        .map_err(|e| Error::usage_by(e).hint("pass the `.pub` file made by `stackpack keygen`"))
}
