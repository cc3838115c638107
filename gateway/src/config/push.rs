//! The `push:` section: webhook screening, delivery attempts and limits of push notifications
//! ([`crate::push`]).

use std::time::Duration;

use serde::Deserialize;

use crate::screen::{AllowRule, ScreenPolicy};

/// The `push:` section. Read at start; a reload keeps the running settings.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// Push-notification configs are accepted (and the card says `pushNotifications: true`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Webhooks may be `http` URLs (otherwise `https` only).
    #[serde(default)]
    pub allow_http: bool,
    /// Networks (`10.1.0.0/16`) and address:ports (`127.0.0.1:9000`) webhooks may be at though
    /// they are not globally routable.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<AllowRule>,
    /// Time for one delivery attempt (connect, send, answer).
    #[serde(default = "default_timeout", with = "crate::config::duration_serde")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub timeout: Duration,
    /// Further attempts after a failed one (exponential backoff with jitter).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// The first retry's delay; each further one doubles it.
    #[serde(default = "default_backoff", with = "crate::config::duration_serde")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub backoff: Duration,
    /// Deliveries one caller may have waiting or in flight; past it they are dead-lettered.
    #[serde(default = "default_queue_size")]
    pub queue_size: usize,
    /// Configs one caller may register per task.
    #[serde(default = "default_max_configs")]
    pub max_configs_per_task: usize,
    /// The longest pause between two polls of a task the gateway does not see progressing.
    #[serde(default = "default_poll_max", with = "crate::config::duration_serde")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub poll_max: Duration,
}

fn yes() -> bool {
    true
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_retries() -> u32 {
    3
}
fn default_backoff() -> Duration {
    Duration::from_millis(500)
}
fn default_queue_size() -> usize {
    64
}
fn default_max_configs() -> usize {
    8
}
fn default_poll_max() -> Duration {
    Duration::from_secs(30)
}

impl PushConfig {
    pub fn screen_policy(&self) -> ScreenPolicy {
        ScreenPolicy { allow_http: self.allow_http, allow: self.allow.clone() }
    }
}
