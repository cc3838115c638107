//! SSE on the wire: HTTP/1.1 chunked framing with one chunk per event, read off a raw socket
//! (like the `stream-raw-chunked-review` capture), and shutdown ending open streams.

mod common;

use std::time::{Duration, Instant};

use a2a_example_agents::AgentKind;
use common::{PATIENCE, start, user_text};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one HTTP/1.1 request and returns the response head and the raw body bytes.
async fn raw_exchange(base: &str, path: &str, body: &str) -> (String, Vec<u8>) {
    let addr = base.trim_start_matches("http://");
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nA2A-Version: 1.0\r\nAccept: text/event-stream\r\n\
         Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, socket.read_to_end(&mut raw)).await.expect("response in time").expect("read");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    (head, raw[split + 4..].to_vec())
}

/// Splits a chunked body into its chunks (without the final empty one).
fn chunks(mut body: &[u8]) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
        let size_text = String::from_utf8_lossy(&body[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.trim(), 16).expect("hex chunk size");
        body = &body[line_end + 2..];
        if size == 0 {
            assert_eq!(body, b"\r\n", "body ends after the last chunk");
            return chunks;
        }
        chunks.push(body[..size].to_vec());
        assert_eq!(&body[size..size + 2], b"\r\n");
        body = &body[size + 2..];
    }
}

#[tokio::test]
async fn every_event_is_one_chunk_with_crlf_framing() {
    let agent = start(AgentKind::Review).await;
    let body = json!({"jsonrpc": "2.0", "id": "raw-1", "method": "SendStreamingMessage",
        "params": {"message": user_text("PR #999")}})
    .to_string();
    let (head, body) = raw_exchange(&agent.base, "/a2a/jsonrpc", &body).await;
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream; charset=utf-8"), "{head}");
    assert!(head.contains("cache-control: no-store"), "{head}");
    assert!(head.contains("x-accel-buffering: no"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let chunks = chunks(&body);
    assert_eq!(chunks.len(), 6, "snapshot, three steps, artifact, completed");
    for chunk in &chunks {
        let text = std::str::from_utf8(chunk).expect("utf-8");
        let json = text
            .strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\r\n\r\n"))
            .unwrap_or_else(|| panic!("framing: {text:?}"));
        assert!(!json.contains('\n'), "one line: {json}");
        assert!(json.starts_with(r#"{"result":{""#), "compact JSON: {json}");
        let event: Value = serde_json::from_str(json).expect("json");
        assert_eq!(event["id"], "raw-1");
        assert_eq!(event["jsonrpc"], "2.0");
    }
    agent.stop().await;
}

#[tokio::test]
async fn events_arrive_as_they_are_produced() {
    let options = a2a_example_agents::AgentOptions { step_delay: Duration::from_millis(200), ..common::fast_options() };
    let agent = common::start_with(AgentKind::Review, options).await;
    let started = Instant::now();
    let mut stream =
        agent.rest_stream(reqwest::Method::POST, "/message:stream", Some(json!({"message": user_text("PR")}))).await;
    let mut arrivals = Vec::new();
    while let Some(_event) = stream.next().await {
        arrivals.push(started.elapsed());
    }
    assert_eq!(arrivals.len(), 6);
    // The snapshot and the first step come at once; the completion only after three delays.
    assert!(arrivals[1] < Duration::from_millis(150), "{arrivals:?}");
    assert!(arrivals[5] >= Duration::from_millis(600), "{arrivals:?}");
    agent.stop().await;
}

#[tokio::test]
async fn shutdown_ends_open_streams() {
    let agent = start(AgentKind::Slow).await;
    let mut stream = agent.rpc_stream("SendStreamingMessage", json!({"message": user_text("long")})).await;
    assert!(stream.next().await.is_some());
    let started = Instant::now();
    agent.stop().await;
    assert!(started.elapsed() < Duration::from_secs(3), "did not wait for the 5 s task");
    let rest = tokio::time::timeout(PATIENCE, async { while stream.next().await.is_some() {} }).await;
    assert!(rest.is_ok(), "stream closed at shutdown");
}
