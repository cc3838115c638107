//! RFC 3339 timestamps in UTC with microseconds (`2026-12-02T10:21:20.834415Z`), the form the
//! reference SDK puts in `status.timestamp`, and their parsing for ListTasks filters.
//!
//! Hand-rolled because two small functions do not justify a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

const MICROS_PER_SEC: i64 = 1_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// Now, formatted for `status.timestamp`.
pub fn now_rfc3339() -> String {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    format_micros(micros)
}

/// Formats microseconds since the Unix epoch.
pub fn format_micros(micros: i64) -> String {
    let secs = micros.div_euclid(MICROS_PER_SEC);
    let frac = micros.rem_euclid(MICROS_PER_SEC);
    let days = secs.div_euclid(SECS_PER_DAY);
    let of_day = secs.rem_euclid(SECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:06}Z", of_day / 3600, of_day / 60 % 60, of_day % 60)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` into microseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let slice = text.get(range)?;
        slice.bytes().all(|b| b.is_ascii_digit()).then(|| slice.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let separators_ok = bytes[4] == b'-' && bytes[7] == b'-' && bytes[13] == b':' && bytes[16] == b':';
    let in_range = (1..=12).contains(&month) && (1..=31).contains(&day) && hour < 24 && minute < 60 && second < 61;
    if !separators_ok || !in_range {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac_micros = 0;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        // Keep microsecond precision: pad or cut the fraction to six digits.
        let kept: String = after_dot[..digits].chars().chain("000000".chars()).take(6).collect();
        frac_micros = kept.parse().ok()?;
        rest = &after_dot[digits..];
    }
    let offset_secs = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * SECS_PER_DAY + hour * 3600 + minute * 60 + second - offset_secs;
    Some(secs * MICROS_PER_SEC + frac_micros)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_the_sdk() {
        // 2026-12-02T10:21:20.834415Z, the timestamp of a captured SendMessage.
        let micros = 1_796_206_880_834_415;
        assert_eq!(format_micros(micros), "2026-12-02T10:21:20.834415Z");
        assert_eq!(format_micros(0), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn parses_what_it_formats_and_common_variants() {
        let micros = 1_796_206_880_834_415;
        assert_eq!(parse_rfc3339(&format_micros(micros)), Some(micros));
        assert_eq!(parse_rfc3339("2026-12-02T10:21:20Z"), Some(micros - 834_415));
        assert_eq!(parse_rfc3339("2026-12-02T11:21:20.834415+01:00"), Some(micros));
        assert_eq!(parse_rfc3339("2026-12-02T10:21:20.8Z"), Some(micros - 34_415));
    }

    #[test]
    fn rejects_malformed_timestamps() {
        for bad in ["", "yesterday", "2026-13-02T10:21:20Z", "2026-12-02T10:21:20", "2026-12-02T10:21:20.Z"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn now_is_well_formed() {
        let now = now_rfc3339();
        assert!(parse_rfc3339(&now).is_some(), "{now}");
    }
}
