//! The early-dialect agent over real HTTP on 127.0.0.1: every call of the seed's REST surface, its
//! errors, the whole-Task SSE stream, the request log, and the golden files in
//! `tests/fixtures/dialects/` (regenerate them with `WRITE_EARLY_FIXTURES=1`).

use std::path::PathBuf;
use std::time::Duration;

use a2a_example_agents::serve_early;
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const PATIENCE: Duration = Duration::from_secs(10);

struct EarlyAgent {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<std::io::Result<()>>,
}

struct Reply {
    status: StatusCode,
    content_type: String,
    json: Value,
    raw: Vec<u8>,
}

async fn start() -> EarlyAgent {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve_early(listener, async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::builder().timeout(PATIENCE).build().expect("http client");
    EarlyAgent { base, http, stop: Some(stop), server }
}

impl EarlyAgent {
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Reply {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).header("Authorization", "Bearer t");
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let raw = response.bytes().await.expect("body").to_vec();
        let json = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply { status, content_type, json, raw }
    }

    async fn ok(&self, method: Method, path: &str, body: Option<&Value>) -> Value {
        let reply = self.call(method, path, body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.raw));
        assert_eq!(reply.content_type, "application/json");
        reply.json
    }

    /// The whole tasks of a `sendSubscribe` stream, checking the SDK-style framing of each event.
    async fn stream(&self, body: &Value) -> Vec<Value> {
        let response = self
            .http
            .post(format!("{}/tasks/sendSubscribe", self.base))
            .header("Accept", "text/event-stream")
            .json(body)
            .send()
            .await
            .expect("stream");
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        assert_eq!(content_type.as_deref(), Some("text/event-stream; charset=utf-8"));
        let mut body = response.bytes_stream();
        let mut raw = Vec::new();
        while let Some(chunk) = tokio::time::timeout(PATIENCE, body.next()).await.expect("stream went quiet") {
            raw.extend_from_slice(&chunk.expect("chunk"));
        }
        let text = String::from_utf8(raw).expect("utf-8");
        let frames: Vec<&str> = text.split_inclusive("\r\n\r\n").collect();
        frames
            .iter()
            .map(|frame| {
                let json = frame
                    .strip_prefix("data: ")
                    .and_then(|f| f.strip_suffix("\r\n\r\n"))
                    .unwrap_or_else(|| panic!("framing: {frame:?}"));
                serde_json::from_str(json).expect("event JSON")
            })
            .collect()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let finished = tokio::time::timeout(PATIENCE, &mut self.server).await;
        assert!(matches!(finished, Ok(Ok(Ok(())))), "server did not stop cleanly: {finished:?}");
    }
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn send_body(id: &str, text: &str, skill: Option<&str>) -> Value {
    let mut body = json!({"id": id, "sessionId": format!("session-{}", id.get(..8).unwrap_or(id)),
        "message": {"role": "user", "parts": [{"type": "text", "text": text}]}});
    if let Some(skill) = skill {
        body["metadata"] = json!({"skillId": skill});
    }
    body
}

fn answer(text: &str) -> Value {
    json!({"message": {"role": "user", "parts": [{"type": "text", "text": text}]}})
}

#[tokio::test]
async fn early_card_has_the_seed_shape() {
    let agent = start().await;
    let card = agent.ok(Method::GET, "/.well-known/agent.json", None).await;
    assert_eq!(card["url"], format!("{}/", agent.base));
    for field in
        ["name", "description", "version", "capabilities", "authentication", "defaultInputModes", "defaultOutputModes"]
    {
        assert!(card.get(field).is_some(), "{field}");
    }
    assert_eq!(card["capabilities"]["streaming"], true);
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["early-echo", "early-clarify"]);
    assert!(card["skills"][0]["inputSchema"].is_object(), "the seed's per-skill schema");
    let reply = agent.call(Method::GET, "/.well-known/agent-card.json", None).await;
    assert_eq!((reply.status, reply.json), (StatusCode::NOT_FOUND, json!({"detail": "Not Found"})));
    agent.stop().await;
}

#[tokio::test]
async fn early_send_returns_the_completed_task() {
    let agent = start().await;
    let id = uuid();
    let parts = json!([{"type": "text", "text": "hello early"}, {"type": "data", "data": {"n": 42}},
        {"type": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}}]);
    let mut body = send_body(&id, "", None);
    body["message"]["parts"] = parts.clone();
    let task = agent.ok(Method::POST, "/tasks/send", Some(&body)).await;
    assert_eq!(task["id"], id);
    assert_eq!(task["sessionId"], body["sessionId"]);
    assert_eq!(task["status"]["state"], "completed");
    assert!(task["status"]["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(task["artifacts"], json!([{"name": "echo", "parts": parts}]), "integers stay integers here");
    assert_eq!(task["history"], json!([body["message"]]));
    assert_eq!(agent.ok(Method::GET, &format!("/tasks/{id}"), None).await, task);
    let trimmed = agent.ok(Method::GET, &format!("/tasks/{id}?historyLength=0"), None).await;
    assert!(trimmed.get("history").is_none(), "{trimmed}");
    agent.stop().await;
}

#[tokio::test]
async fn early_send_subscribe_streams_whole_tasks() {
    let agent = start().await;
    let id = uuid();
    let events = agent.stream(&send_body(&id, "stream me", None)).await;
    let states: Vec<&str> = events.iter().filter_map(|t| t["status"]["state"].as_str()).collect();
    assert_eq!(states, ["working", "completed"]);
    for task in &events {
        assert_eq!(task["id"], id);
        assert_eq!(task["history"][0]["parts"][0]["text"], "stream me", "every event is the whole task");
    }
    assert_eq!(events[0]["artifacts"], json!([]));
    assert_eq!(events[1]["artifacts"][0]["parts"][0]["text"], "stream me");
    let clarify = agent.stream(&send_body(&uuid(), "deploy my service", Some("early-clarify"))).await;
    let states: Vec<&str> = clarify.iter().filter_map(|t| t["status"]["state"].as_str()).collect();
    assert_eq!(states, ["working", "input-required"], "input-required ends the stream too");
    agent.stop().await;
}

#[tokio::test]
async fn early_clarify_takes_two_turns() {
    let agent = start().await;
    let id = uuid();
    let first =
        agent.ok(Method::POST, "/tasks/send", Some(&send_body(&id, "deploy my service", Some("early-clarify")))).await;
    assert_eq!(first["status"]["state"], "input-required");
    assert_eq!(
        first["status"]["message"],
        json!({"role": "agent", "parts": [{"type": "text",
        "text": "Which environment: staging or production?"}]})
    );
    let second = agent.ok(Method::POST, &format!("/tasks/{id}/send"), Some(&answer("staging"))).await;
    assert_eq!(second["status"]["state"], "completed");
    assert_eq!(second["status"]["message"]["parts"][0]["text"], "done");
    assert_eq!(
        second["artifacts"],
        json!([{"name": "result", "parts": [{"type": "text", "text": "deploying to staging"}]}])
    );
    let texts: Vec<&str> =
        second["history"].as_array().expect("history").iter().filter_map(|m| m["parts"][0]["text"].as_str()).collect();
    assert_eq!(texts, ["deploy my service", "Which environment: staging or production?", "staging"]);
    let again = agent.call(Method::POST, &format!("/tasks/{id}/send"), Some(&answer("production"))).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "a completed task takes no more input");
    agent.stop().await;
}

#[tokio::test]
async fn early_cancel_only_while_the_task_can_change() {
    let agent = start().await;
    let waiting = uuid();
    agent.ok(Method::POST, "/tasks/send", Some(&send_body(&waiting, "deploy", Some("early-clarify")))).await;
    let canceled = agent.ok(Method::POST, &format!("/tasks/{waiting}/cancel"), None).await;
    assert_eq!(canceled["status"]["state"], "canceled");
    assert_eq!(canceled["history"].as_array().map(Vec::len), Some(2), "the question moved into history");
    let twice = agent.call(Method::POST, &format!("/tasks/{waiting}/cancel"), None).await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST);
    assert!(twice.json["detail"].as_str().is_some_and(|d| d.contains("canceled")), "{}", twice.json);
    let done = uuid();
    agent.ok(Method::POST, "/tasks/send", Some(&send_body(&done, "hi", None))).await;
    assert_eq!(agent.call(Method::POST, &format!("/tasks/{done}/cancel"), None).await.status, StatusCode::BAD_REQUEST);
    let continued = agent.call(Method::POST, &format!("/tasks/{waiting}/send"), Some(&answer("staging"))).await;
    assert_eq!(continued.status, StatusCode::BAD_REQUEST, "a canceled task takes no more input");
    assert_eq!(
        agent.call(Method::POST, &format!("/tasks/{}/cancel", uuid()), None).await.status,
        StatusCode::NOT_FOUND
    );
    agent.stop().await;
}

#[tokio::test]
async fn early_refuses_what_does_not_fit() {
    let agent = start().await;
    let id = uuid();
    agent.ok(Method::POST, "/tasks/send", Some(&send_body(&id, "first", None))).await;
    let raw_body = |text: &str| text.to_owned();
    let cases: Vec<(Method, String, Option<Value>, StatusCode)> = vec![
        (Method::POST, "/tasks/send".into(), Some(send_body(&id, "again", None)), StatusCode::CONFLICT),
        (Method::POST, "/tasks/sendSubscribe".into(), Some(send_body(&id, "again", None)), StatusCode::CONFLICT),
        (Method::POST, "/tasks/send".into(), Some(send_body("task-1", "x", None)), StatusCode::UNPROCESSABLE_ENTITY),
        (Method::POST, "/tasks/send".into(), Some(answer("no id")), StatusCode::UNPROCESSABLE_ENTITY),
        (Method::POST, "/tasks/send".into(), Some(json!({"id": uuid()})), StatusCode::UNPROCESSABLE_ENTITY),
        (
            Method::POST,
            "/tasks/send".into(),
            Some(json!({"id": uuid(), "message": {"role": "user", "parts": [{"text": "untagged"}]}})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            Some(json!({"id": uuid(), "message": {"role": "agent", "parts": []}})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            Some(send_body(&uuid(), "x", Some("nope"))),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (Method::GET, format!("/tasks/{}", uuid()), None, StatusCode::NOT_FOUND),
        (Method::GET, format!("/tasks/{id}?historyLength=-1"), None, StatusCode::UNPROCESSABLE_ENTITY),
        (Method::POST, format!("/tasks/{}/send", uuid()), Some(answer("x")), StatusCode::NOT_FOUND),
        (
            Method::POST,
            format!("/tasks/{id}/send"),
            Some(json!({"id": uuid(), "message": {"role": "user", "parts": []}})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (Method::GET, "/tasks".into(), None, StatusCode::NOT_FOUND),
        (Method::DELETE, format!("/tasks/{id}"), None, StatusCode::METHOD_NOT_ALLOWED),
        (Method::GET, "/tasks/send".into(), None, StatusCode::METHOD_NOT_ALLOWED),
    ];
    for (method, path, body, want) in cases {
        let reply = agent.call(method.clone(), &path, body.as_ref()).await;
        assert_eq!(reply.status, want, "{method} {path} {body:?}: {}", String::from_utf8_lossy(&reply.raw));
        assert!(reply.json.get("detail").is_some(), "{method} {path}: {}", reply.json);
    }
    // Not JSON at all: FastAPI's 422, with where and what.
    let reply = agent
        .http
        .post(format!("{}/tasks/send", agent.base))
        .header("content-type", "application/json")
        .body(raw_body("{\"id\":"))
        .send()
        .await
        .expect("send");
    assert_eq!(reply.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let untagged = agent
        .call(
            Method::POST,
            "/tasks/send",
            Some(&json!({"id": uuid(), "message": {"role": "user", "parts": [{"text": "x"}]}})),
        )
        .await;
    assert_eq!(untagged.json["detail"][0]["loc"], json!(["body", "message", "parts", 0]));
    agent.stop().await;
}

#[tokio::test]
async fn early_requests_are_recorded() {
    let agent = start().await;
    let id = uuid();
    agent.ok(Method::POST, "/tasks/send", Some(&send_body(&id, "deploy", Some("early-clarify")))).await;
    agent.ok(Method::GET, &format!("/tasks/{id}"), None).await;
    agent.ok(Method::POST, &format!("/tasks/{id}/send"), Some(&answer("staging"))).await;
    agent.ok(Method::GET, "/.well-known/agent.json", None).await;
    let records = agent.ok(Method::GET, "/debug/requests", None).await;
    let seen: Vec<(&str, &str, &str)> = records
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            (
                r["operation"].as_str().unwrap_or(""),
                r["binding"].as_str().unwrap_or(""),
                r["taskId"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("tasks/send", "HTTP+JSON", ""),
            ("tasks/get", "HTTP+JSON", id.as_str()),
            ("tasks/continue", "HTTP+JSON", id.as_str()),
            ("GetAgentCard", "CARD", "")
        ]
    );
    assert_eq!(records[0]["headers"]["authorization"], "Bearer t");
    assert_eq!(records[0]["path"], "/tasks/send");
    let cleared = agent.call(Method::DELETE, "/debug/requests", None).await;
    assert_eq!(cleared.status, StatusCode::NO_CONTENT);
    assert_eq!(agent.ok(Method::GET, "/debug/requests", None).await, json!([]));
    assert_eq!(agent.call(Method::GET, "/healthz", None).await.status, StatusCode::OK);
    agent.stop().await;
}

/// `text` with every hyphenated UUID in it replaced by `<id>`.
fn mask_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        match rest.get(..36).filter(|w| w.as_bytes()[8] == b'-' && uuid::Uuid::try_parse(w).is_ok()) {
            Some(_) => {
                out.push_str("<id>");
                rest = &rest[36..];
            }
            None => {
                let next = rest.chars().next().map_or(1, char::len_utf8);
                out.push_str(&rest[..next]);
                rest = &rest[next..];
            }
        }
    }
    out
}

/// Replaces what differs between runs: UUIDs, timestamps, the agent's address.
fn mask(value: &Value, base: &str) -> Value {
    match value {
        Value::String(s) if s.len() >= 36 && mask_ids(s) != *s => Value::String(mask_ids(s)),
        Value::String(s) if s.len() > 20 && s.ends_with('Z') && s.as_bytes().get(10) == Some(&b'T') => json!("<ts>"),
        Value::String(s) if s.starts_with(base) => Value::String(s.replacen(base, "<base>", 1)),
        Value::String(s) if s.starts_with("session-") => json!("<session>"),
        Value::Array(items) => Value::Array(items.iter().map(|v| mask(v, base)).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), mask(v, base))).collect()),
        other => other.clone(),
    }
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dialects").join(name)
}

/// Writes (with `WRITE_EARLY_FIXTURES=1`) or checks one golden exchange.
fn golden(name: &str, exchange: Value, base: &str) {
    let path = fixture_path(name);
    if std::env::var_os("WRITE_EARLY_FIXTURES").is_some() {
        let text = serde_json::to_string_pretty(&exchange).expect("json") + "\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let stored: Value = serde_json::from_str(&text).expect("fixture JSON");
    let stored_base = stored["base"].as_str().unwrap_or_default().to_owned();
    assert_eq!(mask(&exchange, base), mask(&stored, &stored_base), "{name} no longer matches the agent");
}

#[tokio::test]
async fn early_answers_match_the_fixtures() {
    let agent = start().await;
    let base = agent.base.clone();
    let unary = |name: &'static str, method: &'static str, path: String, body: Option<Value>, reply: Reply| {
        let exchange = json!({"base": base, "request": {"method": method, "path": path, "body": body},
            "response": {"status": reply.status.as_u16(), "body": reply.json}});
        golden(name, exchange, &base);
    };
    let card = agent.call(Method::GET, "/.well-known/agent.json", None).await;
    unary("early-00-card.json", "GET", "/.well-known/agent.json".into(), None, card);

    let echo = uuid();
    let body = send_body(&echo, "hello gateway", None);
    let reply = agent.call(Method::POST, "/tasks/send", Some(&body)).await;
    unary("early-01-send-echo.json", "POST", "/tasks/send".into(), Some(body), reply);
    let reply = agent.call(Method::GET, &format!("/tasks/{echo}"), None).await;
    unary("early-02-get.json", "GET", format!("/tasks/{echo}"), None, reply);

    let body = send_body(&uuid(), "PR #123", None);
    let events = agent.stream(&body).await;
    golden(
        "early-03-sendSubscribe-echo.json",
        json!({"base": base, "request": {"method": "POST", "path": "/tasks/sendSubscribe", "body": body}, "events": events}),
        &base,
    );

    let asked = uuid();
    let body = send_body(&asked, "deploy my service", Some("early-clarify"));
    let reply = agent.call(Method::POST, "/tasks/send", Some(&body)).await;
    unary("early-04-clarify-turn1.json", "POST", "/tasks/send".into(), Some(body), reply);
    let body = answer("staging");
    let reply = agent.call(Method::POST, &format!("/tasks/{asked}/send"), Some(&body)).await;
    unary("early-05-clarify-turn2.json", "POST", format!("/tasks/{asked}/send"), Some(body), reply);

    let body = send_body(&uuid(), "deploy my service", Some("early-clarify"));
    let events = agent.stream(&body).await;
    golden(
        "early-06-sendSubscribe-clarify.json",
        json!({"base": base, "request": {"method": "POST", "path": "/tasks/sendSubscribe", "body": body}, "events": events}),
        &base,
    );
    let waiting = uuid();
    agent.ok(Method::POST, "/tasks/send", Some(&send_body(&waiting, "deploy my service", Some("early-clarify")))).await;
    let reply = agent.call(Method::POST, &format!("/tasks/{waiting}/cancel"), None).await;
    unary("early-07-cancel.json", "POST", format!("/tasks/{waiting}/cancel"), None, reply);

    let missing = uuid();
    let reply = agent.call(Method::GET, &format!("/tasks/{missing}"), None).await;
    unary("early-20-error-get-not-found.json", "GET", format!("/tasks/{missing}"), None, reply);
    let reply = agent.call(Method::POST, &format!("/tasks/{echo}/cancel"), None).await;
    unary("early-21-error-cancel-completed.json", "POST", format!("/tasks/{echo}/cancel"), None, reply);
    let body = send_body(&echo, "again", None);
    let reply = agent.call(Method::POST, "/tasks/send", Some(&body)).await;
    unary("early-22-error-duplicate-id.json", "POST", "/tasks/send".into(), Some(body), reply);
    let body = json!({"id": uuid(), "message": {"role": "user", "parts": [{"kind": "text", "text": "0.3 part"}]}});
    let reply = agent.call(Method::POST, "/tasks/send", Some(&body)).await;
    unary("early-23-error-bad-part.json", "POST", "/tasks/send".into(), Some(body), reply);
    agent.stop().await;
}
