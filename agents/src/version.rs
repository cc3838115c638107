//! The `A2A-Version` request header check every 1.0 operation runs first.
//!
//! Like the reference SDK: a missing header means the caller speaks 0.3, and only the major
//! version is compared, so `1.0`, `1.1` and `1.0.5` pass while `0.3` and `2.0` are refused.

use http::HeaderMap;

use crate::error::A2aError;

/// The header name (HTTP header names are case-insensitive).
pub const HEADER: &str = "a2a-version";

/// What a caller that sends no header is taken to speak.
const ASSUMED_WHEN_MISSING: &str = "0.3";

/// Accepts the request when its `A2A-Version` major is 1.
pub fn require_v1(headers: &HeaderMap) -> Result<(), A2aError> {
    let asked = match headers.get(HEADER) {
        None => ASSUMED_WHEN_MISSING.to_owned(),
        Some(value) => String::from_utf8_lossy(value.as_bytes()).trim().to_owned(),
    };
    let major = asked.split('.').next().unwrap_or_default();
    if major == "1" { Ok(()) } else { Err(A2aError::VersionNotSupported(asked)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(version: Option<&'static str>) -> Result<(), A2aError> {
        let mut headers = HeaderMap::new();
        if let Some(version) = version {
            headers.insert(HEADER, HeaderValue::from_static(version));
        }
        require_v1(&headers)
    }

    #[test]
    fn major_one_passes() {
        for version in ["1.0", "1.1", "1.0.5", "1"] {
            assert_eq!(with(Some(version)), Ok(()), "{version}");
        }
    }

    #[test]
    fn missing_means_0_3() {
        assert_eq!(with(None), Err(A2aError::VersionNotSupported("0.3".into())));
    }

    #[test]
    fn other_majors_are_refused() {
        assert_eq!(with(Some("2.0")), Err(A2aError::VersionNotSupported("2.0".into())));
        assert!(with(Some("0.3")).is_err());
        assert!(with(Some("")).is_err());
    }
}
