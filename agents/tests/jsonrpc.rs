//! Every operation of every agent over JSON-RPC (`POST /a2a/jsonrpc`).

mod common;

use std::time::Duration;

use a2a_example_agents::{AgentKind, AgentOptions};
use common::{fast_options, kind, start, start_with, state, status_text, user_text};
use serde_json::{Value, json};

fn send(message: Value) -> Value {
    json!({ "message": message })
}

#[tokio::test]
async fn echo_send_message_matches_the_capture_byte_for_byte() {
    let agent = start(AgentKind::Echo).await;
    let message_id = common::uuid();
    let body = json!({"jsonrpc": "2.0", "id": "req-1", "method": "SendMessage", "params": {"message":
        {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hello gateway"}]}}});
    let reply = agent.rpc_raw(&body.to_string(), Some("1.0")).await;
    let task = &reply.json["result"]["task"];
    let (id, context, timestamp, artifact) = (
        task["id"].as_str().unwrap_or_default(),
        task["contextId"].as_str().unwrap_or_default(),
        task["status"]["timestamp"].as_str().unwrap_or_default(),
        task["artifacts"][0]["artifactId"].as_str().unwrap_or_default(),
    );
    let expected = format!(
        r#"{{"result":{{"task":{{"id":"{id}","contextId":"{context}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"{timestamp}"}},"artifacts":[{{"artifactId":"{artifact}","name":"echo","parts":[{{"text":"hello gateway"}}]}}],"history":[{{"messageId":"{message_id}","contextId":"{context}","taskId":"{id}","role":"ROLE_USER","parts":[{{"text":"hello gateway"}}]}}]}}}},"id":"req-1","jsonrpc":"2.0"}}"#
    );
    assert_eq!(reply.text, expected);
    assert_eq!(timestamp.len(), "2026-12-02T10:21:20.834415Z".len(), "{timestamp}");
    assert_ne!(id, context);
    agent.stop().await;
}

#[tokio::test]
async fn echo_joins_text_parts_and_keeps_the_context_id() {
    let agent = start(AgentKind::Echo).await;
    let message = json!({"messageId": common::uuid(), "role": "ROLE_USER", "contextId": "ctx-1",
        "parts": [{"text": "hello "}, {"data": {"ignored": true}}, {"text": "world"}]});
    let task = agent.rpc_ok("SendMessage", send(message)).await["task"].clone();
    assert_eq!(task["contextId"], "ctx-1");
    assert_eq!(task["artifacts"][0]["parts"], json!([{"text": "hello world"}]));
    assert_eq!(task["history"][0]["contextId"], "ctx-1");
    agent.stop().await;
}

#[tokio::test]
async fn echo_streams_snapshot_artifact_completed() {
    let agent = start(AgentKind::Echo).await;
    let events = agent.rpc_stream_all("SendStreamingMessage", send(user_text("hi"))).await;
    let kinds: Vec<_> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["task", "artifactUpdate", "statusUpdate"]);
    assert_eq!(state(&events[0]), "TASK_STATE_SUBMITTED");
    assert!(events[0]["task"]["status"].get("timestamp").is_none());
    assert_eq!(events[0]["task"]["history"][0]["parts"][0]["text"], "hi");
    let update = &events[1]["artifactUpdate"];
    assert_eq!(update["artifact"]["name"], "echo");
    assert_eq!(update["lastChunk"], true);
    assert!(update.get("append").is_none());
    assert_eq!(state(&events[2]), "TASK_STATE_COMPLETED");
    let task_id = &events[0]["task"]["id"];
    for event in &events[1..] {
        let inner = event.as_object().and_then(|o| o.values().next()).cloned().unwrap_or_default();
        assert_eq!(&inner["taskId"], task_id);
        assert_eq!(inner["contextId"], events[0]["task"]["contextId"]);
    }
    agent.stop().await;
}

#[tokio::test]
async fn get_task_with_and_without_history() {
    let agent = start(AgentKind::Echo).await;
    let task = agent.rpc_ok("SendMessage", send(user_text("hello"))).await["task"].clone();
    let id = task["id"].clone();
    let full = agent.rpc_ok("GetTask", json!({"id": id})).await;
    assert_eq!(full, task);
    let trimmed = agent.rpc_ok("GetTask", json!({"id": id, "historyLength": 0})).await;
    assert!(trimmed.get("history").is_none(), "{trimmed}");
    assert_eq!(trimmed["artifacts"], task["artifacts"]);
    agent.stop().await;
}

#[tokio::test]
async fn list_tasks_prints_sdk_defaults_newest_first() {
    let agent = start(AgentKind::Echo).await;
    let first = agent.rpc_ok("SendMessage", send(user_text("one"))).await["task"]["id"].clone();
    let second = agent.rpc_ok("SendMessage", send(user_text("two"))).await["task"]["id"].clone();
    let list = agent.rpc_ok("ListTasks", json!({"pageSize": 10})).await;
    assert_eq!(list["pageSize"], 10);
    assert_eq!(list["totalSize"], 2);
    assert_eq!(list["nextPageToken"], "");
    let tasks = list["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.iter().map(|t| t["id"].clone()).collect::<Vec<_>>(), [second, first]);
    assert!(tasks[0].get("artifacts").is_none());
    assert_eq!(tasks[0]["history"][0]["parts"][0], json!({"text": "two", "filename": "", "mediaType": ""}));
    assert_eq!(tasks[0]["history"][0]["extensions"], json!([]));
    assert_eq!(tasks[0]["history"][0]["referenceTaskIds"], json!([]));
    let page = agent.rpc_ok("ListTasks", json!({"pageSize": 1, "includeArtifacts": true})).await;
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(1));
    assert_eq!(page["tasks"][0]["artifacts"][0]["name"], "echo");
    let token = page["nextPageToken"].clone();
    assert_ne!(token, "");
    let rest = agent.rpc_ok("ListTasks", json!({"pageSize": 1, "pageToken": token})).await;
    assert_eq!(rest["tasks"][0]["history"][0]["parts"][0]["text"], "one");
    assert_eq!(rest["nextPageToken"], "");
    let done = agent.rpc_ok("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
    assert_eq!(done["totalSize"], 0);
    agent.stop().await;
}

#[tokio::test]
async fn review_streams_three_steps_findings_and_completion() {
    let agent = start(AgentKind::Review).await;
    let events = agent.rpc_stream_all("SendStreamingMessage", send(user_text("PR #123"))).await;
    let kinds: Vec<_> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "statusUpdate", "statusUpdate", "artifactUpdate", "statusUpdate"]);
    assert_eq!(state(&events[0]), "TASK_STATE_SUBMITTED");
    let steps: Vec<_> = events[1..4].iter().map(|e| (state(e), status_text(&e["statusUpdate"]))).collect();
    assert_eq!(
        steps,
        [
            ("TASK_STATE_WORKING", "step 1/3: fetching diff"),
            ("TASK_STATE_WORKING", "step 2/3: analysing changes"),
            ("TASK_STATE_WORKING", "step 3/3: writing findings"),
        ]
    );
    assert_eq!(events[1]["statusUpdate"]["status"]["message"]["role"], "ROLE_AGENT");
    let artifact = &events[4]["artifactUpdate"]["artifact"];
    assert_eq!(artifact["name"], "review");
    let report = &artifact["parts"][0]["data"];
    assert_eq!(report["pr"], "PR #123");
    let finding = &report["findings"][0];
    for field in ["file", "line", "severity", "message"] {
        assert!(finding.get(field).is_some(), "{field}: {finding}");
    }
    assert_eq!(state(&events[5]), "TASK_STATE_COMPLETED");
    assert_eq!(status_text(&events[5]["statusUpdate"]), "review done");
    agent.stop().await;
}

#[tokio::test]
async fn review_blocking_scans_the_diff_in_the_data_part() {
    let agent = start(AgentKind::Review).await;
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,1 +1,2 @@\n fn a() {}\n+let x = y.unwrap();\n";
    let message = json!({"messageId": common::uuid(), "role": "ROLE_USER", "parts": [
        {"text": "please review"},
        {"data": {"diff": diff, "title": "Add x", "focus": ["correctness"], "language": "rust"}}]});
    let task = agent.rpc_ok("SendMessage", send(message)).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let report = &task["artifacts"][0]["parts"][0]["data"];
    assert_eq!(report["pr"], "Add x");
    assert_eq!(
        report["findings"],
        json!([{"file": "src/lib.rs", "line": 2, "severity": "warning",
            "message": "unwrap() panics on error; handle or propagate it"}])
    );
    // The step messages moved into the history as each status replaced the previous one.
    let history: Vec<_> = task["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|m| m["parts"][0]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        history,
        ["please review", "step 1/3: fetching diff", "step 2/3: analysing changes", "step 3/3: writing findings"]
    );
    agent.stop().await;
}

#[tokio::test]
async fn review_refuses_input_that_breaks_its_schema() {
    let agent = start(AgentKind::Review).await;
    let message = json!({"messageId": common::uuid(), "role": "ROLE_USER",
        "parts": [{"data": {"diff": "", "extra": 1}}]});
    let error = agent.rpc_err("SendMessage", send(message)).await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"][0]["reason"], "INVALID_PARAMS");
    let list = agent.rpc_ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 0, "no task was created");
    agent.stop().await;
}

#[tokio::test]
async fn clarify_asks_then_completes_with_both_answers() {
    let agent = start(AgentKind::Clarify).await;
    let first = agent.rpc_ok("SendMessage", send(user_text("deploy my service"))).await["task"].clone();
    assert_eq!(first["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(first["status"]["message"]["role"], "ROLE_AGENT");
    assert!(status_text(&first).ends_with('?'), "{first}");
    assert_eq!(first["history"].as_array().map(Vec::len), Some(1));
    let (id, context) = (first["id"].clone(), first["contextId"].clone());
    let answer = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id,
        "contextId": context, "parts": [{"text": "staging"}]});
    let done = agent.rpc_ok("SendMessage", send(answer)).await["task"].clone();
    assert_eq!(done["id"], id);
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let roles: Vec<_> = done["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]);
    let artifact = &done["artifacts"][0];
    assert_eq!(artifact["parts"][1]["data"], json!({"request": "deploy my service", "answer": "staging"}));
    let text = artifact["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("deploy my service") && text.contains("staging"), "{text}");
    // The task is terminal now: a further message is refused like the SDK does.
    let late = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id, "parts": [{"text": "x"}]});
    let error = agent.rpc_err("SendMessage", send(late)).await;
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap_or_default().contains("terminal state"), "{error}");
    agent.stop().await;
}

#[tokio::test]
async fn clarify_streams_close_after_input_required_and_follow_ups_have_no_snapshot() {
    let agent = start(AgentKind::Clarify).await;
    let turn1 = agent.rpc_stream_all("SendStreamingMessage", send(user_text("deploy"))).await;
    assert_eq!(turn1.iter().map(kind).collect::<Vec<_>>(), ["task", "statusUpdate"]);
    assert_eq!(state(&turn1[1]), "TASK_STATE_INPUT_REQUIRED");
    let id = turn1[0]["task"]["id"].clone();
    let answer = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id,
        "parts": [{"text": "production"}]});
    let turn2 = agent.rpc_stream_all("SendStreamingMessage", send(answer)).await;
    assert_eq!(turn2.iter().map(kind).collect::<Vec<_>>(), ["artifactUpdate", "statusUpdate"]);
    assert_eq!(state(&turn2[1]), "TASK_STATE_COMPLETED");
    assert_eq!(turn2[0]["artifactUpdate"]["taskId"], id);
    agent.stop().await;
}

#[tokio::test]
async fn clarify_input_required_task_can_be_canceled() {
    let agent = start(AgentKind::Clarify).await;
    let task = agent.rpc_ok("SendMessage", send(user_text("deploy"))).await["task"].clone();
    let canceled = agent.rpc_ok("CancelTask", json!({"id": task["id"]})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    agent.stop().await;
}

#[tokio::test]
async fn slow_return_immediately_then_subscribe_then_cancel() {
    let agent = start(AgentKind::Slow).await;
    let params = json!({"message": user_text("take your time"), "configuration": {"returnImmediately": true}});
    let task = agent.rpc_ok("SendMessage", params).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = task["id"].clone();
    let mut stream = agent.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    stream.assert_sse_headers();
    let snapshot = stream.next().await.expect("snapshot");
    assert_eq!(snapshot["id"], "stream-req");
    assert_eq!(kind(&snapshot["result"]), "task");
    assert_eq!(snapshot["result"]["task"]["id"], id);
    let canceled = agent.rpc_ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    assert_eq!(status_text(&canceled), "cancelled by request");
    // The stream relays the canceled status and closes.
    let mut last = Value::Null;
    while let Some(event) = stream.next().await {
        last = event;
    }
    assert_eq!(state(&last["result"]), "TASK_STATE_CANCELED");
    let again = agent.rpc_err("CancelTask", json!({"id": id})).await;
    assert_eq!(again["code"], -32002);
    assert_eq!(again["message"], "Task cannot be canceled");
    assert_eq!(again["data"][0]["reason"], "TASK_NOT_CANCELABLE");
    // No event is published after the cancel.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let after = agent.rpc_ok("GetTask", json!({"id": id})).await;
    assert_eq!(after["status"]["state"], "TASK_STATE_CANCELED");
    assert!(after.get("artifacts").is_none());
    agent.stop().await;
}

#[tokio::test]
async fn slow_reports_each_second_and_completes() {
    let options = AgentOptions { slow_duration: Duration::from_millis(1300), ..fast_options() };
    let agent = start_with(AgentKind::Slow, options).await;
    let events = agent.rpc_stream_all("SendStreamingMessage", send(user_text("go"))).await;
    let texts: Vec<_> = events
        .iter()
        .filter(|e| state(e) == "TASK_STATE_WORKING")
        .map(|e| status_text(&e["statusUpdate"]).to_owned())
        .collect();
    assert_eq!(texts, ["working 1/2", "working 2/2"]);
    let last = events.last().expect("events");
    assert_eq!(state(last), "TASK_STATE_COMPLETED");
    let id = events[0]["task"]["id"].clone();
    let task = agent.rpc_ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["artifacts"][0]["name"], "result");
    agent.stop().await;
}

#[tokio::test]
async fn slow_cancel_during_a_send_stream_closes_it() {
    let agent = start(AgentKind::Slow).await;
    let mut stream = agent.rpc_stream("SendStreamingMessage", send(user_text("go"))).await;
    let snapshot = stream.next().await.expect("snapshot");
    let id = snapshot["result"]["task"]["id"].clone();
    let working = stream.next().await.expect("first progress");
    assert_eq!(state(&working["result"]), "TASK_STATE_WORKING");
    agent.rpc_ok("CancelTask", json!({"id": id})).await;
    let canceled = stream.next().await.expect("canceled event");
    assert_eq!(state(&canceled["result"]), "TASK_STATE_CANCELED");
    assert!(stream.next().await.is_none(), "stream closes after the terminal state");
    agent.stop().await;
}

#[tokio::test]
async fn follow_up_on_a_running_task_is_unsupported() {
    let agent = start(AgentKind::Slow).await;
    let params = json!({"message": user_text("go"), "configuration": {"returnImmediately": true}});
    let id = agent.rpc_ok("SendMessage", params).await["task"]["id"].clone();
    let follow_up =
        json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id, "parts": [{"text": "more"}]});
    let error = agent.rpc_err("SendMessage", send(follow_up)).await;
    assert_eq!(error["code"], -32004);
    assert_eq!(error["data"][0]["reason"], "UNSUPPORTED_OPERATION");
    agent.rpc_ok("CancelTask", json!({"id": id})).await;
    agent.stop().await;
}

#[tokio::test]
async fn subscribe_to_a_terminal_task_is_refused() {
    let agent = start(AgentKind::Echo).await;
    let id = agent.rpc_ok("SendMessage", send(user_text("x"))).await["task"]["id"].clone();
    let error = agent.rpc_err("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"][0]["reason"], "INVALID_PARAMS");
    agent.stop().await;
}

#[tokio::test]
async fn unknown_task_ids_are_task_not_found() {
    let agent = start(AgentKind::Echo).await;
    let unknown = json!({"id": "00000000-0000-0000-0000-000000000000"});
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let error = agent.rpc_err(method, unknown.clone()).await;
        assert_eq!(error["code"], -32001, "{method}");
        assert_eq!(error["message"], "Task not found");
    }
    let message = json!({"messageId": common::uuid(), "role": "ROLE_USER",
        "taskId": "00000000-0000-0000-0000-000000000000", "parts": [{"text": "x"}]});
    assert_eq!(agent.rpc_err("SendMessage", send(message.clone())).await["code"], -32001);
    // A streaming method that fails before its first event answers with plain JSON, not SSE.
    assert_eq!(agent.rpc_err("SendStreamingMessage", send(message)).await["code"], -32001);
    agent.stop().await;
}

#[tokio::test]
async fn push_notifications_and_extended_card_are_not_offered() {
    let agent = start(AgentKind::Echo).await;
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let error = agent.rpc_err(method, json!({"taskId": "t"})).await;
        assert_eq!(error["code"], -32003, "{method}");
    }
    assert_eq!(agent.rpc_err("GetExtendedAgentCard", json!({})).await["code"], -32007);
    agent.stop().await;
}

#[tokio::test]
async fn history_length_applies_to_send_results() {
    let agent = start(AgentKind::Review).await;
    let params = json!({"message": user_text("PR #1"), "configuration": {"historyLength": 1}});
    let task = agent.rpc_ok("SendMessage", params).await["task"].clone();
    let history = task["history"].as_array().expect("history");
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["parts"][0]["text"], "step 3/3: writing findings");
    agent.stop().await;
}
