//! Calls that cross dialects: a 1.0 call to an agent of another dialect or binding (translated both
//! ways), and a 0.3 call to a 0.3 agent (passed through, observed through a 1.0 copy).

use a2a_core::{A2aCall, Binding, Dialect};
use axum::body::Body;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use a2a_core::Source;

use crate::observers::Exchange;
use crate::protocol::agent_side;
use crate::registry::Backend;
use crate::relay::Relay;

use super::answer::{
    build_response, checked, chunks, content_type, is_event_stream, log_answer, relayed_headers, screened,
};
use super::{ForwardError, Forwarder};

impl Forwarder {
    /// Forwards a call (in its 1.0 form) to an agent of another dialect: the request translated, the
    /// answer translated back to 1.0 before the relay's tap and the observers read it.
    pub(super) async fn forward_bridged(
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
        // The agent's own JSON media type: `application/a2a+json` only when it said so (a JSON-RPC
        // agent says `application/json`, and HTTP+JSON clients and the conformance kit read that).
        let agent_a2a_json = content_type.as_deref().is_some_and(|t| t.starts_with(crate::protocol::A2A_JSON));
        let content_type = match call.binding {
            Binding::Rest if status.is_success() && agent_a2a_json => crate::protocol::A2A_JSON,
            Binding::JsonRpc | Binding::Rest => "application/json",
        };
        out_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        Ok(build_response(status, out_headers, Body::from(v1)))
    }

    /// Caller and agent both speak 0.3: the checked request goes out in 0.3 and the agent's answer
    /// comes back unchanged; the tap and the observers read a 1.0 copy.
    pub(super) async fn forward_unchanged(
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
}
