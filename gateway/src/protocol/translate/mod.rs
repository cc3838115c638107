//! Bridging between the A2A dialects in the field: every translation goes through one internal model,
//! A2A 1.0 (the [`a2a_model`] crate), so each dialect is one module with one pair of conversions.
//!
//! - [`v03`]: A2A 0.3 JSON-RPC (`message/send`, `kind`-tagged objects, kebab-case states).
//! - [`early`]: the early REST dialect of the project's seed (`POST /tasks/send`, `type`-tagged parts,
//!   every stream event a whole Task), with the stateful converters its streams need.
//!
//! Everything here is pure: JSON bytes (or typed values) in, typed values out, no I/O, no clock except
//! where a dialect lacks a required id (fresh UUIDs, documented at each function). Values move through
//! the conversions; strings and payloads are never copied. What a dialect cannot carry is listed in
//! `README.md` beside this file and in the docs of each conversion.

pub mod early;
mod error;
pub mod jsonrpc;
pub mod v03;

#[cfg(test)]
mod tests;

pub use error::TranslateError;
