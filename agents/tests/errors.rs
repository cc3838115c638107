//! Error shapes of both bindings, checked against the SDK captures.

mod common;

use a2a_example_agents::AgentKind;
use common::{start, user_text};
use reqwest::{Method, StatusCode};
use serde_json::json;

const NOT_FOUND_DATA: &str = r#"[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]"#;

#[tokio::test]
async fn jsonrpc_task_not_found_is_the_captured_body() {
    let agent = start(AgentKind::Echo).await;
    let body =
        r#"{"jsonrpc":"2.0","id":"req-20","method":"GetTask","params":{"id":"00000000-0000-0000-0000-000000000000"}}"#;
    let reply = agent.rpc_raw(body, Some("1.0")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.text,
        format!(
            r#"{{"error":{{"code":-32001,"message":"Task not found","data":{NOT_FOUND_DATA}}},"id":"req-20","jsonrpc":"2.0"}}"#
        )
    );
    agent.stop().await;
}

#[tokio::test]
async fn jsonrpc_version_header_is_required_with_major_1() {
    let agent = start(AgentKind::Echo).await;
    let body = json!({"jsonrpc": "2.0", "id": "req-21", "method": "SendMessage",
        "params": {"message": user_text("hi")}})
    .to_string();
    let missing = agent.rpc_raw(&body, None).await;
    assert_eq!(missing.status, StatusCode::OK);
    assert_eq!(
        missing.text,
        r#"{"error":{"code":-32009,"message":"A2A version '0.3' is not supported by this handler. Expected version '1.0'.","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{}}]},"id":"req-21","jsonrpc":"2.0"}"#
    );
    let two = agent.rpc_raw(&body, Some("2.0")).await;
    assert_eq!(two.json["error"]["code"], -32009);
    assert_eq!(
        two.json["error"]["message"],
        "A2A version '2.0' is not supported by this handler. Expected version '1.0'."
    );
    for accepted in ["1.1", "1.0.5"] {
        let reply = agent.rpc_raw(&body, Some(accepted)).await;
        assert!(reply.json.get("result").is_some(), "{accepted}: {}", reply.text);
    }
    agent.stop().await;
}

#[tokio::test]
async fn jsonrpc_protocol_errors() {
    let agent = start(AgentKind::Echo).await;
    let unknown =
        agent.rpc_raw(r#"{"jsonrpc":"2.0","id":"req-22","method":"tasks/list","params":{}}"#, Some("1.0")).await;
    assert_eq!(unknown.text, r#"{"error":{"code":-32601,"message":"Method not found"},"id":"req-22","jsonrpc":"2.0"}"#);
    let parse = agent.rpc_raw(r#"{"jsonrpc":"2.0","#, Some("1.0")).await;
    assert_eq!(parse.status, StatusCode::OK);
    assert_eq!(parse.json["error"]["code"], -32700);
    assert_eq!(parse.json["id"], serde_json::Value::Null);
    assert!(parse.json["error"].get("data").is_none());
    let batch = agent.rpc_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#, Some("1.0")).await;
    assert_eq!(batch.json["error"]["code"], -32600);
    let no_method = agent.rpc_raw(r#"{"jsonrpc":"2.0","id":7}"#, Some("1.0")).await;
    assert_eq!(no_method.json["error"]["code"], -32600);
    assert_eq!(no_method.json["id"], 7);
    let wrong_version = agent.rpc_raw(r#"{"jsonrpc":"1.0","id":7,"method":"GetTask"}"#, Some("1.0")).await;
    assert_eq!(wrong_version.json["error"]["code"], -32600);
    agent.stop().await;
}

#[tokio::test]
async fn jsonrpc_invalid_params() {
    let agent = start(AgentKind::Echo).await;
    for params in [
        json!({}),
        json!({"message": {"role": "ROLE_USER", "parts": [{"text": "no id"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
        json!({"message": {"messageId": "m", "role": "ROLE_ROBOT", "parts": [{"text": "x"}]}}),
        json!({"message": user_text("x"), "configuration": {"historyLength": -1}}),
    ] {
        let error = agent.rpc_err("SendMessage", params.clone()).await;
        assert_eq!(error["code"], -32602, "{params}");
        assert_eq!(error["data"][0]["reason"], "INVALID_PARAMS");
    }
    assert_eq!(agent.rpc_err("GetTask", json!({})).await["code"], -32602);
    assert_eq!(agent.rpc_err("GetTask", json!({"id": "x", "historyLength": "lots"})).await["code"], -32602);
    assert_eq!(agent.rpc_err("ListTasks", json!({"pageSize": 1000})).await["code"], -32602);
    assert_eq!(agent.rpc_err("ListTasks", json!({"pageToken": "nope"})).await["code"], -32602);
    let body = r#"{"jsonrpc":"2.0","id":"p","method":"GetTask","params":[1]}"#;
    assert_eq!(agent.rpc_raw(body, Some("1.0")).await.json["error"]["code"], -32602);
    agent.stop().await;
}

#[tokio::test]
async fn jsonrpc_stream_errors_are_plain_json() {
    let agent = start(AgentKind::Echo).await;
    let body = r#"{"jsonrpc":"2.0","id":"req-24","method":"SubscribeToTask","params":{"id":"00000000-0000-0000-0000-000000000000"}}"#;
    let reply = agent.rpc_raw(body, Some("1.0")).await;
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(
        reply.text,
        format!(
            r#"{{"error":{{"code":-32001,"message":"Task not found","data":{NOT_FOUND_DATA}}},"id":"req-24","jsonrpc":"2.0"}}"#
        )
    );
    agent.stop().await;
}

#[tokio::test]
async fn rest_task_not_found_is_the_captured_body() {
    let agent = start(AgentKind::Echo).await;
    for (method, path) in [
        (Method::GET, "/tasks/00000000-0000-0000-0000-000000000000"),
        (Method::GET, "/tasks/00000000-0000-0000-0000-000000000000:subscribe"),
        (Method::POST, "/tasks/00000000-0000-0000-0000-000000000000:cancel"),
    ] {
        let reply = agent.rest(method, path, None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.content_type(), "application/json");
        assert_eq!(
            reply.text,
            format!(
                r#"{{"error":{{"code":404,"status":"NOT_FOUND","message":"Task not found","details":{NOT_FOUND_DATA}}}}}"#
            )
        );
    }
    agent.stop().await;
}

#[tokio::test]
async fn rest_version_header_is_required() {
    let agent = start(AgentKind::Echo).await;
    let response = agent
        .http
        .post(agent.url("/a2a/rest/message:send"))
        .json(&json!({"message": user_text("hi")}))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.text().await.unwrap_or_default(),
        r#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"A2A version '0.3' is not supported by this handler. Expected version '1.0'.","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{}}]}}"#
    );
    agent.stop().await;
}

#[tokio::test]
async fn rest_bad_json_and_invalid_params() {
    let agent = start(AgentKind::Echo).await;
    let response = agent
        .http
        .post(agent.url("/a2a/rest/message:send"))
        .header("A2A-Version", "1.0")
        .header("Content-Type", "application/json")
        .body(r#"{"message":"#)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    assert!(body["error"]["message"].as_str().unwrap_or_default().starts_with("Failed to load JSON: "));
    assert_eq!(body["error"]["details"][0]["reason"], "INVALID_REQUEST");
    let reply = agent.rest(Method::POST, "/message:send", Some(json!({"message": {"messageId": "m"}}))).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.json["error"]["details"][0]["reason"], "INVALID_PARAMS");
    let reply = agent.rest(Method::GET, "/tasks/x?historyLength=-3", None).await;
    assert_eq!(reply.json["error"]["details"][0]["reason"], "INVALID_PARAMS");
    let reply = agent.rest(Method::GET, "/tasks?pageSize=abc", None).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    agent.stop().await;
}

#[tokio::test]
async fn rest_unknown_paths_are_plain_404() {
    let agent = start(AgentKind::Echo).await;
    for path in ["/nope/nope/nope", "/acme/message:send", "/tasks/x:pause"] {
        let reply = agent.rest(Method::GET, path, None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.text, "Not Found");
        assert!(reply.content_type().starts_with("text/plain"));
    }
    let reply = agent.rest(Method::GET, "/message:send", None).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    agent.stop().await;
}
