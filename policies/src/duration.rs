//! Durations in policy configuration, written as text (`500ms`, `30s`, `5m`, `1h 30m`):
//! `#[serde(with = "crate::duration")]`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(text.trim())
        .map_err(|e| serde::de::Error::custom(format!("'{text}' is not a duration like 500ms, 30s, 5m: {e}")))
}
