//! A backend's `tls:` section: its own CA bundle, a client certificate for mutual TLS, and — for
//! development only — `insecure_skip_verify`. The TLS configuration built from it is
//! [`crate::backend_tls`]'s.

use std::path::PathBuf;

use serde::Deserialize;

/// The environment variable that must be `1` for `insecure_skip_verify` to be accepted.
pub const ALLOW_INSECURE_ENV: &str = "A2A_GATEWAY_ALLOW_INSECURE_TLS";

/// How the gateway verifies (and authenticates to) one backend over TLS.
///
/// ```yaml
/// backends:
///   - name: billing
///     url: https://billing.internal:8443
///     tls:
///       ca: [/etc/a2a-gateway/agents-ca.pem]   # only these CAs vouch for the agent
///       cert: /etc/a2a-gateway/gw-client.crt   # mutual TLS to the agent (with key)
///       key: /etc/a2a-gateway/gw-client.key
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackendTls {
    /// PEM files of the CAs the agent's certificate must chain to (instead of the platform's
    /// trust store).
    #[serde(default)]
    pub ca: Vec<PathBuf>,
    /// The gateway's client certificate for this agent (PEM chain); needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// DEVELOPMENT ONLY: accept any certificate from this agent (no chain, name or expiry check),
    /// so anyone on the path can read and change the traffic. Refused unless the environment
    /// variable `A2A_GATEWAY_ALLOW_INSECURE_TLS=1` is set where the gateway (and `check`) runs.
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

impl BackendTls {
    /// Checks what types cannot (paths are read by [`BackendTls::client_config`]).
    pub fn validate(&self, path: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<(), (String, String)> {
        if self.cert.is_some() != self.key.is_some() {
            return Err((format!("{path}.key"), "cert and key go together (mutual TLS to the agent)".into()));
        }
        if self.insecure_skip_verify && env(ALLOW_INSECURE_ENV).as_deref() != Some("1") {
            return Err((
                format!("{path}.insecure_skip_verify"),
                format!(
                    "turns certificate verification off (anyone on the path can read and change the traffic); refused unless {ALLOW_INSECURE_ENV}=1 is set, for development only"
                ),
            ));
        }
        if self.insecure_skip_verify && !self.ca.is_empty() {
            return Err((format!("{path}.ca"), "has no effect with insecure_skip_verify".into()));
        }
        Ok(())
    }
}
