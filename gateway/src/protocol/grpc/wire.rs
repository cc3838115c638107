//! gRPC on the wire: length-prefixed messages (a compression flag, a big-endian 4-byte length, the
//! message) and the status a call ends with (`grpc-status`, `grpc-message`, and the
//! `google.rpc.Status` with its details in `grpc-status-details-bin`).
//!
//! The gateway's errors reach gRPC callers through their HTTP+JSON rendering, which *is* a
//! `google.rpc.Status` in ProtoJSON ([`Status::from_rest_error`]); an agent's gRPC status is read
//! back into that form ([`Status::to_rest_error`]) and screened like any HTTP+JSON error.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

/// A message in its frame (never compressed).
pub fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 5);
    out.extend_from_slice(&[0]);
    out.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(message);
    out.freeze()
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FrameError {
    #[error("compressed messages are not supported; send them uncompressed (grpc-encoding identity)")]
    Compressed,
    #[error("a message of {0} bytes is larger than allowed")]
    TooLarge(usize),
    #[error("the stream ended inside a message")]
    Truncated,
}

/// Splits messages off a byte stream that arrives in arbitrary chunks.
pub struct Deframer {
    buffer: BytesMut,
    max: usize,
}

impl Deframer {
    /// A deframer refusing messages larger than `max` bytes before it buffers them.
    pub fn new(max: usize) -> Deframer {
        Deframer { buffer: BytesMut::new(), max }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The next whole message, if one has arrived.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.buffer.len() < 5 {
            return Ok(None);
        }
        if self.buffer[0] != 0 {
            return Err(FrameError::Compressed);
        }
        let length = u32::from_be_bytes([self.buffer[1], self.buffer[2], self.buffer[3], self.buffer[4]]) as usize;
        if length > self.max {
            return Err(FrameError::TooLarge(length));
        }
        if self.buffer.len() < 5 + length {
            return Ok(None);
        }
        self.buffer.advance(5);
        Ok(Some(self.buffer.split_to(length).freeze()))
    }

    /// At the end of the stream: nothing may be left over.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.buffer.is_empty() { Ok(()) } else { Err(FrameError::Truncated) }
    }
}

/// The status codes of gRPC, by their `google.rpc.Code` names.
const CODES: [(&str, i32); 17] = [
    ("OK", 0),
    ("CANCELLED", 1),
    ("UNKNOWN", 2),
    ("INVALID_ARGUMENT", 3),
    ("DEADLINE_EXCEEDED", 4),
    ("NOT_FOUND", 5),
    ("ALREADY_EXISTS", 6),
    ("PERMISSION_DENIED", 7),
    ("RESOURCE_EXHAUSTED", 8),
    ("FAILED_PRECONDITION", 9),
    ("ABORTED", 10),
    ("OUT_OF_RANGE", 11),
    ("UNIMPLEMENTED", 12),
    ("INTERNAL", 13),
    ("UNAVAILABLE", 14),
    ("DATA_LOSS", 15),
    ("UNAUTHENTICATED", 16),
];

pub const INVALID_ARGUMENT: i32 = 3;
pub const UNIMPLEMENTED: i32 = 12;
pub const INTERNAL: i32 = 13;

pub fn code_of(name: &str) -> Option<i32> {
    CODES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
}

pub fn name_of(code: i32) -> &'static str {
    CODES.iter().find(|(_, c)| *c == code).map_or("UNKNOWN", |&(n, _)| n)
}

/// The gRPC code the specification gives an A2A error (its table of error code mappings, §5.4), by
/// the ErrorInfo reason; HTTP+JSON shares some statuses between errors that gRPC tells apart. The
/// reference SDKs (a2a-sdk 1.3.0, @a2a-js/sdk) answer `FAILED_PRECONDITION` for the three the table
/// makes `UNIMPLEMENTED`; their clients read the reason, not the code, so the table is followed (as
/// the official conformance kit checks) and an agent's code is put right on the way through.
fn spec_code(reason: &str) -> Option<i32> {
    Some(match reason {
        "TASK_NOT_FOUND" => 5,
        // An agent without the method: what gRPC says of a method a server does not implement.
        "METHOD_NOT_FOUND" => UNIMPLEMENTED,
        "PUSH_NOTIFICATION_NOT_SUPPORTED" | "UNSUPPORTED_OPERATION" | "VERSION_NOT_SUPPORTED" => UNIMPLEMENTED,
        "TASK_NOT_CANCELABLE" | "EXTENDED_AGENT_CARD_NOT_CONFIGURED" | "EXTENSION_SUPPORT_REQUIRED" => 9,
        "CONTENT_TYPE_NOT_SUPPORTED" => INVALID_ARGUMENT,
        "INVALID_AGENT_RESPONSE" => INTERNAL,
        _ => return None,
    })
}

/// The google.rpc.Status name of an HTTP status.
pub use crate::protocol::errors::status_name as name_of_http;

/// The HTTP status the HTTP+JSON binding gives a gRPC code (google.api's mapping).
fn http_of(code: i32) -> StatusCode {
    match name_of(code) {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => StatusCode::BAD_REQUEST,
        "NOT_FOUND" => StatusCode::NOT_FOUND,
        "ALREADY_EXISTS" | "ABORTED" => StatusCode::CONFLICT,
        "PERMISSION_DENIED" => StatusCode::FORBIDDEN,
        "UNAUTHENTICATED" => StatusCode::UNAUTHORIZED,
        "RESOURCE_EXHAUSTED" => StatusCode::TOO_MANY_REQUESTS,
        "UNIMPLEMENTED" => StatusCode::NOT_IMPLEMENTED,
        "UNAVAILABLE" => StatusCode::SERVICE_UNAVAILABLE,
        "DEADLINE_EXCEEDED" => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// How a gRPC call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub code: i32,
    pub message: String,
    /// The encoded `google.rpc.Status` (code, message, details), when there is one.
    pub details: Option<Vec<u8>>,
}

impl Status {
    pub fn ok() -> Status {
        Status { code: 0, message: String::new(), details: None }
    }

    /// A status without details (for failures of the gRPC framing itself).
    pub fn new(code: i32, message: impl Into<String>) -> Status {
        Status { code, message: message.into(), details: None }
    }

    /// The status of an HTTP+JSON error body (`{"error": {code, status, message, details}}`): its
    /// `status` name is the gRPC code, and its details go on as they are.
    pub fn from_rest_error(body: &[u8]) -> Option<Status> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let error = value.get("error")?;
        let mut code = error.get("status").and_then(Value::as_str).and_then(code_of).unwrap_or(INTERNAL);
        let reasons = error.pointer("/details").and_then(Value::as_array).into_iter().flatten();
        if let Some(spec) = reasons.filter_map(|d| d.get("reason")?.as_str()).find_map(spec_code) {
            code = spec;
        }
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut details = error.get("details").cloned().unwrap_or(json!([]));
        // ErrorInfo metadata is a string map in protobuf; the gateway's JSON may hold other values.
        for detail in details.as_array_mut().into_iter().flatten() {
            if let Some(Value::Object(metadata)) = detail.get_mut("metadata") {
                for value in metadata.values_mut() {
                    if !value.is_string() {
                        *value = Value::String(value.to_string());
                    }
                }
            }
        }
        let status = json!({"code": code, "message": message, "details": details});
        let details = super::message("google.rpc.Status")
            .and_then(|d| super::from_json(&d, &serde_json::to_vec(&status).ok()?).ok());
        Some(Status { code, message, details })
    }

    /// This status as an HTTP+JSON error: the HTTP status and the `{"error": …}` body.
    pub fn to_rest_error(&self) -> (StatusCode, Vec<u8>) {
        let details = self
            .details
            .as_deref()
            .and_then(|bytes| super::to_json(&super::message("google.rpc.Status")?, bytes).ok())
            .and_then(|json| serde_json::from_slice::<Value>(&json).ok())
            .and_then(|mut status| status.get_mut("details").map(Value::take))
            .unwrap_or(json!([]));
        let http = http_of(self.code);
        let message = Value::String(self.message.clone());
        (http, crate::protocol::errors::rest_error_body(http.as_u16(), name_of(self.code), message, details))
    }

    /// The status as trailers (or as the headers of a trailers-only answer).
    pub fn to_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from(self.code));
        if !self.message.is_empty()
            && let Ok(value) = HeaderValue::from_str(&percent_encode(&self.message))
        {
            headers.insert("grpc-message", value);
        }
        if let Some(details) = &self.details
            && let Ok(value) = HeaderValue::from_str(&STANDARD_NO_PAD.encode(details))
        {
            headers.insert("grpc-status-details-bin", value);
        }
        headers
    }

    /// The status in trailers or trailers-only headers, if they carry one.
    pub fn from_headers(headers: &HeaderMap) -> Option<Status> {
        let code = headers.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
        let message = headers.get("grpc-message").and_then(|v| v.to_str().ok()).map(percent_decode).unwrap_or_default();
        let details = headers.get("grpc-status-details-bin").and_then(|v| {
            let text = v.to_str().ok()?.trim_end_matches('=');
            STANDARD_NO_PAD.decode(text).or_else(|_| STANDARD.decode(v.as_bytes())).ok()
        });
        Some(Status { code, message, details })
    }
}

/// `grpc-message` is percent-encoded UTF-8: everything outside printable ASCII, and `%` itself.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'%' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%').then(|| text.get(i + 1..i + 3)).flatten();
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_split_off_however_they_arrive() {
        let mut wire = frame(b"one").to_vec();
        wire.extend_from_slice(&frame(b""));
        wire.extend_from_slice(&frame(b"three"));
        let mut deframer = Deframer::new(16);
        let mut got = Vec::new();
        for byte in wire {
            deframer.push(&[byte]);
            while let Some(message) = deframer.next_message().unwrap() {
                got.push(message);
            }
        }
        assert_eq!(got, vec![Bytes::from("one"), Bytes::new(), Bytes::from("three")]);
        assert_eq!(deframer.finish(), Ok(()));
        let mut big = Deframer::new(2);
        big.push(&frame(b"abc"));
        assert_eq!(big.next_message(), Err(FrameError::TooLarge(3)));
        let mut zipped = Deframer::new(16);
        zipped.push(&[1, 0, 0, 0, 1, 9]);
        assert_eq!(zipped.next_message(), Err(FrameError::Compressed));
        let mut cut = Deframer::new(16);
        cut.push(&[0, 0, 0, 0, 4, 1]);
        assert_eq!(cut.next_message(), Ok(None));
        assert_eq!(cut.finish(), Err(FrameError::Truncated));
    }

    #[test]
    fn a_rest_error_becomes_a_grpc_status_with_its_error_info_and_back() {
        let rest = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found: 100%","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"n":3}}]}}"#;
        let status = Status::from_rest_error(rest).unwrap();
        assert_eq!((status.code, status.message.as_str()), (5, "Task not found: 100%"));
        let headers = status.to_headers();
        assert_eq!(headers["grpc-status"], "5");
        assert_eq!(headers["grpc-message"], "Task not found: 100%25");
        let read = Status::from_headers(&headers).unwrap();
        assert_eq!(read, status);
        let (http, body) = read.to_rest_error();
        assert_eq!(http, StatusCode::NOT_FOUND);
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["metadata"]["n"], "3");
        assert_eq!(
            crate::protocol::agent_errors::screen(a2a_core::Binding::Rest, http, &serde_json::to_vec(&body).unwrap()),
            crate::protocol::agent_errors::Verdict::Refused { code: -32001, message: "Task not found: 100%".into() }
        );
    }

    /// A gRPC agent's status without details is screened by its HTTP status like any bare HTTP+JSON
    /// error: UNIMPLEMENTED an unsupported operation, NOT_FOUND a task not found, INTERNAL a failure.
    #[test]
    fn a_bare_grpc_status_reads_by_its_code() {
        use crate::protocol::agent_errors::{Verdict, screen};
        for (code, expected) in [
            (UNIMPLEMENTED, Verdict::Refused { code: -32004, message: "nope".into() }),
            (5, Verdict::Refused { code: -32001, message: "nope".into() }),
            (INTERNAL, Verdict::Failed),
        ] {
            let (http, body) = Status::new(code, "nope").to_rest_error();
            assert_eq!(screen(a2a_core::Binding::Rest, http, &body), expected, "{code}");
        }
    }

    #[test]
    fn messages_outside_ascii_are_percent_encoded() {
        assert_eq!(percent_encode("é\n"), "%C3%A9%0A");
        assert_eq!(percent_decode("%C3%A9%0A%zz"), "é\n%zz");
    }
}
