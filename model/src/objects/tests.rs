use super::*;
use serde_json::json;

fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(json: Value) -> Value {
    let parsed: T = serde_json::from_value(json).expect("parses");
    serde_json::to_value(&parsed).expect("serialises")
}

#[test]
fn parts_carry_exactly_one_content() {
    let part = json!({"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain", "metadata": {"k": 1}});
    assert_eq!(round_trip::<Part>(part.clone()), part);
    for bad in [json!({}), json!({"text": "a", "url": "b"}), json!({"data": null})] {
        assert!(serde_json::from_value::<Part>(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn protojson_defaults_read_as_absent() {
    // The SDK's ListTasks prints every default (jsonrpc-1.0-05).
    let message = json!({"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "hello gateway", "filename": "", "mediaType": ""}],
            "extensions": [], "referenceTaskIds": [], "contextId": ""});
    assert_eq!(
        round_trip::<Message>(message),
        json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello gateway"}]})
    );
}

#[test]
fn enums_read_names_and_numbers_leniently() {
    let state = |v: Value| serde_json::from_value::<TaskState>(v).expect("state");
    assert_eq!(state(json!("TASK_STATE_INPUT_REQUIRED")), TaskState::InputRequired);
    assert_eq!(state(json!(3)), TaskState::Completed);
    assert_eq!(state(json!("TASK_STATE_FROM_THE_FUTURE")), TaskState::Unspecified);
    assert_eq!(state(json!(-1)), TaskState::Unspecified);
    assert_eq!(serde_json::from_value::<Role>(json!(2)).ok(), Some(Role::Agent));
    assert!(serde_json::from_value::<Role>(json!({})).is_err());
}

#[test]
fn stream_responses_are_tagged_by_their_one_member() {
    let event = json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING"}}});
    assert_eq!(round_trip::<StreamResponse>(event.clone()), event);
    let parsed: StreamResponse = serde_json::from_value(event).expect("event");
    assert_eq!(parsed.state(), Some(TaskState::Working));
    assert!(!parsed.ends_stream());
    let update = json!({"artifactUpdate": {"taskId": "t", "contextId": "c",
            "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "append": false, "lastChunk": true}});
    assert_eq!(
        round_trip::<StreamResponse>(update),
        json!({"artifactUpdate": {"taskId": "t", "contextId": "c",
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "lastChunk": true}})
    );
}

#[test]
fn states_that_end_streams() {
    let ending: Vec<_> = TaskState::ALL.iter().filter(|s| s.ends_stream()).collect();
    assert_eq!(ending.len(), 6);
    assert!(!TaskState::Working.ends_stream() && !TaskState::Submitted.ends_stream());
    assert!(TaskState::AuthRequired.is_interrupted() && !TaskState::AuthRequired.is_terminal());
}

#[test]
fn history_truncation_keeps_the_newest() {
    let msg = |id: &str| Message { message_id: id.into(), ..Message::default() };
    let mut task = Task { history: vec![msg("1"), msg("2"), msg("3")], ..Task::default() };
    task.truncate_history(2);
    assert_eq!(task.history.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["2", "3"]);
    task.truncate_history(5);
    assert_eq!(task.history.len(), 2);
}
