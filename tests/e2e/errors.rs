//! Bad input gets a clear error in the caller's binding: JSON-RPC error objects with the request id,
//! or an HTTP status with a google.rpc.Status JSON body.

use a2a_e2e::{Proc, client, config, example_agent, gateway, wait_for_skills};
use serde_json::Value;

use crate::BIN;

async fn setup() -> (Proc, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "limits:\n  max_request_bytes: 65536\n")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    (echo, gw)
}

async fn post(url: &str, body: &'static str, version: Option<&str>) -> (u16, Value) {
    let mut request = client().post(url).header("content-type", "application/json").body(body);
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("error body is JSON: {text}")))
}

#[tokio::test]
async fn json_rpc_errors_are_error_objects() {
    let (_echo, gw) = setup().await;
    let root = format!("{}/", gw.url);
    let cases: [(&str, Option<&str>, i64); 8] = [
        (r#"{"jsonrpc":"2.0","#, Some("1.0"), -32700),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#, Some("1.0"), -32600),
        (r#"{"jsonrpc":"2.0","id":1}"#, Some("1.0"), -32600),
        (r#"{"jsonrpc":"2.0","id":"r","method":"tasks/list","params":{}}"#, Some("1.0"), -32601),
        (r#"{"jsonrpc":"2.0","id":"r","method":"GetTask","params":{}}"#, Some("1.0"), -32602),
        (r#"{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{}}"#, Some("1.0"), -32602),
        (r#"{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{}}}"#, None, -32009),
        (r#"{"jsonrpc":"2.0","id":"r","method":"GetExtendedAgentCard","params":{}}"#, Some("1.0"), -32007),
    ];
    for (body, version, code) in cases {
        let (status, answer) = post(&root, body, version).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(answer["jsonrpc"], "2.0", "{body}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        if code != -32700 && code != -32600 {
            assert_eq!(answer["id"], "r", "{body}");
        }
    }
}

#[tokio::test]
async fn rest_errors_carry_a_status_and_a_json_body() {
    let (_echo, gw) = setup().await;
    let cases: [(&str, &str, &'static str, u16, &str); 5] = [
        ("POST", "/message:send", r#"{"message":"#, 400, "INVALID_ARGUMENT"),
        ("POST", "/message:send", r#"{"metadata":{}}"#, 400, "INVALID_ARGUMENT"),
        ("GET", "/nope/nope", "", 404, "NOT_FOUND"),
        ("DELETE", "/tasks/x", "", 404, "NOT_FOUND"),
        ("GET", "/agents/nobody/tasks/x", "", 404, "NOT_FOUND"),
    ];
    for (method, path, body, status, code) in cases {
        let request = client()
            .request(method.parse().unwrap(), format!("{}{path}", gw.url))
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json")
            .body(body);
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["status"], code, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], status);
    }
    let (status, answer) = post(&format!("{}/message:send", gw.url), r#"{"message":{}}"#, None).await;
    assert_eq!((status, answer["error"]["details"][0]["reason"].as_str()), (400, Some("VERSION_NOT_SUPPORTED")));
}

#[tokio::test]
async fn an_oversize_body_is_refused_before_it_is_read() {
    let (_echo, gw) = setup().await;
    let big = format!(r#"{{"message":{{"parts":[{{"text":"{}"}}]}}}}"#, "x".repeat(200_000));
    let response = client()
        .post(format!("{}/message:send", gw.url))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["details"][0]["reason"], "PAYLOAD_TOO_LARGE");
}

/// A2A's JSON bindings take JSON: a body declared as another media type is refused with
/// ContentTypeNotSupportedError before it is parsed — JSON-RPC `-32005` (it was a parse error,
/// `-32700`), HTTP+JSON 415 — in 1.0 and in 0.3, as the conformance kit's JSONRPC-SSE-002 and
/// HTTP_JSON-STATUS-001 ask. A body without Content-Type is still read as JSON.
#[tokio::test]
async fn a_body_declared_as_not_json_is_an_unsupported_media_type() {
    let (_echo, gw) = setup().await;
    let send = |url: String, content_type: &'static str, version: Option<&'static str>, body: &'static str| async move {
        let mut request = client().post(url).header("content-type", content_type).body(body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap_or(Value::Null))
    };
    let root = format!("{}/", gw.url);
    // The kit's probe: a Python repr (not JSON) declared as text/plain.
    let (status, body) = send(root.clone(), "text/plain", Some("1.0"), "{'jsonrpc': '2.0', 'id': 1}").await;
    assert_eq!((status, &body["error"]["code"]), (200, &Value::from(-32005)), "{body}");
    let rpc03 = r#"{"jsonrpc":"2.0","id":3,"method":"message/send","params":{}}"#;
    let (status, body) = send(root.clone(), "text/plain", None, rpc03).await;
    assert_eq!((status, &body["error"]["code"]), (200, &Value::from(-32005)), "{body}");
    let message = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let (status, body) = send(format!("{}/message:send", gw.url), "text/plain", Some("1.0"), message).await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED", "{body}");
    let (status, body) = send(format!("{}/v1/message:send", gw.url), "application/xml", None, message).await;
    assert_eq!((status, &body["type"]), (415, &Value::from("ContentTypeNotSupportedError")), "{body}");
    // JSON media types pass.
    let echo =
        r#"{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"skillId":"echo"}}}"#;
    let (status, body) = send(format!("{}/message:send", gw.url), "application/a2a+json", Some("1.0"), echo).await;
    assert_eq!((status, &body["task"]["status"]["state"]), (200, &Value::from("TASK_STATE_COMPLETED")), "{body}");
}

/// An agent on loopback, in this process: its card names `interface` (binding, path) under its base
/// URL; `routes` serve everything but the card. Stops when the handle is aborted.
async fn start_agent(
    name: &str,
    binding: &str,
    path: &str,
    routes: axum::Router,
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = serde_json::json!({
        "name": name, "description": "answers errors", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}{path}"), "protocolBinding": binding, "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": name, "name": name, "description": "errors", "tags": []}]
    });
    let app = routes.route("/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card) }));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, task)
}

/// A gateway in front of the agent `name` at `agent`, after one JSON-RPC send that made `task`.
async fn gateway_with_task(name: &str, agent: &str, task: &str) -> Proc {
    let gw = gateway(BIN, &config(&[(name, agent)], "")).await;
    wait_for_skills(&gw.url, &[name]).await;
    let message = serde_json::json!({"message": a2a_e2e::text_message("hi", None)});
    let (_, sent) = a2a_e2e::rpc_as(None, &format!("{}/", gw.url), "SendMessage", message).await;
    assert_eq!(sent["result"]["task"]["id"], task, "{sent}");
    gw
}

/// An HTTP+JSON call without a body worth reading (`{}` for a POST): its status and JSON answer.
async fn rest_call(gw: &Proc, method: &str, path: &str, version: Option<&str>) -> (u16, Value) {
    let mut request = client()
        .request(method.parse().unwrap(), format!("{}{path}", gw.url))
        .header("content-type", "application/json")
        .body(if method == "POST" { "{}" } else { "" });
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A JSON-RPC agent whose errors are bare `{code, message}` objects, as the 0.3 SDK and most
/// hand-written agents write them: every send makes task `t-bare`; GetTask answers task-not-found,
/// CancelTask method-not-found.
async fn start_bare_error_agent() -> (String, tokio::task::JoinHandle<()>) {
    let rpc = |axum::Json(request): axum::Json<Value>| async move {
        let id = request["id"].clone();
        let bare = |code: i64, message: &str| serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        axum::Json(match request["method"].as_str() {
            Some("SendMessage") => serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {"task": {
                "id": "t-bare", "contextId": "c-bare", "status": {"state": "TASK_STATE_WORKING"}}}}),
            Some("GetTask") => bare(-32001, "Task not found"),
            Some("CancelTask") => bare(-32601, "Method not found"),
            _ => bare(-32004, "Not supported"),
        })
    };
    start_agent("bare", "JSONRPC", "/rpc", axum::Router::new().route("/rpc", axum::routing::post(rpc))).await
}

#[tokio::test]
async fn an_agents_bare_error_reaches_http_json_callers_as_the_a2a_error_it_names() {
    let (agent, task) = start_bare_error_agent().await;
    let gw = gateway_with_task("bare", &agent, "t-bare").await;
    // 1.0 HTTP+JSON: the status and ErrorInfo reason of the agent's code, not 502 "the agent failed".
    let cases = [
        ("GET", "/tasks/t-bare", 404, "TASK_NOT_FOUND", "Task not found"),
        ("POST", "/tasks/t-bare:cancel", 404, "METHOD_NOT_FOUND", "Method not found"),
    ];
    for (method, path, status, reason, message) in cases {
        let (got, answer) = rest_call(&gw, method, path, Some("1.0")).await;
        assert_eq!(got, status, "{method} {path}");
        assert_eq!(answer["error"]["details"][0]["reason"], reason, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["message"], message, "{method} {path}: {answer}");
    }
    // 0.3 HTTP+JSON: the 0.3 binding's status for those codes.
    for (method, path) in [("GET", "/v1/tasks/t-bare"), ("POST", "/v1/tasks/t-bare:cancel")] {
        assert_eq!(rest_call(&gw, method, path, None).await.0, 404, "0.3 {method} {path}");
    }
    // gRPC: the codes the specification's table gives them.
    let target = crate::grpc::host_port(&gw.url);
    for (method, code, reason) in
        [("GetTask", "NOT_FOUND", "TASK_NOT_FOUND"), ("CancelTask", "UNIMPLEMENTED", "METHOD_NOT_FOUND")]
    {
        let got = crate::grpc::raw(&target, method, serde_json::json!({"id": "t-bare"}), &[]).await;
        assert_eq!((&got["code"], &got["reasons"]), (&Value::from(code), &serde_json::json!([reason])), "{got}");
    }
    // JSON-RPC callers get the agent's code, as before.
    let (_, answer) =
        a2a_e2e::rpc_as(None, &format!("{}/", gw.url), "CancelTask", serde_json::json!({"id": "t-bare"})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    task.abort();
}

/// An HTTP+JSON agent whose errors are google.rpc.Status objects without details (no ErrorInfo):
/// every send makes task `t-rest`; reading it answers 404, canceling it 400.
async fn start_bare_status_agent() -> (String, tokio::task::JoinHandle<()>) {
    use axum::routing::{get, post};
    let status = |code: u16, name: &str, message: &str| {
        let body = serde_json::json!({"error": {"code": code, "status": name, "message": message}});
        (http::StatusCode::from_u16(code).unwrap(), axum::Json(body))
    };
    let routes = axum::Router::new()
        .route(
            "/rest/message:send",
            post(|| async {
                axum::Json(serde_json::json!({"task": {"id": "t-rest", "contextId": "c-rest",
                    "status": {"state": "TASK_STATE_WORKING"}}}))
            }),
        )
        // `{id}` also takes `t-rest:cancel`.
        .route(
            "/rest/tasks/{id}",
            get(move || async move { status(404, "NOT_FOUND", "Task not found") })
                .post(move || async move { status(400, "INVALID_ARGUMENT", "cannot cancel now") }),
        );
    start_agent("bare-rest", "HTTP+JSON", "/rest", routes).await
}

#[tokio::test]
async fn an_http_json_agents_status_without_a_reason_reads_by_its_status_relayed_or_bridged() {
    let (agent, task) = start_bare_status_agent().await;
    let gw = gateway_with_task("bare-rest", &agent, "t-rest").await;
    // Relayed to an HTTP+JSON caller: the A2A error of the status, not 502 "the agent failed".
    let cases =
        [("GET", "/tasks/t-rest", 404, "TASK_NOT_FOUND"), ("POST", "/tasks/t-rest:cancel", 400, "INVALID_PARAMS")];
    for (method, path, status, reason) in cases {
        let (got, answer) = rest_call(&gw, method, path, Some("1.0")).await;
        assert_eq!(got, status, "{method} {path}");
        assert_eq!(answer["error"]["details"][0]["reason"], reason, "{method} {path}: {answer}");
    }
    // Bridged to a JSON-RPC caller: the same kinds, as codes.
    let root = format!("{}/", gw.url);
    for (method, code) in [("GetTask", -32001), ("CancelTask", -32602)] {
        let (_, answer) = a2a_e2e::rpc_as(None, &root, method, serde_json::json!({"id": "t-rest"})).await;
        assert_eq!(answer["error"]["code"], code, "{method}: {answer}");
    }
    task.abort();
}
