//! A version's precedence as bytes, so SQLite compares versions the way
//! [`semver::Version::cmp_precedence`] does: `below=V`, "newest stable" and "how many
//! stable releases behind" become indexed range scans instead of parsing every row.
//!
//! SQLite compares BLOBs with `memcmp`, shorter first when one is a prefix of the
//! other. The key is laid out so that byte order is precedence order:
//!
//! - major, minor and patch as 8-byte big-endian numbers;
//! - then a release is `0xFF`, which sorts above any prerelease (a prerelease is
//!   below its release);
//! - a prerelease is its identifiers in turn, each a numeric one as `0x01`, its
//!   digit count (4 bytes, big-endian) and its digits (numbers have no leading zeros,
//!   so fewer digits is smaller and equal counts compare digit by digit), or an
//!   alphanumeric one as `0x02`, its ASCII bytes and `0x00` (numeric below
//!   alphanumeric; `0x00` is below every identifier character, so a prefix sorts
//!   first), and finally `0x00`, below the next identifier's `0x01` or `0x02`, so a
//!   shorter identifier list sorts first.
//!
//! Build metadata does not count for precedence and is left out.

use semver::Version;

const RELEASE: u8 = 0xFF;
const NUMERIC: u8 = 0x01;
const ALPHANUMERIC: u8 = 0x02;
const END: u8 = 0x00;

/// The sortable key of `version`.
pub fn of(version: &Version) -> Vec<u8> {
    let mut key = Vec::with_capacity(32);
    for part in [version.major, version.minor, version.patch] {
        key.extend_from_slice(&part.to_be_bytes());
    }
    if version.pre.is_empty() {
        key.push(RELEASE);
        return key;
    }
    for identifier in version.pre.as_str().split('.') {
        if identifier.bytes().all(|b| b.is_ascii_digit()) {
            key.push(NUMERIC);
            key.extend_from_slice(&(identifier.len() as u32).to_be_bytes());
            key.extend_from_slice(identifier.as_bytes());
        } else {
            key.push(ALPHANUMERIC);
            key.extend_from_slice(identifier.as_bytes());
            key.push(END);
        }
    }
    key.push(END);
    key
}

/// The key of a version written as text; `None` when it is not semver (such a
/// version is below nothing and counts as behind nothing).
pub fn of_text(version: &str) -> Option<Vec<u8>> {
    Version::parse(version).ok().map(|v| of(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator, so a failure names a reproducible pair.
    struct Mix(u64);

    impl Mix {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }
    }

    fn identifier(mix: &mut Mix) -> String {
        const ALPHABET: &[u8] = b"0123456789abcxyzABZ-";
        match mix.next(4) {
            // Numbers, including ones past u64 and ones whose digit count differs.
            0 => mix.next(30).to_string(),
            1 => format!("{}", mix.next(u64::MAX)),
            2 => format!("1{}", "0".repeat(mix.next(25) as usize)),
            _ => {
                let len = 1 + mix.next(4) as usize;
                let mut text: String = (0..len)
                    .map(|_| ALPHABET[mix.next(ALPHABET.len() as u64) as usize] as char)
                    .collect();
                if text.bytes().all(|b| b.is_ascii_digit()) {
                    text.push('x');
                }
                if text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit()) {
                    text.insert(0, 'a');
                }
                text
            }
        }
    }

    fn version(mix: &mut Mix) -> Version {
        let mut text = format!("{}.{}.{}", mix.next(3), mix.next(3), mix.next(3));
        if mix.next(3) > 0 {
            let count = 1 + mix.next(4);
            let ids: Vec<String> = (0..count).map(|_| identifier(mix)).collect();
            text.push('-');
            text.push_str(&ids.join("."));
        }
        if mix.next(5) == 0 {
            text.push_str("+build.7");
        }
        Version::parse(&text).unwrap_or_else(|e| panic!("`{text}` is semver: {e}"))
    }

    #[test]
    fn keys_sort_as_semver_precedence_on_many_generated_pairs() {
        let mut mix = Mix(0x2545_f491_4f6c_dd1d);
        for _ in 0..200_000 {
            let (a, b) = (version(&mut mix), version(&mut mix));
            assert_eq!(
                of(&a).cmp(&of(&b)),
                a.cmp_precedence(&b),
                "`{a}` against `{b}`"
            );
        }
    }

    #[test]
    fn keys_follow_the_semver_specifications_example_order() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1-pr.9",
            "1.0.1-pr.10",
            "1.0.1",
            "1.2.0",
            "1.10.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            let (low, high) = (of_text(pair[0]).unwrap(), of_text(pair[1]).unwrap());
            assert!(low < high, "`{}` sorts below `{}`", pair[0], pair[1]);
        }
        assert_eq!(
            of_text("1.0.0+a"),
            of_text("1.0.0+b"),
            "build metadata ignored"
        );
        assert_eq!(of_text("not a version"), None);
    }
}
