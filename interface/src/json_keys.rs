//! Duplicate object keys in engine JSON (`.tf.json`, `.tofu.json`).
//!
//! `serde_json` keeps the last of two equal keys; Terraform's JSON syntax reads both
//! (two `"module"` keys add the blocks of each). A reader that sees only the last
//! would miss what the engine runs: a `module` call to `git::…` hidden in the first
//! of two `"module"` keys passed the packager's and the runner's checks and made
//! `init` fetch it. So a file with a key twice in one object, at any depth, is
//! refused with its line, by every reader of these files (the packager's build and
//! check, the runner's check before `init`).

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Where and which key repeats, when one does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey {
    pub key: String,
    pub line: usize,
    pub column: usize,
}

/// The first key that appears twice in one object of `text`, if any. Text that is
/// not JSON is not this function's to judge: it answers `None`, and the parser that
/// follows says what is wrong.
pub fn first_duplicate_key(text: &str) -> Option<DuplicateKey> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match Walk.deserialize(&mut deserializer) {
        Ok(()) => None,
        Err(error) => {
            let message = error.to_string();
            let key = message
                .strip_prefix(MARK)?
                .split('\u{0}')
                .next()?
                .to_string();
            Some(DuplicateKey {
                key,
                line: error.line(),
                column: error.column(),
            })
        }
    }
}

/// Prefixes the error a duplicate raises, to tell it from a syntax error.
const MARK: &str = "\u{0}duplicate\u{0}";

/// Walks any JSON value, keeping nothing but each object's keys while it is read.
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(Walk)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Walk)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                // Raised here, serde_json gives it the position it has reached.
                return Err(de::Error::custom(format!("{MARK}{key}\u{0}")));
            }
            map.next_value_seed(Walk)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_twice_in_one_object_is_found_at_any_depth_with_its_line() {
        let text = "{\n  \"module\": {\"a\": {\"source\": \"./a\"}},\n  \"module\": {\"b\": {\"source\": \"git::file:///x\"}}\n}\n";
        let found = first_duplicate_key(text).unwrap();
        assert_eq!(found.key, "module");
        assert_eq!(found.line, 3);
        let nested = "{\"module\": {\"a\": {\"source\": \"./a\", \"source\": \"https://x\"}}}";
        assert_eq!(first_duplicate_key(nested).unwrap().key, "source");
        let in_list = "{\"x\": [{\"k\": 1}, {\"k\": 1, \"k\": 2}]}";
        assert_eq!(first_duplicate_key(in_list).unwrap().key, "k");
    }

    #[test]
    fn equal_keys_in_different_objects_and_text_that_is_not_json_are_not_duplicates() {
        assert_eq!(
            first_duplicate_key("{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}}"),
            None
        );
        assert_eq!(first_duplicate_key("{\"a\": "), None);
        assert_eq!(first_duplicate_key("[1, 2]"), None);
    }
}
