//! The agent side of bridging: a call in its 1.0 form (what the stack inside the decode layer works
//! on) sent to a backend that speaks A2A 0.3 JSON-RPC or the early REST dialect, and the backend's
//! answer — unary result, every stream event, every error — turned back into 1.0 in the caller's
//! binding, before the relay's tap and the observers read it (they only read 1.0).

use std::pin::Pin;
use std::task::{Context, Poll};

use a2a_policies::{A2aCall, A2aError, Binding, Dialect, Operation};
use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use http::{Method, StatusCode};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::sse::SseParser;
use super::translate::early::{self, SnapshotDiffer};
use super::translate::model::{self, ErrorKind, ErrorObject, Request, StreamResponse};
use super::translate::{TranslateError, jsonrpc, v03};

/// One request to a non-1.0 agent.
#[derive(Debug)]
pub struct AgentCall {
    pub method: Method,
    /// Below the agent's early base (`None`: the 0.3 JSON-RPC endpoint).
    pub path: Option<String>,
    pub body: Vec<u8>,
    /// The agent answers with an SSE stream.
    pub streams: bool,
}

/// The 1.0 request a decoded call stands for: JSON-RPC params, or an HTTP+JSON body completed with
/// the ids its path named.
pub fn v1_request(call: &A2aCall, body: &[u8]) -> Result<Request, A2aError> {
    let bad = TranslateError::into_request_error;
    match call.binding {
        Binding::JsonRpc => {
            let envelope = jsonrpc::Envelope::parse(body).map_err(bad)?;
            Request::parse(call.operation, envelope.params).map_err(bad)
        }
        Binding::Rest => {
            let id = call.task_id.clone().unwrap_or_default();
            match call.operation {
                Operation::SendMessage | Operation::SendStreamingMessage => {
                    let raw: &RawValue = serde_json::from_slice(body)
                        .map_err(|e| A2aError::invalid_params(format!("invalid request body: {e}")))?;
                    Request::parse(call.operation, Some(raw)).map_err(bad)
                }
                Operation::GetTask => {
                    let history_length = call
                        .rest_path
                        .as_deref()
                        .and_then(|p| p.split_once('?'))
                        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("historyLength=")))
                        .and_then(|n| n.parse().ok());
                    Ok(Request::GetTask(model::GetTaskRequest { tenant: None, id, history_length }))
                }
                Operation::CancelTask => {
                    let metadata = serde_json::from_slice::<Value>(body)
                        .ok()
                        .and_then(|b| b.get("metadata").cloned().and_then(|m| serde_json::from_value(m).ok()));
                    Ok(Request::CancelTask(model::CancelTaskRequest { tenant: None, id, metadata }))
                }
                Operation::SubscribeToTask => {
                    Ok(Request::SubscribeToTask(model::SubscribeToTaskRequest { tenant: None, id }))
                }
                other => Err(A2aError::UnsupportedOperation(format!(
                    "{other} over HTTP+JSON is not bridged to agents of another A2A version; use JSON-RPC"
                ))),
            }
        }
    }
}

/// The request to an agent of `dialect` (0.3 or early). A new task for an early agent gets a fresh
/// UUID, which the agent then answers with: the id needs no mapping.
pub fn agent_call(dialect: Dialect, request: Request, rpc_id: Option<&Value>) -> Result<AgentCall, A2aError> {
    let streaming = request.operation().is_streaming();
    match dialect {
        Dialect::Early => {
            let new_id = uuid::Uuid::new_v4().to_string();
            let http = early::request_from_v1(request, &new_id).map_err(TranslateError::into_request_error)?;
            Ok(AgentCall {
                method: http.method,
                path: Some(http.path),
                body: http.body.unwrap_or_default(),
                streams: http.streams,
            })
        }
        _ => {
            let (method, params) = v03::request_from_v1(request).map_err(TranslateError::into_request_error)?;
            let id = rpc_id.cloned().unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()));
            let body = jsonrpc::request(&id, method, (!params.is_none()).then_some(&params));
            Ok(AgentCall { method: Method::POST, path: None, body, streams: streaming })
        }
    }
}

/// The request to a 0.3 agent that offers only HTTP+JSON: the 0.3 JSON-RPC params of the request,
/// written as the 0.3 binding's method, path (under `/v1`) and ProtoJSON body.
pub fn agent_call_v03_rest(request: Request) -> Result<AgentCall, A2aError> {
    let operation = request.operation();
    let (_, params) = v03::request_from_v1(request).map_err(TranslateError::into_request_error)?;
    let params = serde_json::to_value(params).map_err(|_| A2aError::Internal)?;
    let (method, path, body) =
        v03::rest::request_to_rest(operation, params).map_err(TranslateError::into_request_error)?;
    let body = body.map(|b| serde_json::to_vec(&b).unwrap_or_default()).unwrap_or_default();
    Ok(AgentCall { method, path: Some(path), body, streams: operation.is_streaming() })
}

/// A 0.3 HTTP+JSON agent's unary answer as the 1.0 answer in the caller's binding.
pub fn unary_v03_rest_to_v1(call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id, op) = (call.binding, call.rpc_id.as_ref(), call.operation);
    let answer = if status.is_success() {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| TranslateError::Json(e.to_string()))
            .and_then(|value| v03::rest::result_to_rpc(op, value))
            .and_then(|result| serde_json::to_vec(&result).map_err(|e| TranslateError::Json(e.to_string())))
            .and_then(|result| match op {
                Operation::DeleteTaskPushNotificationConfig => Ok(model::Response::Deleted(None)),
                _ => v03::result_to_v1(op, &result),
            })
            .map_err(invalid_answer)
    } else {
        Err(v03_rest_error(op, status, body))
    };
    match answer {
        Ok(response) => (StatusCode::OK, success(binding, id, &response)),
        Err(error) => failure(binding, id, error),
    }
}

/// A 0.3 HTTP+JSON error answer (a status and `{"message"}`) as the 1.0 error object.
fn v03_rest_error(operation: Operation, status: StatusCode, body: &[u8]) -> ErrorObject {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|v| v["message"].as_str()).unwrap_or("").to_owned();
    let code = v03::rest::code_of(status.as_u16(), operation);
    v03::error_to_v1(v03::Error03 { code, message, data: None })
}

/// A 1.0 success in the caller's binding.
fn success(binding: Binding, rpc_id: Option<&Value>, value: &impl Serialize) -> Vec<u8> {
    match binding {
        Binding::JsonRpc => jsonrpc::success(rpc_id.unwrap_or(&Value::Null), value),
        Binding::Rest => serde_json::to_vec(value).unwrap_or_default(),
    }
}

/// The google.rpc.Status name of an HTTP status, for HTTP+JSON error bodies.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        415 | 501 => "UNIMPLEMENTED",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    }
}

/// A 1.0 error in the caller's binding: (HTTP status, body).
fn failure(binding: Binding, rpc_id: Option<&Value>, error: ErrorObject) -> (StatusCode, Vec<u8>) {
    match binding {
        Binding::JsonRpc => (StatusCode::OK, jsonrpc::failure(rpc_id.unwrap_or(&Value::Null), &error)),
        Binding::Rest => {
            let status = error.kind().http_status();
            let body = json!({"error": {
                "code": status,
                "status": status_name(status),
                "message": error.message,
                "details": error.data.unwrap_or_else(|| json!([])),
            }});
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, serde_json::to_vec(&body).unwrap_or_default())
        }
    }
}

fn invalid_answer(error: TranslateError) -> ErrorObject {
    let message = error.into_response_error().to_string();
    ErrorObject::new(ErrorKind::InvalidAgentResponse, message)
}

/// A 1.0 HTTP+JSON error answer (google.rpc.Status) as the error object: the kind from its ErrorInfo
/// reason, else from the status.
fn rest_error(status: StatusCode, body: &[u8]) -> ErrorObject {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error.and_then(|e| e["message"].as_str()).unwrap_or("the agent failed").to_owned();
    let reason = error.and_then(|e| e["details"].as_array()?.iter().find_map(|d| d["reason"].as_str()));
    let kind = reason.and_then(ErrorKind::from_reason).unwrap_or(match status.as_u16() {
        404 => ErrorKind::TaskNotFound,
        400 | 422 => ErrorKind::InvalidParams,
        _ => ErrorKind::Internal,
    });
    let mut object = ErrorObject::new(kind, message);
    if let Some(details) = error.and_then(|e| e.get("details")).filter(|d| d.is_array()) {
        object.data = Some(details.clone());
    }
    object
}

/// A task id as one path segment: everything but unreserved characters percent-encoded.
pub fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The request for a 1.0 agent that lacks the caller's binding, in its other binding.
pub fn rebind_call(call: &A2aCall, request: Request) -> Result<AgentCall, A2aError> {
    let op = call.operation;
    match call.binding {
        // JSON-RPC caller → HTTP+JSON agent.
        Binding::JsonRpc => {
            let encoded = serde_json::to_vec(&request).map_err(|_| A2aError::Internal)?;
            let (method, path, body) = match &request {
                Request::SendMessage(_) => (Method::POST, "/message:send".to_owned(), encoded),
                Request::SendStreamingMessage(_) => (Method::POST, "/message:stream".to_owned(), encoded),
                Request::GetTask(r) => {
                    let query = r.history_length.map(|n| format!("?historyLength={n}")).unwrap_or_default();
                    (Method::GET, format!("/tasks/{}{query}", segment(&r.id)), Vec::new())
                }
                Request::CancelTask(r) => (Method::POST, format!("/tasks/{}:cancel", segment(&r.id)), encoded),
                Request::SubscribeToTask(r) => {
                    (Method::POST, format!("/tasks/{}:subscribe", segment(&r.id)), Vec::new())
                }
                _ => {
                    return Err(A2aError::UnsupportedOperation(format!(
                        "{op} is not bridged from JSON-RPC to an HTTP+JSON-only agent"
                    )));
                }
            };
            Ok(AgentCall { method, path: Some(path), body, streams: op.is_streaming() })
        }
        // HTTP+JSON caller → JSON-RPC agent.
        Binding::Rest => {
            let id = json!(uuid::Uuid::new_v4().to_string());
            let body = jsonrpc::request(&id, op.method_name(), Some(&request));
            Ok(AgentCall { method: Method::POST, path: None, body, streams: op.is_streaming() })
        }
    }
}

/// A 1.0 agent's unary answer in its other binding, as the answer in the caller's binding.
pub fn unary_rebound(call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id) = (call.binding, call.rpc_id.as_ref());
    let answer: Result<Vec<u8>, ErrorObject> = match binding {
        // The agent answered in HTTP+JSON.
        Binding::JsonRpc if status.is_success() => match serde_json::from_slice::<&RawValue>(body) {
            Ok(raw) => Ok(jsonrpc::success(id.unwrap_or(&Value::Null), &raw)),
            Err(e) => Err(invalid_answer(TranslateError::Json(e.to_string()))),
        },
        Binding::JsonRpc => Err(rest_error(status, body)),
        // The agent answered in JSON-RPC.
        Binding::Rest => match jsonrpc::Envelope::parse(body) {
            Err(error) => Err(invalid_answer(error)),
            Ok(envelope) => match (envelope.error, envelope.result) {
                (Some(error), _) => Err(serde_json::from_str::<ErrorObject>(error.get())
                    .unwrap_or_else(|e| invalid_answer(TranslateError::Json(e.to_string())))),
                (None, Some(result)) => Ok(result.get().as_bytes().to_vec()),
                (None, None) => Ok(b"{}".to_vec()),
            },
        },
    };
    match answer {
        Ok(bytes) => (StatusCode::OK, bytes),
        Err(error) => failure(binding, id, error),
    }
}

/// An agent's unary answer as the 1.0 answer in the caller's binding.
pub fn unary_to_v1(dialect: Dialect, call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id, op) = (call.binding, call.rpc_id.as_ref(), call.operation);
    let answer: Result<model::Response, ErrorObject> = match dialect {
        Dialect::Early if status.is_success() => early::result_to_v1(op, body).map_err(invalid_answer),
        Dialect::Early => Err(early::error_to_v1(Some(op), status.as_u16(), body)),
        _ => match jsonrpc::Envelope::parse(body) {
            Err(error) => Err(invalid_answer(error)),
            Ok(envelope) => match (envelope.error, envelope.result) {
                (Some(error), _) => match serde_json::from_str::<v03::Error03>(error.get()) {
                    Ok(error) => Err(v03::error_to_v1(error)),
                    Err(e) => Err(invalid_answer(TranslateError::Json(e.to_string()))),
                },
                (None, None) => Ok(model::Response::Deleted(None)),
                (None, Some(result)) => v03::result_to_v1(op, result.get().as_bytes()).map_err(invalid_answer),
            },
        },
    };
    match answer {
        Ok(response) => (StatusCode::OK, success(binding, id, &response)),
        Err(error) => failure(binding, id, error),
    }
}

/// A unary early answer to a streamed continuation, as the 1.0 stream it stands for.
pub fn continuation_stream(call: &A2aCall, status: StatusCode, body: &[u8]) -> Bytes {
    let mut converter = Converter::new(Dialect::Early, call, SnapshotDiffer::continuing(None));
    if !status.is_success() {
        let error = early::error_to_v1(Some(Operation::SendMessage), status.as_u16(), body);
        return frame(&failure(call.binding, call.rpc_id.as_ref(), error).1);
    }
    let mut out = Vec::new();
    converter.event(body, &mut |data| out.extend_from_slice(&frame(data)));
    Bytes::from(out)
}

fn frame(data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 10);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n\r\n");
    Bytes::from(out)
}

struct Converter {
    dialect: Dialect,
    /// A 0.3 agent's events in its HTTP+JSON binding (bare StreamResponses), not JSON-RPC.
    v03_rest: bool,
    binding: Binding,
    rpc_id: Option<Value>,
    differ: SnapshotDiffer,
}

impl Converter {
    fn new(dialect: Dialect, call: &A2aCall, differ: SnapshotDiffer) -> Converter {
        Converter { dialect, v03_rest: false, binding: call.binding, rpc_id: call.rpc_id.clone(), differ }
    }

    fn write(&self, event: &StreamResponse, out: Emit<'_>) -> bool {
        out(&success(self.binding, self.rpc_id.as_ref(), event));
        true
    }

    fn write_error(&self, error: ErrorObject, out: Emit<'_>) -> bool {
        out(&failure(self.binding, self.rpc_id.as_ref(), error).1);
        true
    }

    /// The agent's event could not be read: an invalid-answer error event; `false`.
    fn not_understood(&self, error: TranslateError, out: Emit<'_>) -> bool {
        self.write_error(invalid_answer(error), out);
        false
    }

    /// One agent event's `data` as the 1.0 events it stands for (each event's data handed to `out`);
    /// `false` when the agent's event could not be read (an invalid-answer error event stands for it).
    fn event(&mut self, data: &[u8], out: Emit<'_>) -> bool {
        match self.dialect {
            // The agent's other 1.0 binding: HTTP+JSON events are bare StreamResponses.
            Dialect::V1 if self.binding == Binding::JsonRpc => match serde_json::from_slice::<StreamResponse>(data) {
                Ok(event) => self.write(&event, out),
                Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() => {
                    self.not_understood(TranslateError::Json("an event that is not JSON".into()), out)
                }
                Err(_) => self.write_error(rest_error(StatusCode::INTERNAL_SERVER_ERROR, data), out),
            },
            Dialect::V1 => {
                let converted =
                    jsonrpc::Envelope::parse(data).and_then(|envelope| match (envelope.error, envelope.result) {
                        (Some(error), _) => serde_json::from_str::<ErrorObject>(error.get())
                            .map(Err)
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, Some(result)) => serde_json::from_str::<StreamResponse>(result.get())
                            .map(Ok)
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, None) => Err(TranslateError::Json("a stream event without a result".into())),
                    });
                match converted {
                    Ok(Ok(event)) => self.write(&event, out),
                    Ok(Err(error)) => self.write_error(error, out),
                    Err(error) => self.not_understood(error, out),
                }
            }
            Dialect::Early => match serde_json::from_slice::<early::Task>(data) {
                Ok(task) => {
                    for event in self.differ.push(task) {
                        self.write(&event, out);
                    }
                    true
                }
                Err(e) => self.not_understood(TranslateError::Json(e.to_string()), out),
            },
            _ if self.v03_rest => {
                let converted = serde_json::from_slice::<Value>(data)
                    .map_err(|e| TranslateError::Json(e.to_string()))
                    .and_then(v03::rest::event_to_rpc)
                    .and_then(|event| serde_json::to_vec(&event).map_err(|e| TranslateError::Json(e.to_string())))
                    .and_then(|event| v03::event_to_v1(&event));
                match converted {
                    Ok(event) => self.write(&event, out),
                    Err(error) => self.not_understood(error, out),
                }
            }
            _ => {
                let converted =
                    jsonrpc::Envelope::parse(data).and_then(|envelope| match (envelope.error, envelope.result) {
                        (Some(error), _) => serde_json::from_str::<v03::Error03>(error.get())
                            .map(|e| Err(v03::error_to_v1(e)))
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, Some(result)) => v03::event_to_v1(result.get().as_bytes()).map(Ok),
                        (None, None) => Err(TranslateError::Json("a stream event without a result".into())),
                    });
                match converted {
                    Ok(Ok(event)) => self.write(&event, out),
                    Ok(Err(error)) => self.write_error(error, out),
                    Err(error) => self.not_understood(error, out),
                }
            }
        }
    }
}

/// Where a converter hands each 1.0 event's data.
type Emit<'a> = &'a mut dyn FnMut(&[u8]);

/// An agent's SSE stream, event by event in 1.0 (caller's binding); what the relay then relays. An
/// event that is not JSON, or one larger than the stream's limit, ends it with a [`Fault`].
pub struct AgentEvents {
    inner: BoxStream<'static, Result<Bytes, Fault>>,
    parser: SseParser,
    converter: Converter,
    /// The stream ended with this fault, after the events before it were handed on.
    fault: Option<Fault>,
    done: bool,
}

impl AgentEvents {
    pub fn new(
        dialect: Dialect,
        call: &A2aCall,
        inner: BoxStream<'static, Result<Bytes, Fault>>,
        max_event_bytes: usize,
    ) -> AgentEvents {
        AgentEvents {
            inner,
            parser: SseParser::with_limit(max_event_bytes),
            converter: Converter::new(dialect, call, SnapshotDiffer::new()),
            fault: None,
            done: false,
        }
    }

    /// The agent is a 0.3 agent that streams in its HTTP+JSON binding.
    pub fn v03_rest(mut self) -> AgentEvents {
        self.converter.v03_rest = true;
        self
    }
}

impl Stream for AgentEvents {
    type Item = Result<Bytes, Fault>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(fault) = this.fault.take() {
                this.done = true;
                return Poll::Ready(Some(Err(fault)));
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let mut out = Vec::new();
                    let mut malformed = false;
                    let converter = &mut this.converter;
                    this.parser.feed(&chunk, &mut |data| {
                        if malformed {
                            return;
                        }
                        let mut events = Vec::new();
                        let understood = converter.event(data, &mut |event| events.extend_from_slice(&frame(event)));
                        malformed = !understood && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err();
                        if !malformed {
                            out.extend_from_slice(&events);
                        }
                    });
                    let fault = if this.parser.overflowed() {
                        Some(Fault::TooLarge)
                    } else if malformed {
                        Some(Fault::Malformed)
                    } else {
                        None
                    };
                    // The events before a bad one go first; the fault ends the stream after them.
                    this.fault = fault;
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                other => return other,
            }
        }
    }
}

/// For a pass-through stream (caller and agent share a dialect): the relay hands the agent's bytes
/// on unchanged and gives the tap this 1.0 copy of each event.
pub struct ObservedCopy {
    dialect: Dialect,
    converter: Converter,
}

impl ObservedCopy {
    pub fn new(dialect: Dialect, call: &A2aCall) -> ObservedCopy {
        ObservedCopy { dialect, converter: Converter::new(dialect, call, SnapshotDiffer::new()) }
    }

    /// The agent's (and the caller's) dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Hands the 1.0 data of the events one agent event stands for to `out`; `false` when the
    /// agent's event could not be read (nothing is handed on then).
    pub fn translate(&mut self, data: &[u8], out: Emit<'_>) -> bool {
        let mut events: Vec<Vec<u8>> = Vec::new();
        let understood = self.converter.event(data, &mut |event| events.push(event.to_vec()));
        if understood {
            events.iter().for_each(|event| out(event));
        }
        understood
    }
}

/// Why an agent's stream could not be relayed to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The connection broke (the agent died, or the network).
    Cut,
    /// An event larger than the stream's limit.
    TooLarge,
    /// An event that is not JSON.
    Malformed,
}

impl From<reqwest::Error> for Fault {
    fn from(error: reqwest::Error) -> Fault {
        tracing::debug!(%error, "agent stream broke off");
        Fault::Cut
    }
}

/// Response extension: the answer is the agent's own, already in the caller's dialect.
#[derive(Debug, Clone, Copy)]
pub struct PassedThrough;

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("json")
    }

    #[test]
    fn a_1_0_send_becomes_a_0_3_request_and_its_answer_comes_back_in_1_0() {
        let mut call = A2aCall::new(Binding::JsonRpc, Operation::SendMessage);
        call.rpc_id = Some(json!("r"));
        let body = br#"{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
        let request = v1_request(&call, body).expect("request");
        let out = agent_call(Dialect::V03, request, call.rpc_id.as_ref()).expect("0.3 call");
        let sent = json_of(&out.body);
        assert_eq!((&sent["method"], &sent["id"]), (&json!("message/send"), &json!("r")));
        assert_eq!(sent["params"]["message"]["parts"][0], json!({"kind": "text", "text": "hi"}));
        let answer = br#"{"jsonrpc":"2.0","id":"r","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}"#;
        let (status, v1) = unary_to_v1(Dialect::V03, &call, StatusCode::OK, answer);
        assert_eq!(status, StatusCode::OK);
        assert_eq!(json_of(&v1)["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        let error = br#"{"jsonrpc":"2.0","id":"r","error":{"code":-32001,"message":"Task not found","data":null}}"#;
        let rest = A2aCall { binding: Binding::Rest, ..call.clone() };
        let (status, v1) = unary_to_v1(Dialect::V03, &rest, StatusCode::OK, error);
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(json_of(&v1)["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    }

    #[test]
    fn early_answers_and_errors_come_back_in_1_0() {
        let mut call = A2aCall::new(Binding::Rest, Operation::GetTask);
        call.task_id = Some("4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b".into());
        let request = v1_request(&call, b"").expect("request");
        let out = agent_call(Dialect::Early, request, None).expect("early call");
        assert_eq!(
            (out.method, out.path.as_deref()),
            (Method::GET, Some("/tasks/4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b"))
        );
        let task = br#"{"id":"4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b","status":{"state":"working"},"artifacts":[]}"#;
        let (_, v1) = unary_to_v1(Dialect::Early, &call, StatusCode::OK, task);
        assert_eq!(json_of(&v1)["status"]["state"], "TASK_STATE_WORKING");
        let (status, v1) = unary_to_v1(Dialect::Early, &call, StatusCode::NOT_FOUND, br#"{"detail":"Task not found"}"#);
        assert_eq!((status, json_of(&v1)["error"]["status"].clone()), (StatusCode::NOT_FOUND, json!("NOT_FOUND")));
    }

    #[test]
    fn a_json_rpc_call_reaches_an_http_json_agent_and_back() {
        let mut call = A2aCall::new(Binding::JsonRpc, Operation::GetTask);
        call.rpc_id = Some(json!(9));
        let body = br#"{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"t/1","historyLength":2}}"#;
        let out = rebind_call(&call, v1_request(&call, body).expect("request")).expect("rest call");
        assert_eq!((out.method, out.path.as_deref()), (Method::GET, Some("/tasks/t%2F1?historyLength=2")));
        let (status, answer) =
            unary_rebound(&call, StatusCode::OK, br#"{"id":"t/1","status":{"state":"TASK_STATE_WORKING"}}"#);
        assert_eq!(
            (status, json_of(&answer)["result"]["id"].clone(), json_of(&answer)["id"].clone()),
            (StatusCode::OK, json!("t/1"), json!(9))
        );
        let error = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]}}"#;
        let (_, answer) = unary_rebound(&call, StatusCode::NOT_FOUND, error);
        assert_eq!(json_of(&answer)["error"]["code"], -32001);
        let rest = A2aCall { binding: Binding::Rest, ..call };
        let out = rebind_call(&rest, v1_request(&rest, b"").expect("request")).expect("rpc call");
        assert_eq!(json_of(&out.body)["method"], "GetTask");
        let (status, answer) = unary_rebound(
            &rest,
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"Task not found"}}"#,
        );
        assert_eq!((status, json_of(&answer)["error"]["status"].clone()), (StatusCode::NOT_FOUND, json!("NOT_FOUND")));
    }
}
