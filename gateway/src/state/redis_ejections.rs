//! Backend ejections in Redis, so that a backend one replica ejected (its requests failed) is out
//! for every replica. Each replica still probes it itself once the ejection time is up.
//!
//! Keys (under the configured prefix): `ejected:{backend}` set for as long as the ejection lasts
//! (PX); a re-admission deletes it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{Redis, StoreError};
use crate::registry::SharedEjections;

pub struct RedisEjections {
    redis: Redis,
}

impl RedisEjections {
    pub fn new(redis: Redis) -> Arc<RedisEjections> {
        Arc::new(RedisEjections { redis })
    }

    fn key(&self, backend: &str) -> String {
        self.redis.key(&format!("ejected:{backend}"))
    }
}

impl SharedEjections for RedisEjections {
    fn eject(&self, backend: &str, lasts: Duration) {
        let (redis, key) = (self.redis.clone(), self.key(backend));
        let ms = lasts.as_millis().max(1) as u64;
        // Off the request path; a lost write only means the others find out by themselves.
        tokio::spawn(async move {
            if let Err(error) = redis.query::<()>(redis::cmd("SET").arg(key).arg(1).arg("PX").arg(ms)).await {
                tracing::warn!(%error, "could not share a backend ejection");
            }
        });
    }

    fn readmit(&self, backend: &str) {
        let (redis, key) = (self.redis.clone(), self.key(backend));
        tokio::spawn(async move {
            if let Err(error) = redis.query::<i64>(redis::cmd("DEL").arg(key)).await {
                tracing::warn!(%error, "could not share a backend's re-admission");
            }
        });
    }

    fn ejected_for(&self, backend: &str) -> BoxFuture<'static, Result<Option<Duration>, StoreError>> {
        let (redis, key) = (self.redis.clone(), self.key(backend));
        Box::pin(async move {
            let ms: i64 = redis.query(redis::cmd("PTTL").arg(key)).await?;
            Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
        })
    }
}
