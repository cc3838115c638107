//! The gateway's signature on every card it serves (A2A 1.0 §8.4): a JWS with detached payload over
//! the RFC 8785 (JCS) canonical form of the card without its `signatures`, made with the
//! `gateway_identity` key that `/.well-known/jwks.json` publishes; the protected header names the
//! key (`kid`) and that JWKS (`jku`).

use std::sync::Arc;

use a2a_policies::backend_auth::BackendCredentials;
use serde_json::{Value, json};

/// Signs cards with the gateway's key.
#[derive(Clone)]
pub struct CardSigner {
    credentials: Arc<BackendCredentials>,
    /// `<public base>/.well-known/jwks.json`.
    jku: String,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner").field("jku", &self.jku).finish_non_exhaustive()
    }
}

impl CardSigner {
    /// A signer when the gateway has a `gateway_identity` key; `None` otherwise.
    pub fn new(credentials: Arc<BackendCredentials>, public_base: &str) -> Option<CardSigner> {
        credentials.can_sign().then(|| CardSigner { credentials, jku: format!("{public_base}/.well-known/jwks.json") })
    }

    /// `card` with the gateway's signature as its only `signatures` entry (a backend's own were
    /// over its card, not this one).
    pub fn sign(&self, card: &Value) -> Value {
        let mut card = card.clone();
        let Value::Object(map) = &mut card else { return card };
        map.remove("signatures");
        let payload = canonical(&Value::Object(map.clone()));
        match self.credentials.sign_detached(Some(&self.jku), &payload) {
            Some((protected, signature)) => {
                map.insert("signatures".into(), json!([{ "protected": protected, "signature": signature }]));
            }
            None => tracing::error!("the gateway's key did not sign a card; it is served unsigned"),
        }
        card
    }
}

/// RFC 8785 canonical JSON: object members sorted by their UTF-16 code units, no whitespace,
/// strings as ECMAScript's `JSON.stringify` writes them, numbers in ECMAScript's shortest form.
pub fn canonical(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => {
            // serde_json escapes as JSON.stringify does: `"` `\` and controls (\b \f \n \r \t,
            // others as \u00xx lowercase); everything else, non-ASCII included, is written as is.
            out.extend(serde_json::to_vec(value).unwrap_or_default());
        }
        Value::Number(number) => out.extend(number_text(number).into_bytes()),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(serde_json::to_vec(key).unwrap_or_default());
                out.push(b':');
                write(item, out);
            }
            out.push(b'}');
        }
    }
}

/// ECMAScript Number::toString for a JSON number: integers plainly (within 2^53), others through
/// the shortest round-trip digits with ECMAScript's exponent rules.
fn number_text(number: &serde_json::Number) -> String {
    if let Some(i) = number.as_i64().filter(|i| i.unsigned_abs() < (1 << 53)) {
        return i.to_string();
    }
    let Some(f) = number.as_f64() else { return number.to_string() };
    if f == 0.0 {
        return "0".into();
    }
    // Shortest digits and exponent: `d.ddde±x` from Rust's `{:e}` (also shortest round-trip).
    let text = format!("{:e}", f.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let n = exponent + 1; // the decimal point's position after the first digit run
    let k = digits.len() as i32;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 { format!("+{e}") } else { e.to_string() };
        match k {
            1 => format!("{digits}e{e}"),
            _ => format!("{}.{}e{e}", &digits[..1], &digits[1..]),
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: Value) -> String {
        String::from_utf8(canonical(&value)).unwrap()
    }

    #[test]
    fn members_sort_by_utf16_and_whitespace_goes() {
        assert_eq!(
            text(json!({"b": [1, {"z": null, "a": true}], "a": "x"})),
            r#"{"a":"x","b":[1,{"a":true,"z":null}]}"#
        );
        // U+1F600 (a surrogate pair, 0xD83D…) sorts before U+FB01 in UTF-16, after it in UTF-8.
        assert_eq!(text(json!({"\u{fb01}": 1, "\u{1f600}": 2})), "{\"\u{1f600}\":2,\"\u{fb01}\":1}");
        assert_eq!(text(json!("a\"\\\n\u{1}é")), "\"a\\\"\\\\\\n\\u0001é\"");
    }

    /// RFC 8785 appendix B's number samples.
    #[test]
    fn numbers_are_written_as_ecmascript_does() {
        for (input, expected) in [
            ("0", "0"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("333333333.3333333", "333333333.3333333"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("-1.5e300", "-1.5e+300"),
            ("9007199254740993", "9007199254740992"),
        ] {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(text(value), expected, "{input}");
        }
    }
}
