//! Answers a caller of another dialect: the stack inside the decode layer works on the 1.0 form of a
//! call (policies, routing, the relay's tap and the task directory all read 1.0), and this module
//! turns its 1.0 answer — unary result, every stream event, every error — into the caller's dialect
//! on the way out. Requests are translated on the way in by [`decode`](super::decode).

use std::pin::Pin;
use std::task::{Context, Poll};

use a2a_policies::{A2aError, Binding, Dialect, Operation};
use axum::body::Body;
use bytes::Bytes;
use futures::Stream;
use http::{HeaderValue, Response, header};
use http_body_util::BodyExt;
use serde_json::Value;

use super::errors::render_in;
use super::sse::SseParser;
use super::translate::model::{self, ErrorObject, StreamResponse};
use super::translate::{TranslateError, jsonrpc, v03};

/// What the answer of a translated call needs from its request.
#[derive(Debug, Clone)]
pub struct Answering {
    pub dialect: Dialect,
    pub operation: Operation,
    pub rpc_id: Option<Value>,
}

impl Answering {
    fn id(&self) -> Value {
        self.rpc_id.clone().unwrap_or(Value::Null)
    }

    /// An error in the caller's dialect, as body bytes.
    fn error_body(&self, error: &A2aError) -> Bytes {
        render_in(error, self.dialect, Binding::JsonRpc, self.rpc_id.as_ref()).body
    }
}

/// The 1.0 answer `response` in the dialect of `answering`. 1.0 answers pass through untouched.
pub async fn answer(answering: Answering, response: Response<Body>) -> Response<Body> {
    // Only 0.3 callers are translated so far.
    if answering.dialect != Dialect::V03 {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove("a2a-version");
    let is_stream = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    if is_stream {
        let events = EventMap { inner: body.into_data_stream(), parser: SseParser::new(), answering, ended: false };
        return Response::from_parts(parts, Body::from_stream(events));
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let error = A2aError::BackendUnavailable("the agent broke off its answer".into());
            return render_in(&error, answering.dialect, Binding::JsonRpc, answering.rpc_id.as_ref()).into_response();
        }
    };
    let out = unary_v03(&answering, &bytes);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(out))
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
        Err(error) => answering.error_body(&error.into_response_error()),
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
        Err(error) => answering.error_body(&error.into_response_error()),
    }
}

/// Re-frames a 1.0 SSE stream event by event in the caller's dialect. Comments (keep-alives) between
/// events pass as they are.
struct EventMap<S> {
    inner: S,
    parser: SseParser,
    answering: Answering,
    ended: bool,
}

impl<S> Stream for EventMap<S>
where
    S: Stream<Item = Result<Bytes, axum::Error>> + Unpin,
{
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if this.parser.at_boundary() && chunk.first() == Some(&b':') {
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                    let mut out = Vec::new();
                    let answering = &this.answering;
                    this.parser.feed(&chunk, &mut |data| {
                        out.extend_from_slice(b"data: ");
                        out.extend_from_slice(&event_v03(answering, data));
                        out.extend_from_slice(b"\r\n\r\n");
                    });
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde_json::json;

    fn v03(operation: Operation) -> Answering {
        Answering { dialect: Dialect::V03, operation, rpc_id: Some(json!("r1")) }
    }

    fn json_of(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("json")
    }

    #[test]
    fn unary_results_and_errors_become_0_3() {
        let task = json!({"jsonrpc": "2.0", "id": "r1", "result": {"task": {"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}});
        let out = json_of(&unary_v03(&v03(Operation::SendMessage), &serde_json::to_vec(&task).unwrap()));
        assert_eq!(out["result"]["kind"], "task");
        assert_eq!(out["result"]["status"]["state"], "completed");
        assert_eq!(out["id"], "r1");
        let error = json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32001, "message": "Task not found",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]}});
        let out = json_of(&unary_v03(&v03(Operation::GetTask), &serde_json::to_vec(&error).unwrap()));
        assert_eq!(out["error"], json!({"code": -32001, "message": "Task not found", "data": null}));
        let out = json_of(&unary_v03(&v03(Operation::GetTask), b"<html>"));
        assert_eq!(out["error"]["code"], -32006);
        assert_eq!(out["error"]["data"], Value::Null);
    }

    #[tokio::test]
    async fn stream_events_become_0_3_even_when_split_across_chunks() {
        let update = json!({"jsonrpc": "2.0", "id": "r1", "result": {"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}});
        let event = format!("data: {update}\r\n\r\n");
        let (a, b) = event.as_bytes().split_at(20);
        let chunks: Vec<Result<Bytes, axum::Error>> =
            vec![Ok(Bytes::from_static(b": ka\r\n\r\n")), Ok(Bytes::copy_from_slice(a)), Ok(Bytes::copy_from_slice(b))];
        let map = EventMap {
            inner: futures::stream::iter(chunks),
            parser: SseParser::new(),
            answering: v03(Operation::SendStreamingMessage),
            ended: false,
        };
        let out: Vec<Bytes> = map.map(|c| c.expect("chunk")).collect().await;
        assert_eq!(out.len(), 2);
        assert_eq!(&out[0][..], b": ka\r\n\r\n");
        let text = std::str::from_utf8(&out[1]).unwrap();
        let data = text.strip_prefix("data: ").and_then(|t| t.strip_suffix("\r\n\r\n")).expect("framed");
        let v = json_of(data.as_bytes());
        assert_eq!(v["result"]["kind"], "status-update");
        assert_eq!(v["result"]["final"], true);
        assert_eq!(v["result"]["status"]["state"], "completed");
    }
}
