//! The `state` section: where state shared by replicas lives ([`crate::state`]).

use std::time::Duration;

use serde::Deserialize;

/// The `state` section.
///
/// ```yaml
/// state:
///   redis:
///     url: redis://redis:6379/0        # rediss:// for TLS
///     username: gateway                # ACL user (optional)
///     password: ${REDIS_PASSWORD}
///     key_prefix: "a2a:"
///     timeout: 250ms
///     on_unavailable: fail_closed      # or: local
///     page_token_secret: ${PAGE_TOKEN_SECRET}
/// ```
#[derive(Debug, Clone, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StateConfig {
    /// State lives in this process only (a single replica).
    #[default]
    Memory,
    /// State shared by every replica through one Redis.
    Redis(RedisConfig),
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://host:port/db` or `rediss://…` (TLS, verified against the system's roots).
    pub url: String,
    /// ACL user; `password` alone authenticates as `default`.
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<a2a_policies::secret::Secret>,
    /// Requires TLS: a `redis://` URL is upgraded to `rediss://`.
    #[serde(default)]
    pub tls: bool,
    /// Prepended to every key, so that several gateways can share one Redis.
    #[serde(default = "default_prefix")]
    pub key_prefix: String,
    /// The longest any Redis call may take (connecting included) before the call fails.
    #[serde(default = "default_timeout", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub timeout: Duration,
    /// What calls that need shared state do while Redis is unreachable.
    #[serde(default)]
    pub on_unavailable: OnUnavailable,
    /// The secret ListTasks page tokens are derived from. Absent → a random key stored once in
    /// Redis (SET NX) and read by every replica at start.
    #[serde(default)]
    pub page_token_secret: Option<a2a_policies::secret::Secret>,
}

fn default_prefix() -> String {
    "a2a:".into()
}

fn default_timeout() -> Duration {
    Duration::from_millis(500)
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnUnavailable {
    /// Refuse with a retryable `UNAVAILABLE` error (HTTP 503, `Retry-After`).
    #[default]
    FailClosed,
    /// Answer from what this replica knows, counting each such answer in
    /// `a2a_state_degraded_total`: tasks created through other replicas are not found meanwhile.
    Local,
}
