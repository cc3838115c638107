//! What the gateway observes about tasks in answers and stream events, and the observer interface
//! through which the directory, concurrency leases and the audit log learn it.

use std::time::Instant;

use crate::Caller;

/// A task state as A2A 1.0 names it: the wire model's (`TASK_STATE_*`; an unknown name reads as
/// `Unspecified`).
pub use a2a_model::TaskState;

/// An artifact seen in an answer: what the audit log records instead of its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactInfo {
    pub artifact_id: Option<String>,
    pub name: Option<String>,
    pub parts: usize,
    /// Bytes of the artifact's serialised `parts`.
    pub bytes: usize,
    /// Lower-case hex SHA-256 of the artifact's serialised `parts`.
    pub sha256: String,
}

/// Where an observation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A unary answer (send, get, cancel).
    Response,
    /// One event of an SSE stream.
    Stream,
}

/// One observation about one task (or context) in a backend's answer.
#[derive(Debug, Clone)]
pub struct TaskEvent<'a> {
    /// The caller whose request this answer belongs to.
    pub caller: Option<&'a Caller>,
    /// The gateway's request id of that request.
    pub request_id: Option<&'a str>,
    pub backend: &'a str,
    /// The skill the request was routed by, when known.
    pub skill: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub context_id: Option<&'a str>,
    pub state: Option<TaskState>,
    pub artifact: Option<&'a ArtifactInfo>,
    pub source: Source,
    pub at: Instant,
}

/// Learns from observations. Called on the request path (or inside the stream relay) for every
/// observation: implementations must be quick and never block or wait.
pub trait TaskObserver: Send + Sync + 'static {
    fn observe(&self, event: &TaskEvent<'_>);
}
