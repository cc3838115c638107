//! Starts an agent on 127.0.0.1:0 and talks to it over real HTTP.

#![allow(dead_code)]

use std::time::Duration;

use a2a_example_agents::{AgentKind, AgentOptions, serve};
use futures::StreamExt;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Upper bound for any single wait in these tests.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub struct TestAgent {
    pub base: String,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<std::io::Result<()>>,
}

/// Short delays so the suite stays fast; the slow agent still outlives any cancel test.
pub fn fast_options() -> AgentOptions {
    AgentOptions {
        name: None,
        slow_duration: Duration::from_secs(5),
        step_delay: Duration::from_millis(20),
        store: Default::default(),
    }
}

pub async fn start(kind: AgentKind) -> TestAgent {
    start_with(kind, fast_options()).await
}

pub async fn start_with(kind: AgentKind, options: AgentOptions) -> TestAgent {
    // reqwest is built without a TLS crypto provider; building a Client needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(kind, listener, options, async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::builder().timeout(PATIENCE).build().expect("http client");
    TestAgent { base, http, stop: Some(stop), server }
}

/// A user message with one text part.
pub fn user_text(text: &str) -> Value {
    json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }
}

impl TestAgent {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let finished = tokio::time::timeout(PATIENCE, &mut self.server).await;
        assert!(matches!(finished, Ok(Ok(Ok(())))), "server did not stop cleanly: {finished:?}");
    }

    /// Posts a raw body to the JSON-RPC endpoint.
    pub async fn rpc_raw(&self, body: &str, version: Option<&str>) -> Reply {
        let mut request =
            self.http.post(self.url("/a2a/jsonrpc")).header("content-type", "application/json").body(body.to_owned());
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        reply(request.send().await.expect("jsonrpc request")).await
    }

    /// A 1.0 JSON-RPC call with id "req"; returns the whole response object.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": "req", "method": method, "params": params});
        let reply = self.rpc_raw(&body.to_string(), Some("1.0")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        assert_eq!(reply.content_type(), "application/json");
        reply.json
    }

    /// A JSON-RPC call expected to succeed; returns its `result`.
    pub async fn rpc_ok(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response.get("error").is_none(), "{response}");
        assert_eq!(response["jsonrpc"], "2.0");
        assert_eq!(response["id"], "req");
        response["result"].clone()
    }

    /// A JSON-RPC call expected to fail; returns its `error`.
    pub async fn rpc_err(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response.get("result").is_none(), "{response}");
        response["error"].clone()
    }

    /// Opens a JSON-RPC stream.
    pub async fn rpc_stream(&self, method: &str, params: Value) -> SseReader {
        let body = json!({"jsonrpc": "2.0", "id": "stream-req", "method": method, "params": params});
        let response = self
            .http
            .post(self.url("/a2a/jsonrpc"))
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .expect("stream request");
        SseReader::new(response)
    }

    /// All events of a JSON-RPC stream, unwrapped from their envelopes (each checked).
    pub async fn rpc_stream_all(&self, method: &str, params: Value) -> Vec<Value> {
        let events = self.rpc_stream(method, params).await.all().await;
        events
            .into_iter()
            .map(|event| {
                assert_eq!(event["jsonrpc"], "2.0", "{event}");
                assert_eq!(event["id"], "stream-req", "{event}");
                event["result"].clone()
            })
            .collect()
    }

    /// An HTTP+JSON request with `A2A-Version: 1.0`.
    pub async fn rest(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut request = self.http.request(method, self.url(&format!("/a2a/rest{path}"))).header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request.json(&body);
        }
        reply(request.send().await.expect("rest request")).await
    }

    /// An HTTP+JSON request expected to succeed with `application/a2a+json`.
    pub async fn rest_ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let reply = self.rest(method, path, body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        assert_eq!(reply.content_type(), "application/a2a+json");
        reply.json
    }

    /// Opens an HTTP+JSON stream.
    pub async fn rest_stream(&self, method: Method, path: &str, body: Option<Value>) -> SseReader {
        let mut request = self
            .http
            .request(method, self.url(&format!("/a2a/rest{path}")))
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream");
        if let Some(body) = body {
            request = request.json(&body);
        }
        SseReader::new(request.send().await.expect("stream request"))
    }

    /// The agent's request log.
    pub async fn recorded(&self) -> Vec<Value> {
        let response = self.http.get(self.url("/debug/requests")).send().await.expect("debug request");
        let json: Value = response.json().await.expect("debug json");
        json.as_array().cloned().expect("an array")
    }
}

async fn reply(response: reqwest::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply { status, headers, text, json }
}

/// Reads SSE events as they arrive, checking the SDK framing: each event exactly
/// `data: <json>\r\n\r\n`, nothing else but `: ` comments.
pub struct SseReader {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl SseReader {
    fn new(response: reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
        }
    }

    pub fn assert_sse_headers(&self) {
        assert_eq!(self.status, StatusCode::OK);
        assert_eq!(
            self.headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("text/event-stream; charset=utf-8")
        );
        assert_eq!(self.headers.get("cache-control").and_then(|v| v.to_str().ok()), Some("no-store"));
    }

    /// The next event, or `None` once the server closed the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                let frame: Vec<u8> = self.buffer.drain(..end + 4).collect();
                let text = String::from_utf8(frame).expect("utf-8 frame");
                if text.starts_with(": ") {
                    continue;
                }
                let json = text
                    .strip_prefix("data: ")
                    .and_then(|rest| rest.strip_suffix("\r\n\r\n"))
                    .unwrap_or_else(|| panic!("not an SDK-framed event: {text:?}"));
                assert!(!json.contains('\n'), "one line per event: {text:?}");
                return Some(serde_json::from_str(json).expect("event json"));
            }
            let chunk = tokio::time::timeout(PATIENCE, self.body.next()).await.expect("stream went quiet");
            match chunk {
                Some(chunk) => self.buffer.extend_from_slice(&chunk.expect("stream chunk")),
                None => {
                    assert!(self.buffer.is_empty(), "trailing bytes: {:?}", self.buffer);
                    return None;
                }
            }
        }
    }

    /// Every remaining event until the server closes the stream.
    pub async fn all(mut self) -> Vec<Value> {
        self.assert_sse_headers();
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// The one key of a StreamResponse (`task`, `statusUpdate`, …).
pub fn kind(event: &Value) -> &str {
    let object = event.as_object().expect("event object");
    assert_eq!(object.len(), 1, "exactly one member: {event}");
    object.keys().next().map(String::as_str).unwrap_or_default()
}

/// The state carried by a `task` or `statusUpdate` event.
pub fn state(event: &Value) -> &str {
    event
        .get("task")
        .or_else(|| event.get("statusUpdate"))
        .and_then(|e| e["status"]["state"].as_str())
        .unwrap_or_default()
}

/// The text of a status message.
pub fn status_text(status_holder: &Value) -> &str {
    status_holder["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default()
}
