//! The outermost layer: reads and decodes each call, runs it inside on a task of its own, and renders
//! every refusal in the caller's dialect and binding.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_core::{
    A2aError, Binding, CallContext, CallRequest, Checked, ClientAddress, ClientCertificate, Dialect, EarlyCall,
    Operation, RequestInfo,
};
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method, Request, Response, header};
use http_body_util::{BodyExt, Limited};
use tower::{Layer, Service, ServiceExt};

use crate::protocol::bridge::{self, Answering};
use crate::protocol::decode::{Decoded, decode_any, decode_grpc, dialect_hint, split_agent_path};
use crate::protocol::early_ids::EarlyIds;
use crate::protocol::errors::Refusal;
use crate::protocol::grpc;

/// Reads the body (refusing oversize ones before reading them whole), decodes the call into an
/// [`A2aCall`] extension, and answers any refusal from the layers inside in the caller's dialect and
/// binding (as a [`Refusal`], the one way an error becomes a response; a gRPC caller's as its status,
/// `errors::render_grpc`). A 0.3 or early caller's
/// request goes inside in its checked 1.0 form, and the 1.0 answer comes back out in the caller's
/// dialect ([`bridge::answer`]).
#[derive(Clone)]
pub struct DecodeLayer {
    pub(super) max_body: usize,
    /// The whole body must arrive within this (`listeners.protection.body_read_timeout`).
    pub(super) body_timeout: Option<Duration>,
    /// JSON nesting deeper than this is refused before anything parses it (`limits.max_json_depth`).
    pub(super) max_depth: usize,
    /// Early callers' task ids → the agents' tasks (filled in by their answers).
    pub(super) early_ids: Arc<dyn EarlyIds>,
    /// gRPC calls are served (`listeners.grpc`).
    pub(super) grpc: bool,
    /// No authentication is configured: every caller is the one its address makes.
    pub(super) anonymous: bool,
}

impl<S> Layer<S> for DecodeLayer {
    type Service = DecodeService<S>;
    fn layer(&self, inner: S) -> DecodeService<S> {
        DecodeService {
            inner,
            max_body: self.max_body,
            body_timeout: self.body_timeout,
            max_depth: self.max_depth,
            early_ids: self.early_ids.clone(),
            grpc: self.grpc,
            anonymous: self.anonymous,
        }
    }
}

#[derive(Clone)]
pub struct DecodeService<S> {
    inner: S,
    pub(super) max_body: usize,
    pub(super) body_timeout: Option<Duration>,
    pub(super) max_depth: usize,
    pub(super) early_ids: Arc<dyn EarlyIds>,
    pub(super) grpc: bool,
    pub(super) anonymous: bool,
}

impl<S> Service<Request<Body>> for DecodeService<S>
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        self.serve(request)
    }
}

impl<S> super::ServeA2a for DecodeService<S>
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    fn serve(&self, request: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
        DecodeService::serve(self, request)
    }
}

impl<S> DecodeService<S>
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
{
    /// Serves one call: what [`Service::call`] does, through a shared reference.
    pub fn serve(&self, request: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
        let inner = self.inner.clone();
        let (max_body, body_timeout, max_depth) = (self.max_body, self.body_timeout, self.max_depth);
        let early_ids = self.early_ids.clone();
        let anonymous = self.anonymous;
        // gRPC needs HTTP/2 (its status travels in trailers); over HTTP/1 such a request is JSON's.
        let http2 = request.version() == http::Version::HTTP_2;
        if http2 && *request.method() == Method::POST && grpc::front::is_grpc(request.headers()) {
            if !self.grpc {
                let off =
                    grpc::wire::Status::new(grpc::wire::UNIMPLEMENTED, "gRPC is not served here (listeners.grpc)");
                return Box::pin(async move { Ok(grpc::front::status_response(&off)) });
            }
            return Box::pin(serve_grpc(inner, request, (max_body, body_timeout, max_depth), anonymous));
        }
        Box::pin(async move {
            // In a block of its own: what only starting the call needs (the request's parts, its
            // body, the decoded request, all moved on into the call's context) is gone from this
            // future's state while the call runs, instead of being carried, unused, to its end.
            let Started { run, answering, request_id, binding, context_id } = {
                let (parts, body) = request.into_parts();
                let read = read_body_in_time(&parts.headers, body, max_body, body_timeout).await;
                match start_read(inner, parts, read, max_depth, early_ids, anonymous) {
                    Ok(started) => started,
                    Err(refused) => return Ok(*refused),
                }
            };
            let result = run.await;
            let v03_rest_subscribe = answering.dialect == Dialect::V03
                && binding == Binding::Rest
                && answering.operation == Operation::SubscribeToTask;
            let undecided = result.as_ref().err().and_then(|error| {
                let rpc_id = answering.rpc_id.as_ref();
                super::undecided::answer(error, answering.operation, binding, rpc_id, context_id.as_deref())
            });
            let mut response = match (result, undecided) {
                (_, Some(rejected)) => bridge::answer(answering, rejected).await,
                (Ok(response), None) => bridge::answer(answering, response).await,
                (Err(error), None) => {
                    tracing::debug!(%error, "request refused");
                    Refusal::new(error, answering.dialect, binding, answering.rpc_id.clone()).into_response()
                }
            };
            if v03_rest_subscribe {
                // Boxed: a rare answer's future, not carried by every call's.
                response = Box::pin(v03_rest_subscribe_refusal(response)).await;
            }
            if let Some(id) = request_id {
                response.headers_mut().insert(crate::protocol::REQUEST_ID_HEADER, id);
            }
            Ok(response)
        })
    }
}

/// A call started through the layers inside, and what answering it needs.
struct Started {
    run: RunToEnd,
    answering: Answering,
    request_id: Option<HeaderValue>,
    binding: Binding,
    /// The caller's context id (for the answer to a call refused before it was decided).
    context_id: Option<String>,
}

/// A call whose body was read (or failed to be): checked (media type, nesting depth), decoded, and
/// started ([`start_inner`]); or the refusal to answer it with.
fn start_read<S>(
    inner: S,
    parts: http::request::Parts,
    read: Result<Bytes, A2aError>,
    max_depth: usize,
    early_ids: Arc<dyn EarlyIds>,
    anonymous: bool,
) -> Result<Started, Box<Response<Body>>>
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Send + 'static,
    S::Future: Send,
{
    let read = read.and_then(|b| super::media_type::check(&parts.method, &parts.headers, &b).map(|()| b));
    let bytes = match read.and_then(|b| crate::protocol::json_limits::check_depth(&b, max_depth).map(|()| b)) {
        Ok(bytes) => bytes,
        Err(error) => {
            let binding = binding_of(&parts.method, parts.uri.path());
            let dialect = dialect_hint(&parts.method, parts.uri.path(), &parts.headers);
            return Err(Box::new(Refusal::new(error, dialect, binding, None).into_response()));
        }
    };
    let uri = &parts.uri;
    let decoded = match decode_any(&parts.method, uri.path(), uri.query(), &parts.headers, &bytes) {
        Ok(decoded) => decoded,
        Err(refusal) => {
            crate::metrics::calls::record_undecoded(refusal.error.reason());
            return Err(Box::new(refusal.into_response()));
        }
    };
    let binding = decoded.call.binding;
    let context_id = decoded.call.context_id.clone();
    let (run, answering, request_id) = start_inner(inner, parts, decoded, Some(early_ids), anonymous);
    Ok(Started { run, answering, request_id, binding, context_id })
}

/// Starts a decoded call through the layers inside, in its checked form, to run to its end even when
/// the caller hangs up ([`RunToEnd`]). Returns the call to await, what answering it needs, and the
/// request id. Not itself async: awaited in its caller's future, its locals (the call's context
/// among them) would stay in that future's state, copied with it.
fn start_inner<S>(
    inner: S,
    parts: http::request::Parts,
    decoded: Decoded,
    early_ids: Option<Arc<dyn EarlyIds>>,
    anonymous: bool,
) -> (RunToEnd, Answering, Option<HeaderValue>)
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Send + 'static,
    S::Future: Send,
{
    let Decoded { call, request, early_id, new_task } = decoded;
    let answering = Answering {
        dialect: call.dialect,
        binding: call.binding,
        operation: call.operation,
        rpc_id: call.rpc_id.clone(),
        early_id: early_id.clone(),
        new_task,
        early_ids,
        early_scope: None,
    };
    let info = RequestInfo::new(new_request_id());
    let request_id = HeaderValue::from_str(info.request_id()).ok();
    // The listener's judgement of where the call came from (a trusted proxy's client), else the peer.
    let client =
        parts.extensions.get::<ClientAddress>().copied().or_else(|| {
            parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>().map(|peer| ClientAddress(peer.0.ip()))
        });
    let early = early_id.map(|id| EarlyCall { id, new_task });
    // Everything inside — policies and the backend — sees the checked request (written out for the
    // agent by the leg that sends it): never the caller's bytes.
    let mut context = CallContext::new(call, Checked { request, early }, info, client);
    context.certificate = parts.extensions.get::<ClientCertificate>().cloned();
    if anonymous {
        context.info.set_caller(context.caller.clone());
    }
    let run = RunToEnd::new(inner.oneshot(Request::from_parts(parts, Box::new(context))));
    (run, answering, request_id)
}

/// A fresh request id: a UUIDv7 (time-ordered, so ids sort by arrival in logs and the audit log) whose
/// random bits come from the thread's CSPRNG, seeded once from the OS, instead of one `getrandom`
/// system call per request as `Uuid::now_v7` makes.
fn new_request_id() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let random: [u8; 10] = rand::random();
    uuid::Builder::from_unix_timestamp_millis(now.as_millis() as u64, &random).into_uuid().to_string()
}

/// A gRPC call: its one message read into the checked model like JSON ([`decode_grpc`]), run
/// through the same layers as a 1.0 JSON-RPC call, and answered in gRPC ([`grpc::front`]).
async fn serve_grpc<S>(
    inner: S,
    request: Request<Body>,
    (max_body, body_timeout, max_depth): (usize, Option<Duration>, usize),
    anonymous: bool,
) -> Result<Response<Body>, Infallible>
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Send + 'static,
    S::Future: Send,
{
    let (mut parts, body) = request.into_parts();
    let method = match grpc::front::method_of(parts.uri.path()) {
        Ok(method) => method,
        Err(status) => return Ok(grpc::front::status_response(&status)),
    };
    let read = read_body_in_time(&parts.headers, body, max_body, body_timeout).await;
    let json = match read.map(|bytes| grpc::front::request_json(&method, &bytes)) {
        Ok(Ok(json)) => json,
        Ok(Err(status)) => return Ok(grpc::front::status_response(&status)),
        Err(error) => return Ok(grpc::front::refusal(&error)),
    };
    let decoded = crate::protocol::json_limits::check_depth(&json, max_depth)
        .and_then(|()| decode_grpc(method.operation, &json, &parts.headers));
    let decoded = match decoded {
        Ok(decoded) => decoded,
        Err(error) => {
            crate::metrics::calls::record_undecoded(error.reason());
            return Ok(grpc::front::refusal(&error));
        }
    };
    // Inside, the call is its JSON-RPC form at the endpoint's path.
    parts.uri = http::Uri::from_static("/");
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.extensions.insert(grpc::GrpcCall);
    // The caller's grpc-timeout bounds the whole call, its stream included; the call itself runs on
    // inside to its end (as for a caller that hangs up).
    let deadline = grpc::deadline::of(&parts.headers).map(|d| tokio::time::Instant::now() + d);
    let context_id = decoded.call.context_id.clone();
    let (run, answering, request_id) = start_inner(inner, parts, decoded, None, anonymous);
    let result = match deadline {
        None => run.await,
        Some(at) => match tokio::time::timeout_at(at, run).await {
            Ok(done) => done,
            Err(_) => return Ok(grpc::front::status_response(&grpc::deadline::exceeded())),
        },
    };
    let undecided = result.as_ref().err().and_then(|error| {
        let rpc_id = answering.rpc_id.as_ref();
        super::undecided::answer(error, answering.operation, Binding::JsonRpc, rpc_id, context_id.as_deref())
    });
    let mut response = match (result, undecided) {
        (_, Some(rejected)) => grpc::front::answer(&method, rejected, deadline).await,
        (Ok(response), None) => grpc::front::answer(&method, response, deadline).await,
        (Err(error), None) => {
            tracing::debug!(%error, "gRPC request refused");
            grpc::front::refusal(&error)
        }
    };
    if let Some(id) = request_id {
        response.headers_mut().insert(crate::protocol::REQUEST_ID_HEADER, id);
    }
    Ok(response)
}

/// A call's future, polled in place while its caller waits. Dropped before it ends — the caller hung
/// up, or a gRPC deadline passed — it moves onto a task of its own and still runs to its end, so that
/// what the backend answers reaches the task directory, leases and the audit log. A call whose
/// caller waits for it (nearly all) costs no task, channel or cross-task wake-up of its own.
struct RunToEnd {
    call: Option<BoxFuture<'static, Result<Response<Body>, A2aError>>>,
}

impl RunToEnd {
    fn new(call: impl Future<Output = Result<Response<Body>, A2aError>> + Send + 'static) -> Self {
        RunToEnd { call: Some(Box::pin(call)) }
    }
}

impl Future for RunToEnd {
    type Output = Result<Response<Body>, A2aError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else { return Poll::Ready(Err(A2aError::Internal)) };
        let output = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(output)
    }
}

impl Drop for RunToEnd {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else { return };
        // Outside a runtime (the process is ending) there is nothing left to run it on.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Ok(abandoned) = call.await {
                    settle_abandoned(abandoned).await;
                }
            });
        }
    }
}

/// How long the gateway keeps reading a stream its caller left before the stream said which task it
/// is about.
const ABANDONED_STREAM_GRACE: Duration = Duration::from_secs(10);

/// An answer whose caller hung up before it came. A unary answer has been read (and observed)
/// already; a stream is read until its first event, so that the task it started is known — and its
/// live-task lease kept — before the backend connection is closed.
async fn settle_abandoned(response: Response<Body>) {
    if !crate::protocol::sse::is_event_stream(response.headers()) {
        return;
    }
    let mut body = response.into_body();
    let _ = tokio::time::timeout(ABANDONED_STREAM_GRACE, async {
        while let Some(Ok(frame)) = body.frame().await {
            if frame.data_ref().is_some_and(|data| data.windows(5).any(|w| w == b"data:")) {
                break;
            }
        }
    })
    .await;
}

/// A 0.3 HTTP+JSON `:subscribe` refused with an A2A error (the task is unknown, or has ended): the
/// 0.3 SDK's server answers `200 text/event-stream` and ends the stream without an event, which its
/// client reads as a subscription that is over; an error status instead makes that client fail
/// ("expected text/event-stream") where it works against the SDK's server. The error stays readable
/// as an SSE comment, which clients ignore. The gateway's own refusals (401, 403, 429, 503) keep
/// their status.
async fn v03_rest_subscribe_refusal(response: Response<Body>) -> Response<Body> {
    if !matches!(response.status().as_u16(), 400 | 404 | 409 | 422 | 501) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let message = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|error| error["message"].as_str().map(|m| m.replace(['\r', '\n'], " ")))
        .unwrap_or_default();
    let comment = format!(": error {}: {message}\n\n", parts.status.as_u16());
    parts.status = http::StatusCode::OK;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Response::from_parts(parts, Body::from(comment))
}

/// The binding a request uses, known from its method and path alone (before the body is read).
fn binding_of(method: &Method, path: &str) -> Binding {
    if *method == Method::POST && split_agent_path(path).1 == "/" { Binding::JsonRpc } else { Binding::Rest }
}

async fn read_body_in_time(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    timeout: Option<Duration>,
) -> Result<Bytes, A2aError> {
    let Some(limit) = timeout else { return read_body(headers, body, max).await };
    tokio::time::timeout(limit, read_body(headers, body, max)).await.unwrap_or_else(|_| {
        metrics::counter!(crate::listener::REFUSED, "reason" => "body_timeout").increment(1);
        Err(A2aError::RequestTimeout(limit))
    })
}

async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, A2aError> {
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(A2aError::PayloadTooLarge(max));
    }
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(A2aError::PayloadTooLarge(max)),
        Err(_) => Err(A2aError::InvalidRequest("the request body could not be read".into())),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn request_ids_are_distinct_time_ordered_uuids_v7() {
        let ids: Vec<String> = (0..1000).map(|_| new_request_id()).collect();
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        for id in &ids {
            let uuid = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(uuid.get_version_num(), 7, "{id}");
        }
        // The millisecond timestamp leads: ids made later never sort before earlier ones' time.
        let first = uuid::Uuid::parse_str(&ids[0]).unwrap().get_timestamp().unwrap().to_unix();
        let last = uuid::Uuid::parse_str(&ids[999]).unwrap().get_timestamp().unwrap().to_unix();
        assert!(last >= first);
    }

    #[tokio::test]
    async fn a_call_dropped_by_its_caller_still_runs_to_its_end() {
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let (ended_tx, ended) = tokio::sync::oneshot::channel::<()>();
        let reached = Arc::new(AtomicBool::new(false));
        let seen = reached.clone();
        let call = RunToEnd::new(async move {
            let _ = wait.await;
            seen.store(true, Ordering::SeqCst);
            let _ = ended_tx.send(());
            Ok(Response::new(Body::empty()))
        });
        // The caller waits a moment, then hangs up.
        assert!(tokio::time::timeout(Duration::from_millis(20), call).await.is_err());
        assert!(!reached.load(Ordering::SeqCst));
        go.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), ended).await.unwrap().unwrap();
        assert!(reached.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_waited_call_answers_in_place() {
        let answer = RunToEnd::new(async { Err(A2aError::TaskNotFound) }).await;
        assert!(matches!(answer, Err(A2aError::TaskNotFound)));
    }
}
