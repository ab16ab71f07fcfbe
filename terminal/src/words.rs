//! Counted nouns, one way everywhere (`1 customer`, `2 customers`), and times on
//! screen at one precision.

/// `n` and `noun`, plural unless `n` is one: `count(1, "customer")` is `1 customer`,
/// `count(3, "pass")` is `3 passes`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {}", counted(n, noun))
}

/// `noun` as it follows the number `n`: itself for one, else its plural.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        plural(noun)
    }
}

/// The plural of an English noun the programs count (regular ones: `customer`,
/// `pass`, `match`, `dependency`).
fn plural(noun: &str) -> String {
    let vowel_before_y = noun
        .strip_suffix('y')
        .and_then(|stem| stem.chars().last())
        .is_some_and(|c| "aeiou".contains(c));
    if ["s", "sh", "ch", "x", "z"]
        .iter()
        .any(|end| noun.ends_with(end))
    {
        format!("{noun}es")
    } else if let (Some(stem), false) = (noun.strip_suffix('y'), vowel_before_y) {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

/// An RFC 3339 time as a table on screen shows it: to the second, whatever its
/// stored precision (a receipt keeps milliseconds, a registry stamps seconds), so
/// one column never mixes `19:40:00.250Z` and `19:40:01Z`. JSON keeps the stored
/// text. Text that is not such a time is returned as it is.
pub fn time(text: &str) -> String {
    let bytes = text.as_bytes();
    let shaped = bytes.len() > 20
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes[19] == b'.';
    if !shaped {
        return text.to_string();
    }
    let rest = &text[20..];
    let zone = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    if zone.len() == rest.len() {
        return text.to_string();
    }
    format!("{}{zone}", &text[..19])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_on_screen_is_to_the_second_whatever_it_was_stored_at() {
        assert_eq!(time("2026-12-01T19:40:00.250Z"), "2026-12-01T19:40:00Z");
        assert_eq!(time("2026-12-01T19:40:00Z"), "2026-12-01T19:40:00Z");
        assert_eq!(
            time("2026-12-01T19:40:00.1+02:00"),
            "2026-12-01T19:40:00+02:00"
        );
        assert_eq!(time("never"), "never");
        assert_eq!(time("2026-12-01T19:40:00.Z"), "2026-12-01T19:40:00.Z");
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "customer"), "1 customer");
        assert_eq!(count(0, "customer"), "0 customers");
        assert_eq!(count(2, "customer"), "2 customers");
        assert_eq!(count(3, "pass"), "3 passes");
        assert_eq!(count(2, "dependency"), "2 dependencies");
        assert_eq!(count(2, "key"), "2 keys");
        assert_eq!(count(1, "file"), "1 file");
    }
}
