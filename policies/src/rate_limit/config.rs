//! The `rate_limit` section of the policy configuration and its translation into governor quotas.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::Quota;
use serde::Deserialize;

/// Rate quotas: one per caller by default, overrides for named callers, optional per-skill quotas
/// and a ceiling for the whole gateway.
///
/// ```yaml
/// rate_limit:
///   default: {per_second: 50, burst: 100}
///   callers: {"apikey:ci": {per_minute: 10, burst: 5}}
///   skills: {review-pr: {per_minute: 30, burst: 10}}
///   global: {per_second: 2000, burst: 4000}
///   max_tracked_keys: 100000
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// The quota of every caller without an override.
    #[serde(default = "default_quota")]
    pub default: QuotaConfig,
    /// Quotas for particular callers, keyed by their `Caller.id` exactly as authentication sets it
    /// (e.g. `apikey:ci`, `ip:10.0.0.7`). They replace the default quota for that caller.
    #[serde(default)]
    pub callers: BTreeMap<String, QuotaConfig>,
    /// Quotas for sending messages to a skill, counted per caller and skill, on top of the caller's
    /// own quota. Only sends count: polling a task does not use up the skill's budget.
    #[serde(default)]
    pub skills: BTreeMap<String, QuotaConfig>,
    /// One quota shared by every request the gateway admits.
    #[serde(default)]
    pub global: Option<QuotaConfig>,
    /// How many distinct callers (per quota) are tracked at most. Idle callers are evicted; beyond
    /// this bound new callers share a single bucket until idle ones make room.
    #[serde(default = "default_max_tracked_keys")]
    pub max_tracked_keys: usize,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            default: default_quota(),
            callers: BTreeMap::new(),
            skills: BTreeMap::new(),
            global: None,
            max_tracked_keys: default_max_tracked_keys(),
        }
    }
}

fn default_quota() -> QuotaConfig {
    QuotaConfig::per_second(50, 100)
}

fn default_max_tracked_keys() -> usize {
    100_000
}

/// A GCRA quota: `burst` requests at once, refilled evenly at the configured rate. Exactly one of
/// `per_second`, `per_minute`, `per_hour` is given; `burst` defaults to that count.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaConfig {
    #[serde(default)]
    pub per_second: Option<u32>,
    #[serde(default)]
    pub per_minute: Option<u32>,
    #[serde(default)]
    pub per_hour: Option<u32>,
    #[serde(default)]
    pub burst: Option<u32>,
}

impl QuotaConfig {
    pub fn per_second(rate: u32, burst: u32) -> QuotaConfig {
        QuotaConfig { per_second: Some(rate), per_minute: None, per_hour: None, burst: Some(burst) }
    }

    pub fn per_minute(rate: u32, burst: u32) -> QuotaConfig {
        QuotaConfig { per_second: None, per_minute: Some(rate), per_hour: None, burst: Some(burst) }
    }

    /// The governor quota, or what is wrong with this one (`path` names it in the message).
    pub fn quota(&self, path: &str) -> Result<Quota, ConfigError> {
        let invalid = |reason: &str| ConfigError { path: path.to_owned(), reason: reason.to_owned() };
        let (count, period) = match (self.per_second, self.per_minute, self.per_hour) {
            (Some(n), None, None) => (n, Duration::from_secs(1)),
            (None, Some(n), None) => (n, Duration::from_secs(60)),
            (None, None, Some(n)) => (n, Duration::from_secs(3600)),
            _ => return Err(invalid("give exactly one of per_second, per_minute, per_hour")),
        };
        let count = NonZeroU32::new(count).ok_or_else(|| invalid("the rate must be at least 1"))?;
        let burst = match self.burst {
            None => count,
            Some(burst) => NonZeroU32::new(burst).ok_or_else(|| invalid("burst must be at least 1"))?,
        };
        let quota = Quota::with_period(period / count.get()).ok_or_else(|| invalid("the rate is too high"))?;
        Ok(quota.allow_burst(burst))
    }
}

/// A configuration value that cannot be used, located by its key path inside the section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConfigError {
    pub path: String,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_shape() {
        let json = r#"{
            "default": {"per_second": 50, "burst": 100},
            "callers": {"alice": {"per_minute": 10, "burst": 5}},
            "skills": {"review-pr": {"per_minute": 30, "burst": 10}},
            "global": {"per_second": 2000, "burst": 4000}
        }"#;
        let config: RateLimitConfig = serde_json::from_str(json).expect("parses");
        assert_eq!(config.callers["alice"], QuotaConfig::per_minute(10, 5));
        assert_eq!(config.max_tracked_keys, 100_000);
        let quota = config.skills["review-pr"].quota("skills.review-pr").expect("valid");
        assert_eq!(quota.replenish_interval(), Duration::from_secs(2));
        assert_eq!(quota.burst_size().get(), 10);
    }

    #[test]
    fn refuses_unknown_keys_and_bad_quotas() {
        assert!(serde_json::from_str::<RateLimitConfig>(r#"{"default": {"per_second": 5, "brust": 3}}"#).is_err());
        let both = QuotaConfig { per_minute: Some(3), ..QuotaConfig::per_second(1, 1) };
        assert_eq!(both.quota("callers.bob").unwrap_err().path, "callers.bob");
        assert!(QuotaConfig::per_second(0, 1).quota("default").is_err());
        assert!(QuotaConfig::per_second(1, 0).quota("default").is_err());
        let unbursted = QuotaConfig { burst: None, ..QuotaConfig::per_minute(6, 1) };
        assert_eq!(unbursted.quota("x").expect("valid").burst_size().get(), 6);
    }
}
