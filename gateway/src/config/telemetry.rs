//! The `telemetry:` section: where traces are exported ([`crate::telemetry`]).

use std::time::Duration;

use serde::Deserialize;

/// `telemetry:` in the configuration.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// OTLP/HTTP base URL of the collector (`http://127.0.0.1:4318`); spans go to `/v1/traces`.
    /// Absent: no spans are exported (and `traceparent` passes through unchanged).
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    #[serde(default = "default_service_name")]
    pub service_name: String,
    /// How often finished spans are sent.
    #[serde(default = "default_export_interval", with = "crate::config::duration_serde")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub export_interval: Duration,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: default_service_name(),
            export_interval: default_export_interval(),
        }
    }
}

fn default_service_name() -> String {
    "a2a-gateway".into()
}
fn default_export_interval() -> Duration {
    Duration::from_secs(1)
}
