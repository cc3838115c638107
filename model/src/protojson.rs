//! ProtoJSON reading rules shared by the model's types: `""` as an absent string, `null` as an
//! empty list or a default, `false` not written, and `Struct` for free-form metadata. Public for the
//! crates that declare more ProtoJSON types beside the model's (serde's `deserialize_with`,
//! `skip_serializing_if`).

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A `google.protobuf.Struct`: free-form metadata.
pub type Struct = Map<String, Value>;

/// Reads `""` as absent, like ProtoJSON does for an unset string.
pub fn empty_as_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

/// Reads `null` as an empty list.
pub fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Reads `null` as the default value.
pub fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Whether a bool is `false`, the ProtoJSON default that is not written.
pub fn is_false(b: &bool) -> bool {
    !*b
}
