//! Reads task facts (task id, context id, state) out of backend answers — unary bodies and stream
//! events — without building the whole object. The task directory learns ownership from these.

pub use a2a_core::TaskState;
use a2a_core::{ArtifactInfo, Binding};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// What one answer says about one task or context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFact {
    /// Absent when the answer is a bare message that belongs to no task.
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// Artifacts the answer delivers (only read when asked for).
    pub artifacts: Vec<ArtifactInfo>,
    /// The answer is a message: a stream that carries one ends with it.
    pub message: bool,
}

/// A JSON-RPC answer, read in one pass down to its payload.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    result: Option<Payload<'a>>,
}

/// The union of the shapes an answer's payload can take: a Task itself (GetTask, CancelTask), or a
/// wrapper holding exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`. Read by the
/// answer check too ([`agent_errors::read_answer`](super::agent_errors::read_answer)), so that a
/// unary answer is parsed once for both.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Payload<'a> {
    id: Option<String>,
    context_id: Option<String>,
    status: Option<Status>,
    #[serde(borrow)]
    artifacts: Option<Vec<Artifact<'a>>>,
    #[serde(borrow)]
    task: Option<Task<'a>>,
    message: Option<Ids>,
    status_update: Option<Ids>,
    #[serde(borrow)]
    artifact_update: Option<ArtifactUpdate<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Task<'a> {
    id: String,
    context_id: Option<String>,
    status: Option<Status>,
    #[serde(borrow)]
    artifacts: Option<Vec<Artifact<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ids {
    task_id: Option<String>,
    context_id: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactUpdate<'a> {
    task_id: Option<String>,
    context_id: Option<String>,
    #[serde(borrow)]
    artifact: Option<Artifact<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Artifact<'a> {
    artifact_id: Option<String>,
    name: Option<String>,
    /// Kept raw: the audit log hashes the exact bytes, and the parts are otherwise not read.
    #[serde(borrow)]
    parts: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Status {
    state: Option<String>,
}

fn state(status: Option<Status>) -> Option<TaskState> {
    status.and_then(|s| s.state).map(|s| TaskState::from_wire(&s))
}

fn artifact_info(artifact: &Artifact<'_>) -> ArtifactInfo {
    let parts = artifact.parts.map(RawValue::get).unwrap_or("[]");
    let count = serde_json::from_str::<Vec<&RawValue>>(parts).map(|p| p.len()).unwrap_or(0);
    ArtifactInfo {
        artifact_id: artifact.artifact_id.clone(),
        name: artifact.name.clone(),
        parts: count,
        bytes: parts.len(),
        sha256: lower_hex(&Sha256::digest(parts.as_bytes()).into()),
    }
}

/// A SHA-256 in lower-case hex, written at once (`hex::encode` builds it one `char` at a time).
fn lower_hex(digest: &[u8; 32]) -> String {
    let mut digits = [0u8; 64];
    // 32 bytes fill 64 digits exactly, and hex digits are ASCII.
    hex::encode_to_slice(digest, &mut digits).expect("64 digits");
    std::str::from_utf8(&digits).expect("ASCII").to_owned()
}

fn infos(artifacts: Option<Vec<Artifact<'_>>>, want: bool) -> Vec<ArtifactInfo> {
    match artifacts {
        Some(list) if want => list.iter().map(artifact_info).collect(),
        _ => Vec::new(),
    }
}

/// Reads the fact in one JSON answer: a unary body or the data of one stream event.
/// `want_artifacts` also describes the artifacts it delivers (hashing them costs a pass over them).
pub fn fact_in(binding: Binding, json: &[u8], want_artifacts: bool) -> Option<TaskFact> {
    let payload: Payload = match binding {
        Binding::JsonRpc => a2a_model::from_json::<Envelope>(json).ok()?.result?,
        Binding::Rest => a2a_model::from_json(json).ok()?,
    };
    fact_of(payload, want_artifacts)
}

/// The fact in an answer's payload, already read.
pub(crate) fn fact_of(payload: Payload<'_>, want_artifacts: bool) -> Option<TaskFact> {
    if let Some(task) = payload.task {
        return Some(TaskFact {
            task_id: Some(task.id),
            context_id: task.context_id,
            state: state(task.status),
            artifacts: infos(task.artifacts, want_artifacts),
            message: false,
        });
    }
    if let Some(update) = payload.artifact_update {
        if update.task_id.is_none() && update.context_id.is_none() {
            return None;
        }
        let artifacts = match &update.artifact {
            Some(artifact) if want_artifacts => vec![artifact_info(artifact)],
            _ => Vec::new(),
        };
        return Some(TaskFact {
            task_id: update.task_id,
            context_id: update.context_id,
            state: None,
            artifacts,
            message: false,
        });
    }
    // A message is reported even without ids: a stream that carries one has ended.
    let message = payload.message.is_some();
    if let Some(ids) = payload.status_update.or(payload.message) {
        if ids.task_id.is_none() && ids.context_id.is_none() && !message {
            return None;
        }
        return Some(TaskFact {
            task_id: ids.task_id,
            context_id: ids.context_id,
            state: state(ids.status),
            artifacts: Vec::new(),
            message,
        });
    }
    // A bare Task: it has an id and a status.
    let id = payload.id?;
    payload.status.as_ref()?;
    Some(TaskFact {
        task_id: Some(id),
        context_id: payload.context_id,
        state: state(payload.status),
        artifacts: infos(payload.artifacts, want_artifacts),
        message: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use a2a_e2e::capture_body;

    fn stream_facts(binding: Binding, name: &str) -> Vec<TaskFact> {
        let mut parser = super::super::sse::SseParser::new();
        let mut facts = Vec::new();
        parser.feed(&capture_body(name), &mut |data| facts.extend(fact_in(binding, data, true)));
        facts
    }

    #[test]
    fn blocking_send_capture_yields_the_completed_task() {
        let fact = fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-01-SendMessage-blocking.txt"), true).unwrap();
        assert_eq!(fact.task_id.as_deref(), Some("1c451c44-9bf8-40b1-ac6b-2e83a5178c94"));
        assert_eq!(fact.context_id.as_deref(), Some("50a57f92-bc5b-4d77-bd55-07b4bce667e4"));
        assert_eq!(fact.state, Some(TaskState::Completed));
        assert_eq!(fact.artifacts.len(), 1);
        let artifact = &fact.artifacts[0];
        assert_eq!((artifact.name.as_deref(), artifact.parts), (Some("echo"), 1));
        let parts = r#"[{"text":"hello gateway"}]"#;
        assert_eq!((artifact.bytes, artifact.sha256.clone()), (parts.len(), hex::encode(Sha256::digest(parts))));
    }

    #[test]
    fn get_task_capture_yields_a_bare_task() {
        let fact = fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-03-GetTask.txt"), false).unwrap();
        assert!(fact.task_id.is_some());
        assert!(fact.state.is_some());
        let fact = fact_in(Binding::Rest, &capture_body("rest-1.0-03-tasks-get.txt"), false).unwrap();
        assert!(fact.task_id.is_some() && fact.context_id.is_some());
    }

    #[test]
    fn error_answers_yield_nothing() {
        assert_eq!(fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-20-error-GetTask-not-found.txt"), true), None);
        assert_eq!(fact_in(Binding::Rest, &capture_body("rest-1.0-20-error-tasks-get-not-found.txt"), true), None);
        assert_eq!(fact_in(Binding::Rest, b"not json", true), None);
    }

    #[test]
    fn json_rpc_stream_capture_yields_every_event_ending_completed() {
        let facts = stream_facts(Binding::JsonRpc, "jsonrpc-1.0-02-SendStreamingMessage-sse.txt");
        assert_eq!(facts.len(), 6);
        assert_eq!(facts[0].state, Some(TaskState::Submitted));
        assert_eq!(facts[4].state, None, "artifact update carries no state");
        assert_eq!(facts[4].artifacts[0].name.as_deref(), Some("review"));
        assert!(facts[..4].iter().all(|f| f.artifacts.is_empty()));
        assert_eq!(facts[5].state, Some(TaskState::Completed));
        assert!(facts.iter().all(|f| f.task_id == facts[0].task_id));
    }

    #[test]
    fn rest_stream_capture_yields_every_event_ending_completed() {
        let facts = stream_facts(Binding::Rest, "rest-1.0-02-message-stream-sse.txt");
        assert_eq!(facts.len(), 6);
        assert_eq!(facts.last().unwrap().state, Some(TaskState::Completed));
    }

    #[test]
    fn subscribe_then_cancel_capture_ends_canceled() {
        let facts = stream_facts(Binding::JsonRpc, "jsonrpc-1.0-07-SubscribeToTask-sse-then-cancel.txt");
        assert_eq!(facts.first().unwrap().state, Some(TaskState::Working));
        assert_eq!(facts.last().unwrap().state, Some(TaskState::Canceled));
        assert!(facts.last().unwrap().state.unwrap().is_terminal());
    }

    #[test]
    fn input_required_is_not_terminal() {
        let fact = fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-10-multiturn-turn1-input-required.txt"), true)
            .unwrap();
        assert_eq!(fact.state, Some(TaskState::InputRequired));
        assert!(!TaskState::InputRequired.is_terminal());
    }
}
