//! The early dialect's id map in Redis: `early:{owner scope}\n{caller's id}` holds the agent's task
//! (`[task id, context id]` as JSON), set once (`SET NX`, first claim wins) and expiring with the
//! task directory. A mapping never changes, so every replica caches what it has read or written;
//! writes are queued to a background writer (the caller's next call usually comes later than that
//! write), and a miss is read once more after a short pause before it counts as unknown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use tokio::sync::mpsc;

use super::{OnUnavailable, Redis, StoreError};
use crate::bounded_map::{BoundedMap, Spared};
use crate::directory::Lookup;
use crate::evict::Aging;
use crate::protocol::early_ids::{AgentTask, EarlyIds, key};

const QUEUE: usize = 16_384;
const BATCH: usize = 256;
/// The pause before an id unknown everywhere is looked up once more.
const SECOND_LOOK: Duration = Duration::from_millis(25);

/// An id this replica has read or written, and when.
struct Cached {
    task: AgentTask,
    at: Instant,
}

impl Spared for Cached {}

pub struct RedisEarlyIds {
    redis: Redis,
    cache: BoundedMap<Cached>,
    /// When the cache's entries may next reach `ttl`.
    ages: Aging,
    queue: mpsc::Sender<(String, String)>,
    ttl: Duration,
}

impl RedisEarlyIds {
    /// The map and its writer, which ends when the map is dropped.
    pub fn new(redis: Redis, ttl: Duration) -> Arc<RedisEarlyIds> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(write(redis.clone(), ttl, receiver));
        Arc::new(RedisEarlyIds { redis, cache: BoundedMap::new(None), ages: Aging::default(), queue, ttl })
    }

    fn cached(&self, key: &str) -> Option<AgentTask> {
        self.cache.get(key, |e| (e.at.elapsed() < self.ttl).then(|| e.task.clone())).flatten()
    }

    async fn fetch(&self, key: &str) -> Result<Option<AgentTask>, StoreError> {
        let stored: Option<String> =
            self.redis.query(redis::cmd("GET").arg(self.redis.key(&format!("early:{key}")))).await?;
        let Some(stored) = stored else { return Ok(None) };
        let (task_id, context_id): (String, Option<String>) =
            serde_json::from_str(&stored).map_err(|_| StoreError::Corrupt("early id".into()))?;
        let task = AgentTask { task_id, context_id };
        self.cache.insert(key, Cached { task: task.clone(), at: Instant::now() });
        Ok(Some(task))
    }

    /// A read of Redis; `Local` operators get what this replica knows when it fails.
    async fn lookup(&self, key: &str, second_look: bool) -> Lookup<Option<AgentTask>> {
        let mut found = self.fetch(key).await;
        if second_look && matches!(found, Ok(None)) {
            tokio::time::sleep(SECOND_LOOK).await;
            found = self.fetch(key).await;
        }
        match (found, self.redis.on_unavailable) {
            (Ok(found), _) => Ok(found),
            (Err(error), OnUnavailable::FailClosed) => Err(error),
            (Err(error), OnUnavailable::Local) => {
                tracing::warn!(%error, "shared state unavailable; answering from this replica's early ids");
                metrics::counter!("a2a_state_degraded_total").increment(1);
                Ok(None)
            }
        }
    }
}

impl EarlyIds for RedisEarlyIds {
    fn get(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<Option<AgentTask>>> {
        let key = key(scope, early_id);
        if let Some(task) = self.cached(&key) {
            return futures::future::ready(Ok(Some(task))).boxed();
        }
        async move { self.lookup(&key, true).await }.boxed()
    }

    /// One read: a new task's id is usually new, and waiting for a second look would slow every one.
    fn contains(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<bool>> {
        let key = key(scope, early_id);
        if self.cached(&key).is_some() {
            return futures::future::ready(Ok(true)).boxed();
        }
        async move { self.lookup(&key, false).await.map(|found| found.is_some()) }.boxed()
    }

    fn insert(&self, scope: &str, early_id: &str, task: AgentTask) {
        if task.task_id.is_empty() {
            return;
        }
        let key = key(scope, early_id);
        if self.cached(&key).is_some() {
            return;
        }
        let value = serde_json::to_string(&(&task.task_id, &task.context_id)).unwrap_or_default();
        self.cache.insert(&key, Cached { task, at: Instant::now() });
        if self.queue.try_send((key, value)).is_err() {
            metrics::counter!("a2a_state_dropped_writes_total").increment(1);
            tracing::warn!("shared state writer is behind; an early task id was not shared");
        }
    }

    /// Only this replica's cache: Redis expires its keys itself.
    fn sweep(&self) {
        self.ages.forget_older_than(self.ttl, |young| self.cache.retain(|e| young(e.at), drop));
    }
}

/// Writes queued ids, as many per pipeline as have queued up.
async fn write(redis: Redis, ttl: Duration, mut receiver: mpsc::Receiver<(String, String)>) {
    let ttl = ttl.as_secs().max(1);
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipe = redis::pipe();
        for (key, value) in &batch {
            pipe.cmd("SET").arg(redis.key(&format!("early:{key}"))).arg(value).arg("NX").arg("EX").arg(ttl).ignore();
        }
        if let Err(error) = redis.pipeline::<()>(&pipe).await {
            metrics::counter!("a2a_state_dropped_writes_total").increment(batch.len() as u64);
            tracing::warn!(%error, lost = batch.len(), "could not share early task ids");
        }
        batch.clear();
    }
}
