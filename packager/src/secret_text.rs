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

/// What kind of secret a line holds, if any.
pub(crate) fn secret_in(line: &str) -> Option<&'static str> {
    let bytes = line.as_bytes();
    if line.contains("-----BEGIN") && line.contains("PRIVATE KEY") {
        return Some("a private key");
    }
    let upper_alnum = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    for prefix in [
        "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
    ] {
        for (at, _) in line.match_indices(prefix) {
            let before_ok = at == 0 || !upper_alnum(bytes[at - 1]);
            let run = run_of(bytes, at + 4, upper_alnum);
            if before_ok && run == 16 {
                return Some("an AWS access key id");
            }
        }
    }
    let prefixed: &[(&str, usize, &'static str)] = &[
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
    for (prefix, min, what) in prefixed {
        for (at, _) in line.match_indices(prefix) {
            if run_of(bytes, at + prefix.len(), token_char) >= *min {
                return Some(what);
            }
        }
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
