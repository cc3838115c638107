//! The edge towards backends: an agent's failures, internals and oversize or over-deep input never
//! cross the gateway. The agent here is an in-test loopback server whose answers each test chooses.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2a_e2e::{client, config, gateway, text_message, wait_for_skills};
use axum::response::Response;
use serde_json::{Value, json};

use crate::BIN;

type Answer = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// A 1.0 agent (JSON-RPC at `/rpc`, HTTP+JSON under `/rest`) that answers every call with
/// `answer(path)` and counts the calls that reach it.
struct Lab {
    url: String,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const SECRET: &str = "hunter2";
const INTERNAL_HOST: &str = "db01.corp.internal:5432";

async fn start_lab(answer: Answer) -> Lab {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let hits = Arc::new(AtomicUsize::new(0));
    let card = json!({"name": "lab", "description": "a lab agent", "version": "1",
        "supportedInterfaces": [
            {"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "lab", "name": "Lab", "description": "d", "tags": []}]});
    let counter = hits.clone();
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card) }))
        .fallback(move |uri: http::Uri| {
            let (answer, counter) = (answer.clone(), counter.clone());
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                answer(uri.path())
            }
        });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Lab { url: base, hits, task }
}

fn respond(status: u16, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("server", "internal-app-server/7.1 (db01)")
        .header("x-powered-by", "Express")
        .header("via", "1.1 db01.corp.internal")
        .header("x-aspnet-version", "4.0.30319")
        .header("x-backend-host", INTERNAL_HOST)
        .body(axum::body::Body::from(body))
        .expect("response")
}

fn stack_trace() -> String {
    format!(
        "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 3\npsycopg2.OperationalError: could not connect to {INTERNAL_HOST} password={SECRET}\n"
    )
}

/// Sends one message in `binding` ("rpc" or "rest"); returns status, headers and body text.
async fn send(gw: &str, binding: &str, message: Value) -> (u16, http::HeaderMap, String) {
    let request = match binding {
        "rpc" => client()
            .post(format!("{gw}/"))
            .json(&json!({"jsonrpc": "2.0", "id": "e-1", "method": "SendMessage", "params": {"message": message}})),
        _ => client().post(format!("{gw}/message:send")).json(&json!({"message": message})),
    };
    let response = request.header("A2A-Version", "1.0").send().await.expect("send");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("body"))
}

fn assert_nothing_internal(text: &str, headers: &http::HeaderMap) {
    // "db01." (the host's name as the agent wrote it), not "db01": a random id's hex may hold that.
    for leak in [SECRET, "db01.", "Traceback", "psycopg2", "/srv/app", "<html"] {
        assert!(!text.contains(leak), "'{leak}' leaked: {text}");
    }
    for name in ["server", "x-powered-by", "via", "x-aspnet-version", "x-backend-host"] {
        assert!(headers.get(name).is_none(), "header {name} leaked: {headers:?}");
    }
}

#[tokio::test]
async fn an_agents_failure_becomes_the_gateways_error_with_a_request_id_in_log_and_audit() {
    let bodies: [(u16, &str, String); 3] = [
        (500, "text/plain", stack_trace()),
        (502, "text/html", format!("<html><body>nginx at {INTERNAL_HOST}</body></html>")),
        (
            200,
            "application/json",
            json!({"jsonrpc": "2.0", "id": "e-1", "error": {"code": -32603, "message": stack_trace(),
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INTERNAL_ERROR",
                "domain": "a2a-protocol.org", "metadata": {"dsn": format!("postgres://app:{SECRET}@{INTERNAL_HOST}")}}]}})
            .to_string(),
        ),
    ];
    for (status, content_type, body) in bodies {
        let answer: Answer = Arc::new(move |_| respond(status, content_type, body.clone()));
        let lab = start_lab(answer).await;
        let audit = std::env::temp_dir().join(format!("a2a-edge-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
        let extra = format!("audit:\n  file: {{path: {}}}\n", audit.display());
        let mut gw = gateway(BIN, &config(&[("lab", &lab.url)], &extra)).await;
        wait_for_skills(&gw.url, &["lab"]).await;
        for binding in ["rpc", "rest"] {
            let (code, headers, text) = send(&gw.url, binding, text_message("hi", Some("lab"))).await;
            assert_nothing_internal(&text, &headers);
            let request_id = headers["x-request-id"].to_str().expect("request id").to_string();
            let answer: Value = serde_json::from_str(&text).expect("the gateway's own JSON error");
            if binding == "rpc" {
                assert_eq!((code, answer["error"]["code"].as_i64()), (200, Some(-32603)), "{text}");
                assert_eq!(answer["id"], "e-1");
                assert_eq!(answer["error"]["data"][0]["reason"], "AGENT_FAILED", "{text}");
                assert_eq!(answer["error"]["data"][0]["metadata"]["requestId"], request_id.as_str());
            } else {
                assert_eq!(code, 502, "{text}");
                assert_eq!(answer["error"]["status"], "INTERNAL", "{text}");
            }
            assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains(&request_id)), "{text}");
            // The operator finds the agent's answer in the log under the same id.
            let log = gw.log_with(&[&request_id]).await;
            let line = log.lines().find(|l| l.contains(&request_id) && l.contains("answered with an error"));
            assert!(line.is_some_and(|l| l.contains("db01")), "request id {request_id} not in the log:\n{log}");
        }
        gw.signal("TERM");
        gw.wait(std::time::Duration::from_secs(10)).await;
        let records = std::fs::read_to_string(&audit).expect("audit file");
        let failed = records.lines().filter(|l| l.contains("AGENT_FAILED")).count();
        assert_eq!(failed, 2, "{records}");
        assert!(!records.contains(SECRET), "{records}");
        let _ = std::fs::remove_file(&audit);
    }
}

#[tokio::test]
async fn an_agents_protocol_errors_keep_their_code_but_not_their_internals() {
    let answer: Answer = Arc::new(|path| {
        let leaky = format!("invalid input; see {INTERNAL_HOST}");
        match path {
            "/rpc" => respond(
                200,
                "application/json",
                json!({"jsonrpc": "2.0", "id": "e-1", "error": {"code": -32602, "message": leaky,
                    "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INVALID_PARAMS",
                    "domain": "a2a-protocol.org", "metadata": {"password": SECRET}}]}})
                .to_string(),
            ),
            _ => respond(
                400,
                "application/json",
                json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "the field 'diff' is missing",
                    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INVALID_PARAMS",
                    "domain": "a2a-protocol.org", "metadata": {"password": SECRET}}]}})
                .to_string(),
            ),
        }
    });
    let lab = start_lab(answer).await;
    let gw = gateway(BIN, &config(&[("lab", &lab.url)], "")).await;
    wait_for_skills(&gw.url, &["lab"]).await;

    let (status, headers, text) = send(&gw.url, "rpc", text_message("hi", Some("lab"))).await;
    assert_nothing_internal(&text, &headers);
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!((status, answer["error"]["code"].as_i64()), (200, Some(-32602)), "{text}");
    assert_eq!(answer["error"]["message"], "Invalid parameters", "a message naming a host is replaced");
    assert_eq!(answer["error"]["data"][0]["reason"], "INVALID_PARAMS");

    let (status, headers, text) = send(&gw.url, "rest", text_message("hi", Some("lab"))).await;
    assert_nothing_internal(&text, &headers);
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!((status, answer["error"]["status"].as_str()), (400, Some("INVALID_ARGUMENT")), "{text}");
    assert_eq!(answer["error"]["message"], "the field 'diff' is missing", "a plain message is kept");
    assert_eq!(answer["error"]["details"][0]["reason"], "INVALID_PARAMS");
    assert!(!text.contains("password"), "the agent's metadata is dropped: {text}");
}

#[tokio::test]
async fn successful_answers_pass_without_the_agents_server_headers() {
    let answer: Answer = Arc::new(|_| {
        let task = json!({"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}});
        respond(200, "application/json", json!({"jsonrpc": "2.0", "id": "e-1", "result": {"task": task}}).to_string())
    });
    let lab = start_lab(answer).await;
    let gw = gateway(BIN, &config(&[("lab", &lab.url)], "")).await;
    wait_for_skills(&gw.url, &["lab"]).await;
    let (status, headers, text) = send(&gw.url, "rpc", text_message("hi", Some("lab"))).await;
    assert_eq!(status, 200);
    assert_nothing_internal(&text, &headers);
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["result"]["task"]["id"], "t-1", "{text}");
}

#[tokio::test]
async fn deeply_nested_requests_are_refused_before_they_are_forwarded() {
    let answer: Answer = Arc::new(|_| respond(500, "text/plain", "RecursionError: maximum recursion depth".into()));
    let lab = start_lab(answer).await;
    let gw = gateway(BIN, &config(&[("lab", &lab.url)], "")).await;
    wait_for_skills(&gw.url, &["lab"]).await;
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let mut message = text_message("hi", Some("lab"));
    let rpc = format!(
        r#"{{"jsonrpc":"2.0","id":"d-1","method":"SendMessage","params":{{"message":{}}}}}"#,
        message.to_string().replacen('{', &format!(r#"{{"metadata":{{"deep":{deep}}},"#), 1)
    );
    let response = client()
        .post(format!("{}/", gw.url))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(rpc)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 200);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("nested")), "{answer}");

    // The same in HTTP+JSON, nested inside a data part's sibling field.
    message["parts"] = json!([{"text": "x", "metadata": {"deep": "DEEP"}}]);
    let rest = json!({"message": message}).to_string().replace("\"DEEP\"", &deep);
    let response = client()
        .post(format!("{}/message:send", gw.url))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(rest)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 400);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(answer["error"]["status"], "INVALID_ARGUMENT", "{answer}");
    assert_eq!(lab.hits.load(Ordering::SeqCst), 0, "nothing reached the agent");
}

#[tokio::test]
async fn a_huge_card_fails_its_fetch_without_being_read_whole() {
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 150;
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    // A 150 MB card, streamed without a length; `served` counts the bytes the gateway pulled.
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move || {
            let counter = counter.clone();
            async move {
                const HEAD: &[u8] = br#"{"name":"huge","description":""#;
                let chunks = futures::stream::unfold(0usize, move |n| {
                    let counter = counter.clone();
                    async move {
                        let chunk = match n {
                            0 => bytes::Bytes::from_static(HEAD),
                            n if n <= CHUNKS => bytes::Bytes::from(vec![b'a'; CHUNK]),
                            n if n == CHUNKS + 1 => bytes::Bytes::from_static(br#"","skills":[{"id":"huge"}]}"#),
                            _ => return None,
                        };
                        counter.fetch_add(chunk.len(), Ordering::SeqCst);
                        Some((Ok::<_, std::io::Error>(chunk), n + 1))
                    }
                });
                Response::builder()
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from_stream(chunks))
                    .expect("response")
            }
        }),
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let echo = a2a_e2e::example_agent(BIN, "echo", &[]).await;
    let extra = "health:\n  interval: 30s\n  timeout: 20s\n  unhealthy_after: 1\n";
    let gw = gateway(BIN, &config(&[("huge", &base), ("echo", &echo.url)], extra)).await;
    let card = wait_for_skills(&gw.url, &["echo"]).await;
    assert!(!card.to_string().contains("huge"), "{card}");
    let log = gw.log_with(&["larger than limits.max_card_bytes"]).await;
    assert!(log.contains("larger than limits.max_card_bytes"), "{log}");
    let pulled = served.load(Ordering::SeqCst);
    // The default cap is 1 MiB; what the gateway pulled is that plus what sat in socket buffers.
    assert!(pulled < 16 * CHUNK, "the gateway read {pulled} bytes of the card");
    task.abort();
}
