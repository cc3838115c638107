//! The SSE relay: events reach the caller one at a time as the backend writes them (no buffering),
//! and the bytes are exactly the backend's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_e2e::{capture_body, config, gateway, read_until, split_events, wait_for_skills};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Notify;

use crate::BIN;

/// A backend built for these tests: a real HTTP server on loopback whose streams the test controls.
struct StreamBackend {
    url: String,
    /// Lets the lock-step stream send its second event.
    release: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StreamBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct BackendState {
    base: String,
    release: Arc<Notify>,
}

const EVENT_ONE: &str = "data: {\"result\": {\"task\": {\"id\": \"lock-1\", \"contextId\": \"ctx-1\", \"status\": {\"state\": \"TASK_STATE_WORKING\"}}}, \"id\": \"t-1\", \"jsonrpc\": \"2.0\"}\r\n\r\n";
const EVENT_TWO: &str = "data: {\"result\": {\"statusUpdate\": {\"taskId\": \"lock-1\", \"contextId\": \"ctx-1\", \"status\": {\"state\": \"TASK_STATE_COMPLETED\"}}}, \"id\": \"t-1\", \"jsonrpc\": \"2.0\"}\r\n\r\n";

/// A REST stream with every SSE feature a relay could trip on: comments, ids, event names, retry,
/// multi-line data, LF and CRLF framing, and a keep-alive ping from the reference SDK's capture.
fn quirky_stream() -> Vec<Vec<u8>> {
    let mut chunks: Vec<Vec<u8>> = vec![
        b": hello from the backend\r\n\r\n".to_vec(),
        b"retry: 2500\nid: 1\nevent: update\ndata: {\"task\": {\"id\": \"quirk-1\", \"contextId\": \"qc\", \"status\": {\"state\": \"TASK_STATE_SUBMITTED\"}}}\n\n".to_vec(),
        b"id: 2\ndata: {\"statusUpdate\": {\"taskId\": \"quirk-1\",\ndata:  \"status\": {\"state\": \"TASK_STATE_WORKING\"}}}\r\n\r\n".to_vec(),
        "data: {\"artifactUpdate\": {\"taskId\": \"quirk-1\", \"artifact\": {\"artifactId\": \"a\", \"parts\": [{\"text\": \"h\u{e9}llo \u{1f600}\"}]}}}\r\n\r\n".as_bytes().to_vec(),
    ];
    // Half an event in one chunk, the rest in the next.
    chunks.push(b"data: {\"statusUpdate\": {\"taskId\": \"quirk-1\", \"sta".to_vec());
    chunks.push(b"tus\": {\"state\": \"TASK_STATE_COMPLETED\"}}}\r\n\r\n: bye\r\n\r\n".to_vec());
    chunks
}

async fn start_backend() -> StreamBackend {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let release = Arc::new(Notify::new());
    let state = BackendState { base: base.clone(), release: release.clone() };
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/rpc", post(lockstep))
        .route("/rest/message:stream", post(quirky))
        .route("/rest/tasks/{id}", get(capture_stream))
        .with_state(state);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    StreamBackend { url: base, release, task }
}

async fn card(State(state): State<BackendState>) -> axum::Json<serde_json::Value> {
    axum::Json(json!({
        "name": "stream lab",
        "description": "test backend",
        "version": "1",
        "supportedInterfaces": [
            {"url": format!("{}/rpc", state.base), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{}/rest", state.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "lockstep", "name": "lockstep", "description": "d", "tags": []}]
    }))
}

fn sse(body: Body) -> axum::response::Response {
    axum::response::Response::builder()
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-store")
        .body(body)
        .unwrap()
}

/// Sends event one, then waits — as long as it takes — for the test to say its client saw event one
/// through the gateway, then sends event two. A relay that holds bytes back never delivers event one.
async fn lockstep(State(state): State<BackendState>, body: bytes::Bytes) -> axum::response::Response {
    if body.windows(9).any(|w| w == b"\"GetTask\"") {
        let task = json!({"result": {"id": "lock-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}},
            "id": "t-1", "jsonrpc": "2.0"});
        return axum::Json(task).into_response();
    }
    let stream = futures::stream::unfold(0u8, move |step| {
        let release = state.release.clone();
        async move {
            match step {
                0 => Some((Ok::<_, std::io::Error>(bytes::Bytes::from_static(EVENT_ONE.as_bytes())), 1)),
                1 => {
                    release.notified().await;
                    Some((Ok(bytes::Bytes::from_static(EVENT_TWO.as_bytes())), 2))
                }
                _ => None,
            }
        }
    });
    sse(Body::from_stream(stream))
}

fn paced(chunks: Vec<Vec<u8>>) -> axum::response::Response {
    let stream = futures::stream::iter(chunks).then(|chunk| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok::<_, std::io::Error>(bytes::Bytes::from(chunk))
    });
    sse(Body::from_stream(stream))
}

async fn quirky() -> axum::response::Response {
    paced(quirky_stream())
}

/// Replays the reference SDK's captured keep-alive stream (pings included), event by event.
async fn capture_stream() -> axum::response::Response {
    paced(split_events(&capture_body("stream-keepalive-ping.txt")))
}

async fn gateway_for(backend: &StreamBackend) -> a2a_e2e::Proc {
    let gw = gateway(BIN, &config(&[("lab", &backend.url)], "")).await;
    wait_for_skills(&gw.url, &["lockstep"]).await;
    gw
}

#[tokio::test]
async fn events_are_relayed_one_at_a_time_without_buffering() {
    let backend = start_backend().await;
    let gw = gateway_for(&backend).await;
    let body = json!({"jsonrpc": "2.0", "id": "t-1", "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "go"}], "metadata": {"skillId": "lockstep"}}}});
    let request = a2a_e2e::client().post(format!("{}/", gw.url)).header("A2A-Version", "1.0").json(&body).send();
    // A relay that buffers the whole stream would not even send the headers before event two.
    let response = tokio::time::timeout(Duration::from_secs(10), request).await.expect("headers arrive").unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut stream = response.bytes_stream();
    let mut got = Vec::new();
    // Event two cannot exist yet: the backend waits for this read to succeed before writing it.
    read_until(&mut stream, &mut got, EVENT_ONE.as_bytes(), Duration::from_secs(10)).await;
    assert_eq!(got, EVENT_ONE.as_bytes());
    backend.release.notify_one();
    read_until(&mut stream, &mut got, EVENT_TWO.as_bytes(), Duration::from_secs(10)).await;
    assert!(stream.next().await.is_none(), "stream ends after the terminal event");
    assert_eq!(got, [EVENT_ONE, EVENT_TWO].concat().as_bytes());

    // The tap learned the task from the stream: GetTask is routed to the lab backend instead of being
    // answered TaskNotFound by the gateway.
    let answer = a2a_e2e::rpc(&format!("{}/", gw.url), "GetTask", json!({"id": "lock-1"})).await;
    assert_eq!(answer["result"]["id"], "lock-1", "{answer}");
}

async fn read_all(url: String, method: reqwest::Method) -> Vec<u8> {
    let mut request = a2a_e2e::client().request(method.clone(), url).header("A2A-Version", "1.0");
    if method == reqwest::Method::POST {
        request = request.body("{\"message\": {\"parts\": []}}");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn relayed_stream_bytes_equal_the_backend_bytes() {
    let backend = start_backend().await;
    let gw = gateway_for(&backend).await;

    let direct = read_all(format!("{}/rest/message:stream", backend.url), reqwest::Method::POST).await;
    assert_eq!(direct, quirky_stream().concat(), "the backend itself sends the fixture");
    let relayed = read_all(format!("{}/agents/lab/message:stream", gw.url), reqwest::Method::POST).await;
    assert_eq!(relayed, direct);

    // The reference SDK's own bytes (CRLF framing, `: ping` keep-alives), learned as a task first.
    let replay = capture_body("stream-keepalive-ping.txt");
    let direct = read_all(format!("{}/rest/tasks/any", backend.url), reqwest::Method::GET).await;
    assert_eq!(direct, replay);
    // The quirky stream above taught the gateway task quirk-1: a task-scoped GET is routed to its owner.
    // The capture was cut before its task ended: its bytes come unchanged, then the one event the
    // gateway adds to a stream that ends without a final state (the stream contract).
    let relayed = read_all(format!("{}/tasks/quirk-1", gw.url), reqwest::Method::GET).await;
    assert_eq!(relayed[..replay.len()], replay[..]);
    let added = a2a_e2e::sse_data(&relayed[replay.len()..]);
    assert_eq!(added.len(), 1, "one event added");
    let added: serde_json::Value = serde_json::from_str(&added[0]).unwrap();
    // (The capture is JSON-RPC served on a REST path, so the REST tap learned no task from it: the
    // ending is an error event in the REST form.)
    assert_eq!(added["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE", "{added}");
}
