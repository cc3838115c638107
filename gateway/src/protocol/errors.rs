//! The one place where a refusal becomes bytes on the wire: a JSON-RPC error object (HTTP 200, with
//! the request's id) or an HTTP+JSON google.rpc.Status body with the matching HTTP status. The
//! shapes follow the reference SDK's captures (`jsonrpc-1.0-20`, `rest-1.0-20`). A2A 0.3 callers get
//! the 0.3 error object (`{"code","message","data":null}`) with the same HTTP status.

use a2a_core::{A2aError, Binding, Dialect};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::protocol::translate::v03;
use a2a_model::ErrorKind;

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

/// An error the specification names: code, HTTP status and ErrorInfo reason from the one table of
/// spec kinds ([`ErrorKind`], which the agent side and the dialect bridges read too); `status` is
/// its google.rpc.Status name.
fn spec(kind: ErrorKind, status: &'static str) -> Mapping {
    Mapping {
        code: kind.code() as i32,
        http: StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        rpc_http: StatusCode::OK,
        status,
        reason: kind.reason().unwrap_or("INTERNAL_ERROR"),
        domain: A2A_DOMAIN,
    }
}

fn mapping(error: &A2aError) -> Mapping {
    match error {
        // The SDK's HTTP+JSON binding answers a body that is not JSON as an invalid request.
        A2aError::Parse(_) => Mapping { reason: "INVALID_REQUEST", ..spec(ErrorKind::Parse, "INVALID_ARGUMENT") },
        A2aError::InvalidRequest(_) => spec(ErrorKind::InvalidRequest, "INVALID_ARGUMENT"),
        A2aError::MethodNotFound(_) => spec(ErrorKind::MethodNotFound, "NOT_FOUND"),
        A2aError::InvalidParams { .. } | A2aError::Validation { .. } | A2aError::SkillUndecided { .. } => {
            spec(ErrorKind::InvalidParams, "INVALID_ARGUMENT")
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
        A2aError::TaskNotFound => spec(ErrorKind::TaskNotFound, "NOT_FOUND"),
        A2aError::AgentNotFound(_) => Mapping {
            code: -32601,
            http: StatusCode::NOT_FOUND,
            rpc_http: StatusCode::NOT_FOUND,
            status: "NOT_FOUND",
            reason: "AGENT_NOT_FOUND",
            domain: GATEWAY_DOMAIN,
        },
        A2aError::ExtendedCardNotConfigured => spec(ErrorKind::ExtendedAgentCardNotConfigured, "FAILED_PRECONDITION"),
        A2aError::PushNotificationNotSupported => spec(ErrorKind::PushNotificationNotSupported, "FAILED_PRECONDITION"),
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
        A2aError::UnsupportedOperation(_) => spec(ErrorKind::UnsupportedOperation, "FAILED_PRECONDITION"),
        A2aError::VersionNotSupported(_) => spec(ErrorKind::VersionNotSupported, "FAILED_PRECONDITION"),
        // 415, the HTTP status of an unsupported media type (the table's 400 says less).
        A2aError::ContentTypeNotSupported(_) => Mapping {
            http: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ..spec(ErrorKind::ContentTypeNotSupported, "INVALID_ARGUMENT")
        },
        // 502, not the table's 500: the fault is the agent's, not the gateway's.
        A2aError::InvalidAgentResponse(_) => {
            Mapping { http: StatusCode::BAD_GATEWAY, ..spec(ErrorKind::InvalidAgentResponse, "INTERNAL") }
        }
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
        A2aError::Internal => spec(ErrorKind::Internal, "INTERNAL"),
        A2aError::AgentRefused { code, .. } => {
            // The agent's own A2A error: its code, and the status and reason the protocol gives it.
            let kind = ErrorKind::from_code(i64::from(*code));
            let http = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Mapping {
                code: *code,
                reason: kind.reason().unwrap_or("AGENT_REFUSED"),
                ..spec(kind, status_name(http.as_u16()))
            }
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

/// The google.rpc.Status name of an HTTP status: the one table for the gateway's error bodies, the
/// agents' errors passed on, and the gRPC front.
pub fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// An HTTP+JSON error body (a `google.rpc.Status` under `error`): the one place its shape is
/// written, for the gateway's refusals, agents' errors passed on and gRPC statuses.
pub fn rest_error_body(http: u16, status: &str, message: Value, details: Value) -> Vec<u8> {
    let body = json!({"error": {"code": http, "status": status, "message": message, "details": details}});
    // Serialising a `Value` cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

fn error_info(error: &A2aError, m: &Mapping) -> Value {
    let metadata = match error {
        A2aError::InvalidParams { detail: Some(Value::Object(map)), .. } => Value::Object(map.clone()),
        A2aError::SkillUndecided { candidates, .. } => {
            let ids: Vec<&str> = candidates.iter().map(|(id, _)| id.as_str()).collect();
            json!({ "availableSkills": ids.join(",") })
        }
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

/// An error and the caller it answers: the one way an [`A2aError`] becomes a response
/// ([`Refusal::into_response`]) or, inside an answer or a stream the gateway converts, an error body
/// ([`Refusal::rendered`]). Every refusal on the call path — one the decoder cannot read, one a layer
/// of the stack returns, an agent that broke off — and on the card and catalog endpoints is one.
#[derive(Debug)]
pub struct Refusal {
    pub dialect: Dialect,
    pub binding: Binding,
    /// The JSON-RPC request id, echoed (absent → `null`).
    pub rpc_id: Option<Value>,
    pub error: A2aError,
}

impl Refusal {
    pub fn new(error: A2aError, dialect: Dialect, binding: Binding, rpc_id: Option<Value>) -> Refusal {
        Refusal { dialect, binding, rpc_id, error }
    }

    /// A refusal on a plain HTTP endpoint (a card, the catalog): the HTTP+JSON form of `dialect`.
    pub fn rest(error: A2aError, dialect: Dialect) -> Refusal {
        Refusal::new(error, dialect, Binding::Rest, None)
    }

    /// Status, headers and body in the caller's dialect and binding.
    pub fn rendered(&self) -> ErrorResponse {
        render_in(&self.error, self.dialect, self.binding, self.rpc_id.as_ref())
    }

    pub fn into_response(self) -> http::Response<axum::body::Body> {
        self.rendered().into_response()
    }
}

/// Renders `error` in `binding` of A2A 1.0; `rpc_id` is the JSON-RPC request id (absent → `null`).
fn render(error: &A2aError, binding: Binding, rpc_id: Option<&Value>) -> ErrorResponse {
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

/// Renders `error` in the caller's `dialect` (and, for 1.0, `binding`); outside this module through
/// [`Refusal`].
fn render_in(error: &A2aError, dialect: Dialect, binding: Binding, rpc_id: Option<&Value>) -> ErrorResponse {
    let m = mapping(error);
    let message = error.to_string();
    if dialect == Dialect::V03 && binding == Binding::Rest {
        // 0.3 HTTP+JSON: the SDK's status for the 0.3 error, and `{"message", "type"}`; the gateway's
        // own errors (authentication, quotas, availability) keep their status.
        let spec_error = known_to_v03(m.code) && ErrorKind::from_code(i64::from(m.code)).known_to_v03();
        let status = match spec_error {
            true => StatusCode::from_u16(v03::rest::status_of(i64::from(m.code))).unwrap_or(m.http),
            false => m.http,
        };
        let body = match spec_error {
            true => v03::rest::error_body(i64::from(m.code), &message),
            false => json!({ "message": message }),
        };
        return ErrorResponse { status, headers: error_headers(error), body: to_bytes(&body) };
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
            let body = rest_error_body(m.http.as_u16(), m.status, Value::String(message), details(error, &m));
            ErrorResponse { status: m.http, headers: error_headers(error), body: Bytes::from(body) }
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
mod tests;
