//! A2A 1.0 on the wire, as far as the gateway needs it: decoding requests into an [`A2aCall`],
//! rendering errors in the caller's binding, framing SSE, and reading task facts out of answers.
//!
//! [`A2aCall`]: a2a_core::A2aCall

pub mod agent_errors;
pub mod agent_side;
pub mod bridge;
pub mod caller_stream;
pub mod decode;
pub mod early_ids;
pub mod errors;
pub mod grpc;
pub mod json_limits;
pub mod media;
pub mod observe;
pub mod sse;
pub use a2a_model::strict;
pub mod synthetic;
pub mod translate;

#[cfg(test)]
mod cost_tests;

/// The protocol version this gateway speaks to callers and backends.
pub const PROTOCOL_VERSION: &str = "1.0";

/// `A2A-Version` and `X-Request-Id` as header names, made once: a lookup by `&str` parses and
/// lowercases the name on every call.
pub const VERSION_HEADER: http::HeaderName = http::HeaderName::from_static("a2a-version");
pub const REQUEST_ID_HEADER: http::HeaderName = http::HeaderName::from_static("x-request-id");
/// Media type of HTTP+JSON success bodies.
pub const A2A_JSON: &str = "application/a2a+json";
