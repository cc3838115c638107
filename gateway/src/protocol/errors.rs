//! The one place where a refusal becomes bytes on the wire: a JSON-RPC error object (HTTP 200, with
//! the request's id) or an HTTP+JSON google.rpc.Status body with the matching HTTP status. The
//! shapes follow the reference SDK's captures (`jsonrpc-1.0-20`, `rest-1.0-20`). A2A 0.3 callers get
//! the 0.3 error object (`{"code","message","data":null}`) with the same HTTP status.

use a2a_policies::{A2aError, Binding, Dialect};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::protocol::translate::model::ErrorKind;
use crate::protocol::translate::v03;

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

// JSON-RPC codes of the gateway's own refusals, in the implementation-defined server-error range
// (-32000..-32099) and clear of the A2A codes (-32001..-32009). Their ErrorInfo reason says the same.
pub const CODE_UNAUTHENTICATED: i32 = -32040;
pub const CODE_PERMISSION_DENIED: i32 = -32043;
pub const CODE_RATE_LIMITED: i32 = -32029;
pub const CODE_TOO_MANY_TASKS: i32 = -32030;
pub const CODE_STATE_UNAVAILABLE: i32 = -32031;
pub const CODE_AGENT_UNAVAILABLE: i32 = -32032;
pub const CODE_AUDIT_UNAVAILABLE: i32 = -32033;
const GATEWAY_DOMAIN: &str = "a2a-gateway";

/// A gateway-defined error: outside the specification's codes, in the JSON-RPC server-error range.
fn gateway(code: i32, http: StatusCode, status: &'static str, reason: &'static str) -> Mapping {
    Mapping { code, http, rpc_http: http, status, reason, domain: GATEWAY_DOMAIN }
}

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
        A2aError::InvalidParams { .. } | A2aError::Validation { .. } => {
            m(-32602, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "INVALID_PARAMS")
        }
        // Refusals of the gateway's own policies. JSON-RPC callers get the real HTTP status too: the
        // specification puts authentication and rate limiting at the HTTP layer.
        A2aError::Unauthenticated { .. } => {
            gateway(CODE_UNAUTHENTICATED, StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", "UNAUTHENTICATED")
        }
        A2aError::PermissionDenied(_) => {
            gateway(CODE_PERMISSION_DENIED, StatusCode::FORBIDDEN, "PERMISSION_DENIED", "PERMISSION_DENIED")
        }
        A2aError::RateLimited { .. } => {
            gateway(CODE_RATE_LIMITED, StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED", "RATE_LIMITED")
        }
        A2aError::TooManyTasks { .. } => {
            gateway(CODE_TOO_MANY_TASKS, StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED", "TOO_MANY_TASKS")
        }
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
        A2aError::PushNotificationNotSupported => {
            m(-32003, StatusCode::BAD_REQUEST, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED")
        }
        A2aError::PayloadTooLarge(_) => Mapping {
            code: -32600,
            http: StatusCode::PAYLOAD_TOO_LARGE,
            rpc_http: StatusCode::PAYLOAD_TOO_LARGE,
            status: "INVALID_ARGUMENT",
            reason: "PAYLOAD_TOO_LARGE",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::RequestTimeout(_) => Mapping {
            code: -32600,
            http: StatusCode::REQUEST_TIMEOUT,
            rpc_http: StatusCode::REQUEST_TIMEOUT,
            status: "DEADLINE_EXCEEDED",
            reason: "REQUEST_TIMEOUT",
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
        A2aError::StateUnavailable => {
            gateway(CODE_STATE_UNAVAILABLE, StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "STATE_UNAVAILABLE")
        }
        // Outages decided before anything reached an agent. A2A defines no "unavailable" code, and
        // -32603 reads as a server bug that retrying will not fix; so, like the rate limit, these
        // are the gateway's own server-error codes carried with HTTP 503 and Retry-After in every
        // binding: the signal every HTTP client and proxy already retries on.
        A2aError::AgentUnavailable { .. } => {
            gateway(CODE_AGENT_UNAVAILABLE, StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "AGENT_UNAVAILABLE")
        }
        A2aError::AuditUnavailable { .. } => {
            gateway(CODE_AUDIT_UNAVAILABLE, StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "AUDIT_UNAVAILABLE")
        }
        A2aError::Internal => m(-32603, StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "INTERNAL_ERROR"),
        A2aError::AgentRefused { code, .. } => {
            // The agent's own A2A error: its code, and the status and reason the protocol gives it.
            let kind = ErrorKind::from_code(i64::from(*code));
            let http = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            m(*code, http, status_name(http), kind.reason().unwrap_or("AGENT_REFUSED"))
        }
        // 502, not 503: the call may have taken effect, so it is not one to retry as it is.
        A2aError::AgentConnectionLost { .. } => Mapping {
            code: -32603,
            http: StatusCode::BAD_GATEWAY,
            rpc_http: StatusCode::OK,
            status: "INTERNAL",
            reason: "AGENT_CONNECTION_LOST",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::AgentFailed { .. } => Mapping {
            code: -32603,
            http: StatusCode::BAD_GATEWAY,
            rpc_http: StatusCode::OK,
            status: "INTERNAL",
            reason: "AGENT_FAILED",
            domain: GATEWAY_DOMAIN,
        },
    }
}

/// The google.rpc.Status name of an HTTP status.
fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        415 | 501 => "UNIMPLEMENTED",
        _ => "INTERNAL",
    }
}

fn error_info(error: &A2aError, m: &Mapping) -> Value {
    let metadata = match error {
        A2aError::InvalidParams { detail: Some(Value::Object(map)), .. } => Value::Object(map.clone()),
        A2aError::AgentFailed { request_id, .. } => json!({ "requestId": request_id }),
        A2aError::AgentConnectionLost { task_id, .. } => match task_id {
            Some(id) => json!({ "taskMayExist": "true", "taskId": id }),
            None => json!({ "taskMayExist": "true" }),
        },
        _ => json!({}),
    };
    json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": m.reason,
        "domain": m.domain,
        "metadata": metadata,
    })
}

/// An error ready to send: status, extra headers and body.
pub struct ErrorResponse {
    pub status: StatusCode,
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
    pub body: Bytes,
}

impl ErrorResponse {
    pub fn into_response(self) -> http::Response<axum::body::Body> {
        let mut response = http::Response::new(axum::body::Body::from(self.body));
        *response.status_mut() = self.status;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// Headers an error carries beside its body: the authentication challenge, when to retry.
fn error_headers(error: &A2aError) -> Vec<(header::HeaderName, HeaderValue)> {
    match error {
        A2aError::Unauthenticated { challenge, .. } => {
            HeaderValue::from_str(challenge).map(|v| vec![(header::WWW_AUTHENTICATE, v)]).unwrap_or_default()
        }
        A2aError::RateLimited { retry_after, .. }
        | A2aError::AgentUnavailable { retry_after, .. }
        | A2aError::AuditUnavailable { retry_after } => {
            // Whole seconds, rounded up: retrying at the stated time must succeed.
            let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            vec![(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)))]
        }
        // The rest of a slow body is not waited for: the connection ends with the answer.
        A2aError::RequestTimeout(_) => vec![(header::CONNECTION, HeaderValue::from_static("close"))],
        A2aError::StateUnavailable => vec![(header::RETRY_AFTER, HeaderValue::from(1u64))],
        _ => Vec::new(),
    }
}

/// The detail objects of an error: its ErrorInfo, and for validation failures a google.rpc.BadRequest
/// naming each violation by its JSON pointer.
fn details(error: &A2aError, m: &Mapping) -> Value {
    let mut list = vec![error_info(error, m)];
    if let A2aError::Validation { violations, .. } = error {
        let field_violations: Vec<Value> =
            violations.iter().map(|v| json!({"field": v.pointer, "description": v.description})).collect();
        list.push(json!({"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": field_violations}));
    }
    Value::Array(list)
}

/// Renders `error` in `binding` of A2A 1.0; `rpc_id` is the JSON-RPC request id (absent → `null`).
pub fn render(error: &A2aError, binding: Binding, rpc_id: Option<&Value>) -> ErrorResponse {
    render_in(error, Dialect::V1, binding, rpc_id)
}

/// Whether a 0.3 caller gets `code` as it is: 0.3 defines it, or it is one of the gateway's own
/// server-error codes (implementation-defined in every JSON-RPC dialect). Others become -32603, as
/// the SDK's compat layer does.
fn known_to_v03(code: i32) -> bool {
    matches!(
        code,
        CODE_UNAUTHENTICATED
            | CODE_PERMISSION_DENIED
            | CODE_RATE_LIMITED
            | CODE_TOO_MANY_TASKS
            | CODE_STATE_UNAVAILABLE
            | CODE_AGENT_UNAVAILABLE
            | CODE_AUDIT_UNAVAILABLE
    ) || ErrorKind::from_code(i64::from(code)).known_to_v03()
}

/// Renders `error` in the caller's `dialect` (and, for 1.0, `binding`).
pub fn render_in(error: &A2aError, dialect: Dialect, binding: Binding, rpc_id: Option<&Value>) -> ErrorResponse {
    let m = mapping(error);
    let message = error.to_string();
    if dialect == Dialect::V03 && binding == Binding::Rest {
        // 0.3 HTTP+JSON: the SDK's status for the 0.3 error, and `{"message"}`; the gateway's own
        // errors (authentication, quotas, availability) keep their status.
        let status = if known_to_v03(m.code) && ErrorKind::from_code(i64::from(m.code)).known_to_v03() {
            StatusCode::from_u16(v03::rest::status_of(i64::from(m.code))).unwrap_or(m.http)
        } else {
            m.http
        };
        return ErrorResponse { status, headers: error_headers(error), body: to_bytes(&json!({ "message": message })) };
    }
    if dialect == Dialect::V03 {
        let code = if known_to_v03(m.code) { m.code } else { -32603 };
        let envelope = json!({
            "error": {"code": code, "message": message, "data": Value::Null},
            "id": rpc_id.cloned().unwrap_or(Value::Null),
            "jsonrpc": "2.0",
        });
        return ErrorResponse { status: m.rpc_http, headers: error_headers(error), body: to_bytes(&envelope) };
    }
    if dialect == Dialect::Early {
        // The early dialect has an HTTP status and `{"detail": …}`: the gateway's own status says most.
        let body = json!({ "detail": message });
        return ErrorResponse { status: m.http, headers: error_headers(error), body: to_bytes(&body) };
    }
    match binding {
        Binding::JsonRpc => {
            let mut body = json!({"code": m.code, "message": message});
            // The SDK omits ErrorInfo on parse errors; every other error carries its reason.
            if !matches!(error, A2aError::Parse(_)) {
                body["data"] = details(error, &m);
            }
            let envelope = json!({"error": body, "id": rpc_id.cloned().unwrap_or(Value::Null), "jsonrpc": "2.0"});
            ErrorResponse { status: m.rpc_http, headers: error_headers(error), body: to_bytes(&envelope) }
        }
        Binding::Rest => {
            let envelope = json!({"error": {
                "code": m.http.as_u16(),
                "status": m.status,
                "message": message,
                "details": details(error, &m),
            }});
            ErrorResponse { status: m.http, headers: error_headers(error), body: to_bytes(&envelope) }
        }
    }
}

/// Renders `error` as the gRPC status of a gRPC caller: the HTTP+JSON rendering is a
/// `google.rpc.Status` already (same message, same ErrorInfo), with the code the specification gives
/// gRPC for it.
pub fn render_grpc(error: &A2aError) -> super::grpc::wire::Status {
    let rendered = render(error, Binding::Rest, None);
    super::grpc::wire::Status::from_rest_error(&rendered.body)
        .unwrap_or_else(|| super::grpc::wire::Status::new(super::grpc::wire::INTERNAL, "internal error"))
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
    fn policy_refusals_carry_their_http_status_and_headers() {
        let unauth = A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer realm=\"a2a\"".into() };
        let r = render(&unauth, Binding::JsonRpc, Some(&json!(1)));
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers[0].0, header::WWW_AUTHENTICATE);
        assert_eq!(parse(&r)["error"]["code"], CODE_UNAUTHENTICATED);
        let limited =
            A2aError::RateLimited { message: "slow down".into(), retry_after: std::time::Duration::from_millis(1200) };
        let r = render(&limited, Binding::Rest, None);
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers[0], (header::RETRY_AFTER, HeaderValue::from(2u64)));
        assert_eq!(parse(&r)["error"]["details"][0]["reason"], "RATE_LIMITED");
    }

    #[test]
    fn validation_failures_list_each_pointer() {
        let error = A2aError::Validation {
            message: "input does not match the skill's schema".into(),
            violations: vec![a2a_policies::Violation { pointer: "/diff".into(), description: "is required".into() }],
        };
        let v = parse(&render(&error, Binding::JsonRpc, Some(&json!(1))));
        assert_eq!(v["error"]["code"], -32602);
        assert_eq!(v["error"]["data"][1]["fieldViolations"][0]["field"], "/diff");
        let v = parse(&render(&error, Binding::Rest, None));
        assert_eq!(v["error"]["details"][1]["@type"], "type.googleapis.com/google.rpc.BadRequest");
    }

    #[test]
    fn v03_callers_get_the_0_3_error_object() {
        let r = render_in(&A2aError::TaskNotFound, Dialect::V03, Binding::JsonRpc, Some(&json!("q")));
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            parse(&r),
            json!({"error": {"code": -32001, "message": "Task not found", "data": null}, "id": "q", "jsonrpc": "2.0"})
        );
        let version = A2aError::VersionNotSupported("no".into());
        assert_eq!(parse(&render_in(&version, Dialect::V03, Binding::JsonRpc, None))["error"]["code"], -32603);
        let unauth = A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer".into() };
        let r = render_in(&unauth, Dialect::V03, Binding::JsonRpc, None);
        assert_eq!(
            (r.status, parse(&r)["error"]["code"].clone()),
            (StatusCode::UNAUTHORIZED, json!(CODE_UNAUTHENTICATED))
        );
    }

    #[test]
    fn early_callers_get_a_status_and_a_detail() {
        let r = render_in(&A2aError::TaskNotFound, Dialect::Early, Binding::Rest, None);
        assert_eq!((r.status, parse(&r)), (StatusCode::NOT_FOUND, json!({"detail": "Task not found"})));
    }

    #[test]
    fn a_lost_connection_does_not_invite_a_blind_retry() {
        let error = A2aError::AgentConnectionLost { agent: "echo".into(), task_id: Some("t-9".into()) };
        let r = render(&error, Binding::Rest, None);
        assert_eq!(r.status, StatusCode::BAD_GATEWAY);
        assert!(r.headers.iter().all(|(name, _)| name != header::RETRY_AFTER));
        let v = parse(&r);
        assert_eq!(v["error"]["details"][0]["metadata"], json!({"taskMayExist": "true", "taskId": "t-9"}));
        assert!(v["error"]["message"].as_str().unwrap().contains("t-9 may have changed"), "{v}");
        let new_task = A2aError::AgentConnectionLost { agent: "echo".into(), task_id: None };
        assert!(new_task.to_string().contains("a task may have been created"));
    }

    #[test]
    fn backend_unavailable_is_503_in_rest_and_internal_in_json_rpc() {
        let error = A2aError::BackendUnavailable("agent 'echo' is unavailable".into());
        assert_eq!(render(&error, Binding::Rest, None).status, StatusCode::SERVICE_UNAVAILABLE);
        let v = parse(&render(&error, Binding::JsonRpc, Some(&json!(7))));
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(v["id"], 7);
    }

    #[test]
    fn outages_are_503_with_retry_after_in_every_dialect() {
        let outage = A2aError::AgentUnavailable {
            message: "the agents that offer the skill 'x' are unavailable; retry later".into(),
            retry_after: std::time::Duration::from_millis(200),
        };
        let audit = A2aError::AuditUnavailable { retry_after: std::time::Duration::from_secs(1) };
        for (error, code, reason) in [
            (&outage, CODE_AGENT_UNAVAILABLE, "AGENT_UNAVAILABLE"),
            (&audit, CODE_AUDIT_UNAVAILABLE, "AUDIT_UNAVAILABLE"),
        ] {
            let retry = (header::RETRY_AFTER, HeaderValue::from(1u64));
            for (dialect, binding) in
                [(Dialect::V1, Binding::JsonRpc), (Dialect::V1, Binding::Rest), (Dialect::V03, Binding::JsonRpc)]
            {
                let r = render_in(error, dialect, binding, Some(&json!(3)));
                assert_eq!((r.status, &r.headers[..]), (StatusCode::SERVICE_UNAVAILABLE, &[retry.clone()][..]));
                let v = parse(&r);
                match binding {
                    Binding::JsonRpc => assert_eq!((&v["error"]["code"], &v["id"]), (&json!(code), &json!(3))),
                    Binding::Rest => assert_eq!(v["error"]["details"][0]["reason"], reason),
                }
            }
            let r = render_in(error, Dialect::Early, Binding::Rest, None);
            assert_eq!((r.status, r.headers.len()), (StatusCode::SERVICE_UNAVAILABLE, 1));
        }
    }
}
