//! The JSON-RPC 2.0 envelope the two JSON-RPC dialects share: reading one without parsing its
//! payload, and writing one around a translated payload without building a `Value` tree.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::TranslateError;

/// A request, response or stream event; the payload stays raw until a dialect parses it.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default, borrow)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// `None` for a `null` result too (a push-config delete): check `error` to tell success.
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
}

impl<'a> Envelope<'a> {
    pub fn parse(json: &'a [u8]) -> Result<Envelope<'a>, TranslateError> {
        // serde would also read a struct from an array: a batch is not one message.
        if json.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(TranslateError::invalid("", "a JSON-RPC message must be an object (no batches)"));
        }
        a2a_model::passes::read();
        serde_json::from_slice(json).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                TranslateError::Json(e.to_string())
            } else {
                TranslateError::invalid("", "a JSON-RPC message must be an object")
            }
        })
    }
}

#[derive(Serialize)]
struct RequestOut<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct SuccessOut<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a R,
}

#[derive(Serialize)]
struct FailureOut<'a, E: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: &'a E,
}

fn to_vec(value: &impl Serialize) -> Vec<u8> {
    a2a_model::passes::write();
    // Our payload types serialise infallibly (string keys, no custom failures).
    serde_json::to_vec(value).unwrap_or_default()
}

/// A request envelope; `params: None` writes no `params` member.
pub fn request<P: Serialize>(id: &Value, method: &str, params: Option<&P>) -> Vec<u8> {
    to_vec(&RequestOut { jsonrpc: "2.0", id, method, params })
}

/// A success envelope (also one event of a JSON-RPC stream).
pub fn success<R: Serialize>(id: &Value, result: &R) -> Vec<u8> {
    to_vec(&SuccessOut { jsonrpc: "2.0", id, result })
}

/// An error envelope.
pub fn failure<E: Serialize>(id: &Value, error: &E) -> Vec<u8> {
    to_vec(&FailureOut { jsonrpc: "2.0", id, error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_without_parsing_the_payload() {
        let body = br#"{"id":"req-4","jsonrpc":"2.0","result":{"kind":"task","id":"t"}}"#;
        let envelope = Envelope::parse(body).expect("envelope");
        assert_eq!(envelope.id, Some(json!("req-4")));
        assert_eq!(envelope.result.map(RawValue::get), Some(r#"{"kind":"task","id":"t"}"#));
        assert!(envelope.error.is_none());
        assert!(matches!(Envelope::parse(b"[]"), Err(TranslateError::Invalid { .. })));
    }

    #[test]
    fn writes_envelopes() {
        let id = json!(7);
        assert_eq!(
            request::<Value>(&id, "agent/getAuthenticatedExtendedCard", None),
            br#"{"jsonrpc":"2.0","id":7,"method":"agent/getAuthenticatedExtendedCard"}"#
        );
        assert_eq!(success(&id, &json!({"a": 1})), br#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#);
        assert_eq!(
            failure(&Value::Null, &json!({"code": -32700})),
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}"#
        );
    }
}
