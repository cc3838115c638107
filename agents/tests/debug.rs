//! The request log behind `GET|DELETE /debug/requests`.

mod common;

use a2a_example_agents::AgentKind;
use common::{start, user_text};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn find<'a>(records: &'a [Value], operation: &str) -> &'a Value {
    records.iter().find(|r| r["operation"] == operation).unwrap_or_else(|| panic!("no {operation} in {records:?}"))
}

#[tokio::test]
async fn records_jsonrpc_requests_with_headers() {
    let agent = start(AgentKind::Echo).await;
    let body = json!({"jsonrpc": "2.0", "id": 41, "method": "SendMessage", "params": {"message": user_text("hi")}});
    let response = agent
        .http
        .post(agent.url("/a2a/jsonrpc"))
        .header("A2A-Version", "1.0")
        .header("Authorization", "Bearer backend-token")
        .header("A2A-Extensions", "https://example.com/ext/a")
        .json(&body)
        .send()
        .await
        .expect("send");
    let reply: Value = response.json().await.expect("json");
    let task_id = reply["result"]["task"]["id"].clone();
    agent.rpc_ok("GetTask", json!({"id": task_id})).await;
    let records = agent.recorded().await;
    assert_eq!(records.len(), 2);
    let send = find(&records, "SendMessage");
    assert_eq!(send["binding"], "JSONRPC");
    assert_eq!(send["method"], "POST");
    assert_eq!(send["path"], "/a2a/jsonrpc");
    assert_eq!(send["jsonrpcId"], 41);
    assert_eq!(send["taskId"], Value::Null);
    assert_eq!(send["headers"]["authorization"], "Bearer backend-token");
    assert_eq!(send["headers"]["a2a-version"], "1.0");
    assert_eq!(send["headers"]["a2a-extensions"], "https://example.com/ext/a");
    let get = find(&records, "GetTask");
    assert_eq!(get["taskId"], task_id);
    assert!(records[0]["seq"].as_u64() < records[1]["seq"].as_u64());
    agent.stop().await;
}

#[tokio::test]
async fn records_rest_operations_cards_and_rejected_requests() {
    let agent = start(AgentKind::Echo).await;
    let task = agent.rest_ok(Method::POST, "/message:send", Some(json!({"message": user_text("x")}))).await;
    let id = task["task"]["id"].as_str().unwrap_or_default().to_owned();
    agent.rest(Method::GET, &format!("/tasks/{id}?historyLength=1"), None).await;
    agent.rest(Method::GET, "/tasks", None).await;
    agent.rest(Method::POST, &format!("/tasks/{id}:cancel"), None).await;
    agent.rest(Method::GET, "/nope", None).await;
    agent.http.get(agent.url("/.well-known/agent-card.json")).send().await.expect("card");
    agent.rpc_raw("{broken", Some("1.0")).await;
    let records = agent.recorded().await;
    assert_eq!(records.len(), 7, "{records:?}");
    assert_eq!(find(&records, "SendMessage")["binding"], "HTTP+JSON");
    let get = find(&records, "GetTask");
    assert_eq!(get["taskId"], id.as_str());
    assert_eq!(get["query"], "historyLength=1");
    assert_eq!(find(&records, "ListTasks")["path"], "/a2a/rest/tasks");
    assert_eq!(find(&records, "CancelTask")["taskId"], id.as_str());
    assert_eq!(find(&records, "GetAgentCard")["binding"], "CARD");
    let unmatched: Vec<_> = records.iter().filter(|r| r["operation"].is_null()).collect();
    assert_eq!(unmatched.len(), 2, "the unknown path and the broken JSON-RPC body");
    let cleared = agent.http.delete(agent.url("/debug/requests")).send().await.expect("clear");
    assert_eq!(cleared.status(), StatusCode::NO_CONTENT);
    assert!(agent.recorded().await.is_empty());
    agent.stop().await;
}
