//! Rate quotas in Redis: one GCRA bucket per key, checked and counted by one Lua script, so that the
//! replicas together grant exactly one quota. Redis' clock (`TIME`) is the only clock, so replicas'
//! clocks need not agree.
//!
//! Keys (under the configured prefix): `rl:{bucket}` holds the bucket's theoretical arrival time in
//! microseconds and expires when the bucket has refilled. A request's buckets (its caller's and the
//! global one) are checked in one call: with Redis Cluster they must share a slot — use a
//! hash-tagged prefix such as `{a2a}:`.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::A2aError;
use a2a_policies::rate_limit::{SharedCheck, SharedQuotas, Verdict};
use futures::future::BoxFuture;

use super::{OnUnavailable, Redis};

/// KEYS: the buckets in order; ARGV: (interval µs, burst) per bucket. Returns {index, wait µs} of
/// the first refusal, or {-1, 0}. Numbers are written with `%d`: Lua's default formatting would
/// round a microsecond timestamp.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local new_tat = tat + interval
  local allow_at = new_tat - burst * interval
  if allow_at > now then
    return {i - 1, string.format('%d', allow_at - now)}
  end
  local ttl_ms = math.max(1, math.ceil((new_tat - now) / 1000))
  redis.call('SET', key, string.format('%d', new_tat), 'PX', string.format('%d', ttl_ms))
end
return {-1, '0'}
";

pub struct RedisQuotas {
    redis: Redis,
    script: Arc<redis::Script>,
}

impl RedisQuotas {
    pub fn new(redis: Redis) -> Arc<RedisQuotas> {
        Arc::new(RedisQuotas { redis, script: Arc::new(redis::Script::new(GCRA)) })
    }
}

impl SharedQuotas for RedisQuotas {
    fn check(&self, checks: Vec<SharedCheck>) -> BoxFuture<'static, Result<Verdict, A2aError>> {
        let (redis, script) = (self.redis.clone(), self.script.clone());
        Box::pin(async move {
            let mut invocation = script.prepare_invoke();
            for check in &checks {
                invocation.key(redis.key(&format!("rl:{}", check.key)));
                invocation.arg(check.interval.as_micros().max(1) as u64).arg(check.burst);
            }
            match redis.script::<(i64, String)>(&invocation).await {
                Ok((index, _)) if index < 0 => Ok(Verdict::Admitted),
                Ok((index, wait)) => Ok(Verdict::Refused {
                    index: index as usize,
                    retry_after: Duration::from_micros(wait.parse().unwrap_or(0)),
                }),
                Err(error) => match redis.on_unavailable {
                    OnUnavailable::FailClosed => Err(error.into()),
                    OnUnavailable::Local => {
                        tracing::warn!(%error, "shared state unavailable; metering with this replica's quotas");
                        metrics::counter!("a2a_state_degraded_total").increment(1);
                        Ok(Verdict::Local)
                    }
                },
            }
        })
    }
}
