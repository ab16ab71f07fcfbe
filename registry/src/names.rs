//! Repository names, tags and references, checked against the distribution spec's
//! grammar before they reach the database or the file system.

use stackpack_schema::Digest;

use crate::error::{Code, Error};

/// Longest repository name accepted (the spec's hosts commonly cap at 255).
pub const MAX_NAME_LEN: usize = 255;

/// `<component>(/<component>)*`, each `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
pub fn validate_repository(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .split('/')
            .all(|component| stackpack_schema::reference::validate_name(component).is_ok());
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            Code::NameInvalid,
            format!("`{name}` is not a valid repository name"),
        )
        .with_detail(serde_json::json!({ "name": name })))
    }
}

/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
pub fn is_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// A manifest reference: a tag or a digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Tag(String),
    Digest(Digest),
}

impl Reference {
    pub fn parse(reference: &str) -> Result<Reference, Error> {
        if reference.contains(':') {
            parse_digest(reference).map(Reference::Digest)
        } else if is_tag(reference) {
            Ok(Reference::Tag(reference.to_string()))
        } else {
            Err(Error::new(
                Code::ManifestInvalid,
                format!("`{reference}` is neither a tag nor a digest"),
            ))
        }
    }
}

/// Parses a digest from a path or query, as `DIGEST_INVALID` when it is not one.
pub fn parse_digest(digest: &str) -> Result<Digest, Error> {
    digest
        .parse::<Digest>()
        .map_err(|e| Error::new(Code::DigestInvalid, e.to_string()))
}

/// True for `X.Y.Z` stable semver tags, the ones that never move.
pub fn is_stable_version_tag(tag: &str) -> bool {
    semver::Version::parse(tag).is_ok_and(|v| stackpack_schema::version::is_stable(&v))
}

/// True for semver prerelease tags (`1.4.0-feat.2`).
pub fn is_prerelease_version_tag(tag: &str) -> bool {
    semver::Version::parse(tag).is_ok_and(|v| !v.pre.is_empty())
}

/// Longest token name accepted, in characters: a label for a list, not a note.
pub const MAX_TOKEN_NAME_CHARS: usize = 64;

/// Why a token name (`token create --name`) is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenNameError {
    #[error("a token name cannot be empty")]
    Empty,
    #[error("a token name is at most {MAX_TOKEN_NAME_CHARS} characters; this one has {0}")]
    TooLong(usize),
    // A name is printed in a table: a tab, newline or escape would break the columns
    // or the terminal, and spaces at either end would make two names look alike.
    #[error("token name {0:?} has a control or invisible character, or spaces at either end")]
    Unprintable(String),
}

/// Zero-width and text-direction characters: invisible on screen, they make two
/// different names print alike (or a name print backwards).
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Checks a token's name: printable characters (spaces inside are fine), not
/// padded with spaces, at most [`MAX_TOKEN_NAME_CHARS`].
pub fn validate_token_name(name: &str) -> Result<(), TokenNameError> {
    if name.is_empty() {
        return Err(TokenNameError::Empty);
    }
    let chars = name.chars().count();
    if chars > MAX_TOKEN_NAME_CHARS {
        return Err(TokenNameError::TooLong(chars));
    }
    if name.chars().any(|c| c.is_control() || is_invisible(c)) || name.trim() != name {
        return Err(TokenNameError::Unprintable(name.to_string()));
    }
    Ok(())
}

/// The closest of `known` to `name`, when it is close enough for a "did you mean".
pub fn nearest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), k.as_str()))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The most existing names an "unknown name" message lists.
const LISTED: usize = 10;

/// The [`LISTED`] names of `known` most like `name`, most alike first (all of them,
/// in their order, when there are no more).
fn nearest_few<'a>(name: &str, known: &'a [String]) -> Vec<&'a String> {
    let mut few: Vec<&String> = known.iter().collect();
    if few.len() > LISTED {
        few.sort_by(|a, b| strsim::jaro_winkler(name, b).total_cmp(&strsim::jaro_winkler(name, a)));
        few.truncate(LISTED);
    }
    few
}

fn quoted<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `what` `name` is not one this registry has (`NOT_FOUND`): the one wording the
/// CLI, `--url` and the API give for a channel, customer, release or stack that
/// does not exist, with the nearest name and the names that exist. `plural` names
/// them ("channels"); `known` is `None` for an asker who may not see them all;
/// `otherwise` says what to do when none was meant.
pub fn unknown(
    what: &str,
    plural: &str,
    name: &str,
    known: Option<&[String]>,
    otherwise: &str,
) -> Error {
    let near = known.and_then(|known| nearest(name, known));
    let mut message = format!("{what} `{name}` does not exist in this registry");
    if let Some(near) = near {
        message.push_str(&format!("; did you mean `{near}`?"));
    }
    match known {
        None => {}
        Some([]) => message.push_str(&format!("; it has no {plural} yet")),
        Some(known) if known.len() <= LISTED => {
            message.push_str(&format!("; its {plural}: {}", quoted(known.iter())));
        }
        Some(known) => message.push_str(&format!(
            "; the nearest of its {} {plural}: {}",
            known.len(),
            quoted(nearest_few(name, known).into_iter())
        )),
    }
    if !otherwise.is_empty() {
        message.push_str(&format!("; {otherwise}"));
    }
    let listed = known.map(|known| nearest_few(name, known));
    Error::new(Code::NotFound, message).with_detail(serde_json::json!({
        "name": name,
        "didYouMean": near,
        "known": listed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_follow_the_spec() {
        for good in ["a", "acme/stacks/data-plane", "a/b__c/d-e.f", "x0/1y"] {
            validate_repository(good).unwrap();
        }
        for bad in [
            "", "A", "a//b", "/a", "a/", "a/../b", "a/./b", "a b", "-a", "a/b-",
        ] {
            assert!(validate_repository(bad).is_err(), "{bad}");
        }
        assert!(validate_repository(&"a".repeat(256)).is_err());
    }

    #[test]
    fn tags_and_references() {
        assert!(is_tag("1.4.0-feat.2"));
        assert!(is_tag("_x"));
        assert!(!is_tag(".x"));
        assert!(!is_tag(&"a".repeat(129)));
        assert!(Reference::parse("sha256:abc").is_err());
        assert!(is_stable_version_tag("1.2.3"));
        assert!(!is_stable_version_tag("1.2.3-rc.1"));
        assert!(!is_stable_version_tag("latest"));
        assert!(is_prerelease_version_tag("1.2.3-rc.1"));
    }

    #[test]
    fn token_names_are_printable_unpadded_and_bounded() {
        for good in [
            "ci",
            "release pipeline (GitHub)",
            "Zürich ops",
            &"é".repeat(64),
        ] {
            validate_token_name(good).unwrap();
        }
        assert_eq!(validate_token_name(""), Err(TokenNameError::Empty));
        assert_eq!(
            validate_token_name(&"a".repeat(65)),
            Err(TokenNameError::TooLong(65))
        );
        for bad in [
            "ci\tjob",
            "line\nbreak",
            "\u{1b}[31mred",
            "ci\u{202e}",
            " ci",
            "ci ",
        ] {
            assert!(
                matches!(
                    validate_token_name(bad),
                    Err(TokenNameError::Unprintable(_))
                ),
                "{bad:?}"
            );
        }
    }
}
