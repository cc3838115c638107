//! Forwards a call to its backend and relays the answer. Request bodies go out as the caller sent
//! them; unary answers come back byte for byte, except errors: those are screened
//! ([`agent_errors`](crate::protocol::agent_errors)) and answered by the gateway in the caller's dialect, so an agent's internals
//! never reach callers; SSE streams are relayed chunk by chunk as they arrive, with a tap that reads
//! a copy of each event to learn task ownership and state. Of the agent's headers only those with A2A
//! meaning are relayed (never `Server`, `Via`, `X-Powered-By`, ...).

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aCall, A2aError, Binding};
use a2a_policies::backend_auth::BackendCredentials;
use axum::body::Body;
use http::{HeaderMap, HeaderValue, Method, Response, header};

use a2a_core::Source;
use a2a_model::Request;

use crate::clients::{AgentClient, AgentClients, BackendClients, GrpcClient};
use crate::observers::{Exchange, Observers};
use crate::registry::Backend;
use crate::relay::{Relay, StreamSettings};

mod answer;
mod grpc;
mod leg;
mod request;

use answer::build_response;
use leg::{Answer, Leg, Seen};
use request::Outgoing;

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
    client: AgentClients,
    credentials: Arc<BackendCredentials>,
    observers: Arc<Observers>,
    max_response_bytes: usize,
    first_byte_timeout: Duration,
    streams: StreamSettings,
    /// HTTP/2 client for agents that speak only gRPC.
    grpc: crate::workers::PerWorker<GrpcClient>,
    /// The clients of backends with their own TLS settings (instead of the two above).
    tls: BackendClients,
}

/// A call on its way to its agent: the call, its checked request, and the caller's method and headers
/// (`body` is the request's canonical 1.0 form, kept in step with `request` by whoever amends it).
pub struct Outbound<'a> {
    pub call: &'a A2aCall,
    pub request: &'a Request,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
}

impl Forwarder {
    pub fn new(
        client: AgentClients,
        credentials: Arc<BackendCredentials>,
        observers: Arc<Observers>,
        max_response_bytes: usize,
        first_byte_timeout: Duration,
        streams: StreamSettings,
        tls: BackendClients,
    ) -> Forwarder {
        let grpc = crate::workers::PerWorker::new(|| crate::clients::grpc_client(first_byte_timeout));
        Forwarder { client, credentials, observers, max_response_bytes, first_byte_timeout, streams, grpc, tls }
    }

    /// The client to `backend`'s JSON interfaces: its own when it has TLS settings.
    fn client_for(&self, backend: &str) -> &AgentClient {
        self.tls.get(backend).map_or(&self.client, |clients| &clients.agent).get()
    }

    /// The client to `backend`'s gRPC interface.
    fn grpc_for(&self, backend: &str) -> &GrpcClient {
        self.tls.get(backend).map_or(&self.grpc, |clients| &clients.grpc).get()
    }

    /// Sends the call to `backend` and relays its answer to the caller; what the answer says about
    /// tasks is reported to the observers as `exchange`. `request` is the checked request, written
    /// here, once, by the leg for its agent's dialect and binding. The one pipeline of every
    /// forward: the leg (the agent side's codec) is chosen and the request written for it, sent, and
    /// the answer relayed as a stream or read whole, observed and sent back.
    pub async fn forward(
        &self,
        backend: &Backend,
        exchange: Exchange,
        outbound: Outbound<'_>,
    ) -> Result<Response<Body>, ForwardError> {
        let Outbound { call, request, method, headers } = outbound;
        let leg = Leg::choose(backend, call, request)?;
        let caller = exchange.caller.as_ref();
        let response = match &leg {
            Leg::Native(written) => {
                self.send(backend, caller, call, method, headers, Outgoing::Native(written)).await?
            }
            Leg::PassThrough(outgoing) | Leg::Bridged { outgoing, .. } => {
                let method = &outgoing.method;
                self.send(backend, caller, call, method, headers, Outgoing::Translated(outgoing)).await?
            }
            Leg::Grpc { target, method, message } => {
                self.send_grpc(backend, target, method, message, &exchange, headers).await?
            }
        };
        let passed_through = matches!(leg, Leg::PassThrough(_));
        let mut answer = if leg.streams(call, &response) {
            let (status, out_headers) = leg.stream_head(&response);
            let (events, reading) = self.events(leg, backend, &exchange, call, response);
            let relay =
                Relay::new(events, reading, self.observers.clone(), exchange, call.rpc_id.clone(), &self.streams);
            build_response(status, out_headers, Body::from_stream(relay))
        } else {
            let Answer { status, headers, body, seen } = self.answer(leg, backend, &exchange, call, response).await?;
            match seen {
                Seen::Nothing => {}
                Seen::Fact(fact) => self.observers.report(&exchange, &fact, Source::Response),
                Seen::Body(source) => self.observers.observe_json(&exchange, &body, source),
                Seen::Copy(v1) => self.observers.observe_json(&exchange, &v1, Source::Response),
            }
            build_response(status, headers, Body::from(body))
        };
        if passed_through {
            answer.extensions_mut().insert(crate::protocol::agent_side::PassedThrough);
        }
        Ok(answer)
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
        let mut call = A2aCall::new(Binding::JsonRpc, a2a_core::Operation::GetTask);
        call.task_id = Some(task_id.to_owned());
        call.rpc_id = Some(serde_json::Value::from(&*exchange.request_id));
        let request =
            Request::GetTask(a2a_model::GetTaskRequest { tenant: None, id: task_id.to_owned(), history_length });
        let response = self.forward_own(backend, exchange, call, request).await.ok()?;
        let bytes = response.into_body().collect().await.ok()?.to_bytes();
        let mut answer: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let task = answer.get_mut("result")?.take();
        (task.get("id").and_then(serde_json::Value::as_str) == Some(task_id)).then_some(task)
    }

    /// Forwards a call the gateway makes itself (the tap's GetTask, a deadline's cancel): `request`
    /// written by the leg like a caller's, with the gateway's own headers, answered and observed
    /// like any call. Sent as `POST`: these are JSON-RPC calls, or an HTTP+JSON cancel.
    pub async fn forward_own(
        &self,
        backend: &Backend,
        exchange: Exchange,
        call: A2aCall,
        request: Request,
    ) -> Result<Response<Body>, ForwardError> {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(crate::protocol::VERSION_HEADER, HeaderValue::from_static(crate::protocol::PROTOCOL_VERSION));
        let outbound = Outbound { call: &call, request: &request, method: &Method::POST, headers: &headers };
        self.forward(backend, exchange, outbound).await
    }
}
