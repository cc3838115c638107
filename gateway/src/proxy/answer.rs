//! The agent's answer on its way back: screened and checked (an agent's error or a malformed answer
//! becomes the gateway's error, what the agent said goes to the log), its relayed headers, and its
//! body as chunks for the relay.

use crate::clients::AgentBody;
use a2a_core::{A2aError, Binding};
use axum::body::Body;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http::{HeaderMap, HeaderName, Response, StatusCode, header};
use http_body_util::BodyDataStream;

use crate::protocol::agent_errors;
use crate::protocol::agent_side::Fault;
use crate::protocol::observe::TaskFact;
use crate::registry::Backend;

use super::ForwardError;

/// Backend headers relayed to the caller.
const RESPONSE_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::CACHE_CONTROL,
    header::RETRY_AFTER,
    HeaderName::from_static("a2a-version"),
    HeaderName::from_static("a2a-extensions"),
    HeaderName::from_static("x-a2a-extensions"),
];

/// An agent's error answer as the gateway's own error, logged under the request id so the operator
/// finds what the agent said (the caller never sees it).
pub(super) fn screened(
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
pub(super) fn checked(
    backend: &Backend,
    request_id: &str,
    binding: Binding,
    content_type: Option<&str>,
    body: &[u8],
    rpc_id: Option<&serde_json::Value>,
) -> Result<(), ForwardError> {
    let verdict = agent_errors::check_answer(binding, content_type, body, rpc_id);
    verdict.map_err(|what| malformed(backend, request_id, content_type, body, &what))
}

/// [`checked`], reading the answer's task fact in the same pass (see [`agent_errors::read_answer`]).
pub(super) fn checked_fact(
    backend: &Backend,
    request_id: &str,
    binding: Binding,
    content_type: Option<&str>,
    body: &[u8],
    rpc_id: Option<&serde_json::Value>,
    want_artifacts: bool,
) -> Result<Option<TaskFact>, ForwardError> {
    let read = agent_errors::read_answer(binding, content_type, body, rpc_id, want_artifacts);
    read.map_err(|what| malformed(backend, request_id, content_type, body, &what))
}

/// A malformed success answer as the gateway's error; what the agent sent goes to the log.
fn malformed(
    backend: &Backend,
    request_id: &str,
    content_type: Option<&str>,
    body: &[u8],
    what: &agent_errors::Malformed,
) -> ForwardError {
    let excerpt = agent_errors::excerpt(body, 2048);
    tracing::warn!(backend = %backend.name, request_id, content_type, body = ?excerpt, problem = what.describe(), "the agent's answer is malformed");
    let lookup = if request_id.is_empty() { "the x-request-id header of this answer" } else { request_id };
    ForwardError::Failed(A2aError::InvalidAgentResponse(format!(
        "the agent '{}' sent {}; the gateway's operator can look it up by the request id {lookup}",
        backend.name,
        what.describe()
    )))
}

pub(super) fn content_type(headers: &HeaderMap) -> Option<String> {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

pub(super) fn log_answer(backend: &Backend, request_id: &str, status: StatusCode, body: &[u8]) {
    let excerpt = agent_errors::excerpt(body, 2048);
    tracing::warn!(backend = %backend.name, request_id, status = status.as_u16(), body = ?excerpt, "the agent answered with an error");
}

/// The body of an agent's answer as the relay reads it: chunks as they arrive, a broken connection
/// as [`Fault::Cut`].
pub(super) fn chunks(response: Response<AgentBody>) -> futures::stream::BoxStream<'static, Result<Bytes, Fault>> {
    BodyDataStream::new(response.into_body())
        .map_err(|error| {
            tracing::debug!(%error, "agent stream broke off");
            Fault::Cut
        })
        .boxed()
}

pub(super) use crate::protocol::sse::is_event_stream;

pub(super) fn relayed_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    // One walk over the agent's few headers instead of a hashed lookup per name relayed.
    for (name, value) in from {
        if RESPONSE_HEADERS.contains(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

pub(super) fn build_response(status: StatusCode, headers: HeaderMap, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
