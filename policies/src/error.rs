//! The protocol-level refusal every layer returns. The gateway turns it into the caller's binding
//! (JSON-RPC error object or HTTP status + JSON body) in exactly one place.

/// Why a request was refused or failed, in A2A terms. Messages are for the caller: they say what was
/// wrong and never carry internals (hosts, addresses, stack traces).
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
        /// Machine-readable detail (e.g. the list of available skills).
        detail: Option<serde_json::Value>,
    },
    #[error("Task not found")]
    TaskNotFound,
    /// A per-agent path names no configured agent.
    #[error("no agent named '{0}' behind this gateway")]
    AgentNotFound(String),
    #[error("the extended agent card is not configured")]
    ExtendedCardNotConfigured,
    #[error("the request body is larger than the limit of {0} bytes")]
    PayloadTooLarge(usize),
    #[error("{0}")]
    UnsupportedOperation(String),
    #[error("{0}")]
    VersionNotSupported(String),
    /// The chosen backend could not be reached or did not answer.
    #[error("{0}")]
    BackendUnavailable(String),
    /// The backend answered something that is not valid A2A.
    #[error("{0}")]
    InvalidAgentResponse(String),
    #[error("internal error")]
    Internal,
}

impl A2aError {
    pub fn invalid_params(message: impl Into<String>) -> A2aError {
        A2aError::InvalidParams { message: message.into(), detail: None }
    }
}
