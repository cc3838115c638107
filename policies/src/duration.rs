//! Durations in policy configuration, written as text (`500ms`, `30s`, `5m`, `1h 30m`):
//! `#[serde(with = "crate::duration")]`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(text.trim())
        .map_err(|e| serde::de::Error::custom(format!("'{text}' is not a duration like 500ms, 30s, 5m: {e}")))
}

/// Writes a duration the way the configuration spells it (`500ms`, `10s`, `5m`, `1h`): the
/// defaults in the configuration's JSON Schema read like the file.
pub fn serialize<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&text(*duration))
}

/// `duration` in the largest unit that states it exactly.
pub fn text(duration: Duration) -> String {
    let millis = duration.as_millis();
    match millis {
        0 => "0s".to_owned(),
        _ if millis % 1000 != 0 => format!("{millis}ms"),
        _ if millis % 3_600_000 == 0 => format!("{}h", millis / 3_600_000),
        _ if millis % 60_000 == 0 => format!("{}m", millis / 60_000),
        _ => format!("{}s", millis / 1000),
    }
}

/// The JSON Schema of a duration field: `#[schemars(with = "a2a_policies::duration::Text")]`
/// beside its `#[serde(with = …)]`.
pub struct Text;

impl schemars::JsonSchema for Text {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration: a number and a unit (ms, s, m, h), such as 250ms, 10s, 5m.",
            "pattern": r"^\s*([0-9]+(\.[0-9]+)?\s*[a-zµ]+\s*)+$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_through_the_parser() {
        for (millis, written) in [(250, "250ms"), (10_000, "10s"), (300_000, "5m"), (7_200_000, "2h"), (1500, "1500ms")]
        {
            let duration = Duration::from_millis(millis);
            assert_eq!(text(duration), written);
            assert_eq!(humantime::parse_duration(written).unwrap(), duration);
        }
    }
}
