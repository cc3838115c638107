//! The one place where a refusal becomes bytes on the wire: a JSON-RPC error object (HTTP 200, with
//! the request's id) or an HTTP+JSON google.rpc.Status body with the matching HTTP status. The
//! shapes follow the reference SDK's captures (`jsonrpc-1.0-20`, `rest-1.0-20`).

use a2a_policies::{A2aError, Binding};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// Wire facts of one error kind.
struct Mapping {
    code: i32,
    http: StatusCode,
    /// JSON-RPC errors travel with HTTP 200, except where the endpoint itself is wrong.
    rpc_http: StatusCode,
    status: &'static str,
    reason: &'static str,
    /// `a2a-protocol.org` for errors the spec defines; ours otherwise.
    domain: &'static str,
}

const A2A_DOMAIN: &str = "a2a-protocol.org";
const GATEWAY_DOMAIN: &str = "a2a-gateway";

fn mapping(error: &A2aError) -> Mapping {
    let m = |code, http, status, reason| Mapping {
        code,
        http,
        rpc_http: StatusCode::OK,
        status,
        reason,
        domain: A2A_DOMAIN,
    };
    match error {
        A2aError::Parse(_) => m(-32700, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "INVALID_REQUEST"),
        A2aError::InvalidRequest(_) => m(-32600, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "INVALID_REQUEST"),
        A2aError::MethodNotFound(_) => m(-32601, StatusCode::NOT_FOUND, "NOT_FOUND", "METHOD_NOT_FOUND"),
        A2aError::InvalidParams { .. } => m(-32602, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "INVALID_PARAMS"),
        A2aError::TaskNotFound => m(-32001, StatusCode::NOT_FOUND, "NOT_FOUND", "TASK_NOT_FOUND"),
        A2aError::AgentNotFound(_) => Mapping {
            code: -32601,
            http: StatusCode::NOT_FOUND,
            rpc_http: StatusCode::NOT_FOUND,
            status: "NOT_FOUND",
            reason: "AGENT_NOT_FOUND",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::ExtendedCardNotConfigured => {
            m(-32007, StatusCode::BAD_REQUEST, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED")
        }
        A2aError::PayloadTooLarge(_) => Mapping {
            code: -32600,
            http: StatusCode::PAYLOAD_TOO_LARGE,
            rpc_http: StatusCode::PAYLOAD_TOO_LARGE,
            status: "INVALID_ARGUMENT",
            reason: "PAYLOAD_TOO_LARGE",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::UnsupportedOperation(_) => {
            m(-32004, StatusCode::BAD_REQUEST, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
        }
        A2aError::VersionNotSupported(_) => {
            m(-32009, StatusCode::BAD_REQUEST, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
        }
        A2aError::InvalidAgentResponse(_) => m(-32006, StatusCode::BAD_GATEWAY, "INTERNAL", "INVALID_AGENT_RESPONSE"),
        A2aError::BackendUnavailable(_) => Mapping {
            code: -32603,
            http: StatusCode::SERVICE_UNAVAILABLE,
            rpc_http: StatusCode::OK,
            status: "UNAVAILABLE",
            reason: "BACKEND_UNAVAILABLE",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::Internal => m(-32603, StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "INTERNAL_ERROR"),
    }
}

fn error_info(error: &A2aError, m: &Mapping) -> Value {
    let metadata = match error {
        A2aError::InvalidParams { detail: Some(Value::Object(map)), .. } => Value::Object(map.clone()),
        _ => json!({}),
    };
    json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": m.reason,
        "domain": m.domain,
        "metadata": metadata,
    })
}

/// An error ready to send: status, content type and body.
pub struct ErrorResponse {
    pub status: StatusCode,
    pub body: Bytes,
}

impl ErrorResponse {
    pub fn into_response(self) -> http::Response<axum::body::Body> {
        let mut response = http::Response::new(axum::body::Body::from(self.body));
        *response.status_mut() = self.status;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// Renders `error` in `binding`; `rpc_id` is the JSON-RPC request id (absent → `null`).
pub fn render(error: &A2aError, binding: Binding, rpc_id: Option<&Value>) -> ErrorResponse {
    let m = mapping(error);
    let message = error.to_string();
    match binding {
        Binding::JsonRpc => {
            let mut body = json!({"code": m.code, "message": message});
            // The SDK omits ErrorInfo on parse errors; every other error carries its reason.
            if !matches!(error, A2aError::Parse(_)) {
                body["data"] = json!([error_info(error, &m)]);
            }
            let envelope = json!({"error": body, "id": rpc_id.cloned().unwrap_or(Value::Null), "jsonrpc": "2.0"});
            ErrorResponse { status: m.rpc_http, body: to_bytes(&envelope) }
        }
        Binding::Rest => {
            let envelope = json!({"error": {
                "code": m.http.as_u16(),
                "status": m.status,
                "message": message,
                "details": [error_info(error, &m)],
            }});
            ErrorResponse { status: m.http, body: to_bytes(&envelope) }
        }
    }
}

fn to_bytes(value: &Value) -> Bytes {
    // Serialising a `Value` built above cannot fail.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(r: &ErrorResponse) -> Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn task_not_found_matches_the_sdk_capture_in_json_rpc() {
        let r = render(&A2aError::TaskNotFound, Binding::JsonRpc, Some(&json!("req-20")));
        assert_eq!(r.status, StatusCode::OK);
        // jsonrpc-1.0-20-error-GetTask-not-found.txt, field for field.
        let expected: Value = serde_json::from_str(
            r#"{"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]},"id":"req-20","jsonrpc":"2.0"}"#,
        )
        .unwrap();
        assert_eq!(parse(&r), expected);
    }

    #[test]
    fn task_not_found_matches_the_sdk_capture_in_rest() {
        let r = render(&A2aError::TaskNotFound, Binding::Rest, None);
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        // rest-1.0-20-error-tasks-get-not-found.txt
        let expected: Value = serde_json::from_str(
            r#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}}"#,
        )
        .unwrap();
        assert_eq!(parse(&r), expected);
    }

    #[test]
    fn parse_error_has_null_id_and_no_data() {
        let r = render(&A2aError::Parse("bad".into()), Binding::JsonRpc, None);
        let v = parse(&r);
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], -32700);
        assert!(v["error"].get("data").is_none());
    }

    #[test]
    fn invalid_params_detail_goes_into_error_info_metadata() {
        let error = A2aError::InvalidParams {
            message: "no skill".into(),
            detail: Some(json!({"availableSkills": "echo,review-pr"})),
        };
        let v = parse(&render(&error, Binding::Rest, None));
        assert_eq!(v["error"]["details"][0]["metadata"]["availableSkills"], "echo,review-pr");
        assert_eq!(v["error"]["code"], 400);
    }

    #[test]
    fn backend_unavailable_is_503_in_rest_and_internal_in_json_rpc() {
        let error = A2aError::BackendUnavailable("agent 'echo' is unavailable".into());
        assert_eq!(render(&error, Binding::Rest, None).status, StatusCode::SERVICE_UNAVAILABLE);
        let v = parse(&render(&error, Binding::JsonRpc, Some(&json!(7))));
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(v["id"], 7);
    }
}
