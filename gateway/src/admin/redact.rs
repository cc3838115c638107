//! The configuration as the admin API shows it: the file as written (`${VAR}` references stay
//! references, their values are never shown) with every secret-looking value replaced.

use serde_json::Value;

pub const REDACTED: &str = "[redacted]";

/// Keys whose string values are secrets (compared case-insensitively, as substrings).
const SECRET_KEYS: [&str; 8] =
    ["secret", "password", "token", "hash", "bearer", "private", "signing_key", "credential"];

/// Replaces secret values in `value`: strings under secret-looking keys, salted key hashes
/// anywhere, and the user-info of URLs.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let lower = key.to_ascii_lowercase();
                if SECRET_KEYS.iter().any(|s| lower.contains(s)) || lower == "key" {
                    redact_strings(item);
                } else {
                    redact(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) => {
            if s.starts_with("sha256$") {
                *s = REDACTED.into();
            } else if let Some(clean) = without_userinfo(s) {
                *s = clean;
            }
        }
        _ => {}
    }
}

/// Every string inside `value` becomes [`REDACTED`] (a secret may be a map, e.g. `{bearer: …}`).
fn redact_strings(value: &mut Value) {
    match value {
        Value::String(s) => *s = REDACTED.into(),
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(map) => map.values_mut().for_each(redact_strings),
        _ => {}
    }
}

/// `scheme://user:pass@host/…` without its user-info; `None` when there is none.
fn without_userinfo(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(format!("{scheme}://{REDACTED}@{}", &rest[at + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_and_the_rest_kept() {
        let mut doc = json!({
            "auth": {"api_keys": {"keys": [{"id": "ops", "hash": "sha256$00$11", "caller": "ops"}]},
                     "jwt": {"issuers": [{"issuer": "i", "hs256_secret": "shh"}]},
                     "max_token_bytes": 8192},
            "backends": [{"name": "a", "url": "http://u:p@h:1/x", "auth": {"bearer": "tok"}},
                         {"name": "b", "url": "http://h:2", "auth": {"oauth2": {"client_id": "c", "client_secret": "s"}}}],
            "gateway_identity": {"signing_key": "${KEY}", "key_id": "k1"},
            "other": "sha256$aa$bb"
        });
        redact(&mut doc);
        let text = doc.to_string();
        for secret in ["sha256$", "shh", "\"tok\"", "\"s\"", "u:p", "${KEY}"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(doc["auth"]["api_keys"]["keys"][0]["id"], "ops");
        assert_eq!(doc["auth"]["max_token_bytes"], 8192);
        assert_eq!(doc["backends"][0]["url"], "http://[redacted]@h:1/x");
        assert_eq!(doc["backends"][1]["auth"]["oauth2"]["client_id"], "c");
        assert_eq!(doc["gateway_identity"]["key_id"], "k1");
    }
}
