//! Wall-clock timestamps in RFC 3339 (UTC, microseconds), as A2A status timestamps use them.

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}
