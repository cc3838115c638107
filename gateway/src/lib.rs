//! a2a-gateway: one public A2A endpoint in front of a fleet of agents.
//!
//! The request path: [`server`] decodes each call ([`protocol::decode`]), runs the policy layers,
//! routes it ([`routing`], with task ownership from [`directory`] and backends from [`registry`]),
//! and forwards it ([`proxy`]), relaying answers and streams unchanged. The policy layers are
//! `a2a_policies`'; the types this path and those layers share (the decoded call, the caller, the
//! refusal, task observations) are `a2a_core`'s.

pub mod admin;
pub mod admin_guard;
pub mod backend_tls;
pub mod bounded_map;
pub mod card;
pub mod catalog;
pub mod client_address;
pub mod clients;
mod compile;
pub mod config;
pub mod config_schema;
pub mod deadlines;
#[cfg(feature = "demo")]
pub mod demo;
pub mod directory;
pub mod evict;
pub mod gateway;
pub mod hangup;
pub mod hashing;
pub mod list;
pub mod listener;
pub mod metrics;
pub mod observers;
pub mod overlay;
pub mod page_token;
pub mod protocol;
pub mod proxy;
pub mod push;
pub mod redact;
pub mod registry;
pub mod relay;
pub mod resolve;
pub mod routing;
pub mod screen;
pub mod server;
pub mod stack;
pub mod state;
pub mod store_error;
pub mod telemetry;
pub mod time;
pub mod workers;

/// Installs the process-wide TLS crypto provider (ring) once; reqwest is built without one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
