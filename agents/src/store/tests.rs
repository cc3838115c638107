use a2a_model::{Artifact, Part, Role};

use super::*;
use crate::model::{MessageExt, agent_text};

fn new_task(id: &str) -> Task {
    Task {
        id: id.into(),
        context_id: "ctx".into(),
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
        artifacts: vec![],
        history: vec![user("m0")],
        metadata: None,
    }
}

fn user(id: &str) -> Message {
    Message { message_id: id.into(), role: Role::User, ..agent_text("t", "ctx", "hi") }
}

fn status(state: TaskState, text: &str) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "ctx".into(),
        status: TaskStatus { state, message: Some(agent_text("t", "ctx", text)), timestamp: None },
        metadata: None,
    })
}

#[test]
fn status_messages_move_into_history() {
    let store = TaskStore::default();
    let mut sub = store.create(new_task("t"));
    assert_eq!(store.publish("t", status(TaskState::Working, "step 1")), Ok(()));
    assert_eq!(store.publish("t", status(TaskState::Working, "step 2")), Ok(()));
    let task = store.get("t").expect("stored");
    assert_eq!(task.history.len(), 2);
    assert_eq!(task.history[1].joined_text(), "step 1");
    assert_eq!(task.status.message.map(|m| m.joined_text()).as_deref(), Some("step 2"));
    assert!(sub.events.try_recv().is_ok());
    assert!(sub.events.try_recv().is_ok());
}

#[test]
fn artifacts_are_added_replaced_or_appended() {
    let store = TaskStore::default();
    store.create(new_task("t"));
    let artifact = |text: &str| Artifact {
        artifact_id: "a".into(),
        name: None,
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: vec![],
    };
    let update = |text: &str, append: bool| {
        StreamResponse::ArtifactUpdate(a2a_model::TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "ctx".into(),
            artifact: artifact(text),
            append,
            last_chunk: false,
            metadata: None,
        })
    };
    let _ = store.publish("t", update("one", false));
    let _ = store.publish("t", update("two", true));
    assert_eq!(store.get("t").map(|t| t.artifacts[0].parts.len()), Some(2));
    let _ = store.publish("t", update("three", false));
    assert_eq!(store.get("t").map(|t| t.artifacts[0].parts.len()), Some(1));
}

#[test]
fn nothing_is_published_after_cancel() {
    let store = TaskStore::default();
    store.create(new_task("t"));
    let canceled = store.cancel("t", "bye").expect("cancelable");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(store.publish("t", status(TaskState::Working, "late")), Err(TaskClosed));
    assert_eq!(store.cancel("t", "again").err(), Some(A2aError::TaskNotCancelable));
}

#[test]
fn finished_tasks_give_up_their_channel_and_the_oldest_go_past_the_bound() {
    let store = TaskStore::new(StoreLimits { max_tasks: 3, ttl: Duration::from_secs(3600) });
    for id in ["a", "b", "c"] {
        store.create(new_task(id));
        let _ = store.publish(id, status(TaskState::Completed, "done"));
    }
    assert!(store.lock().tasks.values().all(|slot| slot.events.is_none()), "finished: no channel kept");
    // A live task is never forgotten; the oldest finished one makes room.
    store.create(new_task("live"));
    assert_eq!((store.len(), store.get("a")), (3, None));
    for id in ["d", "e", "f"] {
        store.create(new_task(id));
    }
    assert!(store.get("live").is_some(), "live tasks stay");
    assert!(store.len() <= 4, "bounded: {}", store.len());
}

#[test]
fn finished_tasks_are_forgotten_after_their_time() {
    let store = TaskStore::new(StoreLimits { max_tasks: 100, ttl: Duration::ZERO });
    store.create(new_task("old"));
    let _ = store.publish("old", status(TaskState::Completed, "done"));
    store.create(new_task("running"));
    store.lock().forget_finished(store.limits);
    assert_eq!((store.get("old").is_none(), store.get("running").is_some()), (true, true));
}

#[test]
fn follow_ups_only_on_interrupted_tasks() {
    let store = TaskStore::default();
    store.create(new_task("t"));
    assert!(matches!(store.continue_with("t", user("m1")), Err(A2aError::UnsupportedOperation(_))));
    let _ = store.publish("t", status(TaskState::InputRequired, "which?"));
    let sub = store.continue_with("t", user("m1")).expect("accepted");
    let ids: Vec<_> = sub.snapshot.history.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[2], "m1");
    assert!(sub.snapshot.status.message.is_none());
    assert_eq!(store.continue_with("nope", user("m2")).err(), Some(A2aError::TaskNotFound));
    let _ = store.publish("t", status(TaskState::Completed, "done"));
    assert!(matches!(store.continue_with("t", user("m2")), Err(A2aError::InvalidParams(_))));
    assert!(matches!(store.subscribe("t"), Err(A2aError::InvalidParams(_))));
}
