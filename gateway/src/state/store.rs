//! The Redis connection: one multiplexed, self-reconnecting connection (redis' `ConnectionManager`,
//! created lazily so a gateway starts while Redis is down), and every call bounded by the
//! configured timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, IntoConnectionInfo};

use super::{OnUnavailable, RedisConfig, StoreError};

#[derive(Clone)]
pub struct Redis {
    connection: ConnectionManager,
    prefix: String,
    timeout: Duration,
    pub on_unavailable: OnUnavailable,
    /// Whether the last call (or ping) got an answer: readiness reads it without a round trip.
    reachable: Arc<AtomicBool>,
}

impl Redis {
    /// Connects lazily: nothing is sent until the first call. Must run inside the tokio runtime.
    pub fn new(config: &RedisConfig) -> anyhow::Result<Redis> {
        let url = match config.url.strip_prefix("redis://") {
            Some(rest) if config.tls => format!("rediss://{rest}"),
            _ => config.url.clone(),
        };
        let mut info = url
            .as_str()
            .into_connection_info()
            .map_err(|e| anyhow::anyhow!("state.redis.url: not a Redis URL ({:?})", e.kind()))?;
        let mut settings = info.redis_settings().clone();
        if let Some(username) = &config.username {
            settings = settings.set_username(username);
        }
        if let Some(password) = &config.password {
            settings = settings.set_password(password.expose());
        }
        info = info.set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(|e| anyhow::anyhow!("state.redis: {:?}", e.kind()))?;
        // Reconnects are retried by our callers (each call is one attempt, bounded by `timeout`):
        // the manager itself retries a connect only briefly, so that a call never waits past it.
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(100));
        let connection = ConnectionManager::new_lazy_with_config(client, manager_config)
            .map_err(|e| anyhow::anyhow!("state.redis: {:?}", e.kind()))?;
        Ok(Redis {
            connection,
            prefix: config.key_prefix.clone(),
            timeout: config.timeout,
            on_unavailable: config.on_unavailable,
            // Unknown until the first answer: not ready before Redis has been reached once.
            reachable: Arc::new(AtomicBool::new(false)),
        })
    }

    /// `prefix` + `name`: every key the gateway writes.
    pub fn key(&self, name: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + name.len());
        key.push_str(&self.prefix);
        key.push_str(name);
        key
    }

    /// The longest one call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs a command within the timeout.
    pub async fn query<T: FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.settle(tokio::time::timeout(self.timeout, command.query_async(&mut connection)).await)
    }

    /// Runs a pipeline (one round trip) within the timeout.
    pub async fn pipeline<T: FromRedisValue>(&self, pipe: &redis::Pipeline) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.settle(tokio::time::timeout(self.timeout, pipe.query_async(&mut connection)).await)
    }

    /// Runs a script (EVALSHA, loading it on first use) within the timeout.
    pub async fn script<T: FromRedisValue>(&self, invocation: &redis::ScriptInvocation<'_>) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.settle(tokio::time::timeout(self.timeout, invocation.invoke_async(&mut connection)).await)
    }

    /// A call's outcome, noting whether Redis answered (an error reply is an answer).
    fn settle<T>(&self, outcome: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>) -> Result<T, StoreError> {
        let result = match outcome {
            Ok(result) => result.map_err(StoreError::from),
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        };
        let answered = match &result {
            Ok(_) => true,
            Err(StoreError::Redis(error)) => {
                !(error.is_io_error()
                    || error.is_timeout()
                    || error.is_connection_dropped()
                    || error.is_connection_refusal())
            }
            Err(_) => false,
        };
        self.reachable.store(answered, Ordering::Relaxed);
        result
    }

    /// Whether Redis answered the last call or ping (for `/readyz`).
    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// Pings Redis every `every` until `stop`, so that reachability is known while no call needs it.
    pub fn spawn_pinger(&self, every: Duration, stop: tokio_util::sync::CancellationToken) {
        let redis = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = ticker.tick() => {
                        if let Err(error) = redis.ping().await {
                            tracing::debug!(%error, "shared state store unreachable");
                        }
                    }
                }
            }
        });
    }

    /// Whether Redis answers a PING now (for `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let pong: String = self.query(&redis::cmd("PING")).await?;
        if pong == "PONG" { Ok(()) } else { Err(StoreError::Corrupt(pong)) }
    }

    /// The 32-byte key of ListTasks page tokens: set once by whichever replica comes first.
    pub async fn shared_page_key(&self) -> Result<[u8; 32], StoreError> {
        let key = self.key("page-token-key");
        let mut fresh = [0u8; 32];
        fresh[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        fresh[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(&key).arg(hex::encode(fresh)).arg("NX").ignore().cmd("GET").arg(&key);
        let (stored,): (String,) = self.pipeline(&pipe).await?;
        let bytes = hex::decode(&stored).map_err(|_| StoreError::Corrupt("page token key".into()))?;
        bytes.try_into().map_err(|_| StoreError::Corrupt("page token key".into()))
    }
}
