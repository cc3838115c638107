//! Push-notification configs in Redis, so that a config registered through one replica is read,
//! listed, deleted and delivered through any.
//!
//! Keys (under the configured prefix): `push:{task}` a hash from `{owner}\0{config id}` to the
//! stored config (JSON), expiring `task_ttl` after its last change; `push-sent:{task}:{digest}`
//! marks one update of a task as being delivered to one config (SET NX, so that of several
//! replicas following a task exactly one delivers each update).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::Dialect;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::Redis;
use super::redis_deadlines::CallerFacts;
use crate::push::store::{OwnedConfigs, PushStore, StoreError, StoredConfig, is_owners};
use a2a_model::TaskPushNotificationConfig;

/// KEYS: the task's hash; ARGV: field, owner prefix, config, max, ttl s. -1 when the owner has
/// `max` configs of the task already.
const PUT: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local mine = 0
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, string.len(ARGV[2])) == ARGV[2] then mine = mine + 1 end
  end
  if mine >= tonumber(ARGV[4]) then return -1 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
";

/// How long a delivery claim is kept (longer than any update is delivered again for).
const SENT_FOR: Duration = Duration::from_secs(3600);

pub struct RedisPushStore {
    redis: Redis,
    put: redis::Script,
    ttl: Duration,
}

impl RedisPushStore {
    pub fn new(redis: Redis, ttl: Duration) -> Arc<RedisPushStore> {
        Arc::new(RedisPushStore { redis, put: redis::Script::new(PUT), ttl })
    }

    fn key(&self, task_id: &str) -> String {
        self.redis.key(&format!("push:{task_id}"))
    }

    /// Every config of the task with its owner, oldest first.
    async fn all(&self, task_id: &str) -> Result<Vec<(Arc<str>, StoredConfig)>, StoreError> {
        let fields: HashMap<String, String> = self.redis.query(redis::cmd("HGETALL").arg(self.key(task_id))).await?;
        let mut found: Vec<(u64, Arc<str>, StoredConfig)> = fields
            .into_iter()
            .filter_map(|(field, json)| {
                let (owner, _) = field.split_once('\0')?;
                let row: Row = serde_json::from_str(&json).ok()?;
                Some((row.at, Arc::from(owner), row.into_stored()))
            })
            .collect();
        found.sort_by_key(|(at, _, _)| *at);
        Ok(found.into_iter().map(|(_, owner, stored)| (owner, stored)).collect())
    }

    async fn mine(&self, owner: &str, task_id: &str) -> Result<Vec<StoredConfig>, StoreError> {
        Ok(self.all(task_id).await?.into_iter().filter(|(o, c)| is_owners(o, c, owner, None)).map(|(_, c)| c).collect())
    }
}

fn field(owner: &str, id: Option<&str>) -> String {
    format!("{owner}\0{}", id.unwrap_or(""))
}

impl PushStore for RedisPushStore {
    fn put(
        &self,
        owner: &str,
        task_id: &str,
        config: StoredConfig,
        max: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let (owner, task_id) = (owner.to_owned(), task_id.to_owned());
        Box::pin(async move {
            let field = field(&owner, config.config.id.as_deref());
            let json =
                serde_json::to_string(&Row::from(&config)).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let mut invocation = self.put.prepare_invoke();
            invocation
                .key(self.key(&task_id))
                .arg(field)
                .arg(format!("{owner}\0"))
                .arg(json)
                .arg(max)
                .arg(self.ttl.as_secs().max(1));
            match self.redis.script::<i64>(&invocation).await? {
                -1 => Err(StoreError::TooMany(max)),
                _ => Ok(()),
            }
        })
    }

    fn get(
        &self,
        owner: &str,
        task_id: &str,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<StoredConfig>, StoreError>> {
        let (owner, task_id, id) = (owner.to_owned(), task_id.to_owned(), id.map(str::to_owned));
        Box::pin(async move {
            let all = self.all(&task_id).await?;
            Ok(all.into_iter().find(|(o, c)| is_owners(o, c, &owner, id.as_deref())).map(|(_, c)| c))
        })
    }

    fn list(&self, owner: &str, task_id: &str) -> BoxFuture<'_, Result<Vec<StoredConfig>, StoreError>> {
        let (owner, task_id) = (owner.to_owned(), task_id.to_owned());
        Box::pin(async move { self.mine(&owner, &task_id).await })
    }

    fn delete(&self, owner: &str, task_id: &str, id: Option<&str>) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, task_id, id) = (owner.to_owned(), task_id.to_owned(), id.map(str::to_owned));
        Box::pin(async move {
            let id = match id {
                Some(id) => Some(id),
                None => match self.mine(&owner, &task_id).await?.into_iter().next() {
                    Some(first) => first.config.id,
                    None => return Ok(false),
                },
            };
            let removed: i64 =
                self.redis.query(redis::cmd("HDEL").arg(self.key(&task_id)).arg(field(&owner, id.as_deref()))).await?;
            Ok(removed > 0)
        })
    }

    fn of_task(&self, task_id: &str) -> BoxFuture<'_, Result<OwnedConfigs, StoreError>> {
        let task_id = task_id.to_owned();
        Box::pin(async move { self.all(&task_id).await })
    }

    fn forget_task(&self, task_id: &str) -> BoxFuture<'_, ()> {
        let key = self.key(task_id);
        Box::pin(async move {
            let _: Result<i64, _> = self.redis.query(redis::cmd("DEL").arg(key)).await;
        })
    }

    fn claim_delivery(&self, task_id: &str, digest: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let key = self.redis.key(&format!("push-sent:{task_id}:{digest}"));
        Box::pin(async move {
            let set: Option<String> =
                self.redis.query(redis::cmd("SET").arg(key).arg(1).arg("NX").arg("EX").arg(SENT_FOR.as_secs())).await?;
            Ok(set.is_some())
        })
    }

    fn shared(&self) -> bool {
        true
    }
}

impl From<super::StoreError> for StoreError {
    fn from(error: super::StoreError) -> StoreError {
        tracing::warn!(%error, "shared state unavailable");
        metrics::counter!("a2a_state_errors_total").increment(1);
        StoreError::Unavailable(error.to_string())
    }
}

/// A stored config as written.
#[derive(Serialize, Deserialize)]
struct Row {
    config: TaskPushNotificationConfig,
    caller: Option<CallerFacts>,
    backend: String,
    /// `v1`, `v03` or `early`.
    dialect: String,
    /// When it was stored (ms since the epoch): configs are listed oldest first.
    at: u64,
}

impl From<&StoredConfig> for Row {
    fn from(stored: &StoredConfig) -> Row {
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        Row {
            config: stored.config.clone(),
            caller: stored.caller.as_ref().map(CallerFacts::from),
            backend: stored.backend.to_string(),
            dialect: match stored.dialect {
                Dialect::V1 => "v1",
                Dialect::V03 => "v03",
                Dialect::Early => "early",
            }
            .into(),
            at,
        }
    }
}

impl Row {
    fn into_stored(self) -> StoredConfig {
        StoredConfig {
            config: self.config,
            caller: self.caller.map(CallerFacts::into_caller),
            backend: Arc::from(self.backend),
            dialect: match self.dialect.as_str() {
                "v03" => Dialect::V03,
                "early" => Dialect::Early,
                _ => Dialect::V1,
            },
        }
    }
}
