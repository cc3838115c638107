//! Streaming clients: SSE per-event latency (the backend stamps each event as it writes it; the
//! client reads the stamp on the same clock as the bytes arrive) and many idle streams held open at
//! once for the memory measurement.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hdrhistogram::Histogram;
use http::{HeaderValue, Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::backend::{Clock, sent_stamp};
use crate::loadgen::histogram;

/// Where streams are opened: the JSON-RPC endpoint of a backend or of a gateway.
#[derive(Clone, Debug)]
pub struct StreamTarget {
    pub addr: SocketAddr,
    pub path: String,
}

/// A SendStreamingMessage body asking the backend for `events` events `interval_ms` apart
/// (`hold`: the last one only after the backend is told to release held streams).
pub fn stream_body(events: u32, interval_ms: u64, hold: bool) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{{"message":{{"messageId":"m-1","role":"ROLE_USER","parts":[{{"text":"stream"}}],"metadata":{{"skillId":"bench"}}}},"metadata":{{"benchEvents":{events},"benchIntervalMs":{interval_ms},"benchHold":{hold}}}}}}}"#
    )
}

/// What one SSE run measured.
pub struct SseStats {
    /// Backend write → client read, per event, in ns.
    pub latency: Histogram<u64>,
    pub events: u64,
    pub failed_streams: u64,
    pub first_error: Option<String>,
    /// (backend stamp, latency) of every event, in ns, when asked for (`trace`).
    pub trace: Vec<(u64, u64)>,
}

/// Opens `streams` streams (start times spread over one interval), each asking for `events` events
/// `interval` apart, and records every event's latency (and keeps each with its stamp, if `trace`).
pub async fn sse_latency(
    target: &StreamTarget,
    clock: Clock,
    streams: usize,
    events: u32,
    interval: Duration,
    trace: bool,
) -> SseStats {
    let latency = Arc::new(Mutex::new(histogram()));
    let received = Arc::new(AtomicU64::new(0));
    let trace = trace.then(|| Arc::new(Mutex::new(Vec::new())));
    let body = Bytes::from(stream_body(events, interval.as_millis() as u64, false));
    let start = tokio::time::Instant::now();
    let limit = interval * events + Duration::from_secs(15);
    let mut tasks = Vec::with_capacity(streams);
    for k in 0..streams {
        let offset = interval.mul_f64(k as f64 / streams as f64);
        let (target, body, latency, received) = (target.clone(), body.clone(), latency.clone(), received.clone());
        let trace = trace.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + offset).await;
            let run = one_stream(&target, clock, body, events, &latency, &received, trace.as_deref());
            match tokio::time::timeout(limit, run).await {
                Ok(result) => result,
                Err(_) => Err("stream timed out".to_string()),
            }
        }));
    }
    let mut failed = 0;
    let mut first_error = None;
    for task in tasks {
        let result = task.await.unwrap_or_else(|e| Err(format!("stream task: {e}")));
        if let Err(error) = result {
            failed += 1;
            first_error.get_or_insert(error);
        }
    }
    let latency = latency.lock().map(|h| h.clone()).unwrap_or_else(|_| histogram());
    let trace = trace.and_then(|t| t.lock().ok().map(|mut t| std::mem::take(&mut *t))).unwrap_or_default();
    SseStats { latency, events: received.load(Ordering::Relaxed), failed_streams: failed, first_error, trace }
}

async fn one_stream(
    target: &StreamTarget,
    clock: Clock,
    body: Bytes,
    events: u32,
    latency: &Mutex<Histogram<u64>>,
    received: &AtomicU64,
    trace: Option<&Mutex<Vec<(u64, u64)>>>,
) -> Result<(), String> {
    let stream = TcpStream::connect(target.addr).await.map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    // Ends with the stream: this function owns `sender` and drops it on return.
    tokio::spawn(connection);
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = target.path.parse().map_err(|_| "bad path".to_string())?;
    let headers = request.headers_mut();
    headers.insert(header::HOST, HeaderValue::from_str(&target.addr.to_string()).map_err(|e| e.to_string())?);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.insert("a2a-version", HeaderValue::from_static("1.0"));
    let response = sender.send_request(request).await.map_err(|e| format!("request: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let mut body = response.into_body();
    let mut buffer: Vec<u8> = Vec::with_capacity(1024);
    let mut seen = 0u32;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        let now = clock.now_ns();
        let Some(data) = frame.data_ref() else { continue };
        buffer.extend_from_slice(data);
        while let Some(end) = event_end(&buffer) {
            if let Some(sent) = sent_stamp(&buffer[..end]) {
                seen += 1;
                if let Ok(mut h) = latency.lock() {
                    h.saturating_record(now.saturating_sub(sent));
                }
                if let Some(Ok(mut t)) = trace.map(Mutex::lock) {
                    t.push((sent, now.saturating_sub(sent)));
                }
            }
            buffer.drain(..end);
        }
    }
    received.fetch_add(u64::from(seen), Ordering::Relaxed);
    if seen != events {
        return Err(format!("stream ended after {seen} of {events} events"));
    }
    Ok(())
}

/// The end (exclusive) of the first complete event in `buffer`, LF or CRLF framed.
fn event_end(buffer: &[u8]) -> Option<usize> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Streams held open by [`open_idle`]; closing them is dropping this.
pub struct IdleStreams {
    pub open: Vec<TcpStream>,
    pub failed: usize,
    pub first_error: Option<String>,
}

/// Opens `count` streams that receive their first event and then stay quiet, `parallel` at a time,
/// spreading the client ends over `sources` (loopback addresses) so no one address runs out of ports.
pub async fn open_idle(target: &StreamTarget, count: usize, sources: &[Ipv4Addr], parallel: usize) -> IdleStreams {
    let body = stream_body(2, 0, true);
    let request = Arc::new(format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        target.path,
        target.addr,
        body.len()
    ));
    let sources: Vec<Ipv4Addr> = if sources.is_empty() { vec![Ipv4Addr::LOCALHOST] } else { sources.to_vec() };
    let results: Vec<Result<TcpStream, String>> = futures::stream::iter(0..count)
        .map(|i| {
            let source = sources[i % sources.len()];
            let request = request.clone();
            let addr = target.addr;
            async move {
                match tokio::time::timeout(Duration::from_secs(20), open_one(addr, source, &request)).await {
                    Ok(result) => result,
                    Err(_) => Err("timed out waiting for the first event".to_string()),
                }
            }
        })
        .buffer_unordered(parallel.max(1))
        .collect()
        .await;
    let mut idle = IdleStreams { open: Vec::with_capacity(count), failed: 0, first_error: None };
    for result in results {
        match result {
            Ok(stream) => idle.open.push(stream),
            Err(error) => {
                idle.failed += 1;
                idle.first_error.get_or_insert(error);
            }
        }
    }
    idle
}

async fn open_one(addr: SocketAddr, source: Ipv4Addr, request: &str) -> Result<TcpStream, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    socket.bind(SocketAddrV4::new(source, 0).into()).map_err(|e| format!("bind {source}: {e}"))?;
    let mut stream = socket.connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    stream.write_all(request.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err(format!("closed before the first event: {}", String::from_utf8_lossy(&buffer)));
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(12).position(|w| w == b"\"benchSentNs") {
            if event_end(&buffer[at..]).is_some() {
                return Ok(stream);
            }
        } else if buffer.starts_with(b"HTTP/1.1 ") && !buffer.starts_with(b"HTTP/1.1 200") && buffer.len() > 12 {
            return Err(format!("refused: {}", String::from_utf8_lossy(&buffer[..buffer.len().min(200)])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_end_finds_either_framing() {
        assert_eq!(event_end(b"data: a\n\ndata: b"), Some(9));
        assert_eq!(event_end(b"data: a\r\n\r\n"), Some(11));
        assert_eq!(event_end(b"data: a\n"), None);
    }

    #[tokio::test]
    async fn every_event_of_every_stream_is_timed() {
        let clock = Clock::new();
        let backend = crate::backend::Backend::start(clock).unwrap();
        let target = StreamTarget { addr: backend.addr, path: crate::backend::RPC_PATH.into() };
        let stats = sse_latency(&target, clock, 3, 5, Duration::from_millis(5), false).await;
        assert_eq!(stats.failed_streams, 0, "{:?}", stats.first_error);
        assert_eq!(stats.events, 15);
        assert_eq!(stats.latency.len(), 15);
        // Same clock on both ends: latencies are small and positive.
        assert!(stats.latency.max() < 1_000_000_000);
        assert!(stats.trace.is_empty(), "kept events nobody asked for");
    }

    #[tokio::test]
    async fn a_traced_run_keeps_every_event_with_its_stamp() {
        let clock = Clock::new();
        let backend = crate::backend::Backend::start(clock).unwrap();
        let target = StreamTarget { addr: backend.addr, path: crate::backend::RPC_PATH.into() };
        let before = clock.now_ns();
        let stats = sse_latency(&target, clock, 2, 4, Duration::from_millis(5), true).await;
        let after = clock.now_ns();
        assert_eq!(stats.trace.len(), 8);
        for &(sent, latency) in &stats.trace {
            assert!(before <= sent && sent + latency <= after, "{sent} + {latency} outside {before}..{after}");
        }
        let mut latencies: Vec<u64> = stats.trace.iter().map(|t| t.1).collect();
        latencies.sort_unstable();
        assert_eq!(stats.latency.max(), stats.latency.highest_equivalent(*latencies.last().unwrap()));
    }

    #[tokio::test]
    async fn idle_streams_hold_until_released() {
        let backend = crate::backend::Backend::start(Clock::new()).unwrap();
        let target = StreamTarget { addr: backend.addr, path: crate::backend::RPC_PATH.into() };
        let sources = [Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];
        let mut idle = open_idle(&target, 20, &sources, 8).await;
        assert_eq!((idle.open.len(), idle.failed), (20, 0), "{:?}", idle.first_error);
        let peer = idle.open[1].local_addr().unwrap();
        assert!(peer.ip() == Ipv4Addr::new(127, 0, 0, 2) || peer.ip() == Ipv4Addr::new(127, 0, 0, 3));
        // Quiet until released; then the last event arrives.
        let mut buffer = [0u8; 4096];
        let quiet = tokio::time::timeout(Duration::from_millis(100), idle.open[0].read(&mut buffer)).await;
        assert!(quiet.is_err(), "a held stream sent something before the release");
        backend.release_held();
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("TASK_STATE_COMPLETED") {
            let n =
                tokio::time::timeout(Duration::from_secs(5), idle.open[0].read(&mut buffer)).await.unwrap().unwrap();
            assert!(n > 0, "closed before the last event");
            seen.extend_from_slice(&buffer[..n]);
        }
    }

    #[test]
    fn stream_body_is_json() {
        let body: serde_json::Value = serde_json::from_str(&stream_body(3, 5, true)).unwrap();
        assert_eq!(body["params"]["metadata"]["benchEvents"], 3);
        assert_eq!(body["params"]["metadata"]["benchHold"], true);
    }
}
