//! Tests of the whole audit log: scripted runs through the layer and the observer into a real
//! file, tamper evidence, and the queue. The helpers here are shared by the three parts.

mod full_disk;
mod keyed;
mod queue;
mod scripted;
mod tamper;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response};
use serde_json::{Value, json};
use tower::{Layer, Service, ServiceExt};

use super::file::FileTarget;
use super::record::{Common, Kind, Record, Written};
use super::sink::{Opener, Target};
use super::*;
use a2a_core::{
    A2aCall, A2aError, ArtifactInfo, AuthMethod, Binding, CallContext, CallRequest, Caller, Operation, RequestInfo,
    RouteHint, Source, TaskEvent, TaskObserver, TaskState, Violation,
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
        chain_key: None,
        on_write_failure: Default::default(),
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

/// The event records, without the chain's own anchors and seals.
fn events(active: &Path) -> Vec<Value> {
    read_records(active).into_iter().filter(|r| r["event"] != "chain_anchor" && r["event"] != "chain_seal").collect()
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

fn inner(audit: Audit) -> impl Service<CallRequest, Response = Response<()>, Error = A2aError> + Clone {
    inner_with(Some(audit))
}

/// The dummy stack; `observer` gets the observations of the unary answer.
fn inner_with(observer: Option<Audit>) -> impl Service<CallRequest, Response = Response<()>, Error = A2aError> + Clone {
    tower::service_fn(move |request: CallRequest| {
        let observer = observer.clone();
        async move {
            let step = request.extensions().get::<Step>().cloned().expect("a step");
            let info = request.body().info.clone();
            if let Some(caller) = step.caller {
                info.set_caller(caller);
            }
            if let Some((backend, skill)) = step.route {
                info.set_route(RouteHint {
                    backend: Arc::from(backend),
                    skill: Some(skill.to_string()),
                    skills: vec![skill.to_string()],
                });
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

fn request(id: &str, call: Call, step: Step) -> (CallRequest, RequestInfo) {
    let operation = call.call.operation;
    let mut context = CallContext::for_test(call.call, id);
    if !call.body.is_empty() {
        // What the decoder hands on: the checked request and the body written from it.
        let envelope: Value = serde_json::from_str(&call.body).expect("json");
        let params = serde_json::value::to_raw_value(&envelope["params"]).expect("raw");
        let request = a2a_model::Request::parse(operation, Some(&params)).expect("a valid request");
        context.checked = a2a_core::Checked { request, early: None };
    }
    let info = context.info.clone();
    let mut request = Request::builder().method("POST").uri("/").body(Box::new(context)).unwrap();
    request.extensions_mut().insert(step);
    (request, info)
}

async fn run(audit: &Audit, id: &str, call: Call, step: Step) -> RequestInfo {
    let (request, info) = request(id, call, step);
    let _ = audit.layer().layer(inner(audit.clone())).oneshot(request).await;
    info
}

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

/// A file target that holds its first write until the test opens the gate.
struct Gated {
    inner: FileTarget,
    gate: Option<std::sync::mpsc::Receiver<()>>,
}

impl Target for Gated {
    fn write(&mut self, record: &Written) -> io::Result<()> {
        if let Some(gate) = self.gate.take() {
            let _ = gate.recv();
        }
        self.inner.write(record)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn failing(&self) -> bool {
        self.inner.failing()
    }
    fn lost(&self) -> u64 {
        self.inner.lost()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
    fn seal(&mut self) -> io::Result<()> {
        self.inner.seal()
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
