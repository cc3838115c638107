//! The benchmark's own A2A 1.0 agent: as cheap as an agent can be, so that what the benchmark measures
//! is the path in front of it. It serves its card (one skill, `bench`) and JSON-RPC on `POST /rpc`:
//! `SendMessage` answers a completed Task at once, `GetTask` any id as a completed Task (the
//! profile-guided build's training asks for it); `SendStreamingMessage` streams the events the
//! request's `params.metadata` asks for (`benchEvents`, `benchIntervalMs`, `benchHold`), each
//! carrying `metadata.benchSentNs`, the [`Clock`] reading taken as the event is handed to hyper, so a
//! client in the same process can tell each event's latency on the same clock.
//!
//! It runs on a runtime of its own, on its own thread, so the load generator cannot starve it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Either, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;

/// The gateway with no policies in front of this backend (its address from `BENCH_BACKEND_URL`):
/// the config of the bench's "no policies" path and of `stream-memory`.
pub const PLAIN_GATEWAY_CONFIG: &str = "listeners:
  public: 127.0.0.1:0
  admin: null
  # Every load comes from one loopback address, with up to 10000 streams at once.
  protection: {max_connections: 100000, max_connections_per_address: null}
health:
  interval: 30s
routing:
  default_skill: bench
backends:
  - name: bench
    url: ${BENCH_BACKEND_URL}
";

/// The skill the backend declares; gateway configs route to it.
pub const SKILL: &str = "bench";
/// Where the backend takes JSON-RPC calls.
pub const RPC_PATH: &str = "/rpc";
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The JWKS of the full-stack scenario's token issuer (its key: policies/tests/fixtures/keys/rsa-1).
pub const JWKS_PATH: &str = "/jwks.json";
const JWKS: &str = include_str!("../configs/jwks.json");
/// The longest a held stream stays open when nobody releases it.
const MAX_HOLD: Duration = Duration::from_secs(120);

/// Nanoseconds since a shared origin: the backend stamps events with it and the client reads it.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { origin: Instant::now() }
    }

    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

type Body = Either<Full<Bytes>, StreamBody<futures::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>>;

struct State {
    card: Bytes,
    clock: Clock,
    tasks: AtomicU64,
    /// Bumped to end every held stream.
    release: watch::Receiver<u64>,
}

/// A running backend; dropping it stops its runtime (and with it every connection).
pub struct Backend {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    release: watch::Sender<u64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Backend {
    /// Starts the backend on `127.0.0.1:<ephemeral>`.
    pub fn start(clock: Clock) -> anyhow::Result<Backend> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (release_tx, release_rx) = watch::channel(0);
        let state = Arc::new(State { card: card(addr), clock, tasks: AtomicU64::new(0), release: release_rx });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let thread = std::thread::Builder::new().name("bench-backend".into()).spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                tokio::select! {
                    _ = stop_rx => {}
                    _ = accept_loop(listener, state) => {}
                }
            });
            // Dropping the runtime here cancels every connection task.
        })?;
        Ok(Backend { addr, stop: Some(stop_tx), release: release_tx, thread: Some(thread) })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Ends every stream that is holding (`benchHold`): each sends its final event and closes.
    pub fn release_held(&self) {
        self.release.send_modify(|generation| *generation += 1);
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn card(addr: SocketAddr) -> Bytes {
    let card = serde_json::json!({
        "name": "bench",
        "description": "Benchmark backend: answers at once, streams on request.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("http://{addr}{RPC_PATH}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": SKILL, "name": "bench", "description": "Answers at once.", "tags": ["bench"]}]
    });
    Bytes::from(serde_json::to_vec(&card).unwrap_or_default())
}

async fn accept_loop(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(state.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let response = match (request.method(), request.uri().path()) {
        (&Method::GET, CARD_PATH) => full(StatusCode::OK, "application/json", state.card.clone()),
        (&Method::GET, JWKS_PATH) => full(StatusCode::OK, "application/json", Bytes::from_static(JWKS.as_bytes())),
        (&Method::POST, RPC_PATH) => match Limited::new(request.into_body(), 1 << 20).collect().await {
            Ok(body) => rpc(&state, &body.to_bytes()),
            Err(_) => full(StatusCode::BAD_REQUEST, "text/plain", Bytes::from_static(b"bad body")),
        },
        _ => full(StatusCode::NOT_FOUND, "text/plain", Bytes::from_static(b"not found")),
    };
    Ok(response)
}

fn full(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Either::Left(Full::new(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: &'a str,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize, Default)]
struct Params {
    #[serde(default)]
    metadata: Option<StreamAsk>,
    /// GetTask's task id.
    #[serde(default)]
    id: Option<String>,
}

/// What a streaming request asks of the backend.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct StreamAsk {
    #[serde(default = "default_events")]
    bench_events: u32,
    #[serde(default)]
    bench_interval_ms: u64,
    /// Send the first event, then wait for [`Backend::release_held`] before the last.
    #[serde(default)]
    bench_hold: bool,
}

fn default_events() -> u32 {
    10
}

impl Default for StreamAsk {
    fn default() -> Self {
        StreamAsk { bench_events: default_events(), bench_interval_ms: 0, bench_hold: false }
    }
}

fn rpc(state: &State, body: &[u8]) -> Response<Body> {
    let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else {
        return json(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#.into());
    };
    let id = envelope.id.map_or("null", RawValue::get);
    let n = state.tasks.fetch_add(1, Ordering::Relaxed);
    match envelope.method {
        "SendMessage" => json(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"task":{{"id":"bench-{n}","contextId":"ctx-{n}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"}},"artifacts":[{{"artifactId":"a-{n}","parts":[{{"text":"ok"}}]}}]}}}}}}"#
        )),
        "SendStreamingMessage" => {
            let ask = envelope.params.and_then(|p| p.metadata).unwrap_or_default();
            stream(state, id.to_string(), n, ask)
        }
        // Every task this agent makes is completed at once, so any id it is asked for reads as one.
        "GetTask" => {
            let task = envelope.params.and_then(|p| p.id).unwrap_or_default();
            let task = serde_json::to_string(&task).unwrap_or_default();
            json(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"id":{task},"contextId":"ctx-{n}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"}}}}}}"#
            ))
        }
        other => json(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"method not found: {}"}}}}"#,
            other.escape_default()
        )),
    }
}

fn json(body: String) -> Response<Body> {
    full(StatusCode::OK, "application/json", Bytes::from(body))
}

fn stream(state: &State, id: String, n: u64, ask: StreamAsk) -> Response<Body> {
    let clock = state.clock;
    let mut release = state.release.clone();
    release.mark_unchanged();
    let events = ask.bench_events.max(1);
    let interval = Duration::from_millis(ask.bench_interval_ms);
    let start = tokio::time::Instant::now();
    let frames = futures::stream::unfold(0u32, move |k| {
        let id = id.clone();
        let mut release = release.clone();
        async move {
            if k >= events {
                return None;
            }
            if k > 0 {
                if ask.bench_hold && k == events - 1 {
                    let _ = tokio::time::timeout(MAX_HOLD, release.changed()).await;
                } else {
                    tokio::time::sleep_until(start + interval * k).await;
                }
            }
            // Stamped as late as possible: hyper writes the frame in the same poll.
            let sent = clock.now_ns();
            let event = if k == 0 {
                format!(
                    r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"task":{{"id":"bench-{n}","contextId":"ctx-{n}","status":{{"state":"TASK_STATE_WORKING"}},"metadata":{{"benchSentNs":{sent}}}}}}}}}"#
                )
            } else {
                let state = if k == events - 1 { "TASK_STATE_COMPLETED" } else { "TASK_STATE_WORKING" };
                format!(
                    r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"statusUpdate":{{"taskId":"bench-{n}","contextId":"ctx-{n}","status":{{"state":"{state}"}},"metadata":{{"benchSentNs":{sent}}}}}}}}}"#
                )
            };
            let mut bytes = event.into_bytes();
            bytes.extend_from_slice(b"\n\n");
            Some((Ok(Frame::data(Bytes::from(bytes))), k + 1))
        }
    });
    let mut response = Response::new(Either::Right(StreamBody::new(frames.boxed())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    response
}

/// Runs the backend alone until Ctrl-C (`a2a-bench backend`), for profiling or poking at by hand.
pub async fn serve_forever() -> anyhow::Result<()> {
    let backend = Backend::start(Clock::new())?;
    println!("listening {}", backend.url());
    tokio::signal::ctrl_c().await?;
    drop(backend);
    Ok(())
}

/// Finds the `benchSentNs` stamp in one event's bytes.
pub fn sent_stamp(event: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"benchSentNs\":";
    let at = event.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digits = event[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&event[at..at + digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_is_read_from_an_event() {
        let event = br#"data: {"result":{"statusUpdate":{"metadata":{"benchSentNs":12345}}}}"#;
        assert_eq!(sent_stamp(event), Some(12345));
        assert_eq!(sent_stamp(b"data: {}"), None);
    }

    #[test]
    fn get_task_answers_the_asked_id_as_a_completed_task() {
        let (_release, release) = watch::channel(0);
        let state = State { card: Bytes::new(), clock: Clock::new(), tasks: AtomicU64::new(0), release };
        let answer = rpc(&state, br#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"bench-\"7"}}"#);
        let Either::Left(body) = answer.into_body() else { panic!("a streamed answer to GetTask") };
        let bytes = futures::executor::block_on(body.collect()).unwrap().to_bytes();
        let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["result"]["id"], "bench-\"7");
        assert_eq!(answer["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    }

    #[test]
    fn stream_ask_defaults_when_metadata_is_absent() {
        let envelope: Envelope =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{}}"#).unwrap();
        assert_eq!(envelope.id.map(RawValue::get), Some("7"));
        assert!(envelope.params.unwrap().metadata.is_none());
    }
}
