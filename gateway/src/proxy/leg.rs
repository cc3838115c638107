//! The agent side of a forward, chosen once per call: how the checked request is written for the
//! agent (its binding and dialect), and how the agent's answer is read back — its event stream as
//! the events the relay hands on, its whole answer checked, screened and made the caller's. The
//! pipeline in `proxy.rs` is the same for every leg; only these steps differ.

use crate::clients::AgentBody;
use a2a_core::{A2aCall, Binding, Dialect, Source};
use bytes::Bytes;
use futures::stream::BoxStream;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use crate::observers::Exchange;
use crate::protocol::agent_side::{self, AgentCall, EventConverter, Fault};
use crate::protocol::decode::{Written, encode};
use crate::protocol::grpc::{self, back};
use crate::protocol::observe::TaskFact;
use crate::registry::{Backend, GrpcTarget};
use crate::relay::Reading;
use a2a_model::Request;

use super::answer::{
    checked, checked_fact, chunks, content_type, is_event_stream, log_answer, relayed_headers, screened,
};
use super::{ForwardError, Forwarder};

/// How a call travels to its agent and back.
pub(super) enum Leg<'b> {
    /// A 1.0 agent with the caller's binding: the request goes as the checked 1.0 request written
    /// in that binding, the answer comes back byte for byte.
    Native(Written),
    /// 0.3 JSON-RPC on both sides: the request is written in 0.3 and the agent's answer comes back
    /// unchanged; the tap and the observers read a 1.0 copy.
    PassThrough(AgentCall),
    /// Another dialect, or a 1.0 agent without the caller's binding: translated both ways.
    Bridged { outgoing: AgentCall, v03_rest: bool },
    /// An agent that offers only gRPC: the request as the method's message.
    Grpc { target: &'b GrpcTarget, method: grpc::Method, message: Vec<u8> },
}

/// An agent's whole answer made the caller's: what goes back, and what the observers learn from it.
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub seen: Seen,
}

/// What an answer tells the observers.
pub(super) enum Seen {
    Nothing,
    /// Read while the answer was checked.
    Fact(TaskFact),
    /// The answer's body itself, in 1.0.
    Body(Source),
    /// A 1.0 copy of an answer that goes back in the agent's dialect.
    Copy(Vec<u8>),
}

impl<'b> Leg<'b> {
    /// The leg for `call` to `backend`, with the checked `request` written for it: the one place a
    /// call's request becomes the agent's body, whatever its dialect and binding.
    pub fn choose(backend: &'b Backend, call: &A2aCall, request: &Request) -> Result<Leg<'b>, ForwardError> {
        // Pass-through needs one wire on both sides: 0.3 JSON-RPC.
        if call.dialect == Dialect::V03
            && call.binding == Binding::JsonRpc
            && backend.dialect == Dialect::V03
            && backend.jsonrpc_url.is_some()
        {
            let outgoing = agent_side::agent_call(backend.dialect, request.clone(), call.rpc_id.as_ref())?;
            return Ok(Leg::PassThrough(outgoing));
        }
        if let (None, None, Some(target)) = (&backend.jsonrpc_url, &backend.rest_url, &backend.grpc) {
            let (method, message) = back::request_message(request, target.tenant.as_deref())?;
            return Ok(Leg::Grpc { target, method, message });
        }
        let has_binding = match call.binding {
            Binding::JsonRpc => backend.jsonrpc_url.is_some(),
            Binding::Rest => backend.rest_url.is_some(),
        };
        if backend.dialect == Dialect::V1 && has_binding {
            return Ok(Leg::Native(encode(call, request)));
        }
        let request = request.clone();
        // A 0.3 agent without JSON-RPC is reached over its HTTP+JSON binding.
        let v03_rest = backend.dialect == Dialect::V03 && backend.jsonrpc_url.is_none();
        let outgoing = match backend.dialect {
            Dialect::V1 => agent_side::rebind_call(call, request)?,
            _ if v03_rest => agent_side::agent_call_v03_rest(request)?,
            dialect => agent_side::agent_call(dialect, request, call.rpc_id.as_ref())?,
        };
        Ok(Leg::Bridged { outgoing, v03_rest })
    }

    /// Whether the agent answers with an event stream.
    pub fn streams(&self, call: &A2aCall, response: &Response<AgentBody>) -> bool {
        let sse = || response.status().is_success() && is_event_stream(response.headers());
        match self {
            Leg::Native(_) | Leg::PassThrough(_) => sse(),
            Leg::Bridged { outgoing, .. } => outgoing.streams && sse(),
            Leg::Grpc { .. } => call.operation.is_streaming(),
        }
    }

    /// The answer's head for a relayed stream: the agent's A2A headers when its bytes go back
    /// unchanged, the gateway's own when the events are written anew.
    pub fn stream_head(&self, response: &Response<AgentBody>) -> (StatusCode, HeaderMap) {
        let (status, mut headers) = match self {
            Leg::Native(_) | Leg::PassThrough(_) => (response.status(), relayed_headers(response.headers())),
            Leg::Bridged { .. } | Leg::Grpc { .. } => {
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                (StatusCode::OK, headers)
            }
        };
        headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
        // Asks reverse proxies in front of the gateway not to buffer the stream either.
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        (status, headers)
    }
}

impl Forwarder {
    /// The agent's event stream, and how the relay reads it (see [`Reading`]): a gRPC agent's
    /// messages arrive as 1.0 events in the caller's binding.
    pub(super) fn events(
        &self,
        leg: Leg<'_>,
        backend: &Backend,
        exchange: &Exchange,
        call: &A2aCall,
        response: Response<AgentBody>,
    ) -> (BoxStream<'static, Result<Bytes, Fault>>, Reading) {
        match leg {
            Leg::Native(_) => (chunks(response), Reading::Native),
            Leg::PassThrough(_) => (chunks(response), Reading::PassThrough(EventConverter::new(backend.dialect, call))),
            Leg::Bridged { v03_rest, .. } => {
                let mut converter = EventConverter::new(backend.dialect, call);
                if v03_rest {
                    converter = converter.v03_rest();
                }
                (chunks(response), Reading::Bridged(converter))
            }
            Leg::Grpc { method, .. } => (self.grpc_events(backend, exchange, call, method, response), Reading::Events),
        }
    }

    /// The agent's whole answer, checked (a success that is no well-formed A2A answer is the
    /// gateway's error), screened (an agent's error becomes the gateway's, logged under the request
    /// id) and made the caller's.
    pub(super) async fn answer(
        &self,
        leg: Leg<'_>,
        backend: &Backend,
        exchange: &Exchange,
        call: &A2aCall,
        response: Response<AgentBody>,
    ) -> Result<Answer, ForwardError> {
        let request_id = &*exchange.request_id;
        match leg {
            Leg::Grpc { method, .. } => {
                let message = self.grpc_message(backend, request_id, response).await?;
                let v1 = back::unary_answer(call, &method, &message).map_err(ForwardError::Answered)?;
                let mut headers = HeaderMap::new();
                let media_type = match call.binding {
                    Binding::JsonRpc => "application/json",
                    Binding::Rest => crate::protocol::A2A_JSON,
                };
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
                let seen = Seen::Body(Source::Response);
                Ok(Answer { status: StatusCode::OK, headers, body: Bytes::from(v1), seen })
            }
            Leg::Native(_) => {
                let Whole { status, relayed, content_type, body } = self.whole(backend, response).await?;
                let content_type = content_type.as_deref();
                // One pass over a success answer: its check and its task fact.
                let fact = if status.is_success() {
                    let (rpc_id, want) = (call.rpc_id.as_ref(), self.observers.wants_artifacts());
                    checked_fact(backend, request_id, call.binding, content_type, &body, rpc_id, want)?
                } else {
                    None
                };
                screened(backend, request_id, call.binding, status, &body)?;
                let seen = fact.map_or(Seen::Nothing, Seen::Fact);
                Ok(Answer { status, headers: relayed, body, seen })
            }
            Leg::PassThrough(_) => {
                let Whole { status, relayed, content_type, body } = self.whole(backend, response).await?;
                let content_type = content_type.as_deref();
                if status.is_success() {
                    checked(backend, request_id, Binding::JsonRpc, content_type, &body, call.rpc_id.as_ref())?;
                }
                let (v1_status, v1) = agent_side::unary_to_v1(backend.dialect, call, status, &body);
                if !status.is_success() {
                    log_answer(backend, request_id, status, &body);
                }
                screened(backend, request_id, call.binding, v1_status, &v1)?;
                let seen = if v1_status.is_success() { Seen::Copy(v1) } else { Seen::Nothing };
                Ok(Answer { status, headers: relayed, body, seen })
            }
            Leg::Bridged { v03_rest, .. } => {
                let Whole { status, content_type, body, .. } = self.whole(backend, response).await?;
                let content_type = content_type.as_deref();
                if status.is_success() {
                    // JSON by type and content; the translation below reads the shape.
                    checked(backend, request_id, Binding::Rest, content_type, &body, None)?;
                }
                let mut headers = HeaderMap::new();
                if call.operation.is_streaming() && backend.dialect == Dialect::Early {
                    // An early agent's answer to a streamed continuation is one task: sent as a 1.0 stream.
                    let events = agent_side::continuation_stream(call, status, &body);
                    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                    return Ok(Answer {
                        status: StatusCode::OK,
                        headers,
                        body: events,
                        seen: Seen::Body(Source::Stream),
                    });
                }
                let (status, v1) = match backend.dialect {
                    Dialect::V1 => agent_side::unary_rebound(call, status, &body),
                    _ if v03_rest => agent_side::unary_v03_rest_to_v1(call, status, &body),
                    dialect => agent_side::unary_to_v1(dialect, call, status, &body),
                };
                if !status.is_success() {
                    log_answer(backend, request_id, status, &body);
                }
                screened(backend, request_id, call.binding, status, &v1)?;
                // The agent's own JSON media type: `application/a2a+json` only when it said so (a
                // JSON-RPC agent says `application/json`, and HTTP+JSON clients and the conformance
                // kit read that).
                let agent_a2a_json = content_type.is_some_and(|t| t.starts_with(crate::protocol::A2A_JSON));
                let media_type = match call.binding {
                    Binding::Rest if status.is_success() && agent_a2a_json => crate::protocol::A2A_JSON,
                    Binding::JsonRpc | Binding::Rest => "application/json",
                };
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
                let seen = if status.is_success() { Seen::Body(Source::Response) } else { Seen::Nothing };
                Ok(Answer { status, headers, body: Bytes::from(v1), seen })
            }
        }
    }

    /// An HTTP answer read whole, within the answer size limit.
    async fn whole(&self, backend: &Backend, response: Response<AgentBody>) -> Result<Whole, ForwardError> {
        let status = response.status();
        let relayed = relayed_headers(response.headers());
        let content_type = content_type(response.headers());
        let body = self.read_whole(&backend.name, response).await?;
        Ok(Whole { status, relayed, content_type, body })
    }
}

/// An agent's HTTP answer, read whole.
struct Whole {
    status: StatusCode,
    /// The agent's headers that go back with its answer.
    relayed: HeaderMap,
    content_type: Option<String>,
    body: Bytes,
}
