//! The types every part of a2a-gateway shares: what the decode layer learned about a request
//! ([`A2aCall`], [`RequestInfo`], [`RouteHint`]), who is calling ([`Caller`]), the refusal every layer
//! returns ([`A2aError`]), what answers say about tasks ([`TaskEvent`], [`TaskObserver`]) and the one
//! duration grammar of the configuration file ([`duration`]).
//!
//! What belongs here: a type that the policy layers and the router (and the rest of the gateway)
//! all read or write, so that none of them has to depend on another to talk about a request. What
//! does not: anything that enforces a policy, speaks the wire, or does I/O. That is why the crate
//! has no tower, no HTTP client and no crypto: a crate that only needs to name a call or a refusal
//! pulls in nothing else.

mod call;
mod caller;
pub mod duration;
mod error;
mod task;

pub use call::{A2aCall, Binding, Dialect, Operation, RequestInfo, RouteHint};
pub use caller::{AuthMethod, Caller, ClientAddress};
pub use error::{A2aError, Violation};
pub use task::{ArtifactInfo, Source, TaskEvent, TaskObserver, TaskState};
