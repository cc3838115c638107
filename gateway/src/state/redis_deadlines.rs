//! Per-skill task deadlines in Redis, so that a task is canceled at its deadline even when the
//! replica that saw it has died.
//!
//! Keys (under the configured prefix): `deadlines` a sorted set of watched tasks
//! (`{backend}\0{task}`) scored by their due time (Redis' clock, ms); `deadline-facts` a hash from
//! the same member to what canceling needs (task, backend, skill, deadline, caller; JSON);
//! `deadline-sweeper` the sweep lease (a replica id, with expiry).
//!
//! The replica watching a task claims it at its due time (ZREM: whoever removes the member
//! cancels). Every replica also runs a sweep: the one holding the lease (taken with SET NX PX,
//! renewed while it lives, so another takes over when it dies) claims, in the same script, every
//! entry overdue by a grace period — tasks whose own replica did not claim them. A claim is atomic,
//! so exactly one replica cancels a task. Watching, ending and claiming go through one queue in
//! order (a claim never overtakes its task's watch), pipelined off the request path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::{AuthMethod, Caller};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::{Redis, StoreError};
use crate::deadlines::{Expired, SharedDeadlines};

/// KEYS: due set, facts; ARGV: member, due in ms, facts. The first watch of a task wins.
const WATCH: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'NX', string.format('%d', now + tonumber(ARGV[2])), ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
return 1
";

/// KEYS: due set, facts; ARGV: member. 1 when this call removed it (the caller cancels).
const CLAIM: &str = r"
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
return 0
";

/// KEYS: lease, due set, facts; ARGV: replica id, lease ms, grace ms, most claimed. Takes or renews
/// the lease; its holder claims the entries overdue by the grace and gets their facts.
const SWEEP: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return false end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now - tonumber(ARGV[3])), 'LIMIT', 0, tonumber(ARGV[4]))
local claimed = {}
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[2], member)
  local facts = redis.call('HGET', KEYS[3], member)
  redis.call('HDEL', KEYS[3], member)
  if facts then table.insert(claimed, facts) end
end
return claimed
";

const QUEUE: usize = 16_384;
const BATCH: usize = 256;
/// How long the sweep lease lasts without renewal (a dead sweeper is replaced after it).
const LEASE: Duration = Duration::from_secs(5);
/// How far past its due time an entry must be before the sweeper takes it from its own replica.
const GRACE: Duration = Duration::from_secs(2);
/// The most entries one sweep claims.
const SWEEP_BATCH: usize = 100;
/// A failed batch of watches is retried this often, this many times.
const RETRY_EVERY: Duration = Duration::from_millis(500);
const RETRIES: usize = 20;

enum Op {
    Watch { member: String, facts: String, due: Instant },
    End { member: String },
    Claim { member: String, reply: oneshot::Sender<Result<bool, StoreError>> },
}

pub struct RedisDeadlines {
    redis: Redis,
    queue: mpsc::Sender<Op>,
    sweep: Arc<redis::Script>,
    /// This replica's id in the sweep lease.
    me: String,
}

impl RedisDeadlines {
    /// The store and its writer, which ends when the store is dropped.
    pub fn new(redis: Redis) -> Arc<RedisDeadlines> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(Writer { redis: redis.clone() }.run(receiver));
        Arc::new(RedisDeadlines {
            redis,
            queue,
            sweep: Arc::new(redis::Script::new(SWEEP)),
            me: uuid::Uuid::new_v4().to_string(),
        })
    }

    fn send(&self, op: Op) -> bool {
        if self.queue.try_send(op).is_err() {
            metrics::counter!("a2a_state_dropped_writes_total").increment(1);
            tracing::warn!("shared state writer is behind; a deadline change was not shared");
            return false;
        }
        true
    }
}

fn member(backend: &str, task_id: &str) -> String {
    format!("{backend}\0{task_id}")
}

impl SharedDeadlines for RedisDeadlines {
    fn watch(&self, expired: &Expired, due: Instant) {
        let facts = Facts::from(expired);
        let Ok(facts) = serde_json::to_string(&facts) else { return };
        self.send(Op::Watch { member: member(&expired.backend, &expired.task_id), facts, due });
    }

    fn ended(&self, backend: &str, task_id: &str) {
        self.send(Op::End { member: member(backend, task_id) });
    }

    fn claim(&self, backend: &str, task_id: &str) -> BoxFuture<'static, Result<bool, StoreError>> {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(Op::Claim { member: member(backend, task_id), reply });
        let timeout = self.redis.timeout() * 4;
        Box::pin(async move {
            if !sent {
                return Err(StoreError::Timeout(timeout));
            }
            match tokio::time::timeout(timeout, answer).await {
                Ok(Ok(result)) => result,
                _ => Err(StoreError::Timeout(timeout)),
            }
        })
    }

    fn sweep(&self) -> BoxFuture<'static, Result<Vec<Expired>, StoreError>> {
        let (redis, script, me) = (self.redis.clone(), self.sweep.clone(), self.me.clone());
        Box::pin(async move {
            let mut invocation = script.prepare_invoke();
            invocation
                .key(redis.key("deadline-sweeper"))
                .key(redis.key("deadlines"))
                .key(redis.key("deadline-facts"))
                .arg(me)
                .arg(LEASE.as_millis() as u64)
                .arg(GRACE.as_millis() as u64)
                .arg(SWEEP_BATCH);
            // Nil (another replica holds the lease) reads as no entries.
            let claimed: Option<Vec<String>> = redis.script(&invocation).await?;
            Ok(claimed
                .unwrap_or_default()
                .iter()
                .filter_map(|facts| match serde_json::from_str::<Facts>(facts) {
                    Ok(facts) => Some(facts.into()),
                    Err(error) => {
                        tracing::warn!(%error, "unreadable deadline entry in the shared store; skipped");
                        None
                    }
                })
                .collect())
        })
    }
}

/// Writes queued changes in order, as many per pipeline as have queued up.
struct Writer {
    redis: Redis,
}

impl Writer {
    async fn run(self, mut receiver: mpsc::Receiver<Op>) {
        let (watch, claim) = (redis::Script::new(WATCH), redis::Script::new(CLAIM));
        let mut batch = Vec::with_capacity(BATCH);
        while receiver.recv_many(&mut batch, BATCH).await > 0 {
            let mut tries = 0;
            loop {
                let (pipe, claims) = self.pipeline(&mut batch, &watch, &claim);
                match self.redis.pipeline::<Vec<i64>>(&pipe).await {
                    Ok(results) => {
                        for (reply, result) in claims.into_iter().zip(results) {
                            let _ = reply.send(Ok(result == 1));
                        }
                        break;
                    }
                    Err(error) => {
                        // A claim waits for nobody: its caller decides what a failure means.
                        for reply in claims {
                            let _ = reply.send(Err(StoreError::Corrupt(format!("claim failed: {error}"))));
                        }
                        tries += 1;
                        if tries > RETRIES || batch.is_empty() {
                            if !batch.is_empty() {
                                metrics::counter!("a2a_state_dropped_writes_total").increment(batch.len() as u64);
                                tracing::warn!(%error, lost = batch.len(), "could not share deadline changes");
                            }
                            break;
                        }
                        tokio::time::sleep(RETRY_EVERY).await;
                    }
                }
            }
            batch.clear();
        }
    }

    /// The pipeline for `batch`, taking its claims out (their replies, in order); watches and ends
    /// stay in `batch` for a retry.
    fn pipeline(
        &self,
        batch: &mut Vec<Op>,
        watch: &redis::Script,
        claim: &redis::Script,
    ) -> (redis::Pipeline, Vec<oneshot::Sender<Result<bool, StoreError>>>) {
        let (due, facts) = (self.redis.key("deadlines"), self.redis.key("deadline-facts"));
        let mut pipe = redis::pipe();
        // Loading the scripts with each batch spares a NOSCRIPT retry after Redis restarts empty.
        pipe.cmd("SCRIPT").arg("LOAD").arg(WATCH).ignore();
        pipe.cmd("SCRIPT").arg("LOAD").arg(CLAIM).ignore();
        let mut replies = Vec::new();
        let now = Instant::now();
        for op in std::mem::take(batch) {
            match op {
                Op::Watch { member, facts: json, due: at } => {
                    let mut invocation = watch.prepare_invoke();
                    let due_in = at.saturating_duration_since(now).as_millis() as u64;
                    invocation.key(&due).key(&facts).arg(&member).arg(due_in).arg(&json);
                    pipe.invoke_script(&invocation).ignore();
                    batch.push(Op::Watch { member, facts: json, due: at });
                }
                Op::End { member } => {
                    pipe.cmd("ZREM").arg(&due).arg(&member).ignore();
                    pipe.cmd("HDEL").arg(&facts).arg(&member).ignore();
                    batch.push(Op::End { member });
                }
                Op::Claim { member, reply } => {
                    let mut invocation = claim.prepare_invoke();
                    invocation.key(&due).key(&facts).arg(&member);
                    pipe.invoke_script(&invocation);
                    replies.push(reply);
                }
            }
        }
        (pipe, replies)
    }
}

/// What canceling a task needs, as stored.
#[derive(Serialize, Deserialize)]
struct Facts {
    t: String,
    b: String,
    k: String,
    /// The deadline, ms.
    d: u64,
    c: Option<CallerFacts>,
}

/// A caller as stored (for deadlines and push configs).
#[derive(Serialize, Deserialize)]
pub(crate) struct CallerFacts {
    id: String,
    tenant: Option<String>,
    scopes: Vec<String>,
    /// `jwt`, `api-key`, `introspection`, `mtls` or `anonymous`, with the issuer or key id in `by`.
    auth: String,
    by: Option<String>,
}

impl From<&Caller> for CallerFacts {
    fn from(caller: &Caller) -> CallerFacts {
        let (auth, by) = match &caller.auth {
            AuthMethod::Jwt { issuer } => ("jwt", Some(issuer.to_string())),
            AuthMethod::ApiKey { key_id } => ("api-key", Some(key_id.to_string())),
            AuthMethod::Introspection => ("introspection", None),
            AuthMethod::Mtls => ("mtls", None),
            AuthMethod::Anonymous => ("anonymous", None),
        };
        CallerFacts {
            id: caller.id.to_string(),
            tenant: caller.tenant.as_deref().map(str::to_owned),
            scopes: caller.scopes.to_vec(),
            auth: auth.into(),
            by,
        }
    }
}

impl CallerFacts {
    pub(crate) fn into_caller(self) -> Caller {
        let by: Arc<str> = Arc::from(self.by.unwrap_or_default());
        Caller {
            id: Arc::from(self.id),
            tenant: self.tenant.map(Arc::from),
            scopes: Arc::from(self.scopes),
            auth: match self.auth.as_str() {
                "jwt" => AuthMethod::Jwt { issuer: by },
                "api-key" => AuthMethod::ApiKey { key_id: by },
                "introspection" => AuthMethod::Introspection,
                "mtls" => AuthMethod::Mtls,
                _ => AuthMethod::Anonymous,
            },
        }
    }
}

impl From<&Expired> for Facts {
    fn from(expired: &Expired) -> Facts {
        Facts {
            t: expired.task_id.clone(),
            b: expired.backend.to_string(),
            k: expired.skill.clone(),
            d: expired.deadline.as_millis() as u64,
            c: expired.caller.as_ref().map(CallerFacts::from),
        }
    }
}

impl From<Facts> for Expired {
    fn from(facts: Facts) -> Expired {
        let caller = facts.c.map(CallerFacts::into_caller);
        Expired {
            task_id: facts.t,
            backend: Arc::from(facts.b),
            caller,
            skill: facts.k,
            deadline: Duration::from_millis(facts.d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_keep_the_caller_whole() {
        let expired = Expired {
            task_id: "t1".into(),
            backend: Arc::from("slow"),
            caller: Some(Caller {
                id: Arc::from("jwt:https://idp/|alice"),
                tenant: Some(Arc::from("acme")),
                scopes: Arc::from(vec!["a2a:send".to_owned()]),
                auth: AuthMethod::Jwt { issuer: Arc::from("https://idp/") },
            }),
            skill: "slow".into(),
            deadline: Duration::from_secs(3),
        };
        let json = serde_json::to_string(&Facts::from(&expired)).unwrap();
        let back: Expired = serde_json::from_str::<Facts>(&json).unwrap().into();
        assert_eq!((back.task_id, back.caller, back.deadline), (expired.task_id, expired.caller, expired.deadline));
    }
}
