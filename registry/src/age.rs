//! Ages and lifetimes on the command line and in queries: `30d`, `12h`, `90m`,
//! `45s`, `2w`.

/// Seconds in an age such as `30d`; `None` when it is not one.
pub fn parse_secs(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return None,
    };
    number.checked_mul(unit).filter(|secs| *secs > 0)
}

/// The message for an age that does not parse.
pub fn invalid(flag: &str, text: &str) -> String {
    format!("`{flag}` takes an age such as `30d`, `12h` or `90m`, not `{text}`")
}

/// Now plus `secs`, as RFC 3339 UTC to the second.
pub fn from_now(secs: u64) -> String {
    let at = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("zero is valid")
        + time::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 2));
    at.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_their_unit() {
        assert_eq!(parse_secs("30d"), Some(30 * 86_400));
        assert_eq!(parse_secs("12h"), Some(12 * 3600));
        assert_eq!(parse_secs("2w"), Some(14 * 86_400));
        assert_eq!(parse_secs("5s"), Some(5));
        assert_eq!(parse_secs("30"), None);
        assert_eq!(parse_secs("0d"), None);
        assert_eq!(parse_secs("d"), None);
        assert_eq!(parse_secs("3y"), None);
    }
}
