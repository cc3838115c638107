//! Answers a caller of another dialect: the stack inside the decode layer works on the 1.0 form of a
//! call (policies, routing, the relay's tap and the task directory all read 1.0), and this module
//! turns its 1.0 answer — unary result, every stream event, every error — into the caller's dialect
//! on the way out. Requests are translated on the way in by [`decode`](super::decode).
//!
//! Early callers get whole tasks under their own id: unary answers through `early::result_from_v1`,
//! streams through a [`SnapshotBuilder`] (a stream that ends before its task does gets a last,
//! failed task), errors as `{"detail"}` with the agent's HTTP status. The agent's id of a new task is
//! remembered in [`EarlyIds`] from the first answer that names it.

use std::collections::VecDeque;
use std::sync::Arc;

use a2a_core::{A2aError, Binding, Dialect, Operation};
use axum::body::Body;
use bytes::Bytes;
use futures::future::{BoxFuture, Either, Ready, ready};
use http::{HeaderValue, Response, header};
use http_body_util::BodyExt;
use serde_json::Value;

use super::caller_stream::{CallerStream, End, EventWriter};
use super::early_ids::{AgentTask, EarlyIds, EarlyScope};
use super::errors::Refusal;
use super::sse::frame;
use super::translate::early::{self, SnapshotBuilder};
use super::translate::{TranslateError, jsonrpc, v03};
use a2a_model::{self as model, ErrorObject, SendMessageResponse, StreamResponse};

/// What the answer of a translated call needs from its request.
#[derive(Clone)]
pub struct Answering {
    pub dialect: Dialect,
    /// The caller's binding (0.3 callers: JSON-RPC, or HTTP+JSON under `/v1`).
    pub binding: Binding,
    pub operation: Operation,
    pub rpc_id: Option<Value>,
    /// Early callers: the caller's task id, and whether the call starts a task under it.
    pub early_id: Option<String>,
    pub new_task: bool,
    pub early_ids: Option<Arc<dyn EarlyIds>>,
    /// The owner scope of an early caller's ids (learned from the answer, see [`EarlyScope`]).
    pub early_scope: Option<Arc<str>>,
}

impl Answering {
    fn id(&self) -> Value {
        self.rpc_id.clone().unwrap_or(Value::Null)
    }

    /// An error in the caller's dialect, as body bytes.
    fn error_body(&self, error: A2aError) -> Bytes {
        Refusal::new(error, self.dialect, Binding::JsonRpc, self.rpc_id.clone()).rendered().body
    }

    fn early_id(&self) -> &str {
        self.early_id.as_deref().unwrap_or_default()
    }

    /// Learns the agent's id of the task a new early task stands for.
    fn remember(&self, task_id: &str, context_id: &str) {
        if let (true, Some(ids), Some(scope)) = (self.new_task, &self.early_ids, &self.early_scope) {
            let context_id = (!context_id.is_empty()).then(|| context_id.to_owned());
            ids.insert(scope, self.early_id(), AgentTask { task_id: task_id.to_owned(), context_id });
        }
    }
}

/// Turns 1.0 stream events into the caller's events.
enum Converter {
    V03(Answering),
    V03Rest,
    Early(Answering, Box<SnapshotBuilder>),
}

impl Converter {
    /// The caller's event for one 1.0 event's `data` (framed), if any.
    fn event(&mut self, data: &[u8]) -> Option<Bytes> {
        match self {
            Converter::V03(answering) => Some(frame(&event_v03(answering, data))),
            Converter::V03Rest => Some(frame(&event_v03_rest(data))),
            Converter::Early(answering, builder) => {
                let event = match serde_json::from_slice::<StreamResponse>(data) {
                    Ok(event) => event,
                    // An error event (or garbage): the stream ends with the task failed.
                    Err(_) => {
                        let reason = early_error_text(data).unwrap_or_else(|| "the agent sent an invalid event".into());
                        return builder.fail(&reason).map(|view| frame(&to_json(&view)));
                    }
                };
                let view = builder.push(event)?;
                answering.remember(&view.task.id, &view.task.context_id);
                Some(frame(&to_json(&view)))
            }
        }
    }

    /// What to send when the 1.0 stream ends.
    fn end(&mut self) -> Option<Bytes> {
        match self {
            Converter::V03(_) | Converter::V03Rest => None,
            Converter::Early(_, builder) => {
                builder.fail("the agent's stream ended before the task did").map(|view| frame(&to_json(&view)))
            }
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// The message of a 1.0 HTTP+JSON error body (`{"error": {"message"}}`).
fn early_error_text(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value.pointer("/error/message").and_then(Value::as_str).map(str::to_owned)
}

/// The 1.0 answer `response` in the dialect of `answering`. 1.0 answers pass through untouched, at
/// once: only an answer to translate is a future of its own (boxed, so that the caller's future,
/// copied with every call, does not carry its size for the answers that need none).
pub fn answer(
    answering: Answering,
    response: Response<Body>,
) -> Either<Ready<Response<Body>>, BoxFuture<'static, Response<Body>>> {
    // 1.0 callers, and answers an agent of the caller's own dialect wrote, go as they are.
    if answering.dialect == Dialect::V1 || response.extensions().get::<super::agent_side::PassedThrough>().is_some() {
        return Either::Left(ready(response));
    }
    Either::Right(Box::pin(translate(answering, response)))
}

/// The 1.0 answer `response` translated into the dialect of `answering` (0.3 or early).
async fn translate(mut answering: Answering, response: Response<Body>) -> Response<Body> {
    answering.early_scope = response.extensions().get::<EarlyScope>().map(|scope| scope.0.clone());
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove("a2a-version");
    let is_stream = super::sse::is_event_stream(&parts.headers);
    if is_stream {
        let converter = match answering.dialect {
            Dialect::Early => {
                let builder = Box::new(SnapshotBuilder::new(answering.early_id()));
                Converter::Early(answering, builder)
            }
            _ if answering.binding == Binding::Rest => Converter::V03Rest,
            _ => Converter::V03(answering),
        };
        let events = CallerStream::new(body.into_data_stream(), converter);
        return Response::from_parts(parts, Body::from_stream(events));
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let error = A2aError::BackendUnavailable("the agent broke off its answer".into());
            return Refusal::new(error, answering.dialect, answering.binding, answering.rpc_id).into_response();
        }
    };
    let out = match answering.dialect {
        Dialect::Early => {
            let (status, out) = unary_early(&answering, parts.status, &bytes);
            parts.status = status;
            out
        }
        _ if answering.binding == Binding::Rest => {
            let (status, out) = unary_v03_rest(&answering, parts.status, &bytes);
            parts.status = status;
            out
        }
        _ => unary_v03(&answering, &bytes),
    };
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(out))
}

/// A 1.0 HTTP+JSON answer as the early answer: the whole task under the caller's id, or the error
/// as `{"detail"}` with the agent's status.
fn unary_early(answering: &Answering, status: http::StatusCode, body: &[u8]) -> (http::StatusCode, Bytes) {
    if !status.is_success() {
        let detail = early_error_text(body).unwrap_or_else(|| format!("the agent answered HTTP {status}"));
        return (status, Bytes::from(to_json(&early::EarlyError::new(detail))));
    }
    let translated = serde_json::from_slice::<&serde_json::value::RawValue>(body)
        .map_err(|e| TranslateError::Json(e.to_string()))
        .and_then(|raw| model::Response::parse(answering.operation, raw).map_err(TranslateError::from))
        .and_then(|response| {
            if let model::Response::Send(SendMessageResponse::Task(task)) = &response {
                answering.remember(&task.id, &task.context_id);
            }
            early::result_from_v1(response, answering.early_id())
        });
    match translated {
        Ok(task) => (status, Bytes::from(to_json(&task))),
        Err(error) => {
            let rendered = Refusal::rest(error.into_response_error(), Dialect::Early).rendered();
            (rendered.status, rendered.body)
        }
    }
}

/// A 1.0 JSON-RPC answer as the 0.3 answer with the same id.
fn unary_v03(answering: &Answering, body: &[u8]) -> Bytes {
    let id = answering.id();
    let translated = jsonrpc::Envelope::parse(body).and_then(|envelope| {
        if let Some(error) = envelope.error {
            let error: ErrorObject =
                serde_json::from_str(error.get()).map_err(|e| TranslateError::Json(e.to_string()))?;
            return Ok(jsonrpc::failure(&id, &v03::error_from_v1(error)));
        }
        match envelope.result {
            // A push-config delete answers `null`.
            None => Ok(jsonrpc::success(&id, &Value::Null)),
            Some(result) => {
                let response = model::Response::parse(answering.operation, result)?;
                Ok(jsonrpc::success(&id, &v03::result_from_v1(response)?))
            }
        }
    });
    match translated {
        Ok(bytes) => Bytes::from(bytes),
        Err(error) => answering.error_body(error.into_response_error()),
    }
}

/// A 1.0 HTTP+JSON answer as the 0.3 HTTP+JSON answer: the result in 0.3 ProtoJSON, or the error
/// as the 0.3 binding's status and `{"message"}`.
fn unary_v03_rest(answering: &Answering, status: http::StatusCode, body: &[u8]) -> (http::StatusCode, Bytes) {
    if !status.is_success() {
        let (status, error) = rest_error_v03(status, body);
        return (status, Bytes::from(to_json(&error)));
    }
    let translated = serde_json::from_slice::<&serde_json::value::RawValue>(body)
        .map_err(|e| TranslateError::Json(e.to_string()))
        .and_then(|raw| model::Response::parse(answering.operation, raw).map_err(TranslateError::from))
        .and_then(v03::result_from_v1)
        .and_then(|result| serde_json::to_value(result).map_err(|e| TranslateError::Json(e.to_string())));
    match translated {
        Ok(result) => (status, Bytes::from(to_json(&v03::rest::result_to_rest(answering.operation, result)))),
        Err(error) => {
            let rendered = Refusal::rest(error.into_response_error(), Dialect::V03).rendered();
            (rendered.status, rendered.body)
        }
    }
}

/// A 1.0 HTTP+JSON error (google.rpc.Status with ErrorInfo) as the 0.3 binding's status and body.
fn rest_error_v03(status: http::StatusCode, body: &[u8]) -> (http::StatusCode, Value) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error.and_then(|e| e["message"].as_str()).unwrap_or("the agent failed");
    let reason = error.and_then(|e| e["details"].as_array()?.iter().find_map(|d| d["reason"].as_str()));
    match reason.and_then(model::ErrorKind::from_reason).filter(|k| k.known_to_v03()) {
        Some(kind) => (
            http::StatusCode::from_u16(v03::rest::status_of(kind.code())).unwrap_or(status),
            v03::rest::error_body(kind.code(), message),
        ),
        None => (status, serde_json::json!({ "message": message })),
    }
}

/// One 1.0 HTTP+JSON stream event (a bare StreamResponse, or an error) as the 0.3 HTTP+JSON event.
fn event_v03_rest(data: &[u8]) -> Bytes {
    let translated =
        serde_json::from_slice::<StreamResponse>(data).map_err(|e| TranslateError::Json(e.to_string())).and_then(
            |event| serde_json::to_value(v03::event_from_v1(event)).map_err(|e| TranslateError::Json(e.to_string())),
        );
    match translated {
        Ok(event) => Bytes::from(to_json(&v03::rest::event_to_rest(event))),
        Err(_) => {
            let (status, error) = rest_error_v03(http::StatusCode::INTERNAL_SERVER_ERROR, data);
            let code = v03::rest::code_of(status.as_u16(), Operation::SendStreamingMessage);
            Bytes::from(to_json(&serde_json::json!({"error": {"code": code, "message": error["message"]}})))
        }
    }
}

/// One 1.0 JSON-RPC stream event (`data`) as the 0.3 event.
fn event_v03(answering: &Answering, data: &[u8]) -> Bytes {
    let id = answering.id();
    let translated = jsonrpc::Envelope::parse(data).and_then(|envelope| {
        if let Some(error) = envelope.error {
            let error: ErrorObject =
                serde_json::from_str(error.get()).map_err(|e| TranslateError::Json(e.to_string()))?;
            return Ok(jsonrpc::failure(&id, &v03::error_from_v1(error)));
        }
        let result = envelope.result.ok_or_else(|| TranslateError::Json("a stream event without a result".into()))?;
        let event: StreamResponse =
            serde_json::from_str(result.get()).map_err(|e| TranslateError::Json(e.to_string()))?;
        Ok(jsonrpc::success(&id, &v03::event_from_v1(event)))
    });
    match translated {
        Ok(bytes) => Bytes::from(bytes),
        Err(error) => answering.error_body(error.into_response_error()),
    }
}

/// One 1.0 JSON-RPC stream event's data as the framed 0.3 event with the same id: for the events the
/// relay writes into a 0.3 caller's pass-through stream.
pub fn v03_event(rpc_id: Option<&Value>, data: &[u8]) -> Bytes {
    let answering = Answering {
        dialect: Dialect::V03,
        binding: Binding::JsonRpc,
        operation: Operation::SendStreamingMessage,
        rpc_id: rpc_id.cloned(),
        early_id: None,
        new_task: false,
        early_ids: None,
        early_scope: None,
    };
    frame(&event_v03(&answering, data))
}

/// A 0.3 or early caller's events: each 1.0 event in the caller's dialect; comments (keep-alives)
/// between events pass as they are.
impl EventWriter for Converter {
    type Frame = Bytes;

    fn event(&mut self, data: &[u8], out: &mut VecDeque<Bytes>) -> bool {
        out.extend(Converter::event(self, data));
        true
    }

    fn comment(&mut self, chunk: Bytes, out: &mut VecDeque<Bytes>) {
        out.push_back(chunk);
    }

    fn end(&mut self, how: End, out: &mut VecDeque<Bytes>) -> Result<(), axum::Error> {
        match how {
            End::BrokeOff(error) => Err(error),
            End::Ended | End::Expired => {
                out.extend(Converter::end(self));
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
