//! [`Timestamp`]: an RFC 3339 time as the registry stores and answers it.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A time read from the database or an answer: the instant, and the RFC 3339 text
/// it was stored as. The text is kept byte for byte (a bundle's `created` keeps its
/// author's offset; receipts keep their fraction of a second), so answers do not
/// change by being read; equality and order are by instant.
#[derive(Clone)]
pub struct Timestamp {
    text: String,
    at: OffsetDateTime,
}

impl Timestamp {
    /// Now, UTC, to the second: what the registry stamps what it records.
    pub fn now() -> Self {
        let at = OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .expect("zero nanoseconds is valid");
        Timestamp {
            text: at.format(&Rfc3339).expect("a UTC time formats"),
            at,
        }
    }

    /// The instant.
    pub fn at(&self) -> OffsetDateTime {
        self.at
    }

    /// The text as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Why a text is not a [`Timestamp`].
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not an RFC 3339 time")]
pub struct TimestampError(String);

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let at =
            OffsetDateTime::parse(text, &Rfc3339).map_err(|_| TimestampError(text.to_string()))?;
        Ok(Timestamp {
            text: text.to_string(),
            at,
        })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.text)
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at.cmp(&other.at)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Stored as its text: the column is read and written with no `Text` wrapper,
/// and a stored value that is not a time is an error, not a string passed on.
impl rusqlite::ToSql for Timestamp {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::from(self.text.as_str()))
    }
}

impl rusqlite::types::FromSql for Timestamp {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        text.parse()
            .map_err(|e: TimestampError| rusqlite::types::FromSqlError::Other(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_kept_byte_for_byte_and_order_is_by_instant() {
        let offset: Timestamp = "2026-03-01T09:00:00.500+02:00".parse().unwrap();
        let utc: Timestamp = "2026-03-01T08:00:00Z".parse().unwrap();
        assert_eq!(offset.to_string(), "2026-03-01T09:00:00.500+02:00");
        assert_eq!(
            serde_json::to_string(&offset).unwrap(),
            "\"2026-03-01T09:00:00.500+02:00\""
        );
        // As text, 09:00+02:00 sorts after 08:00Z; as times it is an hour earlier.
        assert!(offset < utc);
        assert!("yesterday".parse::<Timestamp>().is_err());
    }
}
