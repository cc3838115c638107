//! The one duration grammar of the configuration file, for the gateway's sections and the
//! policies' alike: one or more `<number><unit>` terms, units `ms`, `s`, `m`, `h`, `d`, summed
//! (`500ms`, `30s`, `1.5s`, `5m`, `1h 30m`). A bare number is refused: `10` could mean seconds or
//! milliseconds, and a configuration should not make the reader guess.
//!
//! `#[serde(with = "a2a_policies::duration")]`, or the [`option`] and [`map`] modules.

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

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<HashMap<String, Duration>, D::Error> {
        HashMap::<String, String>::deserialize(deserializer)?
            .into_iter()
            .map(|(name, text)| Ok((name, parse(&text).map_err(serde::de::Error::custom)?)))
            .collect()
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
}
