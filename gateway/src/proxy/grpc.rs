//! Forwarding to an agent that speaks only gRPC: the checked request as the method's message over
//! HTTP/2 (a pooled hyper client, [`crate::clients::GrpcClient`]: reqwest does not expose the
//! trailers gRPC ends a call with), the answer read back into the call's 1.0 binding. Unary answers
//! are read whole (bounded by `limits.max_response_bytes`); streamed messages become SSE events one
//! by one, as they arrive, and go through the same relay (tap, observers, keep-alive, drain) as a
//! JSON agent's stream. A status other than OK is screened like an HTTP+JSON error: A2A errors keep
//! their code, anything else is the agent's failure.

use std::pin::Pin;
use std::task::{Context, Poll};

use crate::clients::AgentBody;
use a2a_core::{A2aCall, A2aError, Binding, Dialect};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http::{HeaderMap, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};

use super::answer::screened;
use super::request::unreachable;
use super::{ForwardError, Forwarder};
use crate::observers::Exchange;
use crate::protocol::agent_errors;
use crate::protocol::agent_side::Fault;
use crate::protocol::errors::Refusal;
use crate::protocol::grpc::wire::{self, Deframer, Status};
use crate::protocol::grpc::{Method, back};
use crate::protocol::translate::v03;
use crate::registry::{Backend, GrpcTarget};

/// Caller metadata with A2A meaning that goes on to a gRPC agent (as for JSON agents).
const METADATA: [&str; 3] = ["a2a-extensions", "traceparent", "tracestate"];

impl Forwarder {
    /// Sends the method's `message` to a gRPC agent; an answer that is no gRPC answer, or one that
    /// failed before any message (trailers only), is the agent's refusal, screened.
    pub(super) async fn send_grpc(
        &self,
        backend: &Backend,
        target: &GrpcTarget,
        method: &Method,
        message: &[u8],
        exchange: &Exchange,
        headers: &HeaderMap,
    ) -> Result<Response<AgentBody>, ForwardError> {
        let uri = format!("{}{}", target.url.as_str().trim_end_matches('/'), method.path());
        let mut request = http::Request::post(uri)
            .header(header::CONTENT_TYPE, crate::protocol::grpc::CONTENT_TYPE)
            .header(header::TE, "trailers")
            .header("a2a-version", crate::protocol::PROTOCOL_VERSION);
        for name in METADATA {
            for value in headers.get_all(name) {
                request = request.header(name, value);
            }
        }
        if !headers.contains_key("a2a-extensions") {
            for value in headers.get_all(v03::EXTENSIONS_HEADER) {
                request = request.header("a2a-extensions", value);
            }
        }
        let credential =
            self.credentials.authorization(&backend.name, exchange.caller.as_ref(), headers.get(header::AUTHORIZATION));
        match credential.await {
            Ok(Some(value)) => request = request.header(header::AUTHORIZATION, value),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(backend = %backend.name, %error, "no credential for the backend");
                return Err(ForwardError::NotSent(error.into()));
            }
        }
        let request = request.body(Full::new(wire::frame(message))).map_err(|_| A2aError::Internal)?;
        let response =
            match tokio::time::timeout(self.first_byte_timeout, self.grpc_for(&backend.name).request(request)).await {
                Ok(Ok(response)) => response,
                Ok(Err(error)) if error.is_connect() => {
                    tracing::warn!(backend = %backend.name, %error, "backend connection failed");
                    return Err(ForwardError::NotSent(unreachable(backend)));
                }
                Ok(Err(error)) => {
                    tracing::warn!(backend = %backend.name, %error, "backend request failed");
                    return Err(ForwardError::Failed(unreachable(backend)));
                }
                Err(_) => {
                    tracing::warn!(backend = %backend.name, "backend did not answer in time");
                    let error =
                        A2aError::BackendUnavailable(format!("the agent '{}' did not answer in time", backend.name));
                    return Err(ForwardError::Failed(error));
                }
            };
        let is_grpc = crate::protocol::grpc::front::is_grpc(response.headers());
        if response.status() != StatusCode::OK || !is_grpc {
            let status = Status::new(wire::INTERNAL, format!("HTTP {} without a gRPC answer", response.status()));
            return Err(refused(backend, &exchange.request_id, &status));
        }
        // A trailers-only answer: the call failed before any message.
        if let Some(status) = Status::from_headers(response.headers()).filter(|s| s.code != 0) {
            return Err(refused(backend, &exchange.request_id, &status));
        }
        Ok(response.map(AgentBody::from))
    }

    /// A gRPC agent's streamed messages, each as the data of one 1.0 event in the call's binding, as
    /// they arrive (the relay reads them as [`crate::relay::Reading::Events`]).
    pub(super) fn grpc_events(
        &self,
        backend: &Backend,
        exchange: &Exchange,
        call: &A2aCall,
        method: Method,
        response: Response<AgentBody>,
    ) -> BoxStream<'static, Result<Bytes, Fault>> {
        Events {
            body: response.into_body(),
            deframer: Deframer::new(self.max_response_bytes),
            call: call.clone(),
            method,
            backend: backend.name.clone(),
            request_id: exchange.request_id.clone(),
            done: false,
        }
        .boxed()
    }

    /// A gRPC agent's one answer message, read whole (bounded by `limits.max_response_bytes`); a
    /// status other than OK in its trailers is the agent's refusal, screened.
    pub(super) async fn grpc_message(
        &self,
        backend: &Backend,
        request_id: &str,
        response: Response<AgentBody>,
    ) -> Result<Bytes, ForwardError> {
        let collect = Limited::new(response.into_body(), self.max_response_bytes + 5).collect();
        // As for HTTP answers: the rest of an answer within the first-byte timeout again.
        let collected = tokio::time::timeout(self.first_byte_timeout, collect)
            .await
            .map_err(|_| {
                ForwardError::Failed(A2aError::BackendUnavailable(format!(
                    "the agent '{}' did not finish its answer in time",
                    backend.name
                )))
            })?
            .map_err(|_| {
                ForwardError::Failed(A2aError::BackendUnavailable(format!(
                    "the agent '{}' broke off its answer or sent an oversized one",
                    backend.name
                )))
            })?;
        let status = collected.trailers().and_then(Status::from_headers);
        let status = status.unwrap_or_else(|| Status::new(wire::INTERNAL, "the answer ended without a status"));
        if status.code != 0 {
            return Err(refused(backend, request_id, &status));
        }
        let mut deframer = Deframer::new(self.max_response_bytes);
        deframer.push(&collected.to_bytes());
        match deframer.next_message() {
            Ok(Some(message)) => Ok(message),
            _ => Err(ForwardError::Answered(A2aError::InvalidAgentResponse("no answer message".into()))),
        }
    }
}

/// A gRPC status other than OK as the agent's answer: an A2A error keeps its code (screened like an
/// HTTP+JSON error), anything else is the agent's failure.
fn refused(backend: &Backend, request_id: &str, status: &Status) -> ForwardError {
    let (http, body) = status.to_rest_error();
    screened(backend, request_id, Binding::Rest, http, &body).err().unwrap_or_else(|| {
        ForwardError::Answered(A2aError::AgentFailed {
            agent: backend.name.to_string(),
            request_id: request_id.to_string(),
        })
    })
}

/// A gRPC agent's streamed messages as the data of the 1.0 events of the call's binding. The stream
/// ends after the trailers; a status other than OK, or a message that is no StreamResponse, ends it
/// with an error event (the relay then closes the task's stream as for a JSON agent that broke off).
struct Events {
    body: AgentBody,
    deframer: Deframer,
    call: A2aCall,
    method: Method,
    backend: std::sync::Arc<str>,
    request_id: std::sync::Arc<str>,
    done: bool,
}

impl Events {
    fn error_event(&mut self, error: A2aError) -> Bytes {
        self.done = true;
        Refusal::new(error, Dialect::V1, self.call.binding, self.call.rpc_id.clone()).rendered().body
    }

    fn refused(&mut self, status: &Status) -> Bytes {
        let (http, body) = status.to_rest_error();
        let verdict = agent_errors::screen(Binding::Rest, http, &body);
        tracing::warn!(backend = %self.backend, request_id = %self.request_id, code = status.code, message = %status.message, "the agent ended its gRPC stream with an error");
        let error = agent_errors::into_error(verdict, &self.backend, &self.request_id)
            .unwrap_or_else(|| A2aError::InvalidAgentResponse("the agent ended its stream with an error".into()));
        self.error_event(error)
    }
}

impl Stream for Events {
    type Item = Result<Bytes, Fault>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.deframer.next_message() {
                Ok(Some(message)) => {
                    let event = back::stream_event(&this.call, &this.method, &message);
                    return Poll::Ready(Some(Ok(event.unwrap_or_else(|error| this.error_event(error)))));
                }
                Ok(None) => {}
                Err(error) => {
                    let error = A2aError::InvalidAgentResponse(format!("the agent's stream is invalid: {error}"));
                    return Poll::Ready(Some(Ok(this.error_event(error))));
                }
            }
            let frame = match hyper::body::Body::poll_frame(Pin::new(&mut this.body), cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(frame) => frame,
            };
            match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.deframer.push(&data),
                    Err(frame) => {
                        let status = frame.trailers_ref().and_then(Status::from_headers);
                        match status {
                            Some(status) if status.code == 0 => this.done = true,
                            Some(status) => return Poll::Ready(Some(Ok(this.refused(&status)))),
                            None => this.done = true,
                        }
                    }
                },
                // The relay ends the caller's stream with the reason (stream cut).
                Some(Err(error)) => {
                    tracing::warn!(backend = %this.backend, %error, "gRPC stream broke off");
                    this.done = true;
                    return Poll::Ready(Some(Err(Fault::Cut)));
                }
                None => this.done = true,
            }
        }
    }
}
