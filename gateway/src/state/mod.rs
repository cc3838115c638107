//! Where the gateway keeps state that replicas must share: in this process (`state: memory`, the
//! default, nothing to run) or in Redis (`state: {redis: {...}}`), so that several replicas behind a
//! load balancer behave as one. This module owns the Redis connection (every call bounded by a
//! timeout); the `state` config section is [`crate::config::StateConfig`], the store errors
//! [`crate::store_error`]'s. One Redis store per kind of state: the
//! task directory and contexts ([`redis_directory`]), live-task leases ([`redis_leases`]), rate
//! quotas ([`redis_quotas`]), the early dialect's ids ([`redis_early_ids`]), per-skill task
//! deadlines ([`redis_deadlines`]), push-notification configs ([`redis_push`]) and backend
//! ejections ([`redis_ejections`]); each implements the
//! trait whose in-memory implementation is the default.

pub mod redis_deadlines;
pub mod redis_directory;
pub mod redis_early_ids;
pub mod redis_ejections;
pub mod redis_leases;
pub mod redis_push;
pub mod redis_quotas;
mod store;

use std::sync::Arc;
use std::time::Duration;

pub use self::store::Redis;
pub use crate::config::{OnUnavailable, RedisConfig, StateConfig};
use crate::directory::{MemoryDirectory, TaskDirectory};
use crate::page_token::PageTokens;
use crate::protocol::early_ids::{EarlyIds, MemoryEarlyIds};
pub use crate::store_error::StoreError;

/// The stores that outlive configuration generations, as the configuration asks for them. Leases
/// and rate quotas are built by their owners from [`Stores::redis`].
pub struct Stores {
    pub directory: Arc<dyn TaskDirectory>,
    pub early_ids: Arc<dyn EarlyIds>,
    pub page_tokens: PageTokens,
    pub redis: Option<Redis>,
}

pub async fn build(config: &StateConfig, task_ttl: Duration, max_tasks: usize) -> anyhow::Result<Stores> {
    let redis_config = match config {
        StateConfig::Memory => {
            return Ok(Stores {
                directory: Arc::new(MemoryDirectory::new(task_ttl).with_max_tasks(max_tasks)),
                early_ids: Arc::new(MemoryEarlyIds::new(task_ttl).with_max(max_tasks)),
                page_tokens: PageTokens::random(),
                redis: None,
            });
        }
        StateConfig::Redis(redis) => redis,
    };
    let redis = Redis::new(redis_config)?;
    let page_tokens = match &redis_config.page_token_secret {
        Some(secret) => PageTokens::from_secret(secret.expose().as_bytes()),
        None => PageTokens::from_key(page_key_at_start(&redis).await?),
    };
    Ok(Stores {
        directory: redis_directory::RedisDirectory::new(redis.clone(), task_ttl, max_tasks),
        early_ids: redis_early_ids::RedisEarlyIds::new(redis.clone(), task_ttl),
        page_tokens,
        redis: Some(redis),
    })
}

/// Every replica must sign page tokens with the same key: read (or set) it in Redis, waiting a
/// little for Redis at start.
async fn page_key_at_start(redis: &Redis) -> anyhow::Result<[u8; 32]> {
    let mut last = None;
    for _ in 0..20 {
        match redis.shared_page_key().await {
            Ok(key) => return Ok(key),
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let error = last.map(|e| e.to_string()).unwrap_or_default();
    anyhow::bail!(
        "state.redis: Redis is unreachable at start ({error}); make it reachable, or set \
         state.redis.page_token_secret so that replicas can start without it"
    )
}
