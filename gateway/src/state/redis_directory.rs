//! The task directory in Redis, shared by every replica.
//!
//! Keys (under the configured prefix): `task:{id}` a hash (backend `b`, owner `o`, skill `k`,
//! context `c`, state `s`, terminal flag `t`, position `n`); `ctx:{id}` a hash (backend `b`, owner
//! `o`, skill of its first task `k`);
//! `owner:{owner}` a sorted set of the owner's task ids by position (first sight or last state
//! change: ListTasks lists the most recently updated first); `seq` the position counter.
//! Everything expires `task_ttl` after its last sighting.
//!
//! Cost discipline: a task's backend, owner and skill never change, so every replica caches what it
//! has read or written; routing a known task costs no round trip. Sightings are written by one
//! background writer per process that pipelines whatever has queued up (one script call per
//! sighting, first claim wins atomically), and only when a sighting says something new — so a new
//! task costs one pipelined round trip off the request path, and a stream's repeated events none.
//! Only a task unknown to this replica is read from Redis; if it is not there yet (its creating
//! replica's write may be a moment behind the answer it sent), it is read once more after a short
//! pause before it is declared not found.
//!
//! Redis Cluster: a sighting's keys must share a slot — use a hash-tagged prefix such as `{a2a}:`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use tokio::sync::mpsc;

use super::{OnUnavailable, Redis, StoreError};
use crate::bounded_map::{BoundedMap, Spared};
use crate::directory::{ContextEntry, Lookup, Sighting, TaskDirectory, TaskEntry};
use crate::evict::Aging;
use crate::protocol::observe::TaskState;

/// Atomically records one sighting (KEYS: task, context, owner set, counter; ARGV: task id,
/// backend, owner, skill, context id, state, ttl seconds, terminal flag). Optional values are
/// written `=value`, absent ones as the empty string. Returns -1 for a refused second claim.
const RECORD: &str = r"
local ttl = tonumber(ARGV[7])
if ARGV[5] ~= '' then
  local cb = redis.call('HGET', KEYS[2], 'b')
  if not cb then
    redis.call('HSET', KEYS[2], 'b', ARGV[2], 'o', ARGV[3], 'k', ARGV[4])
    redis.call('EXPIRE', KEYS[2], ttl)
  elseif cb == ARGV[2] and redis.call('HGET', KEYS[2], 'o') == ARGV[3] then
    redis.call('EXPIRE', KEYS[2], ttl)
  end
end
if ARGV[1] == '' then return 0 end
local tb = redis.call('HGET', KEYS[1], 'b')
if not tb then
  local n = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[1], 'b', ARGV[2], 'o', ARGV[3], 'k', ARGV[4], 'n', n)
  redis.call('ZADD', KEYS[3], n, ARGV[1])
elseif tb ~= ARGV[2] or redis.call('HGET', KEYS[1], 'o') ~= ARGV[3] then
  return -1
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'c', string.sub(ARGV[5], 2)) end
if ARGV[6] ~= '' and redis.call('HGET', KEYS[1], 't') ~= '1' then
  local was = redis.call('HGET', KEYS[1], 's')
  redis.call('HSET', KEYS[1], 's', ARGV[6], 't', ARGV[8])
  if was and was ~= ARGV[6] then
    local n = redis.call('INCR', KEYS[4])
    redis.call('HSET', KEYS[1], 'n', n)
    redis.call('ZADD', KEYS[3], n, ARGV[1])
  end
end
redis.call('EXPIRE', KEYS[1], ttl)
-- The owner's list lives as long as a task on it is in use, not only past the owner's newest task.
redis.call('EXPIRE', KEYS[3], ttl)
return 1
";

/// Claims an unseen context for an owner (KEYS: context; ARGV: backend, owner, skill, ttl seconds;
/// owner and skill written like RECORD's). Returns 1 when the context is now the owner's, 0 when
/// another owner holds it.
const CLAIM: &str = r"
if redis.call('HSETNX', KEYS[1], 'b', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'o', ARGV[2], 'k', ARGV[3])
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
  return 1
end
if redis.call('HGET', KEYS[1], 'o') == ARGV[2] then return 1 end
return 0
";

/// How many sightings may wait for the writer; past it they are dropped (and counted).
const QUEUE: usize = 16_384;
/// The most sightings sent in one pipeline.
const BATCH: usize = 256;
/// The pause before a task unknown everywhere is looked up once more.
const SECOND_LOOK: Duration = Duration::from_millis(25);

struct Cached<T> {
    value: T,
    at: Instant,
}

/// What the cache forgets past its limit is read from Redis again: none is spared.
impl<T> Spared for Cached<T> {}

/// One sighting, owned, on its way to Redis.
struct Write {
    task_id: Option<String>,
    backend: Arc<str>,
    owner: Option<Arc<str>>,
    skill: Option<Arc<str>>,
    context_id: Option<String>,
    state: Option<TaskState>,
}

pub struct RedisDirectory {
    redis: Redis,
    /// Each within `routing.max_tasks`, shard by shard ([`BoundedMap`]).
    tasks: BoundedMap<Cached<TaskEntry>>,
    contexts: BoundedMap<Cached<ContextEntry>>,
    /// When the cached tasks may next reach `ttl`, and the contexts.
    tasks_aging: Aging,
    contexts_aging: Aging,
    queue: mpsc::Sender<Write>,
    ttl: Duration,
}

impl RedisDirectory {
    /// The directory and its writer, which ends when the directory is dropped.
    pub fn new(redis: Redis, ttl: Duration, max_cached: usize) -> Arc<RedisDirectory> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let writer = Writer { redis: redis.clone(), script: redis::Script::new(RECORD), ttl };
        tokio::spawn(writer.run(receiver));
        let (tasks, contexts) = (BoundedMap::new(Some(max_cached)), BoundedMap::new(Some(max_cached)));
        let (tasks_aging, contexts_aging) = (Aging::default(), Aging::default());
        Arc::new(RedisDirectory { redis, tasks, contexts, tasks_aging, contexts_aging, queue, ttl })
    }

    async fn fetch_task(&self, task_id: &str) -> Result<Option<TaskEntry>, StoreError> {
        let fields: HashMap<String, String> =
            self.redis.query(redis::cmd("HGETALL").arg(self.task_key(task_id))).await?;
        Ok(entry_from(&fields).map(|(_, entry)| entry))
    }

    async fn fetch_context(&self, context_id: &str) -> Result<Option<ContextEntry>, StoreError> {
        let fields: HashMap<String, String> =
            self.redis.query(redis::cmd("HGETALL").arg(self.redis.key(&format!("ctx:{context_id}")))).await?;
        Ok(fields.get("b").map(|backend| ContextEntry {
            backend: Arc::from(backend.as_str()),
            owner: decode(fields.get("o")),
            skill: decode(fields.get("k")),
        }))
    }

    fn task_key(&self, task_id: &str) -> String {
        self.redis.key(&format!("task:{task_id}"))
    }

    /// What to answer when Redis failed: the error, or (when the operator chose it) what this
    /// replica knows.
    fn degrade<T>(&self, error: StoreError, local: impl FnOnce() -> T) -> Lookup<T> {
        match self.redis.on_unavailable {
            OnUnavailable::FailClosed => Err(error),
            OnUnavailable::Local => {
                tracing::warn!(%error, "shared state unavailable; answering from this replica's state");
                metrics::counter!("a2a_state_degraded_total").increment(1);
                Ok(local())
            }
        }
    }

    async fn task_uncached(&self, task_id: &str) -> Lookup<Option<TaskEntry>> {
        let mut found = self.fetch_task(task_id).await;
        if matches!(found, Ok(None)) {
            tokio::time::sleep(SECOND_LOOK).await;
            found = self.fetch_task(task_id).await;
        }
        match found {
            Ok(Some(entry)) => {
                self.tasks.insert(task_id, Cached { value: entry.clone(), at: Instant::now() });
                Ok(Some(entry))
            }
            Ok(None) => Ok(None),
            Err(error) => self.degrade(error, || None),
        }
    }

    async fn context_uncached(&self, context_id: &str) -> Lookup<Option<ContextEntry>> {
        match self.fetch_context(context_id).await {
            Ok(Some(entry)) => {
                self.contexts.insert(context_id, Cached { value: entry.clone(), at: Instant::now() });
                Ok(Some(entry))
            }
            Ok(None) => Ok(None),
            Err(error) => self.degrade(error, || None),
        }
    }

    async fn list(&self, owner: Option<Arc<str>>) -> Lookup<Vec<(u64, String, TaskEntry)>> {
        let set = self.redis.key(&format!("owner:{}", owner.as_deref().unwrap_or("")));
        let ids: Vec<String> = match self.redis.query(redis::cmd("ZREVRANGE").arg(&set).arg(0).arg(-1)).await {
            Ok(ids) => ids,
            Err(error) => return self.degrade(error, || self.local_list(owner.as_ref())),
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGETALL").arg(self.task_key(id));
        }
        let rows: Vec<HashMap<String, String>> = match self.redis.pipeline(&pipe).await {
            Ok(rows) => rows,
            Err(error) => return self.degrade(error, || self.local_list(owner.as_ref())),
        };
        let mut listed = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for (id, fields) in ids.into_iter().zip(rows) {
            match entry_from(&fields) {
                Some((seq, entry)) if entry.owner == owner => listed.push((seq, id, entry)),
                Some(_) => {}
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            // Expired tasks leave their set lazily; failing to tidy up changes no answer.
            let _: Result<i64, _> = self.redis.query(redis::cmd("ZREM").arg(&set).arg(&gone)).await;
        }
        Ok(listed)
    }

    /// An owner's tasks as this replica has seen them (positions are unknown: newest by sight).
    fn local_list(&self, owner: Option<&Arc<str>>) -> Vec<(u64, String, TaskEntry)> {
        let mut listed: Vec<(u64, String, TaskEntry)> = self.tasks.collect(usize::MAX, |id, cached| {
            let theirs = cached.value.owner.as_ref() == owner;
            theirs.then(|| (cached.at.elapsed().as_nanos() as u64, id.to_owned(), cached.value.clone()))
        });
        listed.sort_by_key(|(age, _, _)| *age);
        let n = listed.len() as u64;
        listed.iter_mut().enumerate().for_each(|(i, row)| row.0 = n - i as u64);
        listed
    }
}

impl TaskDirectory for RedisDirectory {
    fn task(&self, task_id: &str) -> BoxFuture<'_, Lookup<Option<TaskEntry>>> {
        if let Some(cached) = self.tasks.get(task_id, |cached| cached.value.clone()) {
            return futures::future::ready(Ok(Some(cached))).boxed();
        }
        let task_id = task_id.to_owned();
        async move { self.task_uncached(&task_id).await }.boxed()
    }

    fn context(&self, context_id: &str) -> BoxFuture<'_, Lookup<Option<ContextEntry>>> {
        if let Some(cached) = self.contexts.get(context_id, |cached| cached.value.clone()) {
            return futures::future::ready(Ok(Some(cached))).boxed();
        }
        let context_id = context_id.to_owned();
        async move { self.context_uncached(&context_id).await }.boxed()
    }

    fn claim_context(&self, context_id: &str, entry: ContextEntry) -> BoxFuture<'_, Lookup<bool>> {
        // A context's owner never changes: what this replica knows settles it.
        if let Some(theirs) = self.contexts.get(context_id, |cached| cached.value.owner == entry.owner) {
            return futures::future::ready(Ok(theirs)).boxed();
        }
        let context_id = context_id.to_owned();
        async move {
            let mut claim = redis::cmd("EVAL");
            claim
                .arg(CLAIM)
                .arg(1)
                .arg(self.redis.key(&format!("ctx:{context_id}")))
                .arg(&*entry.backend)
                .arg(encode(entry.owner.as_deref()))
                .arg(encode(entry.skill.as_deref()))
                .arg(self.ttl.as_secs().max(1));
            match self.redis.query::<i64>(&claim).await {
                Ok(1) => {
                    self.contexts.insert(&context_id, Cached { value: entry, at: Instant::now() });
                    Ok(true)
                }
                Ok(_) => Ok(false),
                // Answering from this replica's state (when the operator chose it): claimed here.
                Err(error) => self.degrade(error, || {
                    self.contexts.insert(&context_id, Cached { value: entry, at: Instant::now() });
                    true
                }),
            }
        }
        .boxed()
    }

    fn record(&self, sighting: &Sighting<'_>) {
        let (backend, fact) = (sighting.backend, sighting.fact);
        let owner = sighting.owner.cloned();
        let now = Instant::now();
        let mut news = false;
        if let Some(context_id) = &fact.context_id {
            let make = || {
                let skill = sighting.skill.cloned();
                Cached { value: ContextEntry { backend: backend.clone(), owner: owner.clone(), skill }, at: now }
            };
            let (stale, _) =
                self.contexts.upsert(context_id, make, |seen, made| made || seen.at.elapsed() > self.ttl / 4);
            news |= stale;
        }
        if let Some(task_id) = &fact.task_id {
            let make = || Cached { value: TaskEntry::first_seen(sighting), at: now };
            let (changed, _) = self.tasks.upsert(task_id, make, |seen, made| {
                if seen.value.backend != *backend || seen.value.owner != owner {
                    tracing::warn!(task_id, claimed_by = %backend, "ignoring a second claim on a task");
                    return None;
                }
                let mut news = made;
                if fact.context_id.is_some() && seen.value.context_id != fact.context_id {
                    seen.value.context_id.clone_from(&fact.context_id);
                    news = true;
                }
                if let Some(new) = fact.state
                    && !seen.value.state.is_some_and(TaskState::is_terminal)
                    && seen.value.state != Some(new)
                {
                    seen.value.state = Some(new);
                    news = true;
                }
                // Refresh the expiry now and then while the task is in use.
                news |= seen.at.elapsed() > self.ttl / 4;
                if news {
                    seen.at = now;
                }
                Some(news)
            });
            let Some(changed) = changed else { return };
            news |= changed;
        }
        if !news {
            return;
        }
        let write = Write {
            task_id: fact.task_id.clone(),
            backend: backend.clone(),
            owner,
            skill: sighting.skill.cloned(),
            context_id: fact.context_id.clone(),
            state: fact.state,
        };
        if self.queue.try_send(write).is_err() {
            metrics::counter!("a2a_state_dropped_writes_total").increment(1);
            tracing::warn!("shared state writer is behind; a task sighting was not shared");
        }
    }

    fn tasks_of(&self, owner: Option<&Arc<str>>) -> BoxFuture<'_, Lookup<Vec<(u64, String, TaskEntry)>>> {
        self.list(owner.cloned()).boxed()
    }

    /// This replica's view: the tasks it has cached.
    fn list(&self, limit: usize) -> BoxFuture<'_, Vec<(String, TaskEntry)>> {
        let tasks = self.tasks.collect(limit, |id, cached| Some((id.to_owned(), cached.value.clone())));
        futures::future::ready(tasks).boxed()
    }

    /// This replica's cache; Redis holds the whole directory.
    fn size(&self) -> crate::directory::DirectorySize {
        crate::directory::DirectorySize { tasks: self.tasks.len(), contexts: self.contexts.len(), evicted: 0 }
    }

    fn sweep(&self) {
        // Only the local cache: Redis expires its keys itself. What the cache forgets past its limit
        // is read from Redis again when asked for.
        self.tasks_aging.forget_older_than(self.ttl, |young| self.tasks.retain(|seen| young(seen.at), drop));
        self.contexts_aging.forget_older_than(self.ttl, |young| self.contexts.retain(|seen| young(seen.at), drop));
    }
}

/// Writes queued sightings, as many per pipeline as have queued up.
struct Writer {
    redis: Redis,
    script: redis::Script,
    ttl: Duration,
}

impl Writer {
    async fn run(self, mut receiver: mpsc::Receiver<Write>) {
        let mut batch = Vec::with_capacity(BATCH);
        while receiver.recv_many(&mut batch, BATCH).await > 0 {
            if let Err(error) = self.write(&batch).await {
                // A sighting lost while Redis is down is found again by the next one for its task.
                metrics::counter!("a2a_state_dropped_writes_total").increment(batch.len() as u64);
                tracing::warn!(%error, lost = batch.len(), "could not share task sightings");
            }
            batch.clear();
        }
    }

    async fn write(&self, batch: &[Write]) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        // SCRIPT LOAD is idempotent and cheap; sending it with each batch spares a NOSCRIPT retry
        // after Redis restarts empty.
        pipe.cmd("SCRIPT").arg("LOAD").arg(RECORD).ignore();
        let ttl = self.ttl.as_secs().max(1);
        for write in batch {
            let task_id = write.task_id.as_deref().unwrap_or("");
            let owner = write.owner.as_deref().unwrap_or("");
            let mut invocation = self.script.prepare_invoke();
            invocation
                .key(self.redis.key(&format!("task:{task_id}")))
                .key(self.redis.key(&format!("ctx:{}", write.context_id.as_deref().unwrap_or(""))))
                .key(self.redis.key(&format!("owner:{owner}")))
                .key(self.redis.key("seq"))
                .arg(task_id)
                .arg(&*write.backend)
                .arg(encode(write.owner.as_deref()))
                .arg(encode(write.skill.as_deref()))
                .arg(encode(write.context_id.as_deref()))
                .arg(write.state.map_or("", TaskState::as_str))
                .arg(ttl)
                .arg(if write.state.is_some_and(TaskState::is_terminal) { "1" } else { "0" });
            pipe.invoke_script(&invocation).ignore();
        }
        self.redis.pipeline::<()>(&pipe).await
    }
}

fn encode(value: Option<&str>) -> String {
    value.map_or_else(String::new, |v| format!("={v}"))
}

fn decode(value: Option<&String>) -> Option<Arc<str>> {
    value.and_then(|v| v.strip_prefix('=')).map(Arc::from)
}

fn entry_from(fields: &HashMap<String, String>) -> Option<(u64, TaskEntry)> {
    let backend = fields.get("b")?;
    let seq = fields.get("n").and_then(|n| n.parse().ok()).unwrap_or(0);
    let entry = TaskEntry {
        backend: Arc::from(backend.as_str()),
        owner: decode(fields.get("o")),
        skill: decode(fields.get("k")),
        context_id: fields.get("c").cloned(),
        state: fields.get("s").map(|s| TaskState::from_wire(s)),
    };
    Some((seq, entry))
}
