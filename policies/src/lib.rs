//! Tower layers that enforce a2a-gateway's policies, and the small set of types they share with the
//! gateway core.
//!
//! Policies and routing meet only through typed request extensions: the decode layer of the gateway
//! inserts an [`A2aCall`] into every A2A request before any policy runs, authentication adds the
//! [`Caller`], and every layer refuses a request by returning an [`A2aError`], which the decode layer
//! turns into the caller's protocol error in one place. What the gateway observes about tasks in
//! answers reaches interested policies through [`TaskObserver`].

pub mod audit;
pub mod auth;
pub mod authorize;
pub mod backend_auth;
pub mod call;
pub mod caller;
pub mod check;
pub mod concurrency;
pub mod duration;
pub mod error;
pub mod rate_limit;
pub mod secret;
pub mod task;
pub mod validate;

pub use call::{A2aCall, Binding, Dialect, Operation, RequestInfo, RouteHint};
pub use caller::{AuthMethod, Caller, ClientAddress};
pub use error::{A2aError, Violation};
pub use task::{ArtifactInfo, Source, TaskEvent, TaskObserver, TaskState};
