//! Live-task leases in Redis, so that a caller's limit holds across every replica.
//!
//! Keys (under the configured prefix): `lease:{caller}` a sorted set of what the caller holds —
//! `r:{request id}` for a pending reservation, `t:{backend}\0{task}` for a leased task — scored by
//! its expiry (Redis' clock, ms), so a crashed replica's slots end at `lease_ttl`;
//! `lease-task:{backend}\0{task}` the task's holder (empty once the task ended, so that a late
//! bind from another replica does not lease a finished task).
//!
//! Reserving is one script call on the request path (count and add atomically). Binding,
//! releasing and ending are queued and pipelined by a background writer, in order; a batch that
//! fails is retried for a while (a lost release would hold a slot until it expires). A request's
//! answer is observed by the replica that reserved for it, so the reserving caller of a request id
//! is known locally. With Redis Cluster the scripts touch keys named at run time: use a
//! hash-tagged prefix such as `{a2a}:` so that every key shares one slot.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::A2aError;
use a2a_policies::concurrency::{LeaseVerdict, SharedLeases};
use dashmap::DashMap;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{OnUnavailable, Redis};

/// KEYS: the caller's set; ARGV: member, limit, ttl ms. Returns -1 when reserved, else what the
/// caller holds.
const RESERVE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then return held end
redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[3])), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return -1
";

/// KEYS: the caller's set, the task's holder; ARGV: pending member, task member, caller, ttl ms.
const BIND: &str = r"
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[4]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[4])), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// KEYS: the task's holder; ARGV: the prefix of callers' sets, task member, tombstone ttl ms.
const FINISH: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= '' then redis.call('ZREM', ARGV[1] .. holder, ARGV[2]) end
redis.call('SET', KEYS[1], '', 'PX', ARGV[3])
return 1
";

/// How long an ended task is remembered as ended (against a late bind).
const TOMBSTONE: Duration = Duration::from_secs(300);
const QUEUE: usize = 16_384;
const BATCH: usize = 256;
/// A failed batch is retried this often, this many times, before it is given up (and counted).
const RETRY_EVERY: Duration = Duration::from_millis(500);
const RETRIES: usize = 60;

enum Op {
    Release { caller: Arc<str>, request_id: Arc<str> },
    Bind { caller: Arc<str>, request_id: Arc<str>, task: String },
    Finish { task: String },
}

pub struct RedisLeases {
    redis: Redis,
    reserve: Arc<redis::Script>,
    /// Pending reservations this replica took: request id → caller.
    pending: Arc<DashMap<Arc<str>, Arc<str>>>,
    queue: mpsc::Sender<Op>,
}

impl RedisLeases {
    /// The store and its writer, which ends when the store is dropped.
    pub fn new(redis: Redis, ttl: Duration) -> Arc<RedisLeases> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let writer = Writer { redis: redis.clone(), ttl };
        tokio::spawn(writer.run(receiver));
        Arc::new(RedisLeases { redis, reserve: Arc::new(redis::Script::new(RESERVE)), pending: Arc::default(), queue })
    }

    fn send(&self, op: Op) {
        if self.queue.try_send(op).is_err() {
            metrics::counter!("a2a_state_dropped_writes_total").increment(1);
            tracing::warn!("shared state writer is behind; a lease change was not shared");
        }
    }
}

/// A task's lease member: task ids are only unique per backend.
fn task_member(backend: &str, task_id: &str) -> String {
    format!("{backend}\0{task_id}")
}

impl SharedLeases for RedisLeases {
    fn reserve(
        &self,
        caller: Arc<str>,
        request_id: Arc<str>,
        limit: usize,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<LeaseVerdict, A2aError>> {
        let (redis, script) = (self.redis.clone(), self.reserve.clone());
        // Known before the answer can arrive: binding looks the caller up here.
        self.pending.insert(request_id.clone(), caller.clone());
        let pending = self.pending.clone();
        Box::pin(async move {
            let mut invocation = script.prepare_invoke();
            invocation
                .key(redis.key(&format!("lease:{caller}")))
                .arg(format!("r:{request_id}"))
                .arg(limit)
                .arg(ttl.as_millis().max(1) as u64);
            let outcome = redis.script::<i64>(&invocation).await;
            let verdict = match outcome {
                Ok(held) if held < 0 => return Ok(LeaseVerdict::Reserved),
                Ok(held) => Err(A2aError::TooManyTasks { held: held as usize, limit }),
                Err(error) => match redis.on_unavailable {
                    OnUnavailable::FailClosed => Err(error.into()),
                    OnUnavailable::Local => {
                        tracing::warn!(%error, "shared state unavailable; counting live tasks on this replica");
                        metrics::counter!("a2a_state_degraded_total").increment(1);
                        Ok(LeaseVerdict::Local)
                    }
                },
            };
            // Refused, or counted on this replica: nothing to bind or release in Redis.
            pending.remove(&request_id);
            verdict
        })
    }

    fn release(&self, request_id: &str) {
        if let Some((request_id, caller)) = self.pending.remove(request_id) {
            self.send(Op::Release { caller, request_id });
        }
    }

    fn bind(&self, request_id: &str, backend: &str, task_id: &str) {
        if let Some((request_id, caller)) = self.pending.remove(request_id) {
            self.send(Op::Bind { caller, request_id, task: task_member(backend, task_id) });
        }
    }

    fn finish(&self, backend: &str, task_id: &str) {
        self.send(Op::Finish { task: task_member(backend, task_id) });
    }
}

/// Writes queued lease changes, as many per pipeline as have queued up, in order.
struct Writer {
    redis: Redis,
    ttl: Duration,
}

impl Writer {
    async fn run(self, mut receiver: mpsc::Receiver<Op>) {
        let (bind, finish) = (redis::Script::new(BIND), redis::Script::new(FINISH));
        let mut batch = Vec::with_capacity(BATCH);
        while receiver.recv_many(&mut batch, BATCH).await > 0 {
            let pipe = self.pipeline(&batch, &bind, &finish);
            let mut tries = 0;
            while let Err(error) = self.redis.pipeline::<()>(&pipe).await {
                tries += 1;
                if tries > RETRIES {
                    metrics::counter!("a2a_state_dropped_writes_total").increment(batch.len() as u64);
                    tracing::warn!(%error, lost = batch.len(), "could not share lease changes");
                    break;
                }
                tokio::time::sleep(RETRY_EVERY).await;
            }
            batch.clear();
        }
    }

    fn pipeline(&self, batch: &[Op], bind: &redis::Script, finish: &redis::Script) -> redis::Pipeline {
        let ttl_ms = self.ttl.as_millis().max(1) as u64;
        let mut pipe = redis::pipe();
        // Loading the scripts with each batch spares a NOSCRIPT retry after Redis restarts empty.
        pipe.cmd("SCRIPT").arg("LOAD").arg(BIND).ignore();
        pipe.cmd("SCRIPT").arg("LOAD").arg(FINISH).ignore();
        for op in batch {
            match op {
                Op::Release { caller, request_id } => {
                    pipe.cmd("ZREM").arg(self.redis.key(&format!("lease:{caller}"))).arg(format!("r:{request_id}"));
                }
                Op::Bind { caller, request_id, task } => {
                    let mut invocation = bind.prepare_invoke();
                    invocation
                        .key(self.redis.key(&format!("lease:{caller}")))
                        .key(self.redis.key(&format!("lease-task:{task}")))
                        .arg(format!("r:{request_id}"))
                        .arg(format!("t:{task}"))
                        .arg(&**caller)
                        .arg(ttl_ms);
                    pipe.invoke_script(&invocation);
                }
                Op::Finish { task } => {
                    let mut invocation = finish.prepare_invoke();
                    invocation
                        .key(self.redis.key(&format!("lease-task:{task}")))
                        .arg(self.redis.key("lease:"))
                        .arg(format!("t:{task}"))
                        .arg(TOMBSTONE.min(self.ttl).as_millis().max(1) as u64);
                    pipe.invoke_script(&invocation);
                }
            }
            pipe.ignore();
        }
        pipe
    }
}
