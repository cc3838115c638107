//! Tests of the live-task limits (over 400 lines: a case per rule, each self-contained).

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;

use futures::channel::{mpsc, oneshot};
use futures::future::BoxFuture;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use tower::ServiceExt;

use bytes::Bytes;

use super::*;
use a2a_core::CallContext;
use a2a_core::{A2aCall, Binding, Caller, Operation, Source, TaskEvent, TaskObserver, TaskState};
use http::Request;

type Frames = mpsc::UnboundedSender<Result<Frame<Bytes>, Infallible>>;
type FrameSource = Arc<Mutex<Option<mpsc::UnboundedReceiver<Result<Frame<Bytes>, Infallible>>>>>;
type Answer = http::Response<LeaseBody<BoxBody<Bytes, Infallible>>>;

/// What the fake backend does with one request; carried as a request extension.
#[derive(Clone)]
enum Script {
    /// A unary answer naming this task in this state.
    Task(&'static str, TaskState),
    /// A unary answer holding a plain message, no task.
    Message,
    /// The backend cannot be reached.
    Fail,
    /// An SSE stream whose frames the test sends; the test reports its events as the tap would.
    Stream(FrameSource),
    /// A plain message, once the test says so.
    Wait(Arc<Mutex<Option<oneshot::Receiver<()>>>>),
}

/// The gateway's part, faked: reports task facts of unary answers to the observer before answering,
/// with the request id of the request whose answer they are in.
#[derive(Clone)]
struct Backend {
    live: Arc<LiveTasks>,
}

impl Service<CallRequest> for Backend {
    type Response = http::Response<BoxBody<Bytes, Infallible>>;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<Self::Response, A2aError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let live = self.live.clone();
        Box::pin(async move {
            let script = request.extensions().get::<Script>().cloned().expect("a script");
            let request_id = Some(request.body().info.request_id().to_owned());
            let body = match script {
                Script::Task(task, state) => {
                    live.observe(&event(request_id.as_deref(), task, state, Source::Response));
                    Full::new(Bytes::from_static(b"{\"task\":{}}")).boxed()
                }
                Script::Message => Full::new(Bytes::from_static(b"{\"message\":{}}")).boxed(),
                Script::Fail => return Err(A2aError::BackendUnavailable("unreachable".into())),
                Script::Stream(frames) => {
                    let frames = frames.lock().expect("lock").take().expect("one stream");
                    StreamBody::new(frames).boxed()
                }
                Script::Wait(go) => {
                    let go = go.lock().expect("lock").take().expect("one wait");
                    let _ = go.await;
                    Full::new(Bytes::from_static(b"{\"message\":{}}")).boxed()
                }
            };
            Ok(http::Response::new(body))
        })
    }
}

fn event<'a>(request_id: Option<&'a str>, task: &'a str, state: TaskState, source: Source) -> TaskEvent<'a> {
    TaskEvent {
        caller: None,
        request_id,
        backend: "agent",
        skill: None,
        task_id: Some(task),
        context_id: Some("ctx"),
        state: Some(state),
        artifact: None,
        source,
        at: std::time::Instant::now(),
    }
}

struct Harness {
    live: Arc<LiveTasks>,
    service: ConcurrencyService<Backend>,
}

impl Harness {
    fn new(limit: usize) -> Harness {
        Harness::with(ConcurrencyConfig { default_max_live_tasks: limit, ..ConcurrencyConfig::default() })
    }

    fn with(config: ConcurrencyConfig) -> Harness {
        let live = LiveTasks::new(&config).expect("valid config");
        let service = ConcurrencyLayer::new(live.clone()).layer(Backend { live: live.clone() });
        Harness { live, service }
    }

    async fn call(&self, request: CallRequest) -> Result<Answer, A2aError> {
        self.service.clone().oneshot(request).await
    }

    /// A new task for `who`: SendMessage without a task id.
    async fn create(&self, who: &str, request_id: &str, script: Script) -> Result<Answer, A2aError> {
        self.call(request(who, request_id, Operation::SendMessage, None, script)).await
    }

    fn live(&self, who: &str) -> usize {
        self.live.live_tasks(who)
    }
}

fn request(who: &str, request_id: &str, operation: Operation, task: Option<&str>, script: Script) -> CallRequest {
    let mut call = A2aCall::new(Binding::JsonRpc, operation);
    call.task_id = task.map(str::to_owned);
    let mut context = CallContext::for_test(call, request_id);
    context.caller = Caller { id: Arc::from(who), ..Caller::anonymous(IpAddr::V4(Ipv4Addr::LOCALHOST)) };
    let mut request = Request::new(Box::new(context));
    request.extensions_mut().insert(script);
    request
}

fn refused(result: Result<Answer, A2aError>) -> (usize, usize) {
    match result {
        Err(A2aError::TooManyTasks { held, limit }) => (held, limit),
        Err(other) => panic!("expected TooManyTasks, got {other:?}"),
        Ok(_) => panic!("expected TooManyTasks, got an answer"),
    }
}

fn stream() -> (Frames, Script) {
    let (frames, receiver) = mpsc::unbounded();
    (frames, Script::Stream(Arc::new(Mutex::new(Some(receiver)))))
}

#[tokio::test]
async fn the_next_task_is_refused_until_a_unary_answer_shows_one_finished() {
    let gw = Harness::new(2);
    gw.create("alice", "r1", Script::Task("t1", TaskState::Working)).await.expect("first");
    gw.create("alice", "r2", Script::Task("t2", TaskState::Submitted)).await.expect("second");
    assert_eq!(gw.live("alice"), 2);
    assert_eq!(refused(gw.create("alice", "r3", Script::Task("t3", TaskState::Working)).await), (2, 2));

    // Continuing a held task is not a new task: admitted at the limit, and its answer ends t1.
    let more = request("alice", "r4", Operation::SendMessage, Some("t1"), Script::Task("t1", TaskState::Completed));
    gw.call(more).await.expect("continuations are not refused");
    assert_eq!(gw.live("alice"), 1);
    gw.create("alice", "r5", Script::Task("t5", TaskState::Working)).await.expect("a slot is free again");
    assert_eq!(gw.live("alice"), 2);
}

#[tokio::test]
async fn the_next_task_is_refused_until_a_stream_event_shows_one_finished() {
    let gw = Harness::new(1);
    let (frames, script) = stream();
    let answer = gw.call(request("alice", "s1", Operation::SendStreamingMessage, None, script)).await.expect("stream");
    assert_eq!(gw.live("alice"), 1, "pending until the stream names its task");
    assert_eq!(refused(gw.create("alice", "r2", Script::Message).await), (1, 1));

    // The tap reads the first event: the reservation becomes a lease on t1.
    gw.live.observe(&event(Some("s1"), "t1", TaskState::Submitted, Source::Stream));
    frames.unbounded_send(Ok(Frame::data(Bytes::from_static(b"data: {}\n\n")))).expect("send");
    let mut body = answer.into_body();
    assert!(body.frame().await.is_some());
    gw.live.observe(&event(Some("s1"), "t1", TaskState::Working, Source::Stream));
    assert_eq!(refused(gw.create("alice", "r3", Script::Message).await), (1, 1));

    gw.live.observe(&event(Some("s1"), "t1", TaskState::Completed, Source::Stream));
    assert_eq!(gw.live("alice"), 0);
    gw.create("alice", "r4", Script::Task("t4", TaskState::Working)).await.expect("a slot is free again");
    drop((frames, body));
    assert_eq!(gw.live("alice"), 1, "the end of a bound stream does not end its task's lease");
}

#[tokio::test]
async fn the_next_task_is_refused_until_a_later_get_or_cancel_shows_one_finished() {
    let gw = Harness::new(1);
    gw.create("alice", "r1", Script::Task("t1", TaskState::InputRequired)).await.expect("first");
    assert_eq!(refused(gw.create("alice", "r2", Script::Message).await), (1, 1));
    let poll = request("alice", "r3", Operation::GetTask, Some("t1"), Script::Task("t1", TaskState::Working));
    gw.call(poll).await.expect("get");
    assert_eq!(gw.live("alice"), 1, "still live");
    let poll = request("alice", "r4", Operation::GetTask, Some("t1"), Script::Task("t1", TaskState::Failed));
    gw.call(poll).await.expect("get");
    assert_eq!(gw.live("alice"), 0);

    gw.create("alice", "r5", Script::Task("t5", TaskState::Working)).await.expect("a slot is free again");
    let cancel = request("alice", "r6", Operation::CancelTask, Some("t5"), Script::Task("t5", TaskState::Canceled));
    gw.call(cancel).await.expect("cancel");
    assert_eq!(gw.live("alice"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_lease_ends_when_its_ttl_expires() {
    let gw = Harness::with(ConcurrencyConfig {
        default_max_live_tasks: 1,
        lease_ttl: Duration::from_secs(600),
        ..ConcurrencyConfig::default()
    });
    gw.create("alice", "r1", Script::Task("t1", TaskState::Working)).await.expect("first");
    tokio::time::advance(Duration::from_secs(599)).await;
    assert_eq!(refused(gw.create("alice", "r2", Script::Message).await), (1, 1));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(gw.live("alice"), 0);
    gw.create("alice", "r3", Script::Task("t3", TaskState::Working)).await.expect("the lease expired");
}

#[tokio::test]
async fn a_request_in_flight_holds_its_slot_so_concurrent_ones_cannot_overshoot() {
    let gw = Harness::new(1);
    let (go, wait) = oneshot::channel();
    let mut service = gw.service.clone();
    // `call` reserves at once; the answer comes when the test says so.
    let first = service.call(request(
        "alice",
        "r1",
        Operation::SendMessage,
        None,
        Script::Wait(Arc::new(Mutex::new(Some(wait)))),
    ));
    let first = tokio::spawn(first);
    assert_eq!(gw.live("alice"), 1);
    assert_eq!(refused(gw.create("alice", "r2", Script::Message).await), (1, 1));
    go.send(()).expect("still waiting");
    let answer = first.await.expect("joined").expect("a plain message");
    drop(answer);
    assert_eq!(gw.live("alice"), 0, "a plain message holds no task");
    gw.create("alice", "r3", Script::Message).await.expect("admitted again");
}

#[tokio::test]
async fn reservations_end_with_answers_that_hold_no_live_task() {
    let gw = Harness::new(1);
    assert!(matches!(gw.create("alice", "r1", Script::Fail).await, Err(A2aError::BackendUnavailable(_))));
    assert_eq!(gw.live("alice"), 0, "an error answer");

    let answer = gw.create("alice", "r2", Script::Message).await.expect("message");
    let collected = answer.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&collected[..], b"{\"message\":{}}", "bytes pass through untouched");
    assert_eq!(gw.live("alice"), 0, "a plain message, once its body is over");

    let answer = gw.create("alice", "r3", Script::Task("t3", TaskState::Rejected)).await.expect("task");
    assert_eq!(gw.live("alice"), 0, "an already-terminal task, even before its body is read");
    drop(answer);
    assert_eq!(gw.live.live_tasks("alice"), 0);
}

#[tokio::test]
async fn a_stream_that_ends_or_is_dropped_before_naming_a_task_releases_its_slot() {
    let gw = Harness::new(1);
    let (frames, script) = stream();
    let answer = gw.call(request("alice", "s1", Operation::SendStreamingMessage, None, script)).await.expect("stream");
    // A context-only event names no task: still pending.
    let context_only = TaskEvent { task_id: None, ..event(Some("s1"), "-", TaskState::Working, Source::Stream) };
    gw.live.observe(&context_only);
    assert_eq!(gw.live("alice"), 1);
    drop(frames);
    let mut body = answer.into_body();
    assert!(body.frame().await.is_none(), "the stream is over");
    assert_eq!(gw.live("alice"), 0);

    let (_frames, script) = stream();
    let answer = gw.call(request("alice", "s2", Operation::SendStreamingMessage, None, script)).await.expect("stream");
    assert_eq!(gw.live("alice"), 1);
    drop(answer);
    assert_eq!(gw.live("alice"), 0, "the caller went away");
}

#[tokio::test]
async fn an_abandoned_request_releases_its_slot() {
    let gw = Harness::new(1);
    let (_go, wait) = oneshot::channel();
    let mut service = gw.service.clone();
    let pending = service.call(request(
        "alice",
        "r1",
        Operation::SendMessage,
        None,
        Script::Wait(Arc::new(Mutex::new(Some(wait)))),
    ));
    assert_eq!(gw.live("alice"), 1);
    drop(pending);
    assert_eq!(gw.live("alice"), 0);
}

#[tokio::test]
async fn limits_are_per_caller_and_overridable() {
    let mut config = ConcurrencyConfig { default_max_live_tasks: 1, ..ConcurrencyConfig::default() };
    config.callers.insert("apikey:ci".into(), 3);
    let gw = Harness::with(config);
    gw.create("alice", "a1", Script::Task("a1", TaskState::Working)).await.expect("alice's one");
    gw.create("bob", "b1", Script::Task("b1", TaskState::Working)).await.expect("bob has his own slots");
    for i in 0..3 {
        let id = format!("ci{i}");
        let task: &'static str = ["c0", "c1", "c2"][i];
        gw.create("apikey:ci", &id, Script::Task(task, TaskState::Working)).await.expect("the override");
    }
    assert_eq!(refused(gw.create("apikey:ci", "ci3", Script::Message).await), (3, 3));
    assert_eq!((gw.live("alice"), gw.live("bob"), gw.live("apikey:ci")), (1, 1, 3));
    assert_eq!(gw.live.limit("apikey:ci"), 3);
}

#[tokio::test]
async fn only_task_creating_calls_take_a_slot() {
    let gw = Harness::new(1);
    gw.create("alice", "r1", Script::Task("t1", TaskState::Working)).await.expect("alice's one");
    let get = request("alice", "r2", Operation::GetTask, Some("t1"), Script::Message);
    gw.call(get).await.expect("other operations pass through at the limit");
    let continued = request("alice", "r3", Operation::SendMessage, Some("t1"), Script::Message);
    gw.call(continued).await.expect("a send that continues a task creates none");
    assert_eq!(gw.live("alice"), 1);
}

#[test]
fn the_config_reads_durations_and_refuses_unknown_keys() {
    let config: ConcurrencyConfig =
        serde_json::from_str(r#"{"default_max_live_tasks": 3, "callers": {"alice": 5}, "lease_ttl": "90s"}"#)
            .expect("parses");
    assert_eq!(config.lease_ttl, Duration::from_secs(90));
    assert_eq!(config.callers["alice"], 5);
    assert_eq!(serde_json::from_str::<ConcurrencyConfig>("{}").expect("defaults"), ConcurrencyConfig::default());
    assert!(serde_json::from_str::<ConcurrencyConfig>(r#"{"lease_ttl": "soon"}"#).is_err());
    assert!(serde_json::from_str::<ConcurrencyConfig>(r#"{"max": 3}"#).is_err());
}

/// The three limit layers in the gateway's order, over the gateway's body type: what the lead wires.
#[tokio::test]
async fn the_limit_layers_stack_in_gateway_order_over_an_axum_body() {
    use axum::body::Body;

    use crate::rate_limit::{RateLimitConfig, RateLimitLayer, RateLimits};
    use crate::validate::{InputValidation, NoCatalog, ValidateLayer, ValidationConfig};

    fn gateway_shaped<S>(service: S) -> S
    where
        S: Service<CallRequest, Response = http::Response<Body>, Error = A2aError> + Clone + Send + 'static,
        S::Future: Send,
    {
        service
    }

    let limits = Arc::new(RateLimits::new(&RateLimitConfig::default()).expect("valid"));
    let live = LiveTasks::new(&ConcurrencyConfig::default()).expect("valid");
    let validation = InputValidation::new(&ValidationConfig::default(), std::path::Path::new("."), Arc::new(NoCatalog));
    let observer = live.clone();
    let forward = tower::service_fn(move |request: CallRequest| {
        let request_id = Some(request.body().info.request_id().to_owned());
        observer.observe(&event(request_id.as_deref(), "t1", TaskState::Working, Source::Response));
        async { Ok::<_, A2aError>(http::Response::new(Body::from("{\"task\":{}}"))) }
    });
    let stack = gateway_shaped(
        tower::ServiceBuilder::new()
            .map_response(|response: http::Response<LeaseBody<Body>>| response.map(Body::new))
            .layer(RateLimitLayer::new(limits))
            .layer(ConcurrencyLayer::new(live.clone()))
            .layer(ValidateLayer::new(Arc::new(validation.expect("valid"))))
            .service(forward),
    );
    let valid = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"hi"}]}}}"#;
    let answer = stack.clone().oneshot(request_for_body("alice", "r1", valid)).await.expect("admitted");
    assert_eq!(answer.into_body().collect().await.expect("body").to_bytes(), "{\"task\":{}}");
    assert_eq!(live.live_tasks("alice"), 1);

    let invalid = r#"{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"parts":[]}}}"#;
    assert!(matches!(stack.oneshot(request_for_body("alice", "r2", invalid)).await, Err(A2aError::Validation { .. })));
    assert_eq!(live.live_tasks("alice"), 1, "a refused input releases its reservation at once");
}

fn request_for_body(who: &str, request_id: &str, body: &'static str) -> CallRequest {
    let mut request = request(who, request_id, Operation::SendMessage, None, Script::Message);
    // What the decoder hands on: the checked model and the body written from it.
    let envelope: serde_json::Value = serde_json::from_str(body).expect("json");
    let params = serde_json::value::to_raw_value(&envelope["params"]).expect("raw");
    let checked = a2a_model::Request::parse(Operation::SendMessage, Some(&params)).expect("a send");
    request.body_mut().checked = a2a_core::Checked { request: checked, early: None };
    request
}

/// A shared lease store that admits or refuses as the test says and records what it was told.
#[derive(Default)]
struct FakeLeases {
    refuse: bool,
    log: Mutex<Vec<String>>,
}

impl SharedLeases for FakeLeases {
    fn reserve(
        &self,
        caller: Arc<str>,
        request_id: Arc<str>,
        limit: usize,
        _ttl: Duration,
    ) -> BoxFuture<'static, Result<LeaseVerdict, A2aError>> {
        self.log.lock().unwrap().push(format!("reserve {caller} {request_id}"));
        let refuse = self.refuse;
        Box::pin(async move {
            if refuse { Err(A2aError::TooManyTasks { held: limit, limit }) } else { Ok(LeaseVerdict::Reserved) }
        })
    }
    fn release(&self, request_id: &str) {
        self.log.lock().unwrap().push(format!("release {request_id}"));
    }
    fn bind(&self, request_id: &str, backend: &str, task_id: &str) {
        self.log.lock().unwrap().push(format!("bind {request_id} {backend}/{task_id}"));
    }
    fn finish(&self, backend: &str, task_id: &str) {
        self.log.lock().unwrap().push(format!("finish {backend}/{task_id}"));
    }
}

fn shared_table(store: Arc<FakeLeases>) -> Arc<LiveTasks> {
    LiveTasks::with_store(&ConcurrencyConfig::default(), Some(store)).expect("valid")
}

async fn reserved(live: &Arc<LiveTasks>, caller: &str, request_id: &str) -> Result<Reservation, A2aError> {
    match live.reserve_any(&Arc::from(caller), request_id) {
        Reserving::Now(result) => result,
        Reserving::Shared(future) => future.await,
    }
}

#[tokio::test]
async fn with_a_shared_store_slots_are_reserved_bound_released_and_ended_there() {
    let store = Arc::new(FakeLeases::default());
    let live = shared_table(store.clone());
    let guard = reserved(&live, "alice", "r1").await.expect("reserved");
    let event = |request_id, state| TaskEvent {
        caller: None,
        request_id,
        backend: "b",
        skill: None,
        task_id: Some("t1"),
        context_id: None,
        state: Some(state),
        artifact: None,
        source: Source::Response,
        at: std::time::Instant::now(),
    };
    live.observe(&event(Some("r1"), TaskState::Working));
    drop(guard);
    live.observe(&event(None, TaskState::Completed));
    drop(reserved(&live, "alice", "r2").await.expect("reserved"));
    assert_eq!(
        *store.log.lock().unwrap(),
        ["reserve alice r1", "bind r1 b/t1", "release r1", "finish b/t1", "reserve alice r2", "release r2"]
    );
    assert_eq!(live.footprint(), (0, 0, 0), "the in-process table holds nothing");
}

#[tokio::test]
async fn a_shared_refusal_refuses_the_request() {
    let live = shared_table(Arc::new(FakeLeases { refuse: true, ..FakeLeases::default() }));
    assert!(matches!(reserved(&live, "alice", "r1").await, Err(A2aError::TooManyTasks { .. })));
}
