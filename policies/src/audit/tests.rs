//! Scripted runs through the layer and the observer into a real file, read back and verified.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use serde_json::{Value, json};
use tower::{Layer, Service, ServiceExt};

use super::file::FileTarget;
use super::record::{Common, Kind, Record};
use super::sink::{Opener, Target};
use super::*;
use crate::{
    A2aCall, A2aError, ArtifactInfo, AuthMethod, Binding, Caller, Operation, RequestInfo, RouteHint, Source, TaskEvent,
    TaskObserver, TaskState, Violation,
};

/// A directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("a2a-audit-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn file_config(dir: &TempDir, max_bytes: u64, max_files: usize) -> AuditConfig {
    AuditConfig {
        stdout: false,
        file: Some(FileConfig { path: dir.path().join("audit.jsonl"), max_bytes, max_files }),
        queue: 1024,
        include_content_for_skills: Vec::new(),
    }
}

/// Every record of the chain files, as JSON.
fn read_records(active: &Path) -> Vec<Value> {
    let mut records = Vec::new();
    for file in chain_files(active).unwrap() {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            records.push(serde_json::from_str(line).unwrap());
        }
    }
    records
}

/// The event records, without the chain's own anchors.
fn events(active: &Path) -> Vec<Value> {
    read_records(active).into_iter().filter(|r| r["event"] != "chain_anchor").collect()
}

// ---- a scripted inner service -------------------------------------------------------------

/// What the dummy inner stack does with one request: the facts inner layers would set, the task
/// observations of a unary answer, and the outcome.
#[derive(Clone)]
struct Step {
    caller: Option<Caller>,
    route: Option<(&'static str, &'static str)>,
    detail: Option<&'static str>,
    during: Vec<Obs>,
    outcome: Result<u16, A2aError>,
}

#[derive(Clone)]
struct Obs {
    task: &'static str,
    context: Option<&'static str>,
    state: Option<TaskState>,
    artifact: Option<ArtifactInfo>,
}

fn caller(id: &str) -> Caller {
    Caller {
        id: Arc::from(id),
        tenant: Some(Arc::from("acme")),
        scopes: Arc::from(vec!["a2a".to_string()]),
        auth: AuthMethod::ApiKey { key_id: Arc::from("k1") },
    }
}

fn ok(caller_id: &str, backend: &'static str, skill: &'static str, during: Vec<Obs>) -> Step {
    Step { caller: Some(caller(caller_id)), route: Some((backend, skill)), detail: None, during, outcome: Ok(200) }
}

fn refused(caller_id: Option<&str>, detail: &'static str, error: A2aError) -> Step {
    Step { caller: caller_id.map(caller), route: None, detail: Some(detail), during: vec![], outcome: Err(error) }
}

fn obs(task: &'static str, state: Option<TaskState>) -> Obs {
    Obs { task, context: Some("ctx-1"), state, artifact: None }
}

fn artifact(name: &str, content: &str) -> ArtifactInfo {
    use sha2::Digest;
    ArtifactInfo {
        artifact_id: Some(format!("art-{name}")),
        name: Some(name.to_string()),
        parts: 1,
        bytes: content.len(),
        sha256: hex::encode(sha2::Sha256::digest(content.as_bytes())),
    }
}

fn observe(audit: &Audit, info: &RequestInfo, o: &Obs, source: Source) {
    let route = info.route();
    audit.observe(&TaskEvent {
        caller: info.caller(),
        request_id: Some(info.request_id()),
        backend: route.map_or("unknown", |r| &*r.backend),
        skill: route.and_then(|r| r.skill.as_deref()),
        task_id: Some(o.task),
        context_id: o.context,
        state: o.state,
        artifact: o.artifact.as_ref(),
        source,
        at: Instant::now(),
    });
}

fn inner(audit: Audit) -> impl Service<Request<Bytes>, Response = Response<()>, Error = A2aError> + Clone {
    inner_with(Some(audit))
}

/// The dummy stack; `observer` gets the observations of the unary answer.
fn inner_with(
    observer: Option<Audit>,
) -> impl Service<Request<Bytes>, Response = Response<()>, Error = A2aError> + Clone {
    tower::service_fn(move |request: Request<Bytes>| {
        let observer = observer.clone();
        async move {
            let step = request.extensions().get::<Step>().cloned().expect("a step");
            let info = request.extensions().get::<RequestInfo>().cloned().expect("request info");
            if let Some(caller) = step.caller {
                info.set_caller(caller);
            }
            if let Some((backend, skill)) = step.route {
                info.set_route(RouteHint { backend: Arc::from(backend), skill: Some(skill.to_string()) });
            }
            if let Some(detail) = step.detail {
                info.set_denial_detail(detail);
            }
            for o in step.during.iter().filter(|_| observer.is_some()) {
                observe(observer.as_ref().unwrap(), &info, o, Source::Response);
            }
            step.outcome.map(|status| Response::builder().status(status).body(()).unwrap())
        }
    })
}

struct Call {
    call: A2aCall,
    body: String,
}

fn send(op: Operation, text: &str, task: Option<&str>) -> Call {
    let mut call = A2aCall::new(Binding::JsonRpc, op);
    call.task_id = task.map(str::to_owned);
    call.rpc_id = Some(json!(1));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": op.method_name(), "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}, {"data": {"note": text}}]}}});
    Call { call, body: body.to_string() }
}

fn task_call(op: Operation, task: &str) -> Call {
    let mut call = A2aCall::new(Binding::Rest, op);
    call.task_id = Some(task.to_owned());
    Call { call, body: String::new() }
}

fn request(id: &str, call: Call, step: Step) -> (Request<Bytes>, RequestInfo) {
    let info = RequestInfo::new(id.to_string());
    let mut request = Request::builder().method("POST").uri("/").body(Bytes::from(call.body)).unwrap();
    request.extensions_mut().insert(call.call);
    request.extensions_mut().insert(info.clone());
    request.extensions_mut().insert(step);
    (request, info)
}

async fn run(audit: &Audit, id: &str, call: Call, step: Step) -> RequestInfo {
    let (request, info) = request(id, call, step);
    let _ = audit.layer().layer(inner(audit.clone())).oneshot(request).await;
    info
}

const SECRETS: [&str; 6] =
    ["blocking secret", "streamed secret", "cancel secret", "first turn secret", "second turn secret", "denied secret"];

/// The scripted run of the acceptance criteria: a blocking task, a streamed task with artifacts,
/// a canceled task, a multi-turn task, each kind of denial and a failed request.
async fn scripted_run(audit: &Audit) {
    use TaskState::*;
    // Blocking send: the unary answer shows the artifact and the final state.
    let mut done = obs("t-block", Some(Completed));
    done.artifact = Some(artifact("echo", "blocking secret"));
    run(audit, "r1", send(Operation::SendMessage, SECRETS[0], None), ok("alice", "echo", "echo", vec![done])).await;

    // Streamed send: the events flow after the answer head.
    let mut stream = send(Operation::SendStreamingMessage, SECRETS[1], None);
    stream.call.context_id = Some("ctx-1".into());
    let (mut req, info) = request("r2", stream, ok("alice", "writer", "write", vec![]));
    req.headers_mut().insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
    audit.layer().layer(inner(audit.clone())).oneshot(req).await.unwrap();
    let mut part1 = obs("t-stream", None);
    part1.artifact = Some(artifact("draft", "part one"));
    let mut part2 = obs("t-stream", None);
    part2.artifact = Some(artifact("final", "part two"));
    for o in [obs("t-stream", Some(Submitted)), obs("t-stream", Some(Working)), obs("t-stream", Some(Working))] {
        observe(audit, &info, &o, Source::Stream);
    }
    for o in [part1, part2, obs("t-stream", Some(Completed))] {
        observe(audit, &info, &o, Source::Stream);
    }

    // A task sent without waiting, then canceled, then read again (nothing new to record).
    run(
        audit,
        "r3",
        send(Operation::SendMessage, SECRETS[2], None),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Working))]),
    )
    .await;
    run(
        audit,
        "r4",
        task_call(Operation::CancelTask, "t-cancel"),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Canceled))]),
    )
    .await;
    run(
        audit,
        "r5",
        task_call(Operation::GetTask, "t-cancel"),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Canceled))]),
    )
    .await;

    // Multi-turn: input required, then the continuation completes the same task.
    let turn1 = vec![obs("t-multi", Some(InputRequired))];
    run(audit, "r6", send(Operation::SendMessage, SECRETS[3], None), ok("carol", "echo", "echo", turn1)).await;
    let turn2 = vec![obs("t-multi", Some(Working)), obs("t-multi", Some(Completed))];
    run(audit, "r7", send(Operation::SendMessage, SECRETS[4], Some("t-multi")), ok("carol", "echo", "echo", turn2))
        .await;

    // Each kind of denial, and one failure that is not a denial.
    let denials = [
        refused(
            None,
            "jwt: bad signature",
            A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer".into() },
        ),
        refused(Some("dave"), "skill admin needs scope admin", A2aError::PermissionDenied("no".into())),
        refused(
            Some("dave"),
            "quota 10/min",
            A2aError::RateLimited { message: "slow".into(), retry_after: Duration::from_secs(2) },
        ),
        refused(Some("dave"), "3 live tasks", A2aError::TooManyTasks { held: 3, limit: 3 }),
        refused(
            Some("dave"),
            "schema of skill echo",
            A2aError::Validation {
                message: "denied secret is not an integer".into(),
                violations: vec![Violation {
                    pointer: "/diff".into(),
                    description: "'denied secret' is not an integer".into(),
                }],
            },
        ),
    ];
    for (i, step) in denials.into_iter().enumerate() {
        run(audit, &format!("d{i}"), send(Operation::SendMessage, SECRETS[5], None), step).await;
    }
    let mut unavailable = ok("erin", "echo", "echo", vec![]);
    unavailable.outcome = Err(A2aError::BackendUnavailable("down".into()));
    run(audit, "f1", send(Operation::SendMessage, "unavailable", None), unavailable).await;
}

/// `(event, request_id, task_id)` of every event record the scripted run must write, in order.
const EXPECTED: [(&str, &str, Option<&str>); 30] = [
    ("task.received", "r1", Some("t-block")),
    ("artifact.delivered", "r1", Some("t-block")),
    ("task.state", "r1", Some("t-block")),
    ("task.ended", "r1", Some("t-block")),
    ("request", "r1", Some("t-block")),
    ("task.received", "r2", None),
    ("request", "r2", None),
    ("task.state", "r2", Some("t-stream")),
    ("task.state", "r2", Some("t-stream")),
    ("artifact.delivered", "r2", Some("t-stream")),
    ("artifact.delivered", "r2", Some("t-stream")),
    ("task.state", "r2", Some("t-stream")),
    ("task.ended", "r2", Some("t-stream")),
    ("task.received", "r3", Some("t-cancel")),
    ("task.state", "r3", Some("t-cancel")),
    ("request", "r3", Some("t-cancel")),
    ("task.state", "r4", Some("t-cancel")),
    ("task.ended", "r4", Some("t-cancel")),
    ("request", "r4", Some("t-cancel")),
    ("request", "r5", Some("t-cancel")),
    ("task.received", "r6", Some("t-multi")),
    ("task.state", "r6", Some("t-multi")),
    ("request", "r6", Some("t-multi")),
    ("task.received", "r7", Some("t-multi")),
    ("task.state", "r7", Some("t-multi")),
    ("task.state", "r7", Some("t-multi")),
    ("task.ended", "r7", Some("t-multi")),
    ("request", "r7", Some("t-multi")),
    // The five denials and the failure follow; checked one by one below.
    ("denied", "d0", None),
    ("denied", "d1", None),
];

#[tokio::test]
async fn a_scripted_run_writes_one_record_per_event_in_order() {
    let dir = TempDir::new("scripted");
    let config = file_config(&dir, 100 * 1024 * 1024, 10);
    let (audit, sink) = Audit::start(&config).await.unwrap();
    scripted_run(&audit).await;
    sink.shutdown().await.unwrap();

    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    assert_eq!(records.len(), EXPECTED.len() + 4, "{records:#?}");
    for (i, (event, request_id, task_id)) in EXPECTED.iter().enumerate() {
        let r = &records[i];
        assert_eq!((r["event"].as_str(), r["request_id"].as_str()), (Some(*event), Some(*request_id)), "#{i}: {r}");
        assert_eq!(r["task_id"].as_str(), *task_id, "#{i}: {r}");
        assert!(r["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')), "#{i}: {r}");
    }

    // Blocking task: every field of the first records.
    let received = &records[0];
    assert_eq!(
        (&received["caller"], &received["tenant"], &received["backend"], &received["skill"]),
        (&json!("alice"), &json!("acme"), &json!("echo"), &json!("echo"))
    );
    assert_eq!((&received["binding"], &received["operation"]), (&json!("JSONRPC"), &json!("SendMessage")));
    assert_eq!(received["context_id"], "ctx-1");
    assert!(received.get("content").is_none(), "no content unless configured");
    let delivered = &records[1];
    let expected = artifact("echo", "blocking secret");
    assert_eq!(delivered["name"], "echo");
    assert_eq!(delivered["artifact_id"], "art-echo");
    assert_eq!((&delivered["part_count"], &delivered["bytes"]), (&json!(1), &json!(15)));
    assert_eq!(delivered["sha256"], expected.sha256);
    assert_eq!((&records[2]["state"], &records[2]["source"]), (&json!("TASK_STATE_COMPLETED"), &json!("response")));
    assert_eq!(records[3]["state"], "TASK_STATE_COMPLETED");
    assert!(records[3]["duration_ms"].is_u64());
    assert_eq!((&records[4]["outcome"], &records[4]["status"]), (&json!("ok"), &json!(200)));

    // Streamed task: trace id from traceparent, the stream's states deduplicated.
    let trace = json!("4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(records[5..13].iter().all(|r| r["trace_id"] == trace), "{:#?}", &records[5..13]);
    assert_eq!(records[6]["operation"], "SendStreamingMessage");
    let states: Vec<_> = records[5..13].iter().filter(|r| r["event"] == "task.state").map(|r| &r["state"]).collect();
    assert_eq!(states, [&json!("TASK_STATE_SUBMITTED"), &json!("TASK_STATE_WORKING"), &json!("TASK_STATE_COMPLETED")]);
    assert!(records[7..13].iter().all(|r| r["source"] == "stream" || r["event"] == "task.ended"));
    assert_eq!((&records[9]["name"], &records[10]["name"]), (&json!("draft"), &json!("final")));
    assert_eq!(records[7]["binding"], "JSONRPC");

    // Canceled task: the cancel's own records, and nothing new from the later read.
    assert_eq!(
        (&records[16]["state"], &records[16]["operation"]),
        (&json!("TASK_STATE_CANCELED"), &json!("CancelTask"))
    );
    assert_eq!((&records[17]["state"], &records[19]["operation"]), (&json!("TASK_STATE_CANCELED"), &json!("GetTask")));
    assert_eq!(records[19]["binding"], "HTTP+JSON");

    // Multi-turn: the second turn continues the task, which ends after both turns.
    assert_eq!(records[21]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(records[26]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(records[23]["caller"], "carol");

    // Denials, with reason codes and details, never the caller-facing messages.
    let denied = &records[28..33];
    let kinds: Vec<_> =
        denied.iter().map(|r| (r["category"].as_str().unwrap(), r["reason"].as_str().unwrap())).collect();
    assert_eq!(
        kinds,
        [
            ("authentication", "UNAUTHENTICATED"),
            ("permission", "PERMISSION_DENIED"),
            ("rate", "RATE_LIMITED"),
            ("concurrency", "TOO_MANY_TASKS"),
            ("validation", "VALIDATION_FAILED"),
        ]
    );
    assert!(denied.iter().all(|r| r["event"] == "denied" && r["operation"] == "SendMessage"));
    assert_eq!((&denied[0]["caller"], &denied[0]["detail"]), (&Value::Null, &json!("jwt: bad signature")));
    assert_eq!((&denied[1]["caller"], &denied[1]["detail"]), (&json!("dave"), &json!("skill admin needs scope admin")));
    assert_eq!(denied[2]["retry_after_ms"], 2000);
    assert_eq!((&denied[3]["held"], &denied[3]["limit"]), (&json!(3), &json!(3)));
    assert_eq!(denied[4]["violations"], json!(["/diff"]));
    let failed = &records[33];
    assert_eq!(
        (&failed["event"], &failed["outcome"], &failed["reason"]),
        (&json!("request"), &json!("error"), &json!("BACKEND_UNAVAILABLE"))
    );
    assert_eq!(failed["backend"], "echo");

    // No message content anywhere, and nothing left behind in memory for finished requests.
    let text = std::fs::read_to_string(&active).unwrap();
    for secret in SECRETS {
        assert!(!text.contains(secret), "'{secret}' leaked into the audit log");
    }
    assert_eq!(audit.inner.requests.len(), 0);
    assert_eq!(audit.inner.tasks.len(), 4);
    let report = verify_files(&[active]);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.start, Some(ChainStart::Genesis));
}

#[tokio::test]
async fn content_is_logged_only_for_configured_skills() {
    let dir = TempDir::new("content");
    let mut config = file_config(&dir, 100 * 1024 * 1024, 10);
    config.include_content_for_skills = vec!["write".into()];
    let (audit, sink) = Audit::start(&config).await.unwrap();
    scripted_run(&audit).await;
    sink.shutdown().await.unwrap();

    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    let with_content: Vec<_> = records.iter().filter(|r| r.get("content").is_some()).collect();
    assert_eq!(with_content.len(), 1, "{with_content:#?}");
    assert_eq!((&with_content[0]["event"], &with_content[0]["skill"]), (&json!("task.received"), &json!("write")));
    assert_eq!(
        with_content[0]["content"]["parts"],
        json!([{"text": "streamed secret"}, {"data": {"note": "streamed secret"}}])
    );
    let text = std::fs::read_to_string(&active).unwrap();
    for secret in SECRETS.iter().filter(|s| **s != "streamed secret") {
        assert!(!text.contains(secret), "'{secret}' leaked into the audit log");
    }
    assert!(verify_files(&[active]).is_ok());
}

#[tokio::test]
async fn an_abandoned_request_is_recorded_and_forgotten() {
    let dir = TempDir::new("abandoned");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let never = tower::service_fn(|_: Request<Bytes>| std::future::pending::<Result<Response<()>, A2aError>>());
    let mut service = audit.layer().layer(never);
    let (request, _) = request("r-gone", send(Operation::SendMessage, "x", None), ok("alice", "echo", "echo", vec![]));
    let future = service.ready().await.unwrap().call(request);
    assert_eq!(audit.inner.requests.len(), 1);
    drop(future);
    assert_eq!(audit.inner.requests.len(), 0);
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    assert_eq!(records.len(), 1);
    assert_eq!((&records[0]["event"], &records[0]["outcome"]), (&json!("request"), &json!("abandoned")));
}

#[tokio::test]
async fn a_trace_id_extension_wins_over_the_header() {
    let dir = TempDir::new("trace");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let (mut req, _) = request("r1", task_call(Operation::GetTask, "t"), ok("alice", "echo", "echo", vec![]));
    req.headers_mut().insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
    req.extensions_mut().insert(TraceId(Arc::from("0af7651916cd43dd8448eb211c80319c")));
    audit.layer().layer(inner(audit.clone())).oneshot(req).await.unwrap();
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    assert_eq!(records[0]["trace_id"], "0af7651916cd43dd8448eb211c80319c");
}

#[tokio::test]
async fn a_task_ends_with_its_duration_since_the_first_request() {
    let dir = TempDir::new("duration");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let turn1 = vec![obs("t", Some(TaskState::InputRequired))];
    run(&audit, "r1", send(Operation::SendMessage, "one", None), ok("carol", "echo", "echo", turn1)).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let turn2 = vec![obs("t", Some(TaskState::Completed))];
    run(&audit, "r2", send(Operation::SendMessage, "two", Some("t")), ok("carol", "echo", "echo", turn2)).await;
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    let ended: Vec<_> = records.iter().filter(|r| r["event"] == "task.ended").collect();
    assert_eq!(ended.len(), 1);
    let duration = ended[0]["duration_ms"].as_u64().unwrap();
    assert!((60..5000).contains(&duration), "{duration} ms");
}

/// Not a test: what the layer and the observer add per request on the request path, against the
/// same dummy stack without them, with a real file sink behind — once with the writer running
/// beside the requests, once with it held (no wake-ups, no competition for the CPU).
/// `cargo test --release -p a2a-policies --lib audit::tests::cost -- --ignored --nocapture`
#[tokio::test]
#[ignore]
async fn cost_per_request() {
    const N: usize = 50_000;
    fn requests(prefix: &str) -> Vec<Request<Bytes>> {
        (0..N)
            .map(|i| {
                // Every request completes a task of its own: four records each.
                let task: &'static str = Box::leak(format!("t{prefix}{i}").into_boxed_str());
                let step = ok("alice", "echo", "echo", vec![obs(task, Some(TaskState::Completed))]);
                request(&format!("{prefix}{i}"), send(Operation::SendMessage, "x", None), step).0
            })
            .collect()
    }
    async fn per_request(audit: Option<&Audit>, requests: Vec<Request<Bytes>>) -> f64 {
        let started = Instant::now();
        for request in requests {
            match audit {
                Some(audit) => audit.layer().layer(inner(audit.clone())).oneshot(request).await.unwrap(),
                None => inner_with(None).oneshot(request).await.unwrap(),
            };
        }
        started.elapsed().as_secs_f64() * 1e6 / N as f64
    }
    let dir = TempDir::new("cost");
    let file = FileConfig { path: dir.path().join("audit.jsonl"), max_bytes: 1 << 30, max_files: 10 };
    let mut config = file_config(&dir, 1 << 30, 10);
    config.queue = 1 << 20;

    let baseline = per_request(None, requests("p")).await;
    let (audit, sink) = Audit::start(&config).await.unwrap();
    let started = Instant::now();
    let live = per_request(Some(&audit), requests("a")).await;
    sink.shutdown().await.unwrap();
    let drained = started.elapsed().as_secs_f64() * 1e6 / N as f64;
    assert_eq!(audit.stats().dropped_total, 0);

    let held_file = FileConfig { path: dir.path().join("held.jsonl"), ..file };
    let (open_gate, gate) = std::sync::mpsc::channel();
    let opener: Opener = Box::new(move || {
        Ok(Box::new(Gated { inner: FileTarget::open(&held_file)?, gate: Some(gate) }) as Box<dyn Target>)
    });
    let sink = AuditSink::start_with(1 << 20, vec![opener]).await.unwrap();
    let held_audit = Audit::new(&AuditConfig::default(), sink.handle());
    let held = per_request(Some(&held_audit), requests("h")).await;
    drop(open_gate);
    sink.shutdown().await.unwrap();

    eprintln!(
        "{N} requests, 4 records each: dummy stack {baseline:.2} us/request; with audit {live:.2} \
         (writer running), {held:.2} (writer held); all written and synced after {drained:.2} us/request"
    );
}

// ---- tamper evidence ------------------------------------------------------------------------

async fn write_records(config: &AuditConfig, count: usize) {
    let (audit, sink) = Audit::start(config).await.unwrap();
    for i in 0..count {
        let common = Common { caller: Some(Arc::from(format!("caller-{i}"))), ..Common::default() };
        audit.inner.sink.send(Record::event(common, Kind::State { state: TaskState::Working, source: Source::Stream }));
    }
    sink.shutdown().await.unwrap();
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

#[tokio::test]
async fn verify_names_the_altered_record() {
    let dir = TempDir::new("alter");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 10).await;
    let active = dir.path().join("audit.jsonl");
    let report = verify_files(std::slice::from_ref(&active));
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 11);

    // One byte in record 5 (line 5): `caller-3` becomes `caller-X`.
    let mut bytes = std::fs::read(&active).unwrap();
    let at = bytes.windows(8).position(|w| w == b"caller-3").unwrap() + 7;
    bytes[at] = b'X';
    std::fs::write(&active, &bytes).unwrap();
    let report = verify_files(std::slice::from_ref(&active));
    let broken = report.broken.clone().expect("broken");
    assert_eq!((broken.line, broken.record, &broken.problem), (5, 5, &Problem::Altered), "{report}");
    assert_eq!(broken.file, active);
    assert!(report.to_string().contains("audit.jsonl:5: record 5: altered"), "{report}");

    // A byte that breaks the JSON is named as not a record.
    bytes[at] = b'"';
    std::fs::write(&active, &bytes).unwrap();
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (5, Problem::NotARecord));
}

#[tokio::test]
async fn verify_finds_a_deleted_line_and_a_changed_prev() {
    let dir = TempDir::new("delete");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 10).await;
    let active = dir.path().join("audit.jsonl");
    let original = lines(&active);

    let mut deleted = original.clone();
    deleted.remove(6);
    write_lines(&active, &deleted);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (7, Problem::Missing { count: 1 }));

    // Changing the `prev` of record 4 breaks the links on both sides of it: record 4 is named.
    let mut changed = original.clone();
    let prev_at = changed[3].rfind("\"prev\":\"").unwrap() + 8;
    let digit = if &changed[3][prev_at..=prev_at] == "0" { "1" } else { "0" };
    changed[3].replace_range(prev_at..=prev_at, digit);
    write_lines(&active, &changed);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (4, Problem::Altered));

    // Swapping two records.
    let mut swapped = original.clone();
    swapped.swap(3, 4);
    write_lines(&active, &swapped);
    assert!(verify_files(std::slice::from_ref(&active)).broken.is_some());

    // Removing the anchor.
    write_lines(&active, &original[1..]);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (1, Problem::NotAnchored));

    let missing = dir.path().join("nope.jsonl");
    let broken = verify_files(&[missing]).broken.unwrap();
    assert!(matches!(broken.problem, Problem::Unreadable(_)));
}

#[tokio::test]
async fn the_chain_runs_across_rotated_files() {
    let dir = TempDir::new("rotate");
    let config = file_config(&dir, 1024, 100);
    write_records(&config, 40).await;
    let active = dir.path().join("audit.jsonl");
    let files = chain_files(&active).unwrap();
    assert!(files.len() >= 5, "{files:?}");
    for file in &files {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size <= 1024, "{} holds {size} bytes", file.display());
        let first: Value = serde_json::from_str(&lines(file)[0]).unwrap();
        assert_eq!(first["event"], "chain_anchor");
    }
    let second: Value = serde_json::from_str(&lines(&files[1])[0]).unwrap();
    assert_eq!((&second["reason"], &second["prev_file"]), (&json!("rotate"), &json!("audit.jsonl.00000001")));
    let report = verify_files(&files);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.files.len(), files.len());
    assert_eq!(report.records as usize, files.iter().map(|f| lines(f).len()).sum::<usize>());
    assert_eq!(events(&active).len(), 40);

    // The last record of a middle file, altered: named in that file.
    let middle = &files[2];
    let mut middle_lines = lines(middle);
    let last = middle_lines.len() - 1;
    let at = middle_lines[last].find("caller-").unwrap() + 7;
    middle_lines[last].replace_range(at..=at, "Z");
    write_lines(middle, &middle_lines);
    let broken = verify_files(&files).broken.unwrap();
    assert_eq!((&broken.file, broken.line, broken.problem), (middle, last as u64 + 1, Problem::Altered));

    // A rotated file left out, or the files out of order.
    let without: Vec<_> = files.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, f)| f.clone()).collect();
    let broken = verify_files(&without).broken.unwrap();
    assert_eq!((&broken.file, broken.line), (&files[3], 1));
    let mut reversed = files.clone();
    reversed.swap(0, 1);
    assert!(verify_files(&reversed).broken.is_some());
}

#[tokio::test]
async fn rotation_keeps_max_files_and_the_rest_still_verifies() {
    let dir = TempDir::new("prune");
    let config = file_config(&dir, 1024, 2);
    write_records(&config, 40).await;
    let files = chain_files(&dir.path().join("audit.jsonl")).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    let report = verify_files(&files);
    assert!(report.is_ok(), "{report}");
    assert!(matches!(report.start, Some(ChainStart::Continues { prev_file: Some(_) })), "{report}");
}

#[tokio::test]
async fn a_restart_continues_the_chain() {
    let dir = TempDir::new("restart");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 3).await;
    write_records(&config, 2).await;
    let active = dir.path().join("audit.jsonl");
    let records = read_records(&active);
    assert_eq!(records.len(), 7);
    assert_eq!((&records[4]["event"], &records[4]["reason"]), (&json!("chain_anchor"), &json!("start")));
    let seqs: Vec<_> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5, 6]);
    assert!(verify_files(std::slice::from_ref(&active)).is_ok());

    // A torn last line (a crash mid-write) stays, is linked to, and is what verify reports.
    let mut file = std::fs::OpenOptions::new().append(true).open(&active).unwrap();
    io::Write::write_all(&mut file, b"{\"ts\":\"2026-").unwrap();
    drop(file);
    write_records(&config, 1).await;
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (8, Problem::NotARecord));
    assert_eq!(lines(&active).len(), 10);
}

#[tokio::test]
async fn a_missing_directory_is_named_at_start() {
    let dir = TempDir::new("missing");
    let mut config = file_config(&dir, 1 << 20, 10);
    let path = dir.path().join("no-such-dir").join("audit.jsonl");
    config.file.as_mut().unwrap().path = path.clone();
    let error = Audit::start(&config).await.unwrap_err();
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    config.queue = 0;
    assert!(matches!(Audit::start(&config).await.unwrap_err(), AuditError::Config(_)));
}

// ---- the queue ------------------------------------------------------------------------------

/// A file target that holds its first write until the test opens the gate.
struct Gated {
    inner: FileTarget,
    gate: Option<std::sync::mpsc::Receiver<()>>,
}

impl Target for Gated {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        if let Some(gate) = self.gate.take() {
            let _ = gate.recv();
        }
        self.inner.write(record)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn numbered(i: u64) -> Record {
    let common = Common { request_id: Some(Arc::from(format!("n{i}"))), ..Common::default() };
    Record::event(common, Kind::State { state: TaskState::Working, source: Source::Stream })
}

async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn overflow_is_counted_and_reported_in_the_log() {
    let dir = TempDir::new("overflow");
    let file = FileConfig { path: dir.path().join("audit.jsonl"), max_bytes: 1 << 20, max_files: 10 };
    let (open_gate, gate) = std::sync::mpsc::channel();
    let opener: Opener =
        Box::new(move || Ok(Box::new(Gated { inner: FileTarget::open(&file)?, gate: Some(gate) }) as Box<dyn Target>));
    let sink = AuditSink::start_with(1, vec![opener]).await.unwrap();
    let audit = Audit::new(&AuditConfig::default(), sink.handle());

    audit.inner.sink.send(numbered(1));
    // The writer holds record 1 at the gate; record 2 fills the queue of one; 3 to 5 overflow.
    wait_for("the writer to take record 1", || audit.stats().queue_depth == 0).await;
    for i in 2..=5 {
        audit.inner.sink.send(numbered(i));
    }
    assert_eq!(
        audit.stats(),
        AuditStats { queue_depth: 1, queue_capacity: 1, dropped_total: 3, write_errors_total: 0 }
    );
    drop(open_gate);
    sink.shutdown().await.unwrap();

    let records = events(&dir.path().join("audit.jsonl"));
    let summary: Vec<_> = records.iter().map(|r| (r["event"].as_str().unwrap(), r.get("count").cloned())).collect();
    assert_eq!(
        summary,
        [("task.state", None), ("audit.dropped", Some(json!(3))), ("task.state", None)],
        "{records:#?}"
    );
    assert_eq!((&records[0]["request_id"], &records[2]["request_id"]), (&json!("n1"), &json!("n2")));
    assert!(verify_files(&[dir.path().join("audit.jsonl")]).is_ok());
}

#[tokio::test]
async fn shutdown_flushes_everything_and_later_records_count_as_dropped() {
    let dir = TempDir::new("shutdown");
    let mut config = file_config(&dir, 1 << 30, 10);
    config.queue = 10_000;
    let (audit, sink) = Audit::start(&config).await.unwrap();
    for i in 0..5000 {
        audit.inner.sink.send(numbered(i));
    }
    sink.shutdown().await.unwrap();
    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    assert_eq!(records.len(), 5000);
    assert!(records.iter().enumerate().all(|(i, r)| r["request_id"] == format!("n{i}")));
    assert_eq!(audit.stats().dropped_total, 0);
    assert!(verify_files(&[active]).is_ok());

    audit.inner.sink.send(numbered(5000));
    assert_eq!(audit.stats().dropped_total, 1);
}

#[tokio::test]
async fn flush_makes_queued_records_readable() {
    let dir = TempDir::new("flush");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    for i in 0..3 {
        audit.inner.sink.send(numbered(i));
    }
    sink.flush().await.unwrap();
    assert_eq!(events(&dir.path().join("audit.jsonl")).len(), 3);
    sink.shutdown().await.unwrap();
}
