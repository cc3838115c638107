//! Why the gateway ended a stream before its task did, and the error that tells the caller.

use std::time::Duration;

use a2a_core::{A2aError, TaskState};

use crate::protocol::agent_side::Fault;

/// Streams the gateway ended, by reason (`cut`, `truncated`, `malformed_event`, ...).
pub const STREAM_ENDS: &str = "a2a_stream_ends_total";

/// Why the gateway ended a stream before its task did.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// The backend's connection broke.
    Cut,
    /// The backend ended the stream cleanly before the task reached a final or interrupted state.
    Truncated,
    /// An event that is not JSON.
    Malformed,
    /// An event larger than the limit (bytes).
    TooLarge(usize),
    /// No event bytes for this long (comments do not count).
    Idle(Duration),
    /// The stream reached its maximum lifetime.
    Lifetime(Duration),
    /// The gateway's drain deadline passed.
    Draining,
    /// The task passed its skill's deadline (it is canceled at the backend).
    Deadline,
    /// The agent sent an error event (screened: what the caller may see of it).
    AgentError(A2aError),
}

impl StreamEnd {
    /// Short machine-readable reason, for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            StreamEnd::Cut => "cut",
            StreamEnd::Truncated => "truncated",
            StreamEnd::Malformed => "malformed_event",
            StreamEnd::TooLarge(_) => "event_too_large",
            StreamEnd::Idle(_) => "idle_timeout",
            StreamEnd::Lifetime(_) => "lifetime_exceeded",
            StreamEnd::Draining => "draining",
            StreamEnd::Deadline => "deadline",
            StreamEnd::AgentError(_) => "agent_error",
        }
    }

    pub(super) fn state(&self) -> TaskState {
        match self {
            StreamEnd::Deadline => TaskState::Canceled,
            _ => TaskState::Failed,
        }
    }

    /// The error that says why, for a caller (its message is the status text when a task is known).
    pub fn error(&self, agent: &str) -> A2aError {
        let human = |d: &Duration| humantime::format_duration(*d).to_string();
        match self {
            StreamEnd::Cut => A2aError::BackendUnavailable(format!(
                "the agent '{agent}' broke off the stream before the task ended; the task may exist at the agent"
            )),
            StreamEnd::Truncated => A2aError::InvalidAgentResponse(format!(
                "the agent '{agent}' ended the stream before the task reached a final state"
            )),
            StreamEnd::Malformed => A2aError::InvalidAgentResponse(format!(
                "the agent '{agent}' sent a stream event that is not valid JSON; the stream was ended"
            )),
            StreamEnd::TooLarge(limit) => A2aError::InvalidAgentResponse(format!(
                "the agent '{agent}' sent a stream event larger than the limit of {limit} bytes; the stream was ended"
            )),
            StreamEnd::Idle(d) => A2aError::BackendUnavailable(format!(
                "the agent '{agent}' sent no event for {}; the stream was ended (the task may still run: get or subscribe to it)",
                human(d)
            )),
            StreamEnd::Lifetime(d) => A2aError::BackendUnavailable(format!(
                "the stream reached its maximum lifetime of {}; the task may still run: get or subscribe to it",
                human(d)
            )),
            StreamEnd::Draining => {
                A2aError::BackendUnavailable("the gateway is shutting down; the stream was closed".into())
            }
            StreamEnd::Deadline => A2aError::BackendUnavailable("the task passed its deadline and was canceled".into()),
            StreamEnd::AgentError(error) => error.clone(),
        }
    }
}

impl From<Fault> for StreamEnd {
    fn from(fault: Fault) -> StreamEnd {
        match fault {
            Fault::Cut => StreamEnd::Cut,
            Fault::Malformed => StreamEnd::Malformed,
            // The limit is filled in by the relay, which knows it.
            Fault::TooLarge => StreamEnd::TooLarge(0),
        }
    }
}
