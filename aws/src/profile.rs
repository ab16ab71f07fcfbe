//! AWS credentials and region from a named profile, read the way the AWS CLI and the
//! engine's AWS provider read them: `AWS_PROFILE` (else `default`) in the shared
//! credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then
//! in the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`, where a section is
//! `[profile NAME]`, or `[default]`).
//!
//! Only static keys are read. A profile that gets its keys by running something (an
//! assumed role, `credential_process`, SSO, a web identity) is named with the
//! command that turns it into keys, rather than half-supported: Stackpack's own S3
//! calls would otherwise use other credentials than the engine beside them.

use std::path::{Path, PathBuf};

/// Why a profile gives no credentials.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "AWS profile `{profile}` (from `AWS_PROFILE`) is in neither `{credentials}` nor `{config}`"
    )]
    Missing {
        profile: String,
        credentials: String,
        config: String,
    },
    #[error("AWS profile `{profile}` in `{file}` gets its keys from `{source_key}`, which Stackpack does not run: export them first (`eval \"$(aws configure export-credentials --profile {profile} --format env)\"`)")]
    NotStatic {
        profile: String,
        file: String,
        source_key: String,
    },
    #[error("AWS profile `{profile}` in `{file}` has `{has}` but no `{lacks}`: give both `aws_access_key_id` and `aws_secret_access_key`")]
    Incomplete {
        profile: String,
        file: String,
        has: &'static str,
        lacks: &'static str,
    },
    #[error("cannot read `{file}`: {source}")]
    Unreadable {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a profile holds that Stackpack uses. The secret is never printed: this
/// type has no `Debug`.
pub struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
}

/// Keys that make a profile get its credentials by running something.
const NOT_STATIC: &[&str] = &[
    "role_arn",
    "credential_process",
    "sso_start_url",
    "sso_session",
    "web_identity_token_file",
    "credential_source",
];

/// The profile the environment names (`AWS_PROFILE`, else `default`), merged from
/// both files, the credentials file winning. `Ok(None)` when `default` is asked for
/// implicitly and neither file has it: there is simply no profile.
pub fn load() -> Result<Option<Profile>, ProfileError> {
    load_with(&|name| std::env::var(name).ok())
}

/// [`load`] with the environment's variables read through `env`.
fn load_with(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Profile>, ProfileError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let home_file = |variable: &str, name: &str| -> Option<PathBuf> {
        var(variable)
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".aws").join(name)))
    };
    let named = var("AWS_PROFILE");
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let credentials_file = home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_file = home_file("AWS_CONFIG_FILE", "config");
    let from_credentials = match &credentials_file {
        Some(file) => section(file, &profile, false)?,
        None => None,
    };
    let from_config = match &config_file {
        Some(file) => section(file, &profile, true)?,
        None => None,
    };
    if from_credentials.is_none() && from_config.is_none() {
        let shown = |f: &Option<PathBuf>| {
            f.as_ref()
                .map_or("(no HOME)".into(), |f| f.display().to_string())
        };
        return match named {
            Some(_) => Err(ProfileError::Missing {
                profile,
                credentials: shown(&credentials_file),
                config: shown(&config_file),
            }),
            None => Ok(None),
        };
    }
    // The credentials file's keys win over the config file's, key by key.
    let sources = [
        from_credentials.map(|s| (credentials_file.clone(), s)),
        from_config.map(|s| (config_file.clone(), s)),
    ];
    let get = |key: &str| -> Option<(String, String)> {
        sources.iter().flatten().find_map(|(file, entries)| {
            let value = entries.iter().find(|(k, _)| k == key)?.1.clone();
            let file = file
                .as_ref()
                .map_or(String::new(), |f| f.display().to_string());
            Some((file, value))
        })
    };
    let key_id = get("aws_access_key_id");
    let secret = get("aws_secret_access_key");
    if key_id.is_none() && secret.is_none() {
        if let Some((key, file)) = NOT_STATIC
            .iter()
            .find_map(|key| get(key).map(|(file, _)| (*key, file)))
        {
            return Err(ProfileError::NotStatic {
                profile,
                file,
                source_key: key.to_string(),
            });
        }
    }
    match (&key_id, &secret) {
        (Some((file, _)), None) => {
            return Err(ProfileError::Incomplete {
                profile,
                file: file.clone(),
                has: "aws_access_key_id",
                lacks: "aws_secret_access_key",
            })
        }
        (None, Some((file, _))) => {
            return Err(ProfileError::Incomplete {
                profile,
                file: file.clone(),
                has: "aws_secret_access_key",
                lacks: "aws_access_key_id",
            })
        }
        _ => {}
    }
    Ok(Some(Profile {
        access_key_id: key_id.map(|(_, v)| v),
        secret_access_key: secret.map(|(_, v)| v),
        session_token: get("aws_session_token").map(|(_, v)| v),
        region: get("region").map(|(_, v)| v),
    }))
}

/// The `key = value` lines of section `profile` in the INI file at `path`; `None`
/// when the file or the section is absent. In the config file a named profile's
/// section is `[profile NAME]` (`[default]` stays bare).
fn section(
    path: &Path,
    profile: &str,
    config: bool,
) -> Result<Option<Vec<(String, String)>>, ProfileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ProfileError::Unreadable {
                file: path.display().to_string(),
                source,
            })
        }
    };
    let wanted = match (config, profile) {
        (true, "default") => vec!["default".to_string(), "profile default".to_string()],
        (true, name) => vec![format!("profile {name}")],
        (false, name) => vec![name.to_string()],
    };
    let mut inside = false;
    let mut found: Option<Vec<(String, String)>> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = wanted.contains(&name);
            if inside {
                found.get_or_insert_with(Vec::new);
            }
            continue;
        }
        // An indented line continues a nested setting (`s3 =` and its keys).
        if !inside || line.starts_with(char::is_whitespace) {
            continue;
        }
        if let Some((key, value)) = trimmed.split_once('=') {
            if let Some(entries) = found.as_mut() {
                entries.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_named_profile_is_read_from_its_section_and_the_config_file_says_profile_name() {
        let dir = tempfile::tempdir().unwrap();
        let credentials = write(
            dir.path(),
            "credentials",
            "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = s1\n\n[ops]\n# a comment\naws_access_key_id=AKIAOPS\naws_secret_access_key = s2\n",
        );
        let config = write(
            dir.path(),
            "config",
            "[default]\nregion = us-east-1\n[profile ops]\nregion = eu-west-1\ns3 =\n  max_concurrent_requests = 20\n",
        );
        let ops = section(&credentials, "ops", false).unwrap().unwrap();
        assert_eq!(ops[0], ("aws_access_key_id".into(), "AKIAOPS".into()));
        assert_eq!(ops.len(), 2);
        let region = section(&config, "ops", true).unwrap().unwrap();
        assert_eq!(
            region,
            vec![
                ("region".into(), "eu-west-1".into()),
                ("s3".into(), String::new())
            ]
        );
        assert_eq!(
            section(&config, "default", true).unwrap().unwrap()[0].1,
            "us-east-1"
        );
        assert!(section(&credentials, "absent", false).unwrap().is_none());
        assert!(section(&dir.path().join("nothing"), "ops", false)
            .unwrap()
            .is_none());
    }

    fn load_in(home: &Path, profile: Option<&str>) -> Result<Option<Profile>, ProfileError> {
        let home = home.display().to_string();
        let profile = profile.map(str::to_string);
        load_with(&move |name| match name {
            "HOME" => Some(home.clone()),
            "AWS_PROFILE" => profile.clone(),
            _ => None,
        })
    }

    #[test]
    fn keys_come_from_the_credentials_file_and_the_region_from_the_config_file() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        let aws = home.path().join(".aws");
        write(&aws, "credentials", "[ops]\naws_access_key_id = AKIAOPS\naws_secret_access_key = s2\naws_session_token = t\n");
        write(
            &aws,
            "config",
            "[profile ops]\nregion = eu-west-1\naws_access_key_id = AKIAIGNORED\n",
        );
        let ops = load_in(home.path(), Some("ops")).unwrap().unwrap();
        assert_eq!(ops.access_key_id.as_deref(), Some("AKIAOPS"));
        assert_eq!(ops.secret_access_key.as_deref(), Some("s2"));
        assert_eq!(ops.session_token.as_deref(), Some("t"));
        assert_eq!(ops.region.as_deref(), Some("eu-west-1"));
        // No AWS_PROFILE and no [default]: simply no profile, not an error.
        assert!(load_in(home.path(), None).unwrap().is_none());
    }

    #[test]
    fn a_named_profile_that_is_missing_or_runs_something_is_refused_naming_it() {
        let home = tempfile::tempdir().unwrap();
        let aws = home.path().join(".aws");
        std::fs::create_dir(&aws).unwrap();
        write(&aws, "config", "[profile sso]\nsso_session = corp\nregion = us-west-2\n[profile half]\naws_access_key_id = AKIAHALF\n");
        let missing = load_in(home.path(), Some("prod"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            missing.contains("AWS profile `prod` (from `AWS_PROFILE`) is in neither"),
            "{missing}"
        );
        let sso = load_in(home.path(), Some("sso")).err().unwrap().to_string();
        assert!(sso.contains("gets its keys from `sso_session`"), "{sso}");
        assert!(
            sso.contains("aws configure export-credentials --profile sso"),
            "{sso}"
        );
        let half = load_in(home.path(), Some("half"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            half.contains("has `aws_access_key_id` but no `aws_secret_access_key`"),
            "{half}"
        );
    }
}
