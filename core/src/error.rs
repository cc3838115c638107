//! The protocol-level refusal every layer returns. The gateway turns it into the caller's binding
//! (JSON-RPC error object or HTTP status + JSON body) in exactly one place.

use std::time::Duration;

/// One reason a value failed validation, located by a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the validated object (`/diff`, `/focus/0`).
    pub pointer: String,
    pub description: String,
}

/// Why a request was refused or failed, in A2A terms. Messages are for the caller: they say what was
/// wrong and what to do, and never carry internals (hosts, addresses, signature details).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    MethodNotFound(String),
    #[error("{message}")]
    InvalidParams {
        message: String,
        /// Machine-readable detail (string values; e.g. the list of available skills).
        detail: Option<serde_json::Value>,
    },
    /// The input does not satisfy the skill's schema or limits; each violation names its place.
    #[error("{message}")]
    Validation { message: String, violations: Vec<Violation> },
    #[error("Task not found")]
    TaskNotFound,
    /// A message that names no skill fits several (`candidates`: id and description of each): the
    /// gateway answers it with a rejected task that lists them, in the protocol's own terms.
    #[error("{message}")]
    SkillUndecided { message: String, candidates: Vec<(String, String)> },
    /// A per-agent path names no configured agent.
    #[error("no agent named '{0}' behind this gateway")]
    AgentNotFound(String),
    #[error("the extended agent card is not configured")]
    ExtendedCardNotConfigured,
    /// A push-notification config call on an agent whose card promises no push notifications.
    #[error(
        "push notifications are not supported by this agent; its card says capabilities.pushNotifications is false"
    )]
    PushNotificationNotSupported,
    #[error("the request body is larger than the limit of {0} bytes")]
    PayloadTooLarge(usize),
    /// The request body did not arrive within the listener's time limit.
    #[error("the request body did not arrive within {0:?}; send the whole request at once")]
    RequestTimeout(Duration),
    #[error("{0}")]
    UnsupportedOperation(String),
    #[error("{0}")]
    VersionNotSupported(String),
    /// The request's media type is not one the binding takes (A2A's ContentTypeNotSupportedError).
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// No credential, or one that is not valid. `challenge` is the `WWW-Authenticate` value.
    #[error("{message}")]
    Unauthenticated { message: String, challenge: String },
    /// A known caller without permission for what it asked.
    #[error("{0}")]
    PermissionDenied(String),
    /// Over a rate quota; the caller may retry after `retry_after`.
    #[error("{message}")]
    RateLimited { message: String, retry_after: Duration },
    /// The caller holds as many live tasks as it may.
    #[error("too many live tasks: you hold {held} of at most {limit}; wait for one to finish or cancel one")]
    TooManyTasks { held: usize, limit: usize },
    /// The chosen backend could not be reached or did not answer.
    #[error("{0}")]
    BackendUnavailable(String),
    /// State shared by the gateway's replicas could not be reached; the caller may retry shortly.
    #[error("the gateway cannot reach its shared state right now; retry shortly")]
    StateUnavailable,
    /// No agent can take the call right now (the ones that offer it are unhealthy or draining): an
    /// outage, decided before anything was sent, so retrying after `retry_after` is safe.
    #[error("{message}")]
    AgentUnavailable { message: String, retry_after: Duration },
    /// The audit log cannot write and its policy is `fail_closed`: the call was not served, so that
    /// no call goes unrecorded; retrying after `retry_after` is safe.
    #[error("the gateway cannot write its audit log right now, so it serves no calls; retry shortly")]
    AuditUnavailable { retry_after: Duration },
    /// The backend answered something that is not valid A2A.
    #[error("{0}")]
    InvalidAgentResponse(String),
    /// The agent refused the call with one of the protocol's errors (task not found, not cancelable,
    /// invalid params, ...): its JSON-RPC `code`, and its message only when it names nothing internal.
    #[error("{message}")]
    AgentRefused { code: i32, message: String },
    /// The agent failed (an internal error, a 5xx, an HTML page, garbage): the caller learns only the
    /// request id under which the operator finds the agent's answer in the log and the audit record.
    #[error(
        "the agent '{agent}' failed to answer; the gateway's operator can look it up by the request id {}",
        id_or_header(request_id)
    )]
    AgentFailed { agent: String, request_id: String },
    /// The connection to the agent broke after the request reached it: the agent may have acted on
    /// it, so the caller must not resend blindly. `task_id` when the call named its task.
    #[error(
        "the connection to the agent '{agent}' broke after it received the request; {}",
        task_may_exist(task_id.as_deref())
    )]
    AgentConnectionLost { agent: String, task_id: Option<String> },
    #[error("internal error")]
    Internal,
}

fn task_may_exist(task_id: Option<&str>) -> String {
    match task_id {
        Some(id) => format!("task {id} may have changed: get it (GetTask) before you retry"),
        None => "a task may have been created: look for it (ListTasks) before you resend".to_owned(),
    }
}

/// A request id, or where to find it when the layer that failed did not know it.
fn id_or_header(request_id: &str) -> &str {
    if request_id.is_empty() { "in this answer's x-request-id header" } else { request_id }
}

impl A2aError {
    pub fn invalid_params(message: impl Into<String>) -> A2aError {
        A2aError::InvalidParams { message: message.into(), detail: None }
    }

    /// A short machine-readable code for logs, metrics and the audit log.
    pub fn reason(&self) -> &'static str {
        match self {
            A2aError::Parse(_) => "PARSE_ERROR",
            A2aError::InvalidRequest(_) => "INVALID_REQUEST",
            A2aError::MethodNotFound(_) => "METHOD_NOT_FOUND",
            A2aError::InvalidParams { .. } => "INVALID_PARAMS",
            A2aError::SkillUndecided { .. } => "SKILL_UNDECIDED",
            A2aError::Validation { .. } => "VALIDATION_FAILED",
            A2aError::TaskNotFound => "TASK_NOT_FOUND",
            A2aError::AgentNotFound(_) => "AGENT_NOT_FOUND",
            A2aError::ExtendedCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            A2aError::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            A2aError::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            A2aError::RequestTimeout(_) => "REQUEST_TIMEOUT",
            A2aError::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            A2aError::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            A2aError::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            A2aError::Unauthenticated { .. } => "UNAUTHENTICATED",
            A2aError::PermissionDenied(_) => "PERMISSION_DENIED",
            A2aError::RateLimited { .. } => "RATE_LIMITED",
            A2aError::TooManyTasks { .. } => "TOO_MANY_TASKS",
            A2aError::BackendUnavailable(_) => "BACKEND_UNAVAILABLE",
            A2aError::StateUnavailable => "STATE_UNAVAILABLE",
            A2aError::AgentUnavailable { .. } => "AGENT_UNAVAILABLE",
            A2aError::AuditUnavailable { .. } => "AUDIT_UNAVAILABLE",
            A2aError::InvalidAgentResponse(_) => "INVALID_AGENT_RESPONSE",
            A2aError::AgentRefused { .. } => "AGENT_REFUSED",
            A2aError::AgentFailed { .. } => "AGENT_FAILED",
            A2aError::AgentConnectionLost { .. } => "AGENT_CONNECTION_LOST",
            A2aError::Internal => "INTERNAL_ERROR",
        }
    }
}
