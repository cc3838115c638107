//! Misbehaving backends: agents killed mid-stream, streams cut short, garbage, HTML error pages,
//! oversize events, stalls, endless comments, error events full of internals. Whatever the backend
//! does, every caller dialect gets a well-formed answer, and every stream ends with a state the
//! caller can act on: the task's own final state, or the failed status the gateway writes (in the
//! caller's dialect) saying why — and the audit log records that ending.

use std::net::SocketAddr;
use std::time::Duration;

use a2a_e2e::{Proc, TempFile, client, config, gateway, sse_data, wait_for_skills};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::BIN;

/// The dialect a scripted backend speaks.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Speaks {
    V1,
    V03,
    Early,
}

/// A loopback HTTP server speaking one dialect, misbehaving as each request's text asks
/// (`fault:<name>`).
struct FaultyAgent {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultyAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Lab {
    base: String,
    speaks: Speaks,
}

async fn start_agent(speaks: Speaks) -> FaultyAgent {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let lab = Lab { base: base.clone(), speaks };
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/.well-known/agent.json", get(card))
        .route("/rpc", post(rpc))
        .route("/rest/message:stream", post(rest_stream))
        .route("/rest/message:send", post(rest_send))
        .route("/early/tasks/sendSubscribe", post(early_stream))
        .route("/early/tasks/send", post(early_send))
        .with_state(lab);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    FaultyAgent { url: base, task }
}

fn skill_of(speaks: Speaks) -> &'static str {
    match speaks {
        Speaks::V1 => "faults-v1",
        Speaks::V03 => "faults-03",
        Speaks::Early => "faults-early",
    }
}

async fn card(State(lab): State<Lab>) -> axum::Json<Value> {
    let skills = json!([{"id": skill_of(lab.speaks), "name": "faults", "description": "misbehaves", "tags": []}]);
    axum::Json(match lab.speaks {
        Speaks::V1 => json!({
            "name": "faulty", "description": "test backend", "version": "1",
            "supportedInterfaces": [
                {"url": format!("{}/rpc", lab.base), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": format!("{}/rest", lab.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": skills,
        }),
        Speaks::V03 => json!({
            "name": "faulty 0.3", "description": "test backend", "version": "1",
            "url": format!("{}/rpc", lab.base), "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": skills,
        }),
        Speaks::Early => json!({
            "name": "faulty early", "description": "test backend", "version": "0.1.0",
            "url": format!("{}/early/", lab.base),
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text"], "defaultOutputModes": ["text"],
            "skills": skills,
        }),
    })
}

/// What the request asks of the backend.
fn fault_in(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let start = text.find("fault:").expect("the request names its fault") + 6;
    text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect()
}

/// The ids a backend answers with: the JSON-RPC id, and the task id (the early dialect's caller
/// names it; the others make one up).
fn ids_of(body: &[u8]) -> (Value, String) {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let task = value["id"].as_str().filter(|_| value.get("jsonrpc").is_none()).map(str::to_owned);
    (value["id"].clone(), task.unwrap_or_else(|| format!("task-{}", uuid::Uuid::new_v4().simple())))
}

/// One event (its data) putting the task in `state`, in the backend's dialect.
fn event(speaks: Speaks, rest: bool, rpc_id: &Value, task: &str, state: &str, first: bool) -> Value {
    match speaks {
        Speaks::V1 => {
            let state = format!("TASK_STATE_{}", state.to_ascii_uppercase().replace('-', "_"));
            let payload = if first {
                json!({"task": {"id": task, "contextId": "ctx-f", "status": {"state": state}}})
            } else {
                json!({"statusUpdate": {"taskId": task, "contextId": "ctx-f", "status": {"state": state}}})
            };
            if rest { payload } else { json!({"jsonrpc": "2.0", "id": rpc_id, "result": payload}) }
        }
        Speaks::V03 => {
            let result = if first {
                json!({"kind": "task", "id": task, "contextId": "ctx-f", "status": {"state": state}})
            } else {
                let terminal = matches!(state, "completed" | "failed" | "canceled");
                json!({"kind": "status-update", "taskId": task, "contextId": "ctx-f", "status": {"state": state}, "final": terminal})
            };
            json!({"jsonrpc": "2.0", "id": rpc_id, "result": result})
        }
        Speaks::Early => json!({"id": task, "status": {"state": state}, "artifacts": []}),
    }
}

fn ok(bytes: Bytes) -> Result<Bytes, std::io::Error> {
    Ok(bytes)
}

fn frame(data: &[u8]) -> Bytes {
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n\r\n");
    Bytes::from(out)
}

fn json_frame(value: &Value) -> Bytes {
    frame(&serde_json::to_vec(value).unwrap())
}

/// A stream scripted by `fault`, in the backend's dialect.
fn scripted_stream(speaks: Speaks, rest: bool, body: &[u8]) -> Response {
    let fault = fault_in(body);
    let (rpc_id, task) = ids_of(body);
    let working = json_frame(&event(speaks, rest, &rpc_id, &task, "working", true));
    let completed = json_frame(&event(speaks, rest, &rpc_id, &task, "completed", false));
    let stream = match fault.as_str() {
        "fine" => futures::stream::iter([ok(working), ok(completed)]).boxed(),
        // The agent dies: the connection breaks mid-stream.
        "killed" => futures::stream::iter([ok(working)])
            .chain(futures::stream::once(async {
                // After the first event is on the wire.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(std::io::Error::other("killed"))
            }))
            .boxed(),
        // A clean end without a final state.
        "truncated" => futures::stream::iter([ok(working)]).boxed(),
        // An event that is not JSON, then a completion that must not be believed.
        "garbage" => futures::stream::iter([ok(working), ok(frame(b"{not json <html>")), ok(completed)]).boxed(),
        // An event far over the limit the test configures (64 KiB), then a completion.
        "oversize" => {
            let big = frame(format!("{{\"pad\": \"{}\"}}", "x".repeat(300 * 1024)).as_bytes());
            futures::stream::iter([ok(working), ok(big), ok(completed)]).boxed()
        }
        // Nothing after the first event, ever.
        "stall" => futures::stream::iter([ok(working)]).chain(futures::stream::pending()).boxed(),
        // Only keep-alive comments after the first event.
        "comments" => futures::stream::iter([ok(working)])
            .chain(futures::stream::unfold((), |()| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Some((ok(Bytes::from_static(b": ping - keepalive\r\n\r\n")), ()))
            }))
            .boxed(),
        // Events forever, never a final state (for the lifetime limit).
        "endless" => {
            let again = json_frame(&event(speaks, rest, &rpc_id, &task, "working", false));
            futures::stream::iter([ok(working)])
                .chain(futures::stream::unfold(again, |again| async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Some((ok(again.clone()), again))
                }))
                .boxed()
        }
        // An error event whose message is full of internals.
        "errorevent" => {
            let error = match (speaks, rest) {
                (Speaks::V1, true) => json!({"error": {"code": 500, "status": "INTERNAL",
                    "message": "Traceback: db01.internal:5432 password=hunter2", "details": []}}),
                (Speaks::Early, _) => {
                    json!({"error": {"code": -32603, "message": "Traceback: db01.internal:5432 password=hunter2"}})
                }
                _ => json!({"jsonrpc": "2.0", "id": rpc_id,
                    "error": {"code": -32603, "message": "Traceback: db01.internal:5432 password=hunter2"}}),
            };
            futures::stream::iter([ok(working), ok(json_frame(&error))]).boxed()
        }
        // A load balancer's error page instead of a stream.
        "html502" => return html(502),
        other => panic!("unknown fault {other}"),
    };
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
}

fn html(status: u16) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "text/html")
        .body(Body::from("<html><body><h1>502 Bad Gateway</h1>nginx/1.25 upstream db01.internal:5432</body></html>"))
        .unwrap()
}

/// A unary answer scripted by `fault`.
fn scripted_answer(speaks: Speaks, rest: bool, body: &[u8]) -> Response {
    let fault = fault_in(body);
    let (rpc_id, task) = ids_of(body);
    let mut done = event(speaks, rest, &rpc_id, &task, "completed", true);
    let json_answer = |status: u16, content_type: &str, body: Vec<u8>| {
        Response::builder().status(status).header("content-type", content_type).body(Body::from(body)).unwrap()
    };
    match fault.as_str() {
        "fine" => json_answer(200, "application/json", serde_json::to_vec(&done).unwrap()),
        "html502" => html(502),
        "html200" => html(200),
        "badjson" => json_answer(200, "application/json", b"{\"jsonrpc\": \"2.0\", \"result\": {not json".to_vec()),
        "wrongtype" => json_answer(200, "text/plain", serde_json::to_vec(&done).unwrap()),
        "wrongid" => {
            done["id"] = json!("somebody-else");
            json_answer(200, "application/json", serde_json::to_vec(&done).unwrap())
        }
        // Declares more than the gateway's limit, sends a little and then nothing: only a refusal
        // on the declared length answers the caller (the rest of the body never comes).
        "hugedeclared" => stalled_answer(2 * FLEET_MAX_RESPONSE_BYTES),
        // Declares a length within the limit, sends part of it and then nothing.
        "stalledbody" => stalled_answer(1000),
        // Sends more than the limit without declaring a length (chunked coding).
        "hugechunked" => Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from_stream(futures::stream::iter(
                (0..3).map(|_| ok(Bytes::from(vec![b' '; FLEET_MAX_RESPONSE_BYTES / 2]))),
            )))
            .unwrap(),
        other => panic!("unknown fault {other}"),
    }
}

/// A JSON answer declaring `length` bytes that sends its first few and then nothing.
fn stalled_answer(length: usize) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("content-length", length.to_string())
        .body(Body::from_stream(
            futures::stream::once(async { ok(Bytes::from_static(b"{\"jsonrpc\": \"2.0\", ")) })
                .chain(futures::stream::pending()),
        ))
        .unwrap()
}

fn streams(body: &[u8]) -> bool {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    matches!(value["method"].as_str(), Some("SendStreamingMessage" | "message/stream"))
}

async fn rpc(State(lab): State<Lab>, body: Bytes) -> Response {
    if streams(&body) { scripted_stream(lab.speaks, false, &body) } else { scripted_answer(lab.speaks, false, &body) }
}

async fn rest_stream(State(lab): State<Lab>, body: Bytes) -> Response {
    scripted_stream(lab.speaks, true, &body)
}

async fn rest_send(State(lab): State<Lab>, body: Bytes) -> Response {
    scripted_answer(lab.speaks, true, &body)
}

async fn early_stream(State(lab): State<Lab>, body: Bytes) -> Response {
    scripted_stream(lab.speaks, true, &body)
}

async fn early_send(State(lab): State<Lab>, body: Bytes) -> Response {
    scripted_answer(lab.speaks, true, &body)
}

/// A caller of one dialect (and binding).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Caller {
    V1Rpc,
    V1Rest,
    V03,
    Early,
}

/// Opens a stream as `caller` to the skill of `to`, asking for `fault`; the raw bytes it got and
/// whether it ended within `limit`.
async fn stream_as(gw: &str, caller: Caller, to: Speaks, fault: &str) -> Vec<u8> {
    let text = format!("please fault:{fault}");
    let skill = skill_of(to);
    let request = match caller {
        Caller::V1Rpc => client().post(format!("{gw}/")).header("A2A-Version", "1.0").json(&json!({
            "jsonrpc": "2.0", "id": "f-1", "method": "SendStreamingMessage",
            "params": {"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}], "metadata": {"skillId": skill}}}})),
        Caller::V1Rest => client().post(format!("{gw}/message:stream")).header("A2A-Version", "1.0").json(&json!({
            "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}], "metadata": {"skillId": skill}}})),
        Caller::V03 => client().post(format!("{gw}/")).json(&json!({
            "jsonrpc": "2.0", "id": "f-3", "method": "message/stream",
            "params": {"message": {"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
                "parts": [{"kind": "text", "text": text}], "metadata": {"skillId": skill}}}})),
        Caller::Early => client().post(format!("{gw}/tasks/sendSubscribe")).json(&json!({
            "id": uuid::Uuid::new_v4().to_string(),
            "message": {"role": "user", "parts": [{"type": "text", "text": text}]},
            "metadata": {"skillId": skill}})),
    };
    let response = request.header("Accept", "text/event-stream").send().await.expect("stream request");
    let status = response.status().as_u16();
    let mut stream = response.bytes_stream();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = stream.next().await {
            got.extend_from_slice(&chunk.expect("the stream ends cleanly, never with a transport error"));
        }
    })
    .await;
    assert!(read.is_ok(), "{caller:?} → {to:?} {fault}: the stream did not end; got {}", String::from_utf8_lossy(&got));
    assert_eq!(status, 200, "{caller:?} → {to:?} {fault}: {}", String::from_utf8_lossy(&got));
    got
}

/// The last event's state and text, read in the caller's dialect; an error event gives its message.
fn ending(caller: Caller, bytes: &[u8]) -> (String, String) {
    let events: Vec<Value> = sse_data(bytes)
        .iter()
        .map(|d| {
            serde_json::from_str(d).unwrap_or_else(|_| panic!("an event that is not JSON reached the caller: {d}"))
        })
        .collect();
    let last =
        events.last().unwrap_or_else(|| panic!("{caller:?}: no event in {}", String::from_utf8_lossy(bytes))).clone();
    let text = |v: &Value| v.pointer("/status/message/parts/0/text").and_then(Value::as_str).unwrap_or("").to_owned();
    if let Some(error) = last.get("error") {
        return ("error".into(), error["message"].as_str().unwrap_or("").to_owned());
    }
    match caller {
        Caller::V1Rpc => {
            let update = &last["result"]["statusUpdate"];
            (update["status"]["state"].as_str().unwrap_or("").to_owned(), text(update))
        }
        Caller::V1Rest => {
            let update = &last["statusUpdate"];
            (update["status"]["state"].as_str().unwrap_or("").to_owned(), text(update))
        }
        Caller::V03 => {
            let result = &last["result"];
            assert_eq!(result["kind"], "status-update", "{last}");
            assert_eq!(result["final"], true, "{last}");
            (result["status"]["state"].as_str().unwrap_or("").to_owned(), text(result))
        }
        Caller::Early => {
            let message = last.pointer("/status/message/parts/0/text").and_then(Value::as_str).unwrap_or("");
            (last["status"]["state"].as_str().unwrap_or("").to_owned(), message.to_owned())
        }
    }
}

fn failed_in(caller: Caller) -> &'static str {
    match caller {
        Caller::V1Rpc | Caller::V1Rest => "TASK_STATE_FAILED",
        Caller::V03 | Caller::Early => "failed",
    }
}

struct Fleet {
    gw: Proc,
    audit: TempFile,
    _agents: Vec<FaultyAgent>,
}

/// The fleet gateway's `limits.max_response_bytes`.
const FLEET_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

async fn fleet() -> Fleet {
    let v1 = start_agent(Speaks::V1).await;
    let v03 = start_agent(Speaks::V03).await;
    let early = start_agent(Speaks::Early).await;
    let audit = TempFile(std::env::temp_dir().join(format!("faults-audit-{}.jsonl", uuid::Uuid::new_v4().simple())));
    let extra = format!(
        // Faults in a row would otherwise take the backends out of routing.
        "health:\n  interval: 200ms\n  unhealthy_after: 1000\nlimits:\n  max_response_bytes: {FLEET_MAX_RESPONSE_BYTES}\n  first_byte_timeout: 2s\nstreams:\n  idle_timeout: 1s\n  max_event_bytes: 65536\n  skills:\n    faults-v1: {{max_lifetime: 2s}}\n    faults-03: {{max_lifetime: 2s}}\n    faults-early: {{max_lifetime: 2s}}\naudit:\n  file: {{path: '{}'}}\n",
        audit.0.display()
    );
    let mut yaml = config(&[("v1", &v1.url), ("v03", &v03.url)], &extra);
    yaml.push_str(&format!("  - name: early\n    url: {}\n    card_path: /.well-known/agent.json\n", early.url));
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["faults-v1", "faults-03", "faults-early"]).await;
    Fleet { gw, audit, _agents: vec![v1, v03, early] }
}

/// Every caller dialect against the backends it can reach: 1.0 to 1.0 (both bindings), 0.3 to 0.3
/// (pass-through) and to 1.0, early to early, and 1.0 to 0.3 (translated).
const ROUTES: [(Caller, Speaks); 7] = [
    (Caller::V1Rpc, Speaks::V1),
    (Caller::V1Rest, Speaks::V1),
    (Caller::V03, Speaks::V03),
    (Caller::V03, Speaks::V1),
    (Caller::Early, Speaks::Early),
    (Caller::V1Rpc, Speaks::V03),
    (Caller::V1Rest, Speaks::Early),
];

/// (fault, words the caller's reason must contain)
const STREAM_FAULTS: [(&str, &str); 8] = [
    ("killed", "broke off"),
    ("truncated", "ended the stream"),
    ("garbage", "not valid JSON"),
    ("oversize", "larger than the limit of 65536 bytes"),
    ("stall", "sent no event for 1s"),
    ("comments", "sent no event for 1s"),
    ("endless", "maximum lifetime of 2s"),
    ("errorevent", "failed to answer"),
];

#[tokio::test]
async fn every_stream_ends_with_a_state_the_caller_can_act_on_in_every_dialect() {
    let fleet = fleet().await;
    let gw = &fleet.gw.url;
    for (caller, to) in ROUTES {
        let fine = stream_as(gw, caller, to, "fine").await;
        let (state, _) = ending(caller, &fine);
        assert!(
            state.eq_ignore_ascii_case("completed") || state == "TASK_STATE_COMPLETED",
            "{caller:?} → {to:?}: {state}"
        );
        for (fault, reason) in STREAM_FAULTS {
            let bytes = stream_as(gw, caller, to, fault).await;
            let text = String::from_utf8_lossy(&bytes).to_string();
            let (state, why) = ending(caller, &bytes);
            // An early agent repeating the same snapshot tells the caller nothing new: that is idle.
            let reason = if fault == "endless" && to == Speaks::Early { "sent no event for 1s" } else { reason };
            assert_eq!(state, failed_in(caller), "{caller:?} → {to:?} {fault}: {text}");
            assert!(why.contains(reason), "{caller:?} → {to:?} {fault}: reason {why:?} lacks {reason:?}");
            // "db01." as the agent wrote it: a random id's hex can hold "db01" (a message id did).
            assert!(!text.contains("hunter2") && !text.contains("db01."), "{caller:?} → {to:?} {fault}: leak: {text}");
            assert!(!text.contains("not json <html>"), "the bad event never reaches the caller: {text}");
            let completed = ["TASK_STATE_COMPLETED", "\"completed\""];
            assert!(!completed.iter().any(|c| text.contains(c)), "{caller:?} → {to:?} {fault}: {text}");
        }
    }
    // The audit log learned each ending: a failed state for tasks of every backend.
    let audit = std::fs::read_to_string(&fleet.audit.0).expect("audit file");
    let failed: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"] == "task.state" && r["state"] == "TASK_STATE_FAILED")
        .collect();
    for backend in ["v1", "v03", "early"] {
        assert!(failed.iter().any(|r| r["backend"] == backend), "no failed task.state record for {backend}: {audit}");
    }
    // And the gateway stays healthy.
    let (status, _) = a2a_e2e::get_json(&format!("{}/readyz", fleet.gw.admin.as_ref().unwrap())).await;
    assert_eq!(status, 200);
    let again = stream_as(gw, Caller::V1Rpc, Speaks::V1, "fine").await;
    assert_eq!(ending(Caller::V1Rpc, &again).0, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_valid_pass_through_stream_reaches_the_caller_byte_for_byte() {
    let fleet = fleet().await;
    let agent_bytes = {
        let body = json!({"jsonrpc": "2.0", "id": "f-3", "method": "message/stream", "params": {"message": {
            "kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "fault:fine"}]}}});
        let url = &fleet._agents[1].url;
        let response = client().post(format!("{url}/rpc")).json(&body).send().await.unwrap();
        response.bytes().await.unwrap().to_vec()
    };
    let relayed = stream_as(&fleet.gw.url, Caller::V03, Speaks::V03, "fine").await;
    // The agent makes up a fresh task id each time: compare with the ids blanked.
    let blank = |b: &[u8]| {
        let text = String::from_utf8_lossy(b).to_string();
        let re: Vec<&str> = text.split("task-").collect();
        re.iter().map(|p| p.trim_start_matches(|c: char| c.is_ascii_hexdigit())).collect::<Vec<_>>().join("task-")
    };
    assert_eq!(blank(&relayed), blank(&agent_bytes));
}

/// Sends a unary message as `caller`; (HTTP status, content type, body).
async fn send_as(gw: &str, caller: Caller, to: Speaks, fault: &str) -> (u16, String, Value) {
    let text = format!("please fault:{fault}");
    let skill = skill_of(to);
    let request = match caller {
        Caller::V1Rpc => client().post(format!("{gw}/")).header("A2A-Version", "1.0").json(&json!({
            "jsonrpc": "2.0", "id": "u-1", "method": "SendMessage",
            "params": {"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}], "metadata": {"skillId": skill}}}})),
        Caller::V1Rest => client().post(format!("{gw}/message:send")).header("A2A-Version", "1.0").json(&json!({
            "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}], "metadata": {"skillId": skill}}})),
        Caller::V03 => client().post(format!("{gw}/")).json(&json!({
            "jsonrpc": "2.0", "id": "u-3", "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
                "parts": [{"kind": "text", "text": text}], "metadata": {"skillId": skill}}}})),
        Caller::Early => client().post(format!("{gw}/tasks/send")).json(&json!({
            "id": uuid::Uuid::new_v4().to_string(),
            "message": {"role": "user", "parts": [{"type": "text", "text": text}]},
            "metadata": {"skillId": skill}})),
    };
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{caller:?} → {to:?} {fault}: not JSON: {text}"));
    (status, content_type, body)
}

#[tokio::test]
async fn malformed_unary_answers_become_the_gateways_error_in_every_dialect() {
    let fleet = fleet().await;
    let gw = &fleet.gw.url;
    let routes = [
        (Caller::V1Rpc, Speaks::V1),
        (Caller::V1Rest, Speaks::V1),
        (Caller::V03, Speaks::V03),
        (Caller::V03, Speaks::V1),
        (Caller::Early, Speaks::Early),
        (Caller::V1Rpc, Speaks::V03),
    ];
    for (caller, to) in routes {
        let faults: &[&str] = match (caller, to) {
            (Caller::V1Rpc, Speaks::V1) | (Caller::V03, Speaks::V03) => {
                &["html502", "html200", "badjson", "wrongtype", "wrongid", "hugedeclared", "hugechunked", "stalledbody"]
            }
            _ => &["html502", "html200", "badjson", "wrongtype", "hugedeclared", "hugechunked", "stalledbody"],
        };
        for fault in faults {
            let (status, content_type, body) = send_as(gw, caller, to, fault).await;
            let text = body.to_string();
            assert!(content_type.starts_with("application/json"), "{caller:?} → {to:?} {fault}: {content_type}");
            assert!(!text.contains("db01.") && !text.contains("nginx"), "{caller:?} → {to:?} {fault}: leak {text}");
            if fault.starts_with("huge") {
                assert!(text.contains("oversized answer"), "{caller:?} → {to:?} {fault}: {text}");
            }
            if *fault == "stalledbody" {
                assert!(text.contains("did not finish its answer in time"), "{caller:?} → {to:?} {fault}: {text}");
            }
            match caller {
                Caller::V1Rpc | Caller::V03 => {
                    assert_eq!(status, 200, "{caller:?} → {to:?} {fault}: {text}");
                    assert!(body["error"]["code"].is_i64(), "{caller:?} → {to:?} {fault}: {text}");
                    assert_eq!(body["id"], if caller == Caller::V03 { "u-3" } else { "u-1" }, "{text}");
                }
                Caller::V1Rest => {
                    assert!(status >= 500, "{caller:?} → {to:?} {fault}: {status} {text}");
                    assert!(body["error"]["status"].is_string(), "{text}");
                }
                Caller::Early => {
                    assert!(status >= 500, "{caller:?} → {to:?} {fault}: {status} {text}");
                    assert!(body["detail"].is_string(), "{text}");
                }
            }
        }
        let (status, _, body) = send_as(gw, caller, to, "fine").await;
        assert_eq!(status, 200, "{caller:?} → {to:?} fine: {body}");
        assert!(body.get("error").is_none() && body.get("detail").is_none(), "{body}");
    }
}
