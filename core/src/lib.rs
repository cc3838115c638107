//! The types every part of a2a-gateway shares: the per-request context every layer reads
//! ([`CallContext`], carried as the body of a [`CallRequest`]: what the decode layer learned,
//! [`A2aCall`], the checked request itself, [`Checked`], the per-request facts of [`RequestInfo`]
//! and the route of [`RouteHint`]), who is calling ([`Caller`], [`ClientAddress`]), the refusal
//! every layer returns ([`A2aError`]), what answers say about tasks ([`TaskEvent`] for a
//! [`TaskObserver`]) and the one duration grammar of the configuration file ([`duration`]).
//!
//! What belongs here: what every policy layer and the router read or write, so that they meet
//! through these types and not through each other. What does not: anything that enforces a policy,
//! routes, reads or writes a message body, or does I/O; those live in `a2a-policies` and
//! `a2a-gateway`. Hence the short dependency list (the wire model `a2a-model` for [`Operation`] and
//! [`Checked`], `http`'s types for [`CallRequest`], foldhash for [`ByOutsiders`], serde,
//! serde_json, thiserror, and schemars for the duration's schema): no tower, no HTTP client, no
//! crypto. The layering is `a2a-model` → `a2a-core` → `a2a-policies` → `a2a-gateway`.

mod call;
mod caller;
pub mod duration;
mod error;
mod task;

pub use call::{
    A2aCall, Binding, CallContext, CallRequest, Checked, Dialect, EarlyCall, Operation, RequestInfo, RouteHint,
};
pub use caller::{AuthMethod, Caller, ClientAddress, ClientCertificate, RESERVED_AUTHORITIES};
pub use error::{A2aError, Violation};
pub use task::{ArtifactInfo, Source, TaskEvent, TaskObserver, TaskState};

/// The hasher of maps keyed by what callers and agents send (tokens, caller, request, task and
/// context ids), in the policies and the gateway alike: foldhash's quality variant, seeded at random
/// per map as std's SipHash is (keys an outsider chooses cannot aim at one bucket without the seed),
/// at a fraction of SipHash's cost per lookup.
pub type ByOutsiders = foldhash::quality::RandomState;
