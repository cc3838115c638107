//! The one duration grammar of the configuration file, for the gateway's sections and the
//! policies' alike: one or more `<number><unit>` terms, units `ms`, `s`, `m`, `h`, `d`, summed
//! (`500ms`, `30s`, `1.5s`, `5m`, `1h 30m`). A bare number is refused: `10` could mean seconds or
//! milliseconds, and a configuration should not make the reader guess.
//!
//! `#[serde(with = "a2a_core::duration")]`, or the [`option`] and [`map`] modules.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// The longest duration the file may state (about 31 years): larger numbers are typos.
const MAX_SECONDS: f64 = 1e9;

/// Parses a duration in the grammar above.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let usage = || format!("'{text}' is not a duration like 500ms, 30s, 5m or 1h 30m");
    if text.is_empty() {
        return Err(usage());
    }
    let mut seconds = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let unit_end = after.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let number: f64 = number.parse().map_err(|_| usage())?;
        let scale = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "" => return Err(format!("'{text}' has a number without a unit: use ms, s, m, h or d")),
            _ => return Err(format!("'{text}': unknown unit '{unit}' (use ms, s, m, h or d)")),
        };
        seconds += number * scale;
        rest = after.trim_start();
    }
    if !seconds.is_finite() || seconds > MAX_SECONDS {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    parse(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
}

/// An optional duration.
pub mod option {
    use super::*;

    pub fn serialize<S: serde::Serializer>(duration: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => serializer.serialize_str(&text(*duration)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| parse(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A map of names to durations (per-skill deadlines, say).
pub mod map {
    use std::collections::HashMap;

    use super::*;

    pub fn serialize<S: serde::Serializer>(map: &HashMap<String, Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(map.iter().map(|(name, duration)| (name, text(*duration))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<HashMap<String, Duration>, D::Error> {
        HashMap::<String, String>::deserialize(deserializer)?
            .into_iter()
            .map(|(name, text)| Ok((name, parse(&text).map_err(serde::de::Error::custom)?)))
            .collect()
    }
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
        _ if !millis.is_multiple_of(1000) => format!("{millis}ms"),
        _ if millis.is_multiple_of(3_600_000) => format!("{}h", millis / 3_600_000),
        _ if millis.is_multiple_of(60_000) => format!("{}m", millis / 60_000),
        _ => format!("{}s", millis / 1000),
    }
}

/// The JSON Schema of a duration field: `#[schemars(with = "a2a_core::duration::Text")]`
/// beside its `#[serde(with = …)]`.
pub struct Text;

impl schemars::JsonSchema for Text {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration: one or more terms of a number and a unit (ms, s, m, h, d), such as 250ms, 10s, 5m, 1h 30m.",
            "pattern": r"^\s*([0-9]+(\.[0-9]+)?(ms|s|m|h|d)\s*)+$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_with_units_sum() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse(" 30s "), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        for bad in ["", "10", "-1s", "1 s", "5 minutes", "1e3s", "s", "1.2.3s", "99999999999h"] {
            assert!(parse(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(parse("10").unwrap_err().contains("without a unit"));
        assert!(parse("5min").unwrap_err().contains("unknown unit 'min'"));
    }

    #[test]
    fn text_round_trips_through_the_parser() {
        for (millis, written) in [(250, "250ms"), (10_000, "10s"), (300_000, "5m"), (7_200_000, "2h"), (1500, "1500ms")]
        {
            let duration = Duration::from_millis(millis);
            assert_eq!(text(duration), written);
            assert_eq!(parse(written), Ok(duration));
        }
    }
}
