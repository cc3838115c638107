//! Strict JSON: no object names a key twice.
//!
//! JSON parsers disagree on repeated keys (serde keeps the first or refuses, Python's `json` keeps the
//! last), and that disagreement is a way to make a gateway judge one request while the agent acts on
//! another. Refusing them makes every reader see the same document.
//!
//! Two ways to refuse them: [`check_unique_keys`] walks a document on its own, and [`deserialize`]
//! reads a value with the check done in the same pass — a deserializer wrapped (in the shape of
//! `serde_path_to_error`) so that every map it meets remembers its keys, and values the target type
//! ignores are walked rather than skipped. Alias spellings of one field (`taskId` / `task_id`) are
//! caught by the typed model itself (serde refuses a field given twice).

use std::borrow::Cow;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Checks that `body` is one JSON value in which no object repeats a key. The error says which key.
pub fn check_unique_keys(body: &[u8]) -> Result<(), serde_json::Error> {
    crate::passes::read();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    Walk.deserialize(&mut deserializer)?;
    deserializer.end()
}

/// Reads one JSON document as a `T`, refusing a key repeated in any object of it in the same pass.
pub fn from_slice<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, serde_json::Error> {
    crate::passes::read();
    crate::read::from_json::<Strictly<T>>(body).map(|Strictly(value)| value)
}

/// A `T` read through [`Strict`]: what [`from_slice`] hands to the reader.
struct Strictly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Strictly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize(deserializer).map(Strictly)
    }
}

/// Reads a `T` from `deserializer`, refusing a key repeated in any object of the value read, in the
/// same pass (the error says which key).
pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    T::deserialize(Strict(deserializer))
}

fn repeated<E: de::Error>(key: &str) -> E {
    let clipped = match key.char_indices().nth(64) {
        // Keys come from the request: keep the echo short.
        Some((end, _)) => &key[..end],
        None => key,
    };
    E::custom(format_args!("the key '{clipped}' appears twice in one object"))
}

/// The keys of one object so far. Objects are small: a linear scan beats hashing, and their keys
/// fit inline (no allocation per object read). Keys without escapes are borrowed.
#[derive(Default)]
struct Keys<'de>(smallvec::SmallVec<[Cow<'de, str>; 8]>);

impl<'de> Keys<'de> {
    fn insert<E: de::Error>(&mut self, key: Cow<'de, str>) -> Result<(), E> {
        if self.0.contains(&key) {
            return Err(repeated(&key));
        }
        self.0.push(key);
        Ok(())
    }
}

/// Walks a value, refusing repeated keys in every object on the way.
#[derive(Clone, Copy)]
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
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
        let mut keys = Keys::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            keys.insert(key)?;
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A deserializer whose every map refuses a repeated key.
pub(crate) struct Strict<D>(pub(crate) D);

/// A visitor handed what [`Strict`] reads: maps, sequences, options and enums stay strict inside.
struct Wrap<V>(V);

/// A seed that reads its value strictly.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(deserializer))
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Wrap(visitor))
    }
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_bool(Wrap(visitor))
    }
    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_i8(Wrap(visitor))
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_i16(Wrap(visitor))
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_i32(Wrap(visitor))
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_i64(Wrap(visitor))
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_i128(Wrap(visitor))
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_u8(Wrap(visitor))
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_u16(Wrap(visitor))
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_u32(Wrap(visitor))
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_u64(Wrap(visitor))
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_u128(Wrap(visitor))
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_f32(Wrap(visitor))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_f64(Wrap(visitor))
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_char(Wrap(visitor))
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_str(Wrap(visitor))
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_string(Wrap(visitor))
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_bytes(Wrap(visitor))
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_byte_buf(Wrap(visitor))
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_option(Wrap(visitor))
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit(Wrap(visitor))
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_seq(Wrap(visitor))
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, Wrap(visitor))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_identifier(Wrap(visitor))
    }
    /// What the target type ignores is walked, not skipped: a repeated key inside an unknown field
    /// is refused too.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        Walk.deserialize(self.0)?;
        visitor.visit_unit()
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Forwards `visit_*` methods of plain values to the wrapped visitor.
macro_rules! plain {
    ($($method:ident ( $ty:ty ))*) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    plain! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64) visit_i128(i128)
        visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64) visit_u128(u128)
        visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str) visit_borrowed_str(&'de str)
        visit_string(String) visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Strict(deserializer))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(deserializer))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Elements(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Unique { map, keys: Keys::default() })
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Enum(data))
    }
}

/// A sequence whose elements are read strictly.
struct Elements<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Elements<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A map that refuses a key it has seen, its values read strictly.
struct Unique<'de, A> {
    map: A,
    keys: Keys<'de>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Unique<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        let mut key = None;
        let value = self.map.next_key_seed(Capture { seed, key: &mut key })?;
        if let Some(key) = key {
            self.keys.insert(key)?;
        }
        Ok(value)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(Seed(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// An enum whose content is read strictly.
struct Enum<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Enum<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0.variant_seed(seed).map(|(value, variant)| (value, Enum(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Enum<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}

/// A map key's seed that also notes the key's text.
struct Capture<'k, 'de, K> {
    seed: K,
    key: &'k mut Option<Cow<'de, str>>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for Capture<'_, 'de, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Value, D::Error> {
        // JSON keys are strings: the key is read once as text (borrowed when it has no escapes),
        // noted, and that text handed to the seed.
        let text = deserializer.deserialize_str(KeyText)?;
        let value = match &text {
            Cow::Borrowed(text) => self.seed.deserialize(de::value::BorrowedStrDeserializer::<D::Error>::new(text)),
            Cow::Owned(text) => self.seed.deserialize(de::value::StrDeserializer::<D::Error>::new(text)),
        };
        *self.key = Some(text);
        value
    }
}

/// A key's text, borrowed from the input when it can be.
struct KeyText;

impl<'de> Visitor<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(text))
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(text.to_owned()))
    }
    fn visit_string<E: de::Error>(self, text: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(text))
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

    /// Read in one pass with a type, the same documents are refused — inside fields the type knows,
    /// inside fields it ignores, inside values it keeps whole — and the same good ones read.
    #[test]
    fn a_strict_read_refuses_what_the_walk_refuses() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Known {
            #[serde(default)]
            params: Option<serde_json::Value>,
            #[serde(default)]
            list: Vec<Known>,
            #[serde(default)]
            raw: Option<Box<serde_json::value::RawValue>>,
        }
        for body in [
            r#"{"a":1,"a":2}"#,
            r#"{"params":{"message":{"taskId":"x","taskId":"y"}}}"#,
            r#"{"unknown":[{"k":[{"z":1,"z":1}]}]}"#,
            r#"{"list":[{"params":{"a\u0062":1,"ab":2}}]}"#,
            r#"{"params":1,"params":2}"#,
        ] {
            let error = from_slice::<Known>(body.as_bytes()).expect_err(body);
            assert!(error.to_string().contains("appears twice"), "{body}: {error}");
            assert!(check_unique_keys(body.as_bytes()).is_err(), "{body}");
        }
        let good = r#"{"params":{"a":{"a":[1,"a",{"b":null}]}},"list":[{"params":{"b":true}}],"other":{"x":{"x":1}},"raw":{"q":1}}"#;
        let read: Known = from_slice(good.as_bytes()).expect("unique");
        assert_eq!(read.list.len(), 1);
        assert_eq!(read.raw.map(|r| r.get().to_owned()).as_deref(), Some(r#"{"q":1}"#));
        check_unique_keys(good.as_bytes()).expect("unique");
        assert!(from_slice::<Known>(br#"{"params":1} {"b":2}"#).is_err(), "trailing data");
        // Read as text when the whole is UTF-8, as bytes otherwise: both readers refuse alike.
        let repeated_after_bad_byte = b"{\"params\":{\"x\":\"\xff\",\"x\":1}}";
        let error = from_slice::<Known>(repeated_after_bad_byte).expect_err("not UTF-8");
        assert_eq!(
            error.to_string(),
            serde_json::from_slice::<serde_json::Value>(repeated_after_bad_byte).unwrap_err().to_string()
        );
        let read: Known = from_slice("{\"params\":\"é 漢字 😀\"}".as_bytes()).expect("UTF-8 text");
        assert_eq!(read.params, Some(serde_json::json!("é 漢字 😀")));
        assert!(
            from_slice::<Known>("{\"params\":1,\"params\":\"é\"}".as_bytes()).is_err(),
            "text reader: still strict"
        );
    }

    #[test]
    fn accepts_distinct_keys_and_refuses_what_is_not_json() {
        check_unique_keys(br#"{"a":{"a":{"a":[1,"a",{"b":null}]}},"b":true}"#).expect("unique");
        check_unique_keys(b"  \"text\" ").expect("a scalar");
        assert!(check_unique_keys(br#"{"a":1} {"b":2}"#).is_err(), "trailing data");
        assert!(check_unique_keys(br#"{"a":NaN}"#).is_err());
    }
}
