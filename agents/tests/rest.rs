//! Every operation of every agent over HTTP+JSON (`/a2a/rest/...`).

mod common;

use std::time::Duration;

use a2a_example_agents::AgentKind;
use common::{kind, start, state, status_text, user_text};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn send(message: Value) -> Option<Value> {
    Some(json!({ "message": message }))
}

#[tokio::test]
async fn echo_message_send_matches_the_capture_byte_for_byte() {
    let agent = start(AgentKind::Echo).await;
    let message_id = common::uuid();
    let message = json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hello rest"}]});
    let reply = agent.rest(Method::POST, "/message:send", send(message)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/a2a+json");
    let task = &reply.json["task"];
    let (id, context, timestamp, artifact) = (
        task["id"].as_str().unwrap_or_default(),
        task["contextId"].as_str().unwrap_or_default(),
        task["status"]["timestamp"].as_str().unwrap_or_default(),
        task["artifacts"][0]["artifactId"].as_str().unwrap_or_default(),
    );
    let expected = format!(
        r#"{{"task":{{"id":"{id}","contextId":"{context}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"{timestamp}"}},"artifacts":[{{"artifactId":"{artifact}","name":"echo","parts":[{{"text":"hello rest"}}]}}],"history":[{{"messageId":"{message_id}","contextId":"{context}","taskId":"{id}","role":"ROLE_USER","parts":[{{"text":"hello rest"}}]}}]}}}}"#
    );
    assert_eq!(reply.text, expected);
    agent.stop().await;
}

#[tokio::test]
async fn bodies_are_json_whatever_their_content_type() {
    let agent = start(AgentKind::Echo).await;
    let body = json!({"message": user_text("typed as text")}).to_string();
    let response = agent
        .http
        .post(agent.url("/a2a/rest/message:send"))
        .header("A2A-Version", "1.0")
        .header("Content-Type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), StatusCode::OK);
    let json: Value = response.json().await.expect("json");
    assert_eq!(json["task"]["artifacts"][0]["parts"][0]["text"], "typed as text");
    agent.stop().await;
}

#[tokio::test]
async fn tenant_prefixed_paths_are_served() {
    let agent = start(AgentKind::Echo).await;
    let response = agent
        .http
        .post(agent.url("/acme/a2a/rest/message:send"))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": user_text("hello tenant")}))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), StatusCode::OK);
    agent.stop().await;
}

#[tokio::test]
async fn get_task_with_history_length() {
    let agent = start(AgentKind::Echo).await;
    let task = agent.rest_ok(Method::POST, "/message:send", send(user_text("hi"))).await["task"].clone();
    let id = task["id"].as_str().unwrap_or_default().to_owned();
    let full = agent.rest_ok(Method::GET, &format!("/tasks/{id}"), None).await;
    assert_eq!(full, task);
    let trimmed = agent.rest_ok(Method::GET, &format!("/tasks/{id}?historyLength=0"), None).await;
    assert!(trimmed.get("history").is_none());
    assert_eq!(trimmed["artifacts"], task["artifacts"]);
    agent.stop().await;
}

#[tokio::test]
async fn list_tasks_with_query_parameters() {
    let agent = start(AgentKind::Echo).await;
    for text in ["a", "b", "c"] {
        agent.rest_ok(Method::POST, "/message:send", send(user_text(text))).await;
    }
    let list = agent.rest_ok(Method::GET, "/tasks?pageSize=2", None).await;
    assert_eq!(list["pageSize"], 2);
    assert_eq!(list["totalSize"], 3);
    let texts: Vec<_> =
        list["tasks"].as_array().expect("tasks").iter().map(|t| t["history"][0]["parts"][0]["text"].clone()).collect();
    assert_eq!(texts, [json!("c"), json!("b")]);
    assert_eq!(list["tasks"][0]["history"][0]["parts"][0]["mediaType"], "");
    let token = list["nextPageToken"].as_str().unwrap_or_default().to_owned();
    let next =
        agent.rest_ok(Method::GET, &format!("/tasks?pageSize=2&pageToken={token}&includeArtifacts=true"), None).await;
    assert_eq!(next["tasks"][0]["artifacts"][0]["parts"][0]["text"], "a");
    assert_eq!(next["tasks"][0]["artifacts"][0]["description"], "");
    let context = list["tasks"][0]["contextId"].as_str().unwrap_or_default().to_owned();
    let by_context = agent.rest_ok(Method::GET, &format!("/tasks?contextId={context}"), None).await;
    assert_eq!(by_context["totalSize"], 1);
    agent.stop().await;
}

#[tokio::test]
async fn review_stream_events_are_bare_stream_responses() {
    let agent = start(AgentKind::Review).await;
    let events = agent.rest_stream(Method::POST, "/message:stream", send(user_text("PR #123"))).await.all().await;
    let kinds: Vec<_> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "statusUpdate", "statusUpdate", "artifactUpdate", "statusUpdate"]);
    assert!(events.iter().all(|e| e.get("jsonrpc").is_none()));
    assert_eq!(events[4]["artifactUpdate"]["artifact"]["parts"][0]["data"]["pr"], "PR #123");
    assert_eq!(state(&events[5]), "TASK_STATE_COMPLETED");
    agent.stop().await;
}

#[tokio::test]
async fn review_blocking_returns_the_completed_task() {
    let agent = start(AgentKind::Review).await;
    let task = agent.rest_ok(Method::POST, "/message:send", send(user_text("PR #7"))).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(status_text(&task), "review done");
    assert_eq!(task["artifacts"][0]["name"], "review");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"]["findings"][0]["line"], 42);
    agent.stop().await;
}

#[tokio::test]
async fn clarify_two_turns() {
    let agent = start(AgentKind::Clarify).await;
    let first = agent.rest_ok(Method::POST, "/message:send", send(user_text("deploy my service"))).await;
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = first["task"]["id"].clone();
    let answer = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id,
        "contextId": first["task"]["contextId"], "parts": [{"text": "staging"}]});
    let done = agent.rest_ok(Method::POST, "/message:send", send(answer)).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        done["task"]["artifacts"][0]["parts"][1]["data"],
        json!({"request": "deploy my service", "answer": "staging"})
    );
    let wrong_context = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id,
        "contextId": "another", "parts": [{"text": "x"}]});
    let reply = agent.rest(Method::POST, "/message:send", send(wrong_context)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    agent.stop().await;
}

#[tokio::test]
async fn clarify_streaming_follow_up() {
    let agent = start(AgentKind::Clarify).await;
    let turn1 = agent.rest_stream(Method::POST, "/message:stream", send(user_text("deploy"))).await.all().await;
    assert_eq!(turn1.iter().map(kind).collect::<Vec<_>>(), ["task", "statusUpdate"]);
    let id = turn1[0]["task"]["id"].clone();
    let answer = json!({"messageId": common::uuid(), "role": "ROLE_USER", "taskId": id, "parts": [{"text": "prod"}]});
    let turn2 = agent.rest_stream(Method::POST, "/message:stream", send(answer)).await.all().await;
    assert_eq!(turn2.iter().map(kind).collect::<Vec<_>>(), ["artifactUpdate", "statusUpdate"]);
    agent.stop().await;
}

#[tokio::test]
async fn slow_subscribe_get_and_post_then_cancel() {
    let agent = start(AgentKind::Slow).await;
    let body = json!({"message": user_text("take your time"), "configuration": {"returnImmediately": true}});
    let task = agent.rest_ok(Method::POST, "/message:send", Some(body)).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = task["id"].as_str().unwrap_or_default().to_owned();
    let mut by_get = agent.rest_stream(Method::GET, &format!("/tasks/{id}:subscribe"), None).await;
    let mut by_post = agent.rest_stream(Method::POST, &format!("/tasks/{id}:subscribe"), None).await;
    by_get.assert_sse_headers();
    by_post.assert_sse_headers();
    for stream in [&mut by_get, &mut by_post] {
        let snapshot = stream.next().await.expect("snapshot");
        assert_eq!(snapshot["task"]["id"], id.as_str());
    }
    let canceled = agent.rest_ok(Method::POST, &format!("/tasks/{id}:cancel"), Some(json!({}))).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    for stream in [by_get, by_post] {
        let events = tokio::time::timeout(Duration::from_secs(5), stream.all()).await.expect("stream closes");
        assert_eq!(events.last().map(state), Some("TASK_STATE_CANCELED"));
    }
    let again = agent.rest(Method::POST, &format!("/tasks/{id}:cancel"), None).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert_eq!(again.content_type(), "application/json");
    assert_eq!(
        again.text,
        r#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"Task cannot be canceled","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org","metadata":{}}]}}"#
    );
    agent.stop().await;
}

#[tokio::test]
async fn subscribe_to_a_terminal_task_is_refused() {
    let agent = start(AgentKind::Echo).await;
    let id = agent.rest_ok(Method::POST, "/message:send", send(user_text("x"))).await["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let reply = agent.rest(Method::GET, &format!("/tasks/{id}:subscribe"), None).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.json["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(reply.json["error"]["details"][0]["reason"], "INVALID_PARAMS");
    agent.stop().await;
}

#[tokio::test]
async fn push_configs_and_extended_card_are_not_offered() {
    let agent = start(AgentKind::Echo).await;
    for (method, path) in [
        (Method::POST, "/tasks/t/pushNotificationConfigs"),
        (Method::GET, "/tasks/t/pushNotificationConfigs"),
        (Method::GET, "/tasks/t/pushNotificationConfigs/c"),
        (Method::DELETE, "/tasks/t/pushNotificationConfigs/c"),
    ] {
        let reply = agent.rest(method, path, None).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(reply.json["error"]["details"][0]["reason"], "PUSH_NOTIFICATION_NOT_SUPPORTED");
    }
    let reply = agent.rest(Method::GET, "/extendedAgentCard", None).await;
    assert_eq!(reply.json["error"]["details"][0]["reason"], "EXTENDED_AGENT_CARD_NOT_CONFIGURED");
    agent.stop().await;
}
