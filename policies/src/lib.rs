//! Tower layers that enforce a2a-gateway's policies, and the small set of types they share with the
//! gateway core.
//!
//! Policies and routing meet only through typed request extensions defined in [`call`]: the
//! decode layer of the gateway inserts an [`A2aCall`] into every A2A request before any policy runs,
//! and every layer refuses a request by returning an [`A2aError`], which the decode layer turns into
//! the caller's protocol error in one place.

pub mod call;
pub mod error;

pub use call::{A2aCall, Binding, Operation};
pub use error::A2aError;
