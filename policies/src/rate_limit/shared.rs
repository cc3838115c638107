//! Quotas kept in a store that several gateway replicas share, so that N replicas grant a caller
//! one quota, not N. The store (the gateway's Redis) implements [`SharedQuotas`]; [`RateLimits`]
//! (super::RateLimits) asks it instead of its in-process buckets once one is attached.

use std::time::Duration;

use futures::future::BoxFuture;

use a2a_core::A2aError;

/// One GCRA bucket to check: `burst` requests at once, one more every `interval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCheck {
    /// Names the bucket among all quotas (the store scopes it under its own prefix).
    pub key: String,
    pub interval: Duration,
    pub burst: u32,
}

/// The store's answer to a list of checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Admitted,
    /// `checks[index]` refused; the same request would conform after `retry_after`.
    Refused {
        index: usize,
        retry_after: Duration,
    },
    /// The store is unreachable and the operator chose to meter with this replica's buckets meanwhile.
    Local,
}

pub trait SharedQuotas: Send + Sync + 'static {
    /// Checks the buckets in order, atomically: every admitted check is counted; the first refusal
    /// stops (the checks before it stay counted, as in-process). An error (the store unreachable,
    /// failing closed) refuses the request.
    fn check(&self, checks: Vec<SharedCheck>) -> BoxFuture<'static, Result<Verdict, A2aError>>;
}
