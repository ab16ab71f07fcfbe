//! Content addresses: `sha256:<64 lowercase hex>`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// A content digest. Only `sha256` is produced; others are refused when parsed, so
/// that nothing downstream compares digests of different algorithms.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

/// Why a string is not a digest.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    #[error("`{0}` is not a digest: expected `sha256:` followed by 64 lowercase hex characters")]
    Malformed(String),
    #[error("digest algorithm `{0}` is not supported: only `sha256` is")]
    UnsupportedAlgorithm(String),
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut hasher = Sha256Hasher::new();
        hasher.update(bytes);
        hasher.finish()
    }

    /// From 32 raw SHA-256 bytes.
    pub fn from_sha256_bytes(bytes: [u8; 32]) -> Self {
        Digest {
            hex: hex::encode(bytes),
        }
    }

    /// The hex part, without the algorithm.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// `sha256`.
    pub fn algorithm(&self) -> &'static str {
        "sha256"
    }

    /// The form used on screen: `sha256:3f9a…c21e`.
    pub fn short(&self) -> String {
        format!("sha256:{}…{}", &self.hex[..4], &self.hex[60..])
    }

    /// The tag that the distribution spec's referrers fallback uses: `sha256-<hex>`.
    pub fn referrers_tag(&self) -> String {
        format!("sha256-{}", self.hex)
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((algorithm, encoded)) = s.split_once(':') else {
            return Err(DigestError::Malformed(s.to_string()));
        };
        if algorithm != "sha256" {
            let valid_algorithm = !algorithm.is_empty()
                && algorithm
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b));
            return Err(if valid_algorithm {
                DigestError::UnsupportedAlgorithm(algorithm.to_string())
            } else {
                DigestError::Malformed(s.to_string())
            });
        }
        if encoded.len() != 64
            || !encoded
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(DigestError::Malformed(s.to_string()));
        }
        Ok(Digest {
            hex: encoded.to_string(),
        })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest(sha256:{})", self.hex)
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An incremental SHA-256 that also counts bytes. Implements [`std::io::Write`] so it
/// can sit at the end of a streaming pipeline (`io::copy(reader, &mut hasher)`).
#[derive(Clone, Default)]
pub struct Sha256Hasher {
    inner: Sha256,
    len: u64,
}

impl Sha256Hasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
        self.len += bytes.len() as u64;
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finish(self) -> Digest {
        Digest::from_sha256_bytes(self.inner.finalize().into())
    }
}

impl std::io::Write for Sha256Hasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// HMAC-SHA256 (RFC 2104), by the `hmac` crate: the runner's keyed inputs hash.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::Mac as _;
    let mut mac =
        hmac::Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_input_is_the_well_known_value() {
        assert_eq!(
            Digest::of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn parse_accepts_only_lowercase_sha256_of_the_right_length() {
        let good = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(good.parse::<Digest>().unwrap().to_string(), good);
        assert!(good.to_uppercase().parse::<Digest>().is_err());
        assert!(good[..70].parse::<Digest>().is_err());
        assert!("e3b0c442".parse::<Digest>().is_err());
        assert_eq!(
            "sha512:abcd".parse::<Digest>(),
            Err(DigestError::UnsupportedAlgorithm("sha512".into()))
        );
        assert!("sha256:../../etc/passwd".parse::<Digest>().is_err());
    }

    #[test]
    fn short_form_keeps_both_ends() {
        let d = Digest::of(b"x");
        let short = d.short();
        assert!(short.starts_with("sha256:2d71"));
        assert!(short.ends_with(&d.hex()[60..]));
    }

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
