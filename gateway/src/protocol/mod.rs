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
pub mod observe;
pub mod sse;
pub use a2a_model::strict;
pub mod synthetic;
pub mod translate;

#[cfg(test)]
mod cost_tests;

/// The protocol version this gateway speaks to callers and backends.
pub const PROTOCOL_VERSION: &str = "1.0";
/// Media type of HTTP+JSON success bodies.
pub const A2A_JSON: &str = "application/a2a+json";
