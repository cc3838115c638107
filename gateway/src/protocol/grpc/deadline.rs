//! The `grpc-timeout` a gRPC caller sends: how long it waits for its whole call. The gateway ends
//! the call with `DEADLINE_EXCEEDED` once it passes, stream or not; its own limits (first byte,
//! stream idle and lifetime) still apply inside, so the earlier of the two ends the call.

use std::time::Duration;

use http::HeaderMap;

use super::wire::Status;

/// gRPC's code for a call whose deadline passed.
pub const DEADLINE_EXCEEDED: i32 = 4;

/// The caller's deadline from its `grpc-timeout` header (`TimeoutValue TimeoutUnit`: 1 to 8 digits,
/// then `H`, `M`, `S`, `m`, `u` or `n`); `None` without one, or with one that is malformed (gRPC
/// servers then treat the call as without a deadline).
pub fn of(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?.trim();
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The status a call ends with when its deadline passed.
pub fn exceeded() -> Status {
    Status::new(DEADLINE_EXCEEDED, "the call's deadline (grpc-timeout) passed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-timeout", http::HeaderValue::from_static(value));
        of(&headers)
    }

    #[test]
    fn timeouts_are_read_in_every_unit_and_malformed_ones_ignored() {
        assert_eq!(with("1S"), Some(Duration::from_secs(1)));
        assert_eq!(with("250m"), Some(Duration::from_millis(250)));
        assert_eq!(with("2M"), Some(Duration::from_secs(120)));
        assert_eq!(with("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(with("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(with("5u"), Some(Duration::from_micros(5)));
        for bad in ["", "S", "10", "123456789S", "1s", "-1S", "1.5S", "1 S"] {
            let mut headers = HeaderMap::new();
            headers.insert("grpc-timeout", http::HeaderValue::from_str(bad).unwrap());
            assert_eq!(of(&headers), None, "{bad:?}");
        }
        assert_eq!(of(&HeaderMap::new()), None);
    }
}
