//! Callers speaking gRPC to the gateway, on the public listener (HTTP/2, `content-type:
//! application/grpc`). The decode layer reads the one request message, turns it into ProtoJSON and
//! decodes it like JSON ([`decode_grpc`](crate::protocol::decode::decode_grpc)); the call then goes
//! through the stack as a 1.0 JSON-RPC call, and its answer — a result, an SSE stream of
//! StreamResponse events, or an error — is written back here as gRPC: one message per event, relayed
//! as it arrives, and the status in the trailers. Errors are `google.rpc.Status` with the A2A
//! ErrorInfo (`errors::render_grpc`), in a trailers-only answer when nothing was sent before.

use std::collections::VecDeque;
use std::convert::Infallible;

use a2a_core::A2aError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{self, Deframer, Status};
use super::{Method, SERVICE};
use crate::protocol::caller_stream::{CallerStream, End, EventWriter};
use crate::protocol::errors::render_grpc;
use crate::protocol::translate::jsonrpc::Envelope;
use a2a_model::ErrorKind;

/// Whether a message is gRPC, by its content type: `application/grpc`, `application/grpc+proto`,
/// with parameters or not (gRPC-Web, `application/grpc-web`, is not served).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let value = value.trim().to_ascii_lowercase();
    value.strip_prefix(super::CONTENT_TYPE).is_some_and(|rest| rest.is_empty() || rest.starts_with(['+', ';']))
}

/// The method a request path names: `/lf.a2a.v1.A2AService/{Method}`; anything else is a method
/// this server does not implement.
pub fn method_of(path: &str) -> Result<Method, Status> {
    let unknown = || Status::new(wire::UNIMPLEMENTED, format!("unknown method {}", clip(path)));
    let name = path.strip_prefix('/').and_then(|p| p.strip_prefix(SERVICE)).and_then(|p| p.strip_prefix('/'));
    name.and_then(Method::named).ok_or_else(unknown)
}

/// The request message of a unary-request call, as ProtoJSON.
pub fn request_json(method: &Method, body: &[u8]) -> Result<Vec<u8>, Status> {
    let invalid = |why: String| Status::new(wire::INVALID_ARGUMENT, why);
    let mut deframer = Deframer::new(body.len());
    deframer.push(body);
    let message = match deframer.next_message() {
        Ok(Some(message)) => message,
        Ok(None) => return Err(invalid("the request carries no message".into())),
        Err(wire::FrameError::Compressed) => {
            return Err(Status::new(wire::UNIMPLEMENTED, wire::FrameError::Compressed.to_string()));
        }
        Err(error) => return Err(invalid(error.to_string())),
    };
    if deframer.next_message().map_or(true, |m| m.is_some()) || deframer.finish().is_err() {
        return Err(invalid("a unary request carries exactly one message".into()));
    }
    super::to_json(&method.input, &message).map_err(|e| invalid(format!("the request is {e}")))
}

/// A trailers-only answer: the call ends with `status` before any message.
pub fn status_response(status: &Status) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(super::CONTENT_TYPE));
    headers.extend(status.to_headers());
    response
}

/// The gateway's refusal of a call, as gRPC.
pub fn refusal(error: &A2aError) -> Response<Body> {
    status_response(&render_grpc(error))
}

/// The stack's 1.0 JSON-RPC answer to a call of `method`, as gRPC; a stream ends with
/// `DEADLINE_EXCEEDED` when the caller's `deadline` passes.
pub async fn answer(
    method: &Method,
    response: Response<Body>,
    deadline: Option<tokio::time::Instant>,
) -> Response<Body> {
    let (parts, body) = response.into_parts();
    let is_stream = crate::protocol::sse::is_event_stream(&parts.headers);
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(super::CONTENT_TYPE));
    for name in ["a2a-version", "a2a-extensions", "x-request-id"] {
        if let Some(value) = parts.headers.get(name) {
            headers.insert(name, value.clone());
        }
    }
    if is_stream && parts.status.is_success() {
        let events =
            CallerStream::new(body.into_data_stream(), Messages { output: method.output.clone() }).until(deadline);
        let mut response = Response::new(Body::new(StreamBody::new(events)));
        *response.headers_mut() = headers;
        return response;
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return refusal(&A2aError::BackendUnavailable("the answer broke off".into())),
    };
    let outcome = if parts.status.is_success() {
        message_of(&method.output, &bytes)
    } else {
        // Not the stack's JSON-RPC form (a plain HTTP refusal): its status says what it is.
        Err(Status::from_rest_error(&bytes).unwrap_or_else(|| {
            let name = wire::name_of_http(parts.status.as_u16());
            Status::new(wire::code_of(name).unwrap_or(wire::INTERNAL), "the request was refused")
        }))
    };
    let (body, status) = match outcome {
        Ok(message) => (vec![Frame::data(wire::frame(&message))], Status::ok()),
        Err(status) => (Vec::new(), status),
    };
    let frames = body.into_iter().chain([Frame::trailers(status.to_headers())]).map(Ok::<_, Infallible>);
    let mut response = Response::new(Body::new(StreamBody::new(futures::stream::iter(frames))));
    *response.headers_mut() = headers;
    response
}

/// One JSON-RPC envelope (a unary answer or a stream event's data) as the protobuf message of
/// `output`, or the status its error stands for.
fn message_of(output: &prost_reflect::MessageDescriptor, envelope: &[u8]) -> Result<Vec<u8>, Status> {
    let invalid = || render_grpc(&A2aError::InvalidAgentResponse("the answer does not fit the gRPC message".into()));
    let envelope = Envelope::parse(envelope).map_err(|_| invalid())?;
    match (envelope.error, envelope.result) {
        (Some(error), _) => Err(rpc_error_status(error)),
        (None, Some(result)) => super::from_json(output, result.get().as_bytes()).map_err(|error| {
            tracing::warn!(%error, "an answer did not convert to gRPC");
            invalid()
        }),
        (None, None) => Ok(Vec::new()),
    }
}

/// A JSON-RPC error object (`{code, message, data: [ErrorInfo…]}`) as a gRPC status.
fn rpc_error_status(error: &RawValue) -> Status {
    let error: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let http = ErrorKind::from_code(code).http_status();
    let rest = crate::protocol::errors::rest_error_body(
        http,
        wire::name_of_http(http),
        error.get("message").cloned().unwrap_or(Value::Null),
        error.get("data").filter(|d| d.is_array()).cloned().unwrap_or(Value::Array(Vec::new())),
    );
    Status::from_rest_error(&rest).unwrap_or_else(|| Status::new(wire::INTERNAL, "internal error"))
}

/// A gRPC caller's stream: each JSON-RPC event of the stack as a gRPC message, sent as soon as its
/// event is complete; the stream's end (or an error event) becomes the trailers.
struct Messages {
    output: prost_reflect::MessageDescriptor,
}

impl EventWriter for Messages {
    type Frame = Frame<Bytes>;

    fn event(&mut self, data: &[u8], out: &mut VecDeque<Frame<Bytes>>) -> bool {
        match message_of(&self.output, data) {
            Ok(message) => {
                out.push_back(Frame::data(wire::frame(&message)));
                true
            }
            Err(status) => {
                out.push_back(Frame::trailers(status.to_headers()));
                false
            }
        }
    }

    fn end(&mut self, how: End, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), axum::Error> {
        let status = match how {
            End::Ended => Status::ok(),
            End::BrokeOff(_) => render_grpc(&A2aError::BackendUnavailable("the stream broke off".into())),
            End::Expired => super::deadline::exceeded(),
        };
        out.push_back(Frame::trailers(status.to_headers()));
        Ok(())
    }
}

fn clip(text: &str) -> &str {
    match text.char_indices().nth(96) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::Operation;

    #[test]
    fn grpc_is_told_by_its_content_type() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            is_grpc(&headers)
        };
        assert!(with("application/grpc") && with("application/grpc+proto") && with("Application/GRPC; charset=x"));
        assert!(!with("application/grpc-web") && !with("application/json") && !is_grpc(&HeaderMap::new()));
    }

    #[test]
    fn paths_name_methods_of_the_service_only() {
        assert_eq!(method_of("/lf.a2a.v1.A2AService/GetTask").unwrap().operation, Operation::GetTask);
        for path in ["/lf.a2a.v1.A2AService/Nope", "/a2a.v1.A2AService/GetTask", "/GetTask", "/"] {
            assert_eq!(method_of(path).unwrap_err().code, wire::UNIMPLEMENTED, "{path}");
        }
    }

    #[test]
    fn request_bodies_hold_exactly_one_uncompressed_message() {
        let get = Method::of(Operation::GetTask);
        let message = super::super::from_json(&get.input, br#"{"id":"t1","historyLength":2}"#).unwrap();
        let json = request_json(&get, &wire::frame(&message)).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), serde_json::json!({"id":"t1","historyLength":2}));
        let mut two = wire::frame(&message).to_vec();
        two.extend_from_slice(&wire::frame(&message));
        assert_eq!(request_json(&get, &two).unwrap_err().code, wire::INVALID_ARGUMENT);
        assert_eq!(request_json(&get, b"").unwrap_err().code, wire::INVALID_ARGUMENT);
        assert_eq!(request_json(&get, &[0, 0, 0, 0, 9, 1]).unwrap_err().code, wire::INVALID_ARGUMENT);
        assert_eq!(request_json(&get, &[1, 0, 0, 0, 1, 1]).unwrap_err().code, wire::UNIMPLEMENTED);
        assert_eq!(request_json(&get, &wire::frame(&[0xff, 0xff])).unwrap_err().code, wire::INVALID_ARGUMENT);
    }

    #[test]
    fn refusals_carry_the_spec_code_and_the_a2a_error_info() {
        let status = render_grpc(&A2aError::TaskNotFound);
        assert_eq!(status.code, 5);
        let (_, body) = status.to_rest_error();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["domain"], "a2a-protocol.org");
        // The specification's table (§5.4), where the reference SDKs say FAILED_PRECONDITION.
        assert_eq!(render_grpc(&A2aError::PushNotificationNotSupported).code, wire::UNIMPLEMENTED);
        assert_eq!(render_grpc(&A2aError::VersionNotSupported("2.0".into())).code, wire::UNIMPLEMENTED);
        assert_eq!(render_grpc(&A2aError::UnsupportedOperation("x".into())).code, wire::UNIMPLEMENTED);
        assert_eq!(render_grpc(&A2aError::ExtendedCardNotConfigured).code, 9);
        assert_eq!(render_grpc(&A2aError::invalid_params("x")).code, 3);
        let rpc = RawValue::from_string(
            r#"{"code":-32002,"message":"no","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}"#.into(),
        )
        .unwrap();
        assert_eq!(rpc_error_status(&rpc).code, 9);
    }

    #[tokio::test]
    async fn streams_become_one_message_per_event_and_an_error_event_ends_them() {
        let method = Method::of(Operation::SendStreamingMessage);
        let events = concat!(
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\"}}}}\r\n\r\n",
            ": ping\r\n\r\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"error\":{\"code\":-32001,\"message\":\"gone\"}}\r\n\r\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"task\":{\"id\":\"late\"}}}\r\n\r\n",
        );
        let mut upstream = Response::new(Body::from(events));
        upstream.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        let mut body = answer(&method, upstream, None).await.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        let json = super::super::to_json(&method.output, &first[5..]).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap()["task"]["id"], "t");
        let trailers = body.frame().await.unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "5");
        assert!(body.frame().await.is_none());
    }
}
