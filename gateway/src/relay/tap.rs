//! The tap: reads each relayed event (in 1.0) to learn what it says about tasks, and tells an
//! event that must end the stream (not JSON, or the agent's error) from one that may pass.

use std::sync::Arc;

use a2a_core::{A2aError, Binding, Source, TaskState};
use http::StatusCode;
use serde::Deserialize;

use crate::observers::{Exchange, Observers};
use crate::protocol::agent_errors;
use crate::protocol::observe::fact_in;

use super::StreamEnd;

/// Reads each event (in 1.0) as it passes. It runs before the event is handed on, so the directory
/// knows a task before the caller can ask about it; it never waits on anything.
pub(super) struct Tap {
    pub(super) observers: Arc<Observers>,
    pub(super) exchange: Exchange,
    pub(super) task_id: Option<String>,
    pub(super) context_id: Option<String>,
    pub(super) state: Option<TaskState>,
    /// The call was answered with a message: the stream is complete.
    pub(super) answered: bool,
}

/// The part of an event the tap reads when it names no task: whether it is an error.
#[derive(Deserialize)]
struct ErrorProbe {
    #[serde(default)]
    error: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Deserialize)]
struct RestCode {
    code: u16,
}

impl Tap {
    /// Reads one 1.0 event's data; `Err` when the event must end the stream instead of reaching the
    /// caller.
    pub(super) fn read(&mut self, data: &[u8]) -> Result<(), StreamEnd> {
        let Some(fact) = fact_in(self.exchange.binding, data, self.observers.wants_artifacts()) else {
            return self.classify(data);
        };
        if fact.task_id.is_some() {
            self.task_id.clone_from(&fact.task_id);
        }
        if fact.context_id.is_some() {
            self.context_id.clone_from(&fact.context_id);
        }
        if fact.state.is_some() {
            self.state = fact.state;
        }
        self.answered |= fact.message;
        self.observers.report(&self.exchange, &fact, Source::Stream);
        Ok(())
    }

    /// An event that says nothing about a task: fine, unless it is not a JSON object or it is the
    /// agent's error (screened like a unary error answer: nothing internal reaches the caller).
    fn classify(&self, data: &[u8]) -> Result<(), StreamEnd> {
        let probe: ErrorProbe = serde_json::from_slice(data).map_err(|_| StreamEnd::Malformed)?;
        let Some(error) = probe.error else { return Ok(()) };
        let status = match self.exchange.binding {
            Binding::JsonRpc => StatusCode::OK,
            Binding::Rest => serde_json::from_str::<RestCode>(error.get())
                .ok()
                .and_then(|c| StatusCode::from_u16(c.code).ok())
                .filter(|s| !s.is_success())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        };
        let verdict = agent_errors::screen(self.exchange.binding, status, data);
        let excerpt = agent_errors::excerpt(data, 2048);
        tracing::warn!(backend = %self.exchange.backend, request_id = %self.exchange.request_id, body = ?excerpt, "the agent sent an error event");
        let error = agent_errors::into_error(verdict, &self.exchange.backend, &self.exchange.request_id)
            .unwrap_or_else(|| A2aError::AgentFailed {
                agent: self.exchange.backend.to_string(),
                request_id: self.exchange.request_id.to_string(),
            });
        Err(StreamEnd::AgentError(error))
    }

    /// The task reached a state after which the backend closes the stream anyway.
    pub(super) fn ended(&self) -> bool {
        self.answered
            || self
                .state
                .is_some_and(|s| s.is_terminal() || matches!(s, TaskState::InputRequired | TaskState::AuthRequired))
    }
}
