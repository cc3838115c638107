//! Strict JSON: a body in which any object names a key twice is refused before anything reads it.
//!
//! JSON parsers disagree on repeated keys (serde keeps the first or refuses, Python's `json` keeps the
//! last), and that disagreement is a way to make the gateway judge one request while the agent acts
//! on another. Refusing them makes every reader see the same document. Alias spellings of one field
//! (`taskId` / `task_id`) are caught by the typed model (serde refuses a field given twice).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Checks that `body` is one JSON value in which no object repeats a key. The error says which key.
pub fn check_unique_keys(body: &[u8]) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    UniqueKeys.deserialize(&mut deserializer)?;
    deserializer.end()
}

/// Walks a value, refusing repeated keys in every object on the way.
#[derive(Clone, Copy)]
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
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
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Objects are small: a linear scan beats hashing. Keys without escapes are borrowed.
        let mut seen: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!("the key '{}' appears twice in one object", clip(&key))));
            }
            map.next_value_seed(self)?;
            seen.push(key);
        }
        Ok(())
    }
}

/// A key as echoed in an error: keys come from the request, so keep them short.
fn clip(key: &str) -> &str {
    match key.char_indices().nth(64) {
        Some((end, _)) => &key[..end],
        None => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_key_repeated_at_any_depth() {
        for body in [
            r#"{"a":1,"a":2}"#,
            r#"{"params":{"message":{"taskId":"x","taskId":"y"}}}"#,
            r#"[{"k":[{"z":1,"z":1}]}]"#,
            r#"{"a\u0062":1,"ab":2}"#,
        ] {
            let error = check_unique_keys(body.as_bytes()).expect_err(body);
            assert!(error.to_string().contains("appears twice"), "{body}: {error}");
        }
    }

    #[test]
    fn accepts_distinct_keys_and_refuses_what_is_not_json() {
        check_unique_keys(br#"{"a":{"a":{"a":[1,"a",{"b":null}]}},"b":true}"#).expect("unique");
        check_unique_keys(b"  \"text\" ").expect("a scalar");
        assert!(check_unique_keys(br#"{"a":1} {"b":2}"#).is_err(), "trailing data");
        assert!(check_unique_keys(br#"{"a":NaN}"#).is_err());
    }
}
