//! Over 400 lines on purpose: `bin/stream-memory.rs` includes this file by `#[path]`, where its
//! submodules would resolve beside it instead of below it, so it stays one file.
//!
//! The load generator: a pool of keep-alive HTTP/1.1 connections (hyper's client), an open-loop
//! mode and a closed-loop probe.
//!
//! Open loop: request `i` is due at `start + i / rate`. A dedicated thread with a fine timer slack
//! releases each request at its due time; latency is measured from that *intended* time, so a stall
//! anywhere (in the target or in this tool) shows up in the histogram instead of silently delaying
//! later sends (no coordinated omission). Requests wait in a queue for a free connection; at most
//! `max_in_flight` may be queued or running, and a due request beyond that is counted as an
//! overflow error rather than sent late.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{HeaderMap, HeaderValue, Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

/// How long one request may take before it counts as failed (and its connection is dropped).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a run waits for its last requests once every request has been released.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// One kind of request, sent over and over.
#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The answer must be a JSON-RPC result (JSON-RPC errors come with HTTP 200).
    pub expect_result: bool,
}

impl Target {
    /// A JSON-RPC POST of `body` to `path`, with an optional bearer token.
    pub fn rpc(addr: SocketAddr, path: &str, body: Bytes, token: Option<&str>) -> anyhow::Result<Target> {
        let mut headers = base_headers(addr)?;
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(token) = token {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}"))?);
        }
        Ok(Target { addr, method: Method::POST, path: path.to_string(), headers, body, expect_result: true })
    }

    /// A GET of `path`.
    pub fn get(addr: SocketAddr, path: &str) -> anyhow::Result<Target> {
        let headers = base_headers(addr)?;
        Ok(Target {
            addr,
            method: Method::GET,
            path: path.to_string(),
            headers,
            body: Bytes::new(),
            expect_result: false,
        })
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.path.parse().unwrap_or_default();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

fn base_headers(addr: SocketAddr) -> anyhow::Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    headers.insert(header::HOST, HeaderValue::from_str(&addr.to_string())?);
    headers.insert("a2a-version", HeaderValue::from_static("1.0"));
    Ok(headers)
}

/// The JSON-RPC SendMessage body the unary scenarios send.
pub fn send_message_body() -> Bytes {
    Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}],"metadata":{"skillId":"bench"}}}}"#,
    )
}

/// Latency histogram in nanoseconds (1 ns unit, so microseconds keep 3 significant figures), up to a
/// minute.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// What one run measured.
pub struct RunStats {
    /// From intended send time to the whole answer read, in ns (successful requests only).
    pub latency: Histogram<u64>,
    /// From intended send time to the moment a connection started sending it, in ns.
    pub lag: Histogram<u64>,
    pub ok: u64,
    /// Due requests dropped because `max_in_flight` were already queued or running.
    pub overflow: u64,
    /// Transport failures, timeouts, non-2xx statuses and JSON-RPC errors.
    pub failed: u64,
    pub elapsed: Duration,
    pub first_error: Option<String>,
}

impl RunStats {
    pub fn errors(&self) -> u64 {
        self.overflow + self.failed
    }

    pub fn achieved_rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

type Conn = SendRequest<Full<Bytes>>;

/// A fixed set of keep-alive connections to one target.
pub struct Pool {
    target: Arc<Target>,
    conns: Vec<Option<Conn>>,
    /// How long one request may take before it counts as failed.
    pub timeout: Duration,
}

struct Shared {
    target: Arc<Target>,
    timeout: Duration,
    latency: Mutex<Histogram<u64>>,
    lag: Mutex<Histogram<u64>>,
    ok: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Shared {
    fn new(target: Arc<Target>, timeout: Duration) -> Shared {
        Shared {
            target,
            timeout,
            latency: Mutex::new(histogram()),
            lag: Mutex::new(histogram()),
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            first_error: Mutex::new(None),
        }
    }

    fn record(&self, intended: Instant, started: Instant, result: Result<(), String>) {
        let done = Instant::now();
        if let Ok(mut lag) = self.lag.lock() {
            lag.saturating_record(nanos(started.saturating_duration_since(intended)));
        }
        match result {
            Ok(()) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut latency) = self.latency.lock() {
                    latency.saturating_record(nanos(done.saturating_duration_since(intended)));
                }
            }
            Err(error) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut first) = self.first_error.lock() {
                    first.get_or_insert(error);
                }
            }
        }
    }
}

pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Pool {
    /// Opens `connections` connections to `target`.
    pub async fn connect(target: Target, connections: usize) -> anyhow::Result<Pool> {
        let target = Arc::new(target);
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let conn = connect(&target).await.map_err(anyhow::Error::msg);
            conns.push(Some(conn.with_context(|| format!("connecting to {}", target.addr))?));
        }
        Ok(Pool { target, conns, timeout: REQUEST_TIMEOUT })
    }

    /// Sends `rate` requests per second for `duration`, open loop.
    pub async fn open_loop(&mut self, rate: f64, duration: Duration, max_in_flight: usize) -> RunStats {
        let count = (rate * duration.as_secs_f64()).round().max(1.0) as u64;
        let shared = Arc::new(Shared::new(self.target.clone(), self.timeout));
        let (tx, rx) = mpsc::unbounded_channel::<Instant>();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let overflow = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now() + Duration::from_millis(2);
        let ticker = {
            let (in_flight, overflow, stop) = (in_flight.clone(), overflow.clone(), stop.clone());
            std::thread::spawn(move || tick(start, rate, count, &tx, &in_flight, max_in_flight, &overflow, &stop))
        };
        let mut workers = Vec::with_capacity(self.conns.len());
        for conn in self.conns.drain(..) {
            let (shared, rx, in_flight) = (shared.clone(), rx.clone(), in_flight.clone());
            workers.push(tokio::spawn(async move {
                let mut conn = conn;
                loop {
                    let next = rx.lock().await.recv().await;
                    let Some(intended) = next else { break };
                    let started = Instant::now();
                    let result = send(&mut conn, &shared.target, shared.timeout).await;
                    in_flight.fetch_sub(1, Ordering::AcqRel);
                    shared.record(intended, started, result);
                }
                conn
            }));
        }
        let deadline = tokio::time::Instant::now() + duration + DRAIN_TIMEOUT.min(self.timeout * 2);
        for worker in workers {
            let abort = worker.abort_handle();
            match tokio::time::timeout_at(deadline, worker).await {
                Ok(Ok(conn)) => self.conns.push(conn),
                _ => {
                    stop.store(true, Ordering::Relaxed);
                    abort.abort();
                    self.conns.push(None);
                }
            }
        }
        let _ = tokio::task::spawn_blocking(move || ticker.join()).await;
        let elapsed = start.elapsed();
        // Released but never finished (the drain deadline passed): failures too.
        let abandoned = in_flight.load(Ordering::Acquire) as u64;
        shared.failed.fetch_add(abandoned, Ordering::Relaxed);
        if abandoned > 0
            && let Ok(mut first) = shared.first_error.lock()
        {
            first.get_or_insert_with(|| format!("{abandoned} requests still unanswered at the drain deadline"));
        }
        let overflow = overflow.load(Ordering::Relaxed);
        finish(&shared, overflow, elapsed)
    }

    /// Sends back to back on every connection for `duration`; returns what it measured.
    pub async fn closed_loop(&mut self, duration: Duration) -> RunStats {
        let shared = Arc::new(Shared::new(self.target.clone(), self.timeout));
        let start = Instant::now();
        let until = start + duration;
        let mut workers = Vec::with_capacity(self.conns.len());
        for conn in self.conns.drain(..) {
            let shared = shared.clone();
            workers.push(tokio::spawn(async move {
                let mut conn = conn;
                while Instant::now() < until {
                    let started = Instant::now();
                    let result = send(&mut conn, &shared.target, shared.timeout).await;
                    shared.record(started, started, result);
                }
                conn
            }));
        }
        for worker in workers {
            self.conns.push(worker.await.ok().flatten());
        }
        finish(&shared, 0, start.elapsed())
    }
}

fn finish(shared: &Shared, overflow: u64, elapsed: Duration) -> RunStats {
    let take = |h: &Mutex<Histogram<u64>>| h.lock().map(|h| h.clone()).unwrap_or_else(|_| histogram());
    RunStats {
        latency: take(&shared.latency),
        lag: take(&shared.lag),
        ok: shared.ok.load(Ordering::Relaxed),
        overflow,
        failed: shared.failed.load(Ordering::Relaxed),
        elapsed,
        first_error: shared.first_error.lock().ok().and_then(|e| e.clone()),
    }
}

/// Releases request `i` at `start + i / rate`.
#[allow(clippy::too_many_arguments)]
fn tick(
    start: Instant,
    rate: f64,
    count: u64,
    tx: &mpsc::UnboundedSender<Instant>,
    in_flight: &AtomicUsize,
    max_in_flight: usize,
    overflow: &AtomicU64,
    stop: &AtomicBool,
) {
    fine_timer_slack();
    for i in 0..count {
        let intended = start + Duration::from_secs_f64(i as f64 / rate);
        let now = Instant::now();
        if intended > now {
            std::thread::sleep(intended - now);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if in_flight.fetch_add(1, Ordering::AcqRel) >= max_in_flight {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            overflow.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if tx.send(intended).is_err() {
            break;
        }
    }
}

/// Asks the kernel to wake this thread within 1 µs of its timers (the default slack is 50 µs,
/// which would show up as latency). Best effort: without it the lag histogram shows the cost.
pub fn fine_timer_slack() {
    let Ok(link) = std::fs::read_link("/proc/thread-self") else { return };
    let Some(tid) = link.file_name().and_then(|t| t.to_str()) else { return };
    let _ = std::fs::write(format!("/proc/{tid}/timerslack_ns"), "1000");
}

async fn connect(target: &Target) -> Result<Conn, String> {
    let stream = tokio::net::TcpStream::connect(target.addr).await.map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
    // The connection task ends when its `SendRequest` is dropped: the pool owns it through that.
    tokio::spawn(connection);
    Ok(sender)
}

/// Sends one request on `conn` (reconnecting first if it is gone) and reads the whole answer.
async fn send(conn: &mut Option<Conn>, target: &Target, timeout: Duration) -> Result<(), String> {
    let outcome = tokio::time::timeout(timeout, send_inner(conn, target)).await;
    let result = outcome.unwrap_or_else(|_| Err("timed out".into()));
    if result.is_err() {
        // Its state is unknown: start afresh on the next request.
        *conn = None;
    }
    result
}

async fn send_inner(conn: &mut Option<Conn>, target: &Target) -> Result<(), String> {
    let sender = match conn {
        Some(sender) if !sender.is_closed() => sender,
        _ => conn.insert(connect(target).await?),
    };
    sender.ready().await.map_err(|e| format!("connection: {e}"))?;
    let response = sender.send_request(target.request()).await.map_err(|e| format!("request: {e}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
    if !status.is_success() {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
    }
    if target.expect_result && !contains(&body, b"\"result\"") {
        return Err(format!("not a JSON-RPC result: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
    }
    Ok(())
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// One GET on a fresh connection: status and body.
pub async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, bytes::Bytes)> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, http_body_util::Empty<bytes::Bytes>>(
        hyper_util::rt::TokioIo::new(stream),
    )
    .await?;
    let connection = tokio::spawn(connection);
    let request = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .header("a2a-version", "1.0")
        .body(http_body_util::Empty::new())?;
    let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request)).await??;
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body()).await?.to_bytes();
    connection.abort();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, Clock, RPC_PATH};

    #[tokio::test]
    async fn open_loop_sends_every_request_on_schedule() {
        let backend = Backend::start(Clock::new()).unwrap();
        let target = Target::rpc(backend.addr, RPC_PATH, send_message_body(), None).unwrap();
        let mut pool = Pool::connect(target, 4).await.unwrap();
        let stats = pool.open_loop(500.0, Duration::from_millis(300), 64).await;
        assert_eq!(stats.errors(), 0, "{:?}", stats.first_error);
        assert_eq!(stats.ok, 150);
        assert_eq!(stats.latency.len(), 150);
        // 150 requests at 500/s take 0.3 s however fast the backend is.
        assert!(stats.elapsed >= Duration::from_millis(290), "{:?}", stats.elapsed);
    }

    #[tokio::test]
    async fn requests_beyond_the_in_flight_bound_are_errors_not_late_sends() {
        // A server that accepts and never answers: every request stays in flight.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let holder = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let target = Target::rpc(addr, "/", send_message_body(), None).unwrap();
        let mut pool = Pool::connect(target, 2).await.unwrap();
        pool.timeout = Duration::from_millis(300);
        let stats = pool.open_loop(1000.0, Duration::from_millis(50), 5).await;
        assert_eq!(stats.ok, 0);
        assert_eq!(stats.overflow, 45);
        assert_eq!(stats.failed, 5, "the bounded five time out or are abandoned");
        holder.abort();
    }

    #[tokio::test]
    async fn json_rpc_errors_count_as_failures() {
        let backend = Backend::start(Clock::new()).unwrap();
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}"#);
        let mut pool = Pool::connect(Target::rpc(backend.addr, RPC_PATH, body, None).unwrap(), 1).await.unwrap();
        let stats = pool.closed_loop(Duration::from_millis(50)).await;
        assert_eq!(stats.ok, 0);
        assert!(stats.failed > 0);
        assert!(stats.first_error.unwrap().contains("not a JSON-RPC result"));
    }

    #[tokio::test]
    async fn closed_loop_measures_a_rate_and_the_card_is_served() {
        let backend = Backend::start(Clock::new()).unwrap();
        let mut pool = Pool::connect(Target::get(backend.addr, crate::backend::CARD_PATH).unwrap(), 2).await.unwrap();
        let stats = pool.closed_loop(Duration::from_millis(100)).await;
        assert_eq!(stats.errors(), 0, "{:?}", stats.first_error);
        assert!(stats.achieved_rate() > 100.0, "{}", stats.achieved_rate());
        let (status, card) = super::get(backend.addr, crate::backend::CARD_PATH).await.unwrap();
        assert_eq!(status, 200);
        let card: serde_json::Value = serde_json::from_slice(&card).unwrap();
        assert_eq!(card["skills"][0]["id"], "bench");
        assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    }
}
