//! Reads task facts (task id, context id, state) out of backend answers — unary bodies and stream
//! events — without building the whole object. The task directory learns ownership from these.

pub use a2a_policies::TaskState;
use a2a_policies::Binding;
use serde::Deserialize;
use serde_json::value::RawValue;

/// What one answer says about one task or context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFact {
    /// Absent when the answer is a bare message that belongs to no task.
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

/// The union of the shapes an answer's payload can take: a Task itself (GetTask, CancelTask), or a
/// wrapper holding exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    id: Option<String>,
    context_id: Option<String>,
    status: Option<Status>,
    task: Option<Task>,
    message: Option<Ids>,
    status_update: Option<Ids>,
    artifact_update: Option<Ids>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Task {
    id: String,
    context_id: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ids {
    task_id: Option<String>,
    context_id: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize)]
struct Status {
    state: Option<String>,
}

fn state(status: Option<Status>) -> Option<TaskState> {
    status.and_then(|s| s.state).map(|s| TaskState::from_wire(&s))
}

/// Reads the fact in one JSON answer: a unary body or the data of one stream event.
pub fn fact_in(binding: Binding, json: &[u8]) -> Option<TaskFact> {
    let payload: Payload = match binding {
        Binding::JsonRpc => {
            let envelope: Envelope = serde_json::from_slice(json).ok()?;
            serde_json::from_str(envelope.result?.get()).ok()?
        }
        Binding::Rest => serde_json::from_slice(json).ok()?,
    };
    if let Some(task) = payload.task {
        return Some(TaskFact { task_id: Some(task.id), context_id: task.context_id, state: state(task.status) });
    }
    if let Some(ids) = payload.status_update.or(payload.artifact_update).or(payload.message) {
        if ids.task_id.is_none() && ids.context_id.is_none() {
            return None;
        }
        return Some(TaskFact { task_id: ids.task_id, context_id: ids.context_id, state: state(ids.status) });
    }
    // A bare Task: it has an id and a status.
    let id = payload.id?;
    payload.status.as_ref()?;
    Some(TaskFact { task_id: Some(id), context_id: payload.context_id, state: state(payload.status) })
}

#[cfg(test)]
mod tests {
    use super::*;

    use a2a_e2e::capture_body;

    fn stream_facts(binding: Binding, name: &str) -> Vec<TaskFact> {
        let mut parser = super::super::sse::SseParser::new();
        let mut facts = Vec::new();
        parser.feed(&capture_body(name), &mut |data| facts.extend(fact_in(binding, data)));
        facts
    }

    #[test]
    fn blocking_send_capture_yields_the_completed_task() {
        let fact = fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-01-SendMessage-blocking.txt")).unwrap();
        assert_eq!(fact.task_id.as_deref(), Some("1c451c44-9bf8-40b1-ac6b-2e83a5178c94"));
        assert_eq!(fact.context_id.as_deref(), Some("50a57f92-bc5b-4d77-bd55-07b4bce667e4"));
        assert_eq!(fact.state, Some(TaskState::Completed));
    }

    #[test]
    fn get_task_capture_yields_a_bare_task() {
        let fact = fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-03-GetTask.txt")).unwrap();
        assert!(fact.task_id.is_some());
        assert!(fact.state.is_some());
        let fact = fact_in(Binding::Rest, &capture_body("rest-1.0-03-tasks-get.txt")).unwrap();
        assert!(fact.task_id.is_some() && fact.context_id.is_some());
    }

    #[test]
    fn error_answers_yield_nothing() {
        assert_eq!(fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-20-error-GetTask-not-found.txt")), None);
        assert_eq!(fact_in(Binding::Rest, &capture_body("rest-1.0-20-error-tasks-get-not-found.txt")), None);
        assert_eq!(fact_in(Binding::Rest, b"not json"), None);
    }

    #[test]
    fn json_rpc_stream_capture_yields_every_event_ending_completed() {
        let facts = stream_facts(Binding::JsonRpc, "jsonrpc-1.0-02-SendStreamingMessage-sse.txt");
        assert_eq!(facts.len(), 6);
        assert_eq!(facts[0].state, Some(TaskState::Submitted));
        assert_eq!(facts[4].state, None, "artifact update carries no state");
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
        let fact =
            fact_in(Binding::JsonRpc, &capture_body("jsonrpc-1.0-10-multiturn-turn1-input-required.txt")).unwrap();
        assert_eq!(fact.state, Some(TaskState::InputRequired));
        assert!(!TaskState::InputRequired.is_terminal());
    }
}
