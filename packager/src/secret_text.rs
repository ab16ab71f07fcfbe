//! What a line of text says about secrets: a key name whose value is a secret, a
//! literal that is a value rather than a reference, and the well-known shapes of
//! keys and tokens. The lints and the source-address check both read lines with it,
//! so it depends on neither.

/// Is this key name one whose value is a secret?
pub(crate) fn secret_key(key: &str) -> bool {
    let key = key.to_lowercase();
    let last = key.rsplit(['_', '-', '.']).next().unwrap_or("");
    matches!(
        last,
        "password" | "passwd" | "pwd" | "secret" | "token" | "apikey" | "passphrase"
    ) || [
        "api_key",
        "access_key",
        "secret_key",
        "private_key",
        "client_secret",
        "secret_access_key",
        "auth_token",
        "access_token",
    ]
    .iter()
    .any(|k| key.ends_with(k))
}

/// A literal that is a value rather than a reference, a template or empty.
pub(crate) fn looks_like_value(value: &str) -> bool {
    let v = value.trim();
    v.len() >= 4
        && !v.contains("${")
        && !v.starts_with("arn:")
        && !v.contains('/')
        && !v.contains(' ')
}

fn run_of(bytes: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[start.min(bytes.len())..]
        .iter()
        .take_while(|b| ok(**b))
        .count()
}

/// A token's known prefix, the shortest run of token characters after it, and
/// what it is. Earlier entries win when a line holds two kinds.
const PREFIXED: &[(&str, usize, &str)] = &[
    ("ghp_", 36, "a GitHub token"),
    ("gho_", 36, "a GitHub token"),
    ("ghu_", 36, "a GitHub token"),
    ("ghs_", 36, "a GitHub token"),
    ("ghr_", 36, "a GitHub token"),
    ("github_pat_", 22, "a GitHub token"),
    ("glpat-", 20, "a GitLab token"),
    ("xoxb-", 10, "a Slack token"),
    ("xoxp-", 10, "a Slack token"),
    ("xoxa-", 10, "a Slack token"),
    ("sk_live_", 20, "a Stripe key"),
    ("AIza", 35, "a Google API key"),
];

/// The four-letter prefixes of AWS access key ids.
const AWS_KEY_PREFIXES: [&[u8]; 8] = [
    b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"ANPA", b"ANVA", b"AIPA",
];

/// What kind of secret a line holds, if any. One pass over the line's bytes, each
/// prefix tried only where its first byte stands (lints read every line of every
/// file with it: a searcher built per prefix and line cost a fifth of a build).
pub(crate) fn secret_in(line: &str) -> Option<&'static str> {
    let bytes = line.as_bytes();
    if bytes.contains(&b'-') && line.contains("-----BEGIN") && line.contains("PRIVATE KEY") {
        return Some("a private key");
    }
    let upper_alnum = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    // The first entry of PREFIXED found, by its index; an AWS key beats them all.
    let mut first: Option<usize> = None;
    for (at, &b) in bytes.iter().enumerate() {
        if !matches!(b, b'A' | b'g' | b'x' | b's') {
            continue;
        }
        let rest = &bytes[at..];
        if b == b'A'
            && (at == 0 || !upper_alnum(bytes[at - 1]))
            && AWS_KEY_PREFIXES.iter().any(|p| rest.starts_with(p))
            && run_of(bytes, at + 4, upper_alnum) == 16
        {
            return Some("an AWS access key id");
        }
        for (index, (prefix, min, _)) in PREFIXED.iter().enumerate() {
            if first.is_some_and(|f| f <= index) {
                break;
            }
            if rest.starts_with(prefix.as_bytes())
                && run_of(bytes, at + prefix.len(), token_char) >= *min
            {
                first = Some(index);
            }
        }
    }
    if let Some(index) = first {
        return Some(PREFIXED[index].2);
    }
    // `password = "literal"`, `"api_key": "literal"`.
    let trimmed = line.trim();
    let split = trimmed.find(['=', ':'])?;
    let key = trimmed[..split].trim().trim_matches('"');
    let value = trimmed[split + 1..].trim().trim_end_matches(',').trim();
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
        && secret_key(key)
        && value.len() >= 2
        && value.starts_with('"')
        && value.ends_with('"')
        && looks_like_value(&value[1..value.len() - 1])
    {
        return Some("a literal password or token");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::secret_in;

    #[test]
    fn of_two_kinds_on_one_line_the_earlier_kind_is_named_wherever_it_stands() {
        let google = format!("AIza{}", "a".repeat(35));
        let github = format!("ghp_{}", "b".repeat(36));
        let aws = "AKIAIOSFODNN7EXAMPLE";
        assert_eq!(
            secret_in(&format!("x = \"{google}\" y = \"{github}\"")),
            Some("a GitHub token")
        );
        assert_eq!(
            secret_in(&format!("{github} {aws}")),
            Some("an AWS access key id")
        );
        // An id inside a longer run of capitals is not one.
        assert_eq!(secret_in("XAKIAIOSFODNN7EXAMPLE"), None);
        assert_eq!(secret_in(&format!("ghp_{}", "b".repeat(35))), None);
        assert_eq!(secret_in("plain text with s and g and x and A"), None);
    }
}
