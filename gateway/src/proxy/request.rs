//! The outgoing request: the headers that go on to the agent, its credential, the target URL, the
//! first-byte timeout and whether a failure left the request unsent; and reading an answer whole
//! within its size limit and, once it stalls, the same timeout again.

use crate::clients::AgentBody;
use a2a_core::{A2aCall, A2aError, Binding, Caller, Dialect};
use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, Uri, header};
use http_body_util::BodyDataStream;
use hyper::body::Body as _;
use tokio::time::Instant;

use crate::protocol::agent_side;
use crate::protocol::decode::Written;
use crate::protocol::translate::v03;
use crate::registry::Backend;

use super::{ForwardError, Forwarder};

/// Caller headers that carry A2A meaning and go on to the backend. Everything else — credentials,
/// cookies, hop-by-hop and forwarding headers — stays at the gateway. (A `static`: a `const` array
/// of `HeaderName`s is made and dropped anew at each use, once per header of every request.)
static REQUEST_HEADERS: [HeaderName; 9] = [
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

const A2A_VERSION: HeaderName = crate::protocol::VERSION_HEADER;
const A2A_EXTENSIONS: HeaderName = HeaderName::from_static("a2a-extensions");
/// 0.3's name for it ([`v03::EXTENSIONS_HEADER`], lower-cased as `HeaderName` needs).
const X_A2A_EXTENSIONS: HeaderName = HeaderName::from_static("x-a2a-extensions");

/// The request a leg sends: the checked 1.0 request written in the caller's binding, or one
/// translated for another dialect or binding.
pub(super) enum Outgoing<'a> {
    Native(&'a Written),
    Translated(&'a agent_side::AgentCall),
}

impl Forwarder {
    pub(super) async fn send(
        &self,
        backend: &Backend,
        caller: Option<&Caller>,
        call: &A2aCall,
        method: &Method,
        headers: &HeaderMap,
        outgoing: Outgoing<'_>,
    ) -> Result<Response<AgentBody>, ForwardError> {
        let (uri, body, outgoing) = match outgoing {
            Outgoing::Native(written) => {
                (target(backend, call, written.rest_path.as_deref())?, written.body.clone(), None)
            }
            Outgoing::Translated(outgoing) => {
                (agent_target(backend, outgoing)?, Bytes::from(outgoing.body.clone()), Some(outgoing))
            }
        };
        let mut out = HeaderMap::with_capacity(8);
        let translated = call.dialect != Dialect::V1 || outgoing.is_some();
        // One walk over the caller's headers instead of a hashed lookup per name passed on. Every
        // call goes out in its agent's version, whatever version (list) its caller named. Every body
        // is the gateway's (the checked request written out again), and so is its content type: a
        // caller's charset must not change how the agent reads it.
        for (name, value) in headers {
            if REQUEST_HEADERS.contains(name) && *name != A2A_VERSION && *name != header::CONTENT_TYPE {
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
        let mut request = Request::new(body);
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = out;
        // Pinned here and timed through a reference: the timeout then holds a pointer, not a copy
        // of the whole exchange's future.
        let exchange = std::pin::pin!(self.client_for(&backend.name).request(request));
        match tokio::time::timeout(self.first_byte_timeout, exchange).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) if error.never_sent() => {
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

    pub(super) async fn read_whole(&self, name: &str, response: Response<AgentBody>) -> Result<Bytes, A2aError> {
        let too_large = || A2aError::InvalidAgentResponse(format!("the agent '{name}' sent an oversized answer"));
        // A declared length over the limit is refused before any of the body is read (the body's
        // framing has read it: exact for Content-Length, zero for other framings).
        if response.body().size_hint().lower() > self.max_response_bytes as u64 {
            return Err(too_large());
        }
        let mut stream = BodyDataStream::new(response.into_body());
        let mut first: Option<Bytes> = None;
        let mut rest = BytesMut::new();
        // An answer that stops coming is given up `first_byte_timeout` after the first wait for it
        // (most arrive with their head: no timer, no clock read for those).
        let mut deadline = None;
        loop {
            let next = match stream.next().now_or_never() {
                Some(next) => next,
                None => {
                    let at = *deadline.get_or_insert_with(|| Instant::now() + self.first_byte_timeout);
                    tokio::time::timeout_at(at, stream.next()).await.map_err(|_| {
                        tracing::warn!(backend = name, "backend answer stalled");
                        A2aError::BackendUnavailable(format!("the agent '{name}' did not finish its answer in time"))
                    })?
                }
            };
            let Some(chunk) = next else { break };
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

pub(super) fn unreachable(backend: &Backend) -> A2aError {
    A2aError::BackendUnavailable(format!("the agent '{}' could not be reached; try again later", backend.name))
}

/// `base` (a backend's HTTP+JSON base URL) with `path` appended.
fn joined(base: &reqwest::Url, path: &str) -> Result<Uri, A2aError> {
    Uri::try_from(format!("{}{path}", base.as_str().trim_end_matches('/'))).map_err(|_| A2aError::Internal)
}

/// The backend URL of a call: its JSON-RPC endpoint, or its HTTP+JSON base plus the operation path.
fn target(backend: &Backend, call: &A2aCall, rest_path: Option<&str>) -> Result<Uri, A2aError> {
    let missing = || {
        A2aError::UnsupportedOperation(format!(
            "the agent '{}' does not offer the {} binding; use the other binding",
            backend.name, call.binding
        ))
    };
    match call.binding {
        Binding::JsonRpc => backend.jsonrpc_uri.clone().ok_or_else(missing),
        Binding::Rest => {
            let base = backend.rest_url.as_ref().ok_or_else(missing)?;
            joined(base, rest_path.unwrap_or(""))
        }
    }
}

/// The URL of a bridged call: the agent's 0.3 JSON-RPC endpoint, or its early base plus the path.
fn agent_target(backend: &Backend, outgoing: &agent_side::AgentCall) -> Result<Uri, A2aError> {
    let missing = || A2aError::BackendUnavailable(format!("the agent '{}' has no usable interface", backend.name));
    match &outgoing.path {
        None => backend.jsonrpc_uri.clone().ok_or_else(missing),
        Some(path) => joined(backend.rest_url.as_ref().ok_or_else(missing)?, path),
    }
}
