//! Leases kept in a store that several gateway replicas share, so that a caller's live-task limit
//! holds across all of them. The store (the gateway's Redis) implements [`SharedLeases`];
//! [`LiveTasks`](super::LiveTasks) reserves there instead of in its own table once one is attached,
//! and passes on what the answers say.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use a2a_core::A2aError;

/// The store's answer to a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseVerdict {
    Reserved,
    /// The store is unreachable and the operator chose to count with this replica's table meanwhile.
    Local,
}

pub trait SharedLeases: Send + Sync + 'static {
    /// Reserves a pending slot for `request_id` of `caller`, or refuses with
    /// [`A2aError::TooManyTasks`] when the caller holds `limit` across all replicas. The slot
    /// expires after `ttl` unless bound or released first. An error other than the refusal (the
    /// store unreachable, failing closed) refuses the request too.
    fn reserve(
        &self,
        caller: Arc<str>,
        request_id: Arc<str>,
        limit: usize,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<LeaseVerdict, A2aError>>;
    /// Ends the pending slot of a request this replica reserved (never waits).
    fn release(&self, request_id: &str);
    /// The answer to `request_id` named a live task: its slot becomes a lease on that task, unless
    /// the task is leased (or ended) already (never waits).
    fn bind(&self, request_id: &str, backend: &str, task_id: &str);
    /// The task ended: its lease ends, whichever replica took it (never waits).
    fn finish(&self, backend: &str, task_id: &str);
}
