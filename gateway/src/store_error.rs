//! Why shared state could not be read or written: the error of the stores' traits (the task
//! directory, early ids, deadlines, ejections), below both the traits and their Redis
//! implementations ([`crate::state`]).

use std::time::Duration;

use a2a_core::A2aError;

/// Why shared state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the shared state store did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the shared state store failed: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("the shared state store holds something unexpected: {0}")]
    Corrupt(String),
}

impl From<StoreError> for A2aError {
    fn from(error: StoreError) -> A2aError {
        // The details (addresses, Redis messages) go to the log, never to the caller.
        tracing::warn!(%error, "shared state unavailable");
        metrics::counter!("a2a_state_errors_total").increment(1);
        A2aError::StateUnavailable
    }
}

/// What a read of the directory (or of the early ids) yields: an error only when a shared store
/// could not be reached.
pub type Lookup<T> = Result<T, StoreError>;
