//! Names and references: `stack`, `stack@version`.

use std::fmt;
use std::str::FromStr;

use semver::Version;

/// Why a name or reference is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReferenceError {
    #[error("`{0}` is not a valid name: use lowercase letters, digits, and `-`, `_` or `.` between them")]
    InvalidName(String),
    #[error(
        "`{0}` is not a valid version: expected semver such as `1.4.0` or `1.4.0-my-branch.2`"
    )]
    InvalidVersion(String),
}

/// Checks a stack or module name against the OCI repository path-component grammar,
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`, so that it can always be a repository name.
pub fn validate_name(name: &str) -> Result<(), ReferenceError> {
    let bytes = name.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let separator = |b: u8| b == b'.' || b == b'_' || b == b'-';
    let ok = !bytes.is_empty()
        && bytes.len() <= 128
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1])
        && bytes.iter().all(|&b| alnum(b) || separator(b))
        && !name.contains("..")
        && !name.contains("___")
        && !name.contains("._")
        && !name.contains("_.")
        && !name.contains(".-")
        && !name.contains("-.")
        && !name.contains("_-")
        && !name.contains("-_");
    if ok {
        Ok(())
    } else {
        Err(ReferenceError::InvalidName(name.to_string()))
    }
}

/// `stack` or `stack@version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackRef {
    pub stack: String,
    pub version: Option<Version>,
}

impl FromStr for StackRef {
    type Err = ReferenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (stack, version) = match s.split_once('@') {
            Some((stack, version)) => (stack, Some(version)),
            None => (s, None),
        };
        validate_name(stack)?;
        let version = version
            .map(|v| {
                Version::parse(v.strip_prefix('v').unwrap_or(v))
                    .map_err(|_| ReferenceError::InvalidVersion(v.to_string()))
            })
            .transpose()?;
        Ok(StackRef {
            stack: stack.to_string(),
            version,
        })
    }
}

impl fmt::Display for StackRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(version) => write!(f, "{}@{}", self.stack, version),
            None => f.write_str(&self.stack),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_oci_component_grammar() {
        for good in ["data-plane", "a", "gpu_pool", "v1.2", "a--b"] {
            validate_name(good).unwrap();
        }
        for bad in ["", "Data", "-a", "a-", "a/b", "a..b", "../x", "a b"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn references_parse_with_and_without_version() {
        let r: StackRef = "data-plane@1.4.0-feat.2".parse().unwrap();
        assert_eq!(r.stack, "data-plane");
        assert_eq!(r.version.unwrap().to_string(), "1.4.0-feat.2");
        assert_eq!("data-plane".parse::<StackRef>().unwrap().version, None);
        assert!("data-plane@latest".parse::<StackRef>().is_err());
    }
}
