//! Forwards a call to its backend and relays the answer. Request bodies go out as the caller sent
//! them; unary answers come back byte for byte, except errors: those are screened
//! ([`agent_errors`]) and answered by the gateway in the caller's dialect, so an agent's internals
//! never reach callers; SSE streams are relayed chunk by chunk as they arrive, with a tap that reads
//! a copy of each event to learn task ownership and state. Of the agent's headers only those with A2A
//! meaning are relayed (never `Server`, `Via`, `X-Powered-By`, ...).

use std::sync::Arc;
use std::time::Duration;

use a2a_policies::backend_auth::BackendCredentials;
use a2a_policies::{A2aCall, A2aError, Binding, Caller, Dialect};
use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyDataStream, Full};
use hyper::body::Incoming;

use a2a_policies::Source;

use crate::observers::{Exchange, Observers};
use crate::protocol::agent_errors;
use crate::protocol::agent_side::{self, Fault};
use crate::protocol::translate::v03;
use crate::registry::Backend;
use crate::relay::{Relay, StreamSettings};

mod client;
mod grpc;

pub use client::{AgentClient, agent_client};

/// Caller headers that carry A2A meaning and go on to the backend. Everything else — credentials,
/// cookies, hop-by-hop and forwarding headers — stays at the gateway.
const REQUEST_HEADERS: [HeaderName; 9] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::CACHE_CONTROL,
    HeaderName::from_static("a2a-version"),
    HeaderName::from_static("a2a-extensions"),
    HeaderName::from_static("x-a2a-extensions"),
    HeaderName::from_static("traceparent"),
    HeaderName::from_static("tracestate"),
    HeaderName::from_static("last-event-id"),
];

const A2A_VERSION: HeaderName = HeaderName::from_static("a2a-version");
const A2A_EXTENSIONS: HeaderName = HeaderName::from_static("a2a-extensions");
/// 0.3's name for it ([`v03::EXTENSIONS_HEADER`], lower-cased as `HeaderName` needs).
const X_A2A_EXTENSIONS: HeaderName = HeaderName::from_static("x-a2a-extensions");

/// Backend headers relayed to the caller.
const RESPONSE_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::CACHE_CONTROL,
    header::RETRY_AFTER,
    HeaderName::from_static("a2a-version"),
    HeaderName::from_static("a2a-extensions"),
    HeaderName::from_static("x-a2a-extensions"),
];

/// Why a forward failed, and whether it is safe to try another backend.
#[derive(Debug)]
pub enum ForwardError {
    /// The connection could not be made: the backend cannot have seen the request.
    NotSent(A2aError),
    /// Anything else: the backend may have started the work, so it is never retried.
    Failed(A2aError),
    /// The agent answered with an error (screened): an answer, not a sign of an unhealthy backend.
    Answered(A2aError),
}

impl ForwardError {
    pub fn into_error(self) -> A2aError {
        match self {
            ForwardError::NotSent(e) | ForwardError::Failed(e) | ForwardError::Answered(e) => e,
        }
    }

    pub fn error(&self) -> &A2aError {
        match self {
            ForwardError::NotSent(e) | ForwardError::Failed(e) | ForwardError::Answered(e) => e,
        }
    }

    /// Whether the backend failed to answer (outlier detection counts these).
    pub fn is_backend_failure(&self) -> bool {
        !matches!(self, ForwardError::Answered(_))
    }
}

impl From<A2aError> for ForwardError {
    fn from(error: A2aError) -> ForwardError {
        ForwardError::Failed(error)
    }
}

pub struct Forwarder {
    client: AgentClient,
    credentials: Arc<BackendCredentials>,
    observers: Arc<Observers>,
    max_response_bytes: usize,
    first_byte_timeout: Duration,
    streams: StreamSettings,
    /// HTTP/2 client for agents that speak only gRPC.
    grpc: grpc::GrpcClient,
}

/// A backend's unary answer, read whole.
pub struct Unary {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Forwarder {
    pub fn new(
        client: AgentClient,
        credentials: Arc<BackendCredentials>,
        observers: Arc<Observers>,
        max_response_bytes: usize,
        first_byte_timeout: Duration,
        streams: StreamSettings,
    ) -> Forwarder {
        let grpc = grpc::client(first_byte_timeout);
        Forwarder { client, credentials, observers, max_response_bytes, first_byte_timeout, streams, grpc }
    }

    /// Sends the call to `backend` and relays its answer to the caller; what the answer says about
    /// tasks is reported to the observers as `exchange`.
    pub async fn forward(
        &self,
        backend: &Backend,
        exchange: Exchange,
        call: &A2aCall,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Body>, ForwardError> {
        self.forward_call(backend, exchange, call, method, headers, body).await
    }

    /// [`forward`](Self::forward): `body` is the checked request in its canonical 1.0 form, written
    /// out for the agent's dialect and binding. A 0.3 agent's answer to a 0.3 caller goes back
    /// unchanged.
    pub async fn forward_call(
        &self,
        backend: &Backend,
        exchange: Exchange,
        call: &A2aCall,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Body>, ForwardError> {
        // Pass-through needs one wire on both sides: 0.3 JSON-RPC.
        if call.dialect == Dialect::V03
            && call.binding == Binding::JsonRpc
            && backend.dialect == Dialect::V03
            && backend.jsonrpc_url.is_some()
        {
            return self.forward_unchanged(backend, exchange, call, headers, body).await;
        }
        if let (None, None, Some(target)) = (&backend.jsonrpc_url, &backend.rest_url, &backend.grpc) {
            // An agent that offers only gRPC.
            return self.forward_grpc(backend, target, exchange, call, headers, body).await;
        }
        let has_binding = match call.binding {
            Binding::JsonRpc => backend.jsonrpc_url.is_some(),
            Binding::Rest => backend.rest_url.is_some(),
        };
        if backend.dialect != Dialect::V1 || !has_binding {
            // Another dialect, or a 1.0 agent without the caller's binding: translated.
            return self.forward_bridged(backend, exchange, call, headers, body).await;
        }
        let response = self.send(backend, exchange.caller.as_ref(), call, method, headers, body, None).await?;
        let status = response.status();
        let mut out_headers = relayed_headers(response.headers());
        if status.is_success() && is_event_stream(response.headers()) {
            out_headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
            // Asks reverse proxies in front of the gateway not to buffer the stream either.
            out_headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
            let relay =
                Relay::new(chunks(response), self.observers.clone(), exchange, call.rpc_id.clone(), &self.streams);
            return Ok(build_response(status, out_headers, Body::from_stream(relay)));
        }
        let content_type = content_type(response.headers());
        let body = self.read_whole(&backend.name, response).await?;
        if status.is_success() {
            checked(backend, &exchange.request_id, call.binding, content_type.as_deref(), &body, call.rpc_id.as_ref())?;
        }
        screened(backend, &exchange.request_id, call.binding, status, &body)?;
        if status.is_success() {
            self.observers.observe_json(&exchange, &body, Source::Response);
        }
        Ok(build_response(status, out_headers, Body::from(body)))
    }

    /// A task as its agent has it now: GetTask in 1.0 JSON-RPC under the exchange's request id (the
    /// forwarder speaks the agent's dialect), observed like any answer. `None` when the agent cannot
    /// say (it forgot the task, failed, or answered for another task).
    pub async fn get_task(
        &self,
        backend: &Backend,
        exchange: Exchange,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Option<serde_json::Value> {
        use http_body_util::BodyExt;
        let rpc_id = serde_json::Value::from(&*exchange.request_id);
        let mut call = A2aCall::new(Binding::JsonRpc, a2a_policies::Operation::GetTask);
        call.task_id = Some(task_id.to_owned());
        call.rpc_id = Some(rpc_id.clone());
        let mut params = serde_json::json!({"id": task_id});
        if let Some(n) = history_length {
            params["historyLength"] = serde_json::json!(n);
        }
        let body = serde_json::json!({"jsonrpc": "2.0", "id": rpc_id, "method": "GetTask", "params": params});
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("a2a-version", HeaderValue::from_static(crate::protocol::PROTOCOL_VERSION));
        let body = Bytes::from(serde_json::to_vec(&body).ok()?);
        let response = self.forward(backend, exchange, &call, &Method::POST, &headers, body).await.ok()?;
        let bytes = response.into_body().collect().await.ok()?.to_bytes();
        let mut answer: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let task = answer.get_mut("result")?.take();
        (task.get("id").and_then(serde_json::Value::as_str) == Some(task_id)).then_some(task)
    }

    /// Sends the call and reads the whole answer (for calls the gateway post-processes); an error
    /// answer comes back screened, as an `Err`.
    pub async fn unary(
        &self,
        backend: &Backend,
        caller: Option<&Caller>,
        call: &A2aCall,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Unary, A2aError> {
        if backend.dialect != Dialect::V1 {
            return Err(A2aError::UnsupportedOperation(format!(
                "the agent '{}' speaks A2A {}: {} is not bridged",
                backend.name, backend.dialect, call.operation
            )));
        }
        let response =
            self.send(backend, caller, call, method, headers, body, None).await.map_err(ForwardError::into_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = self.read_whole(&backend.name, response).await?;
        // The request id is not known here: the caller finds it in the answer's x-request-id header.
        if status.is_success() {
            checked(backend, "", call.binding, content_type(&headers).as_deref(), &body, call.rpc_id.as_ref())
                .map_err(ForwardError::into_error)?;
        }
        screened(backend, "", call.binding, status, &body).map_err(ForwardError::into_error)?;
        Ok(Unary { status, headers, body })
    }

    /// Forwards a call (in its 1.0 form) to an agent of another dialect: the request translated, the
    /// answer translated back to 1.0 before the relay's tap and the observers read it.
    async fn forward_bridged(
        &self,
        backend: &Backend,
        exchange: Exchange,
        call: &A2aCall,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Body>, ForwardError> {
        let request = agent_side::v1_request(call, &body)?;
        // A 0.3 agent without JSON-RPC is reached over its HTTP+JSON binding.
        let v03_rest = backend.dialect == Dialect::V03 && backend.jsonrpc_url.is_none();
        let outgoing = match backend.dialect {
            Dialect::V1 => agent_side::rebind_call(call, request)?,
            _ if v03_rest => agent_side::agent_call_v03_rest(request)?,
            dialect => agent_side::agent_call(dialect, request, call.rpc_id.as_ref())?,
        };
        let (method, streams) = (outgoing.method.clone(), outgoing.streams);
        let response =
            self.send(backend, exchange.caller.as_ref(), call, &method, headers, Bytes::new(), Some(&outgoing)).await?;
        let status = response.status();
        let mut out_headers = HeaderMap::new();
        if streams && status.is_success() && is_event_stream(response.headers()) {
            out_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            out_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            out_headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
            let limit = self.streams.limits.for_skill(exchange.skill.as_deref()).max_event_bytes;
            let chunks = chunks(response);
            let mut events = agent_side::AgentEvents::new(backend.dialect, call, chunks, limit);
            if v03_rest {
                events = events.v03_rest();
            }
            let relay =
                Relay::new(events.boxed(), self.observers.clone(), exchange, call.rpc_id.clone(), &self.streams);
            return Ok(build_response(StatusCode::OK, out_headers, Body::from_stream(relay)));
        }
        let content_type = content_type(response.headers());
        let body = self.read_whole(&backend.name, response).await?;
        if status.is_success() {
            // JSON by type and content; the translation below reads the shape.
            checked(backend, &exchange.request_id, Binding::Rest, content_type.as_deref(), &body, None)?;
        }
        if call.operation.is_streaming() && backend.dialect == Dialect::Early {
            // An early agent's answer to a streamed continuation is one task: sent as a 1.0 stream.
            let events = agent_side::continuation_stream(call, status, &body);
            self.observers.observe_json(&exchange, &events, Source::Stream);
            out_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            return Ok(build_response(StatusCode::OK, out_headers, Body::from(events)));
        }
        let (status, v1) = match backend.dialect {
            Dialect::V1 => agent_side::unary_rebound(call, status, &body),
            _ if v03_rest => agent_side::unary_v03_rest_to_v1(call, status, &body),
            dialect => agent_side::unary_to_v1(dialect, call, status, &body),
        };
        if !status.is_success() {
            log_answer(backend, &exchange.request_id, status, &body);
        }
        screened(backend, &exchange.request_id, call.binding, status, &v1)?;
        if status.is_success() {
            self.observers.observe_json(&exchange, &v1, Source::Response);
        }
        let content_type = match call.binding {
            Binding::JsonRpc => "application/json",
            Binding::Rest if status.is_success() => crate::protocol::A2A_JSON,
            Binding::Rest => "application/json",
        };
        out_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        Ok(build_response(status, out_headers, Body::from(v1)))
    }

    /// Caller and agent both speak 0.3: the checked request goes out in 0.3 and the agent's answer
    /// comes back unchanged; the tap and the observers read a 1.0 copy.
    async fn forward_unchanged(
        &self,
        backend: &Backend,
        exchange: Exchange,
        call: &A2aCall,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Body>, ForwardError> {
        let request = agent_side::v1_request(call, &body)?;
        let outgoing = agent_side::agent_call(backend.dialect, request, call.rpc_id.as_ref())?;
        let method = outgoing.method.clone();
        let response =
            self.send(backend, exchange.caller.as_ref(), call, &method, headers, Bytes::new(), Some(&outgoing)).await?;
        let status = response.status();
        let out_headers = relayed_headers(response.headers());
        let mut answer = if status.is_success() && is_event_stream(response.headers()) {
            let copy = agent_side::ObservedCopy::new(backend.dialect, call);
            let relay =
                Relay::new(chunks(response), self.observers.clone(), exchange, call.rpc_id.clone(), &self.streams)
                    .observing(copy);
            build_response(status, out_headers, Body::from_stream(relay))
        } else {
            let content_type = content_type(response.headers());
            let body = self.read_whole(&backend.name, response).await?;
            if status.is_success() {
                let id = call.rpc_id.as_ref();
                checked(backend, &exchange.request_id, Binding::JsonRpc, content_type.as_deref(), &body, id)?;
            }
            let (v1_status, v1) = agent_side::unary_to_v1(backend.dialect, call, status, &body);
            if !status.is_success() {
                log_answer(backend, &exchange.request_id, status, &body);
            }
            screened(backend, &exchange.request_id, call.binding, v1_status, &v1)?;
            if v1_status.is_success() {
                self.observers.observe_json(&exchange, &v1, Source::Response);
            }
            build_response(status, out_headers, Body::from(body))
        };
        answer.extensions_mut().insert(agent_side::PassedThrough);
        Ok(answer)
    }

    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        backend: &Backend,
        caller: Option<&Caller>,
        call: &A2aCall,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
        outgoing: Option<&agent_side::AgentCall>,
    ) -> Result<Response<Incoming>, ForwardError> {
        let uri = match outgoing {
            None => target(backend, call)?,
            Some(outgoing) => agent_target(backend, outgoing)?,
        };
        let mut out = HeaderMap::with_capacity(8);
        let translated = call.dialect != Dialect::V1 || outgoing.is_some();
        for name in &REQUEST_HEADERS {
            // Every call goes out in its agent's version, whatever version (list) its caller named.
            // Every body is the gateway's (the checked request written out again), and so is its
            // content type: a caller's charset must not change how the agent reads it.
            if name == "a2a-version" || name == header::CONTENT_TYPE {
                continue;
            }
            for value in headers.get_all(name) {
                out.append(name.clone(), value.clone());
            }
        }
        if outgoing.is_some() || !body.is_empty() {
            out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if outgoing.is_some() {
            if backend.dialect == Dialect::V1 {
                out.insert(A2A_VERSION, HeaderValue::from_static(crate::protocol::PROTOCOL_VERSION));
            }
            if backend.dialect == Dialect::V03 {
                out.insert(A2A_VERSION, HeaderValue::from_static(v03::VERSION_HEADER_VALUE));
                if !headers.contains_key(v03::EXTENSIONS_HEADER) {
                    for value in headers.get_all("a2a-extensions") {
                        out.append(X_A2A_EXTENSIONS, value.clone());
                    }
                }
            }
        } else {
            out.insert(A2A_VERSION, HeaderValue::from_static(crate::protocol::PROTOCOL_VERSION));
        }
        if outgoing.is_none() && translated {
            // 0.3 clients name extensions in X-A2A-Extensions; 1.0 agents read A2A-Extensions.
            if !headers.contains_key("a2a-extensions") {
                for value in headers.get_all(v03::EXTENSIONS_HEADER) {
                    out.append(A2A_EXTENSIONS, value.clone());
                }
            }
        }
        // The backend's own credential; the caller's token only where the backend's config says so.
        let credential =
            self.credentials.authorization(&backend.name, caller, headers.get(header::AUTHORIZATION)).await;
        match credential {
            Ok(Some(value)) => {
                out.insert(header::AUTHORIZATION, value);
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(backend = %backend.name, %error, "no credential for the backend");
                return Err(ForwardError::NotSent(error.into()));
            }
        }
        // What reqwest sent when the caller named no media type.
        out.entry(header::ACCEPT).or_insert(HeaderValue::from_static("*/*"));
        let body = match outgoing {
            Some(outgoing) => Bytes::from(outgoing.body.clone()),
            None => body,
        };
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = out;
        match tokio::time::timeout(self.first_byte_timeout, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) if error.is_connect() || never_sent(&error) => {
                tracing::warn!(backend = %backend.name, error = ?error, "backend connection failed before the request was sent");
                Err(ForwardError::NotSent(unreachable(backend)))
            }
            Ok(Err(error)) => {
                tracing::warn!(backend = %backend.name, error = ?error, "backend connection broke after the request was sent");
                Err(ForwardError::Failed(A2aError::AgentConnectionLost {
                    agent: backend.name.to_string(),
                    task_id: call.task_id.clone(),
                }))
            }
            Err(_) => {
                tracing::warn!(backend = %backend.name, "backend did not answer in time");
                let error =
                    A2aError::BackendUnavailable(format!("the agent '{}' did not answer in time", backend.name));
                Err(ForwardError::Failed(error))
            }
        }
    }

    async fn read_whole(&self, name: &str, response: Response<Incoming>) -> Result<Bytes, A2aError> {
        let too_large = || A2aError::InvalidAgentResponse(format!("the agent '{name}' sent an oversized answer"));
        let length = response.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if length.is_some_and(|n| n > self.max_response_bytes as u64) {
            return Err(too_large());
        }
        let mut stream = BodyDataStream::new(response.into_body());
        let mut first: Option<Bytes> = None;
        let mut rest = BytesMut::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|error| {
                tracing::warn!(backend = name, %error, "backend answer broke off");
                A2aError::BackendUnavailable(format!("the agent '{name}' broke off its answer"))
            })?;
            let total = first.as_ref().map_or(0, Bytes::len) + rest.len() + chunk.len();
            if total > self.max_response_bytes {
                return Err(too_large());
            }
            // Most answers arrive in one chunk: keep it as is, copy only when there are more.
            match &first {
                None => first = Some(chunk),
                Some(_) => rest.extend_from_slice(&chunk),
            }
        }
        Ok(match first {
            None => Bytes::new(),
            Some(first) if rest.is_empty() => first,
            Some(first) => {
                let mut all = BytesMut::with_capacity(first.len() + rest.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&rest);
                all.freeze()
            }
        })
    }
}

/// An agent's error answer as the gateway's own error, logged under the request id so the operator
/// finds what the agent said (the caller never sees it).
fn screened(
    backend: &Backend,
    request_id: &str,
    binding: Binding,
    status: StatusCode,
    body: &[u8],
) -> Result<(), ForwardError> {
    let verdict = agent_errors::screen(binding, status, body);
    if verdict != agent_errors::Verdict::Pass {
        log_answer(backend, request_id, status, body);
    }
    match agent_errors::into_error(verdict, &backend.name, request_id) {
        None => Ok(()),
        Some(error) => Err(ForwardError::Answered(error)),
    }
}

/// A success answer that is no well-formed A2A answer becomes the gateway's error; the agent's
/// answer goes to the log under the request id.
fn checked(
    backend: &Backend,
    request_id: &str,
    binding: Binding,
    content_type: Option<&str>,
    body: &[u8],
    rpc_id: Option<&serde_json::Value>,
) -> Result<(), ForwardError> {
    let Err(what) = agent_errors::check_answer(binding, content_type, body, rpc_id) else { return Ok(()) };
    let excerpt = agent_errors::excerpt(body, 2048);
    tracing::warn!(backend = %backend.name, request_id, content_type, body = ?excerpt, problem = what.describe(), "the agent's answer is malformed");
    let lookup = if request_id.is_empty() { "the x-request-id header of this answer" } else { request_id };
    Err(ForwardError::Failed(A2aError::InvalidAgentResponse(format!(
        "the agent '{}' sent {}; the gateway's operator can look it up by the request id {lookup}",
        backend.name,
        what.describe()
    ))))
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn log_answer(backend: &Backend, request_id: &str, status: StatusCode, body: &[u8]) {
    let excerpt = agent_errors::excerpt(body, 2048);
    tracing::warn!(backend = %backend.name, request_id, status = status.as_u16(), body = ?excerpt, "the agent answered with an error");
}

/// Whether the agent cannot have read the request: hyper gave it back unsent (its pooled connection
/// closed before dispatch), or the connection was reset before any answer. A reset means the agent's
/// socket was closed with our bytes unread (a process that read the whole request and then died
/// closes with a FIN instead); that is what a pooled connection to a restarted agent gets. A plain
/// end of connection before the answer stays ambiguous: the agent may have read the request.
fn never_sent(error: &hyper_util::client::legacy::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_canceled)
            || cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

fn unreachable(backend: &Backend) -> A2aError {
    A2aError::BackendUnavailable(format!("the agent '{}' could not be reached; try again later", backend.name))
}

/// The body of an agent's answer as the relay reads it: chunks as they arrive, a broken connection
/// as [`Fault::Cut`].
fn chunks(response: Response<Incoming>) -> futures::stream::BoxStream<'static, Result<Bytes, Fault>> {
    BodyDataStream::new(response.into_body())
        .map_err(|error| {
            tracing::debug!(%error, "agent stream broke off");
            Fault::Cut
        })
        .boxed()
}

/// `base` (a backend's HTTP+JSON base URL) with `path` appended.
fn joined(base: &reqwest::Url, path: &str) -> Result<Uri, A2aError> {
    Uri::try_from(format!("{}{path}", base.as_str().trim_end_matches('/'))).map_err(|_| A2aError::Internal)
}

fn uri_of(url: &reqwest::Url) -> Result<Uri, A2aError> {
    Uri::try_from(url.as_str()).map_err(|_| A2aError::Internal)
}

/// The backend URL of a call: its JSON-RPC endpoint, or its HTTP+JSON base plus the operation path.
fn target(backend: &Backend, call: &A2aCall) -> Result<Uri, A2aError> {
    let missing = || {
        A2aError::UnsupportedOperation(format!(
            "the agent '{}' does not offer the {} binding; use the other binding",
            backend.name, call.binding
        ))
    };
    match call.binding {
        Binding::JsonRpc => uri_of(backend.jsonrpc_url.as_ref().ok_or_else(missing)?),
        Binding::Rest => {
            let base = backend.rest_url.as_ref().ok_or_else(missing)?;
            joined(base, call.rest_path.as_deref().unwrap_or(""))
        }
    }
}

/// The URL of a bridged call: the agent's 0.3 JSON-RPC endpoint, or its early base plus the path.
fn agent_target(backend: &Backend, outgoing: &agent_side::AgentCall) -> Result<Uri, A2aError> {
    let missing = || A2aError::BackendUnavailable(format!("the agent '{}' has no usable interface", backend.name));
    match &outgoing.path {
        None => uri_of(backend.jsonrpc_url.as_ref().ok_or_else(missing)?),
        Some(path) => joined(backend.rest_url.as_ref().ok_or_else(missing)?, path),
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

fn relayed_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in &RESPONSE_HEADERS {
        for value in from.get_all(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

fn build_response(status: StatusCode, headers: HeaderMap, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
