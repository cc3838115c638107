//! The A2A service stack every call goes through, assembled in one place ([`a2a_stack`]) so the
//! request path reads top to bottom, and the gateway's own layers: decode (the one place protocol
//! errors become responses), anonymous callers, and the innermost forward service.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_policies::{A2aCall, A2aError, Binding, Caller, Operation, RequestInfo, RouteHint};
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method, Request, Response, header};
use http_body_util::{BodyExt, Limited};
use tower::{Layer, Service, ServiceExt};

use a2a_policies::auth::AuthLayer;
use a2a_policies::authorize::AuthorizeLayer;
use a2a_policies::concurrency::{ConcurrencyLayer, LeaseBody};
use a2a_policies::rate_limit::RateLimitLayer;
use a2a_policies::validate::ValidateLayer;

use crate::gateway::Gateway;
use crate::metrics::{BACKEND_DURATION, MetricsLayer};
use crate::observers::Exchange;
use crate::protocol::bridge::{self, Answering};
use crate::protocol::decode::{Checked, Decoded, EarlyCall, decode_any, decode_grpc, dialect_hint, split_agent_path};
use crate::protocol::early_ids::EarlyIds;
use crate::protocol::errors::render_in;
use crate::protocol::grpc;
use crate::protocol::translate::model::Request as A2aRequest;
use crate::proxy::ForwardError;
use crate::routing::{self, RouteLayer};

/// The A2A request path, outermost first: this function is the one place where the order of the
/// layers is decided.
pub fn a2a_stack(
    gateway: Arc<Gateway>,
) -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone + Send + 'static {
    tower::ServiceBuilder::new()
        // Reads and decodes the call (a 0.3 or early one into its 1.0 form); answers and renders
        // every refusal from below in the caller's dialect and binding.
        .layer(DecodeLayer {
            max_body: gateway.config.limits.max_request_bytes,
            body_timeout: gateway.config.listeners.protection.body_read_timeout,
            max_depth: gateway.config.limits.max_json_depth,
            early_ids: gateway.shared.early_ids.clone(),
            grpc: gateway.config.listeners.grpc,
        })
        // A span per call (when traces are exported), parent of the backend's.
        .option_layer(crate::telemetry::installed_layer())
        // Counts and times every call, refusals included.
        .layer(MetricsLayer)
        // One audit record per call (and per denial, with its reason); task events come through
        // the observers.
        .option_layer(gateway.shared.audit.as_ref().map(|audit| audit.layer()))
        // Bearer JWT, API key or introspected token → Caller, or 401 with a challenge.
        .option_layer(gateway.authenticator.clone().map(AuthLayer::new))
        // Without authentication configured, callers are known by their address.
        .layer(AnonymousCallerLayer)
        // Request rate quotas per caller and global, before routing and authorization: every
        // answered request (a not-found probe, a permission denial) is metered.
        .option_layer(gateway.rate_limits.clone().map(RateLimitLayer::per_caller))
        // Chooses the backend (task owner, agent path, skill, context, default) → RouteHint;
        // another caller's task or context does not exist for this one.
        .layer(RouteLayer::new(gateway.route_state.clone()))
        // Skill permissions of the caller.
        .layer(AuthorizeLayer::new(gateway.permissions.clone()))
        // Per-skill send quotas, now that the skill is known.
        .option_layer(gateway.rate_limits.clone().filter(|l| l.has_skill_quotas()).map(RateLimitLayer::per_skill))
        // Live tasks per caller: a lease per task until it is seen to end.
        .option_layer(gateway.shared.live_tasks.clone().map(|live| {
            tower::ServiceBuilder::new()
                .map_response(|response: Response<LeaseBody<Body>>| response.map(Body::new))
                .layer(ConcurrencyLayer::new(live))
                .into_inner()
        }))
        // The input against the skill's schema, sizes, part kinds and ids.
        .option_layer(gateway.validation.clone().map(ValidateLayer::new))
        .service(ForwardService { gateway })
}

/// Reads the body (refusing oversize ones before reading them whole), decodes the call into an
/// [`A2aCall`] extension, and renders any refusal from the layers inside in the caller's dialect and
/// binding. This is the one place where protocol errors become responses. A 0.3 or early caller's
/// request goes inside in its checked 1.0 form, and the 1.0 answer comes back out in the caller's
/// dialect ([`bridge::answer`]).
#[derive(Clone)]
pub struct DecodeLayer {
    max_body: usize,
    /// The whole body must arrive within this (`listeners.protection.body_read_timeout`).
    body_timeout: Option<Duration>,
    /// JSON nesting deeper than this is refused before anything parses it (`limits.max_json_depth`).
    max_depth: usize,
    /// Early callers' task ids → the agents' tasks (filled in by their answers).
    early_ids: Arc<dyn EarlyIds>,
    /// gRPC calls are served (`listeners.grpc`).
    grpc: bool,
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
        }
    }
}

#[derive(Clone)]
pub struct DecodeService<S> {
    inner: S,
    max_body: usize,
    body_timeout: Option<Duration>,
    max_depth: usize,
    early_ids: Arc<dyn EarlyIds>,
    grpc: bool,
}

impl<S> Service<Request<Body>> for DecodeService<S>
where
    S: Service<Request<Bytes>, Response = Response<Body>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let (max_body, body_timeout, max_depth) = (self.max_body, self.body_timeout, self.max_depth);
        let early_ids = self.early_ids.clone();
        // gRPC needs HTTP/2 (its status travels in trailers); over HTTP/1 such a request is JSON's.
        let http2 = request.version() == http::Version::HTTP_2;
        if http2 && *request.method() == Method::POST && grpc::front::is_grpc(request.headers()) {
            if !self.grpc {
                let off =
                    grpc::wire::Status::new(grpc::wire::UNIMPLEMENTED, "gRPC is not served here (listeners.grpc)");
                return Box::pin(async move { Ok(grpc::front::status_response(&off)) });
            }
            return Box::pin(serve_grpc(inner, request, (max_body, body_timeout, max_depth)));
        }
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let binding = binding_of(&parts.method, parts.uri.path());
            let read = read_body_in_time(&parts.headers, body, max_body, body_timeout).await;
            let bytes = match read.and_then(|b| crate::protocol::json_limits::check_depth(&b, max_depth).map(|()| b)) {
                Ok(bytes) => bytes,
                Err(error) => {
                    let dialect = dialect_hint(&parts.method, parts.uri.path(), &parts.headers);
                    return Ok(render_in(&error, dialect, binding, None).into_response());
                }
            };
            let uri = &parts.uri;
            let decoded = match decode_any(&parts.method, uri.path(), uri.query(), &parts.headers, &bytes) {
                Ok(decoded) => decoded,
                Err(refusal) => {
                    metrics::counter!(crate::metrics::REQUESTS, "operation" => "unknown", "outcome" => refusal.error.reason())
                            .increment(1);
                    let rendered = render_in(&refusal.error, refusal.dialect, refusal.binding, refusal.rpc_id.as_ref());
                    return Ok(rendered.into_response());
                }
            };
            let binding = decoded.call.binding;
            let (result, answering, request_id) = run_inner(inner, parts, decoded, Some(early_ids)).await;
            let mut response = match result {
                Ok(response) => bridge::answer(answering, response).await,
                Err(error) => {
                    tracing::debug!(%error, "request refused");
                    render_in(&error, answering.dialect, binding, answering.rpc_id.as_ref()).into_response()
                }
            };
            if let Some(id) = request_id {
                response.headers_mut().insert("x-request-id", id);
            }
            Ok(response)
        })
    }
}

/// Runs a decoded call through the layers inside: in its checked form, on a task of its own so that
/// it runs to its end even when the caller hangs up (what the backend answers still reaches the task
/// directory, leases and the audit log). Returns the answer, what answering it needs, and the
/// request id.
async fn run_inner<S>(
    inner: S,
    parts: http::request::Parts,
    decoded: Decoded,
    early_ids: Option<Arc<dyn EarlyIds>>,
) -> (Result<Response<Body>, A2aError>, Answering, Option<HeaderValue>)
where
    S: Service<Request<Bytes>, Response = Response<Body>, Error = A2aError> + Send + 'static,
    S::Future: Send,
{
    let Decoded { call, request, body, early_id, new_task } = decoded;
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
    let info = RequestInfo::new(uuid::Uuid::now_v7().to_string());
    let request_id = HeaderValue::from_str(info.request_id()).ok();
    // Everything inside — policies and the backend — sees the checked request, written out again:
    // never the caller's bytes.
    let mut request_out = Request::from_parts(parts, Bytes::from(body));
    let early = early_id.map(|id| EarlyCall { id, new_task });
    request_out.extensions_mut().insert(Checked { request, early });
    request_out.extensions_mut().insert(call);
    request_out.extensions_mut().insert(info);
    let (answer, answered) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let result = inner.oneshot(request_out).await;
        if let Err(Ok(abandoned)) = answer.send(result) {
            settle_abandoned(abandoned).await;
        }
    });
    let result = answered.await.unwrap_or(Err(A2aError::Internal));
    (result, answering, request_id)
}

/// A gRPC call: its one message read into the checked model like JSON ([`decode_grpc`]), run
/// through the same layers as a 1.0 JSON-RPC call, and answered in gRPC ([`grpc::front`]).
async fn serve_grpc<S>(
    inner: S,
    request: Request<Body>,
    (max_body, body_timeout, max_depth): (usize, Option<Duration>, usize),
) -> Result<Response<Body>, Infallible>
where
    S: Service<Request<Bytes>, Response = Response<Body>, Error = A2aError> + Send + 'static,
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
            metrics::counter!(crate::metrics::REQUESTS, "operation" => "unknown", "outcome" => error.reason())
                .increment(1);
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
    let run = run_inner(inner, parts, decoded, None);
    let (result, _, request_id) = match deadline {
        None => run.await,
        Some(at) => match tokio::time::timeout_at(at, run).await {
            Ok(done) => done,
            Err(_) => return Ok(grpc::front::status_response(&grpc::deadline::exceeded())),
        },
    };
    let mut response = match result {
        Ok(response) => grpc::front::answer(&method, response, deadline).await,
        Err(error) => {
            tracing::debug!(%error, "gRPC request refused");
            grpc::front::refusal(&error)
        }
    };
    if let Some(id) = request_id {
        response.headers_mut().insert("x-request-id", id);
    }
    Ok(response)
}

/// How long the gateway keeps reading a stream its caller left before the stream said which task it
/// is about.
const ABANDONED_STREAM_GRACE: Duration = Duration::from_secs(10);

/// An answer whose caller hung up before it came. A unary answer has been read (and observed)
/// already; a stream is read until its first event, so that the task it started is known — and its
/// live-task lease kept — before the backend connection is closed.
async fn settle_abandoned(response: Response<Body>) {
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streaming {
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

/// Gives every request a [`Caller`] known by its network address, for gateways without
/// authentication (limits and the audit log still need someone to attribute a request to).
#[derive(Clone)]
pub struct AnonymousCallerLayer;

impl<S> Layer<S> for AnonymousCallerLayer {
    type Service = AnonymousCaller<S>;
    fn layer(&self, inner: S) -> AnonymousCaller<S> {
        AnonymousCaller { inner }
    }
}

#[derive(Clone)]
pub struct AnonymousCaller<S> {
    inner: S,
}

impl<S> Service<Request<Bytes>> for AnonymousCaller<S>
where
    S: Service<Request<Bytes>, Error = A2aError>,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Bytes>) -> Self::Future {
        if request.extensions().get::<Caller>().is_none() {
            // The listener's client address (a trusted proxy's caller), else the peer.
            let address = request.extensions().get::<a2a_policies::ClientAddress>().map(|c| c.0).unwrap_or_else(|| {
                request
                    .extensions()
                    .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                    .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.0.ip())
            });
            let caller = Caller::anonymous(address);
            if let Some(info) = request.extensions().get::<RequestInfo>() {
                info.set_caller(caller.clone());
            }
            request.extensions_mut().insert(caller);
        }
        self.inner.call(request)
    }
}

/// The innermost service: forwards the routed call, or answers the calls the gateway serves itself.
#[derive(Clone)]
pub struct ForwardService {
    gateway: Arc<Gateway>,
}

impl Service<Request<Bytes>> for ForwardService {
    type Response = Response<Body>;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<Response<Body>, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let gateway = self.gateway.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let call = parts.extensions.get::<A2aCall>().ok_or(A2aError::Internal)?;
            let caller = parts.extensions.get::<Caller>();
            let owner = routing::owner_key(caller, gateway.config.routing.isolation);
            let snapshot = gateway.registry.snapshot();
            match call.operation {
                Operation::GetExtendedAgentCard => extended_card(&gateway, &snapshot, call, caller),
                Operation::ListTasks => {
                    let Some(Checked { request: A2aRequest::ListTasks(request), .. }) =
                        parts.extensions.get::<Checked>()
                    else {
                        return Err(A2aError::Internal);
                    };
                    crate::list::list_tasks(&gateway, &snapshot, owner.as_ref(), caller, call, request).await
                }
                _ => {
                    let hint = parts.extensions.get::<RouteHint>().ok_or(A2aError::Internal)?;
                    let info = parts.extensions.get::<RequestInfo>();
                    let request_id: Arc<str> = info.map(|i| Arc::from(i.request_id())).unwrap_or_else(|| Arc::from(""));
                    let skill: Option<Arc<str>> = hint.skill.as_deref().map(Arc::from);
                    // Push configs are the gateway's: answered here, or taken off a send, so that an
                    // agent never gets a caller's URL.
                    let push = gateway.shared.push.as_deref();
                    let (call, body) = match parts.extensions.get::<Checked>() {
                        Some(Checked { request, .. }) => {
                            let answered =
                                crate::push::api::answer(push, owner.as_ref(), caller, &hint.backend, call, request);
                            if let Some(answer) = answered.await {
                                return answer;
                            }
                            let stripped = crate::push::api::take_from_send(
                                push,
                                owner.as_ref(),
                                caller,
                                &hint.backend,
                                request_id.clone(),
                                call,
                                request,
                            );
                            match stripped.await? {
                                Some((call, body)) => (std::borrow::Cow::Owned(call), body),
                                None => (std::borrow::Cow::Borrowed(call), body),
                            }
                        }
                        None => (std::borrow::Cow::Borrowed(call), body),
                    };
                    let call = &*call;
                    // A new task routed by skill may move to another backend with the skill when its
                    // first choice could not even be connected to; nothing else is ever retried.
                    let movable = call.operation.is_send() && call.task_id.is_none() && call.agent.is_none();
                    let mut tried: Vec<Arc<str>> = Vec::new();
                    let mut backend = snapshot.backend(&hint.backend).ok_or(A2aError::TaskNotFound)?.clone();
                    loop {
                        let exchange = Exchange {
                            backend: backend.name.clone(),
                            binding: call.binding,
                            caller: caller.cloned(),
                            owner: owner.clone(),
                            request_id: request_id.clone(),
                            skill: skill.clone(),
                        };
                        let asked = std::time::Instant::now();
                        let forward = async {
                            // With traces exported, the backend call is a span of its own and the
                            // backend's parent.
                            let span = crate::telemetry::backend_call(&parts.headers, &backend.name);
                            let headers = span.as_ref().map_or(&parts.headers, |s| &s.headers);
                            let result = gateway
                                .forwarder
                                .forward_call(&backend, exchange, call, &parts.method, headers, body.clone())
                                .await;
                            if let Some(span) = span {
                                span.finish(result.as_ref().err().map(|e| e.error().reason()));
                            }
                            let waited = asked.elapsed();
                            metrics::histogram!(BACKEND_DURATION, "backend" => backend.name.to_string())
                                .record(waited.as_secs_f64());
                            if let Some(info) = info {
                                info.add_backend_time(waited);
                            }
                            result
                        };
                        // A call still waiting for its backend when the drain deadline passes gets an
                        // answer instead of a cut connection.
                        // A blocking send names its task only when it ends, so the deadline watch
                        // cannot see it: its wait ends at the skill's deadline instead.
                        let deadline = hint.skill.as_deref().and_then(|s| gateway.config.deadlines.get(s).copied());
                        let wait_limit = match deadline {
                            Some(d) if call.operation == Operation::SendMessage => d,
                            _ => Duration::MAX,
                        };
                        let result = tokio::select! {
                            result = forward => result,
                            _ = tokio::time::sleep(wait_limit), if wait_limit != Duration::MAX => {
                                return Err(A2aError::BackendUnavailable(format!(
                                    "the task did not finish within its skill's deadline of {wait_limit:?}; use streaming or returnImmediately to have it canceled at the deadline"
                                )));
                            }
                            _ = gateway.shared.drain_deadline.cancelled() => {
                                return Err(A2aError::BackendUnavailable("the gateway is shutting down; retry".into()));
                            }
                        };
                        // An agent's error answer is an answer: only failures to answer count.
                        gateway.registry.report_request(
                            &backend.name,
                            !result.as_ref().is_err_and(ForwardError::is_backend_failure),
                        );
                        match result {
                            Ok(response) => return Ok(response),
                            // Never read by the agent, and not movable: once more, on a fresh
                            // connection (a pooled one to a restarted agent is what failed).
                            Err(ForwardError::NotSent(_)) if !movable && !tried.contains(&backend.name) => {
                                tried.push(backend.name.clone());
                            }
                            Err(ForwardError::NotSent(error)) if movable => {
                                tried.push(backend.name.clone());
                                let next = hint.skill.as_deref().and_then(|skill| {
                                    let candidates: Vec<_> = snapshot
                                        .with_skill(skill)
                                        .into_iter()
                                        .filter(|b| !tried.contains(&b.name))
                                        .collect();
                                    gateway.registry.pick(&candidates).cloned()
                                });
                                match next {
                                    Some(next) => {
                                        tracing::info!(from = %backend.name, to = %next.name, "failing over a new task");
                                        backend = next;
                                    }
                                    None => return Err(error),
                                }
                            }
                            Err(error) => return Err(error.into_error()),
                        }
                    }
                }
            }
        })
    }
}

/// The extended card of an authenticated caller: the card of the address it asked (the gateway's, or
/// under `/agents/{name}/` that agent's) with only the skills the caller may use. Backends' own
/// extended cards are not passed on: they would bypass the rewrite.
fn extended_card(
    gateway: &Gateway,
    snapshot: &crate::registry::Snapshot,
    call: &A2aCall,
    caller: Option<&Caller>,
) -> Result<Response<Body>, A2aError> {
    let caller = caller.filter(|c| c.auth != a2a_policies::AuthMethod::Anonymous);
    let Some(caller) = caller else { return Err(A2aError::ExtendedCardNotConfigured) };
    let served = match call.agent.as_deref() {
        None => &snapshot.gateway_card,
        Some(name) => snapshot.agent_card(name).ok_or_else(|| match snapshot.backend(name) {
            Some(_) => A2aError::BackendUnavailable(format!("the agent '{name}' is unavailable; try again later")),
            None => A2aError::AgentNotFound(name.to_owned()),
        })?,
    };
    // The 1.0 card; a 0.3 caller's answer is translated on the way out like any other.
    let mut card: serde_json::Value = serde_json::from_slice(&served.strict).map_err(|_| A2aError::Internal)?;
    gateway.permissions.retain_card_skills(caller, &mut card);
    let (body, content_type) = match call.binding {
        Binding::JsonRpc => {
            (serde_json::json!({"result": card, "id": call.rpc_id, "jsonrpc": "2.0"}), "application/json")
        }
        Binding::Rest => (card, crate::protocol::A2A_JSON),
    };
    let mut response = Response::new(Body::from(serde_json::to_vec(&body).map_err(|_| A2aError::Internal)?));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(response)
}
