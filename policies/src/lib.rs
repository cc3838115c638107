//! Tower layers that enforce a2a-gateway's policies: authentication, authorization, rate and
//! concurrency limits, validation, audit, and the credentials the gateway presents to backends.
//!
//! Policies and routing meet only through the typed request extensions of `a2a-core`: the decode
//! layer of the gateway inserts an [`A2aCall`](a2a_core::A2aCall) into every A2A request before any
//! policy runs, authentication adds the [`Caller`](a2a_core::Caller), and every layer refuses a
//! request by returning an [`A2aError`](a2a_core::A2aError), which the decode layer turns into the
//! caller's protocol error in one place. What the gateway observes about tasks in answers reaches
//! interested policies through [`TaskObserver`](a2a_core::TaskObserver). Those shared types live in
//! `a2a-core` so that the router and the layers depend on them, not on each other.

pub mod audit;
pub mod auth;
pub mod authorize;
pub mod backend_auth;
pub mod check;
pub mod concurrency;
pub mod rate_limit;
pub mod secret;
pub mod validate;

/// The hasher of the request path's maps keyed by what callers send.
pub(crate) use a2a_core::ByOutsiders;
