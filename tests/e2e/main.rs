//! End-to-end tests: the real `a2a-gateway` binary in front of real agents (the Rust example agents,
//! a2a-sdk Python agents, and purpose-built stream backends), all on ephemeral loopback ports.

mod admin;
mod audit_disk;
mod auth;
mod cards;
mod catalog;
mod cli;
mod dialects;
mod edge;
mod errors;
mod faults;
mod garbage;
mod grpc;
mod grpc_deadline;
mod health;
mod integrity;
mod js_sdk;
mod leaks;
mod lifecycle;
mod limits;
mod mtls;
mod observability;
mod operator;
mod outage;
mod push;
mod python_sdk;
mod replicas;
mod resilience;
mod resolve;
mod rest03;
mod routing;
mod signed_cards;
mod status_page;
mod stores;
mod streaming;
mod tls;

/// The gateway binary cargo built for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");
