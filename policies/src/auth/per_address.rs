//! Limits per source address before any credential is checked: an optional request quota, and a
//! quota of failed authentications. An address over its failure quota is refused with 429 — without
//! parsing its token, calling the identity provider or fetching keys — until its quota allows
//! another attempt, so a flood of made-up tokens costs the gateway and the IdP almost nothing.
//!
//! Keys are [`ClientAddress::limit_key`]s (IPv6 by /64); memory is bounded like the rate limits.

use std::net::IpAddr;
use std::time::Duration;

use dashmap::DashMap;
use governor::clock::Clock;
use serde::Deserialize;

use crate::rate_limit::{Instant, Keyed, QuotaConfig, TokioClock, human};
use a2a_core::A2aError;

/// `auth.per_address`.
///
/// ```yaml
/// auth:
///   per_address:
///     failures: {per_minute: 30, burst: 10}   # default; null turns it off
///     requests: {per_second: 200, burst: 400} # off unless given
///     max_tracked_addresses: 100000
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerAddressConfig {
    /// Failed authentications (a credential was presented and refused) allowed per address.
    #[serde(default = "default_failures")]
    pub failures: Option<QuotaConfig>,
    /// Requests per address, before authentication.
    #[serde(default)]
    pub requests: Option<QuotaConfig>,
    #[serde(default = "default_max_tracked")]
    pub max_tracked_addresses: usize,
}

impl Default for PerAddressConfig {
    fn default() -> Self {
        PerAddressConfig { failures: default_failures(), requests: None, max_tracked_addresses: default_max_tracked() }
    }
}

fn default_failures() -> Option<QuotaConfig> {
    Some(QuotaConfig::per_minute(30, 10))
}
fn default_max_tracked() -> usize {
    100_000
}

pub(crate) struct PerAddress {
    requests: Option<Keyed<IpAddr>>,
    failures: Option<Keyed<IpAddr>>,
    /// Addresses over their failure quota, and when they may try again.
    blocked: DashMap<IpAddr, Instant>,
    max_blocked: usize,
}

impl PerAddress {
    pub(crate) fn new(config: &PerAddressConfig) -> Result<PerAddress, (String, String)> {
        let max = config.max_tracked_addresses.max(1);
        let keyed = |quota: &Option<QuotaConfig>, key: &str| -> Result<Option<Keyed<IpAddr>>, (String, String)> {
            match quota {
                Some(quota) => {
                    let path = format!("auth.per_address.{key}");
                    let quota = quota.quota(&path).map_err(|e| (e.path, e.reason))?;
                    Ok(Some(Keyed::new(quota, max)))
                }
                None => Ok(None),
            }
        };
        Ok(PerAddress {
            requests: keyed(&config.requests, "requests")?,
            failures: keyed(&config.failures, "failures")?,
            blocked: DashMap::new(),
            max_blocked: max,
        })
    }

    /// Whether a request from `address` may be authenticated at all.
    pub(crate) fn admit(&self, address: IpAddr) -> Result<(), A2aError> {
        let now = TokioClock.now();
        if let Some(until) = self.blocked.get(&address).map(|until| *until) {
            if until > now {
                return Err(refusal("too many failed authentications from your address", until - now));
            }
            self.blocked.remove_if(&address, |_, until| *until <= now);
        }
        if let Some(requests) = &self.requests {
            requests.check(&address).map_err(|until| {
                refusal("too many requests from your address", until.wait_time_from(TokioClock.now()))
            })?;
        }
        Ok(())
    }

    /// Counts a failed authentication; past the quota the address is refused until it conforms.
    pub(crate) fn failed(&self, address: IpAddr) {
        let Some(failures) = &self.failures else { return };
        if let Err(until) = failures.check(&address) {
            let now = TokioClock.now();
            if self.blocked.len() >= self.max_blocked {
                self.blocked.retain(|_, until| *until > now);
                if self.blocked.len() >= self.max_blocked {
                    return;
                }
            }
            self.blocked.insert(address, now + until.wait_time_from(now));
        }
    }
}

fn refusal(what: &str, wait: Duration) -> A2aError {
    let wait = wait.max(Duration::from_millis(1));
    A2aError::RateLimited { message: format!("{what}; retry after {}", human(wait)), retry_after: wait }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_address_over_its_failure_quota_is_refused_until_it_conforms() {
        let config = PerAddressConfig { failures: Some(QuotaConfig::per_second(1, 3)), ..Default::default() };
        let limits = PerAddress::new(&config).unwrap();
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..3 {
            limits.admit(a).unwrap();
            limits.failed(a);
        }
        limits.admit(a).unwrap();
        limits.failed(a); // the fourth failure is over the burst
        let Err(A2aError::RateLimited { retry_after, .. }) = limits.admit(a) else { panic!("not refused") };
        assert!(retry_after <= Duration::from_secs(1), "{retry_after:?}");
        limits.admit(b).expect("another address is not affected");
        tokio::time::advance(retry_after).await;
        limits.admit(a).expect("admitted again once the quota allows a try");
    }

    #[tokio::test(start_paused = true)]
    async fn the_request_quota_is_per_address() {
        let config = PerAddressConfig { requests: Some(QuotaConfig::per_second(1, 2)), ..Default::default() };
        let limits = PerAddress::new(&config).unwrap();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(limits.admit(a).is_ok() && limits.admit(a).is_ok());
        assert!(matches!(limits.admit(a), Err(A2aError::RateLimited { .. })));
        assert!(limits.admit("192.0.2.9".parse().unwrap()).is_ok());
    }
}
