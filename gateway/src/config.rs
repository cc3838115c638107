//! The gateway's configuration file: YAML, `${ENV}` references for secrets, strict keys, and
//! validation that names the offending key path.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use a2a_policies::audit::AuditConfig;
use a2a_policies::auth::AuthConfig;
use a2a_policies::authorize::{Permissions, PermissionsConfig};
use a2a_policies::backend_auth::{BackendAuth, BackendAuthConfig, GatewayIdentityConfig};
use a2a_policies::concurrency::ConcurrencyConfig;
use a2a_policies::rate_limit::{RateLimitConfig, RateLimits};
use a2a_policies::validate::{InputValidation, ValidationConfig};
use serde::Deserialize;

/// Why a configuration could not be loaded. Each message names the key path it is about.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{0}")]
    Syntax(String),
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { path: path.into(), message: message.into() }
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The URL callers use to reach the gateway; the gateway's cards point there.
    /// Defaults to `http://<public listener address>` (`https://` with `listeners.tls`).
    #[serde(default)]
    pub public_url: Option<String>,
    #[serde(default)]
    pub listeners: Listeners,
    #[serde(default)]
    pub health: Health,
    #[serde(default)]
    pub routing: Routing,
    #[serde(default)]
    pub card: CardInfo,
    #[serde(default)]
    pub limits: Limits,
    /// Limits of relayed SSE streams (idle timeout, lifetime, event size), with per-skill overrides.
    #[serde(default)]
    pub streams: Streams,
    #[serde(default)]
    pub shutdown: Shutdown,
    /// How callers authenticate (bearer JWTs, API keys, token introspection). Absent → callers are
    /// anonymous, known by their network address.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Which callers may use which skills; absent → every authenticated caller may use every skill.
    #[serde(default)]
    pub permissions: Option<PermissionsConfig>,
    /// The key the gateway signs the tokens it mints for backends with (served as a JWKS).
    #[serde(default)]
    pub gateway_identity: Option<GatewayIdentityConfig>,
    /// Per-skill task deadlines (`{slow: 30s}`): a task still live after its deadline is canceled at
    /// its backend and its caller told.
    #[serde(default, with = "duration_map")]
    #[schemars(with = "std::collections::HashMap<String, a2a_core::duration::Text>")]
    pub deadlines: std::collections::HashMap<String, Duration>,
    /// Per-caller (and per-skill, global) request rate quotas.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
    /// Per-caller limits on live tasks. Read at start; a reload keeps the running limits.
    #[serde(default)]
    pub concurrency: Option<ConcurrencyConfig>,
    /// Input validation against skills' schemas, sizes, part kinds and ids.
    #[serde(default)]
    pub validation: Option<ValidationConfig>,
    /// The tamper-evident audit log. Read at start; a reload keeps the running sinks.
    #[serde(default)]
    pub audit: Option<AuditConfig>,
    /// Push notifications terminated at the gateway: callers' webhooks, screened and signed
    /// deliveries. Absent → push-config calls are refused. Read at start.
    #[serde(default)]
    pub push: Option<PushConfig>,
    /// Where state shared by replicas lives: `memory` (default) or `{redis: {...}}`. Read at start.
    #[serde(default)]
    pub state: StateConfig,
    /// Trace export (OTLP/HTTP). Read at start.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The admin API: operators' credentials and agent self-registration.
    #[serde(default)]
    pub admin: AdminConfig,
    /// The directory relative paths in the file (schema files) are resolved against.
    #[serde(skip)]
    pub base_dir: std::path::PathBuf,
    /// The file as written, `${VAR}` references unexpanded (the admin API shows it redacted).
    #[serde(skip)]
    pub document: Option<std::sync::Arc<serde_json::Value>>,
    pub backends: Vec<Backend>,
}

/// The policy sections of a configuration, compiled ([`Config::compile`]).
pub struct Policies {
    pub permissions: std::sync::Arc<Permissions>,
    /// Quotas counted in this process; the gateway attaches the shared store when there is one.
    pub rate_limits: Option<RateLimits>,
    /// Checked against the configured rules; the gateway attaches the registry's skill catalog.
    pub validation: Option<InputValidation>,
}

impl Config {
    /// Reads, expands and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
        let base_dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        Config::parse_in(&text, &|name| std::env::var(name).ok(), base_dir)
    }

    /// Parses YAML text whose relative paths are relative to `base_dir`.
    pub fn parse_in(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
        base_dir: std::path::PathBuf,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::parse_unchecked(text, env)?;
        config.base_dir = base_dir;
        config.validate()?;
        Ok(config)
    }

    /// Parses YAML text; `env` resolves `${NAME}` references inside string values. Relative paths
    /// are relative to the working directory.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        Config::parse_in(text, env, std::path::PathBuf::new())
    }

    fn parse_unchecked(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut value: yaml_serde::Value =
            yaml_serde::from_str(text).map_err(|e| ConfigError::Syntax(format!("YAML: {e}")))?;
        let document = serde_json::to_value(&value).ok().map(std::sync::Arc::new);
        expand_env(&mut value, "", env)?;
        // Through JSON: externally tagged enums (`auth: {bearer: …}`) read as plain maps there,
        // where a YAML value would want `!bearer` tags.
        let value = serde_json::to_value(&value).map_err(|e| ConfigError::Syntax(format!("YAML: {e}")))?;
        let config: Config = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            invalid(if path == "." { "(top level)".into() } else { path }, e.inner().to_string())
        })?;
        let mut config = config;
        config.document = document;
        Ok(config)
    }

    /// Checks what types alone cannot: unique and path-safe names, usable URLs, sane numbers. The
    /// policy sections that must be compiled to be checked are checked by [`Config::compile`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.streams.validate()?;
        if let Some(url) = &self.public_url {
            check_http_url("public_url", url)?;
        }
        if !(0.0..=1.0).contains(&self.routing.resolve_margin) {
            return Err(invalid("routing.resolve_margin", "must be between 0 and 1"));
        }
        if self.health.unhealthy_after == 0 {
            return Err(invalid("health.unhealthy_after", "must be at least 1"));
        }
        if self.routing.sweep_interval.is_zero() {
            return Err(invalid("routing.sweep_interval", "must be greater than zero"));
        }
        if self.routing.max_tasks == 0 {
            return Err(invalid("routing.max_tasks", "must be at least 1"));
        }
        if self.health.interval.is_zero() {
            return Err(invalid("health.interval", "must be greater than zero"));
        }
        self.listeners.protection.validate().map_err(|(path, message)| invalid(path, message))?;
        self.check_mtls()?;
        crate::client_address::TrustedProxies::parse(&self.listeners.trusted_proxies)
            .map_err(|(i, message)| invalid(format!("listeners.trusted_proxies[{i}]"), message))?;
        if self.backends.is_empty() {
            return Err(invalid("backends", "at least one backend is required"));
        }
        let mut names = HashSet::new();
        for (i, backend) in self.backends.iter().enumerate() {
            let at = |key: &str| format!("backends[{i}].{key}");
            if !is_path_safe_name(&backend.name) {
                return Err(invalid(
                    at("name"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_' (it becomes the path /agents/{name}/)",
                ));
            }
            if !names.insert(backend.name.as_str()) {
                return Err(invalid(at("name"), format!("duplicate backend name '{}'", backend.name)));
            }
            check_http_url(&at("url"), &backend.url)?;
            if !backend.card_path.starts_with('/') {
                return Err(invalid(at("card_path"), "must start with '/'"));
            }
            if let Some(tls) = &backend.tls {
                tls.validate(&at("tls"), &|name| std::env::var(name).ok()).map_err(|(path, m)| invalid(path, m))?;
                if !backend.url.starts_with("https://") {
                    return Err(invalid(at("tls"), "applies to an https:// url"));
                }
            }
            if backend.require_signed_card && backend.card_jwks.is_none() {
                return Err(invalid(
                    at("require_signed_card"),
                    "needs card_jwks: the keys the card may be signed with",
                ));
            }
            if backend.health_interval.is_some_and(|d| d.is_zero()) {
                return Err(invalid(at("health_interval"), "must be greater than zero"));
            }
            if let Some(auth) = &backend.auth {
                auth.validate(&at("auth")).map_err(|e| invalid(e.path, e.message))?;
                if backend.forward_caller_token {
                    return Err(invalid(at("forward_caller_token"), "cannot be true together with auth"));
                }
                if matches!(auth, BackendAuthConfig::MintJwt(_)) && self.gateway_identity.is_none() {
                    return Err(invalid(at("auth.mint_jwt"), "needs a gateway_identity section with the signing key"));
                }
            }
        }
        if let Some(auth) = &self.auth {
            auth.validate().map_err(|e| invalid(e.path, e.message))?;
        }
        self.admin.validate().map_err(|(path, message)| invalid(path, message))?;
        if let Some(audit) = &self.audit {
            audit.validate().map_err(|e| invalid(section("audit", &e.path), e.message))?;
        }
        if let Some(permissions) = &self.permissions {
            permissions.validate().map_err(|e| invalid(e.path, e.message))?;
            let sources = self.auth.as_ref().map(|auth| auth.tenant_sources()).unwrap_or_default();
            permissions.check_tenant_sources(&sources).map_err(|e| invalid(e.path, e.message))?;
        }
        if let Some(identity) = &self.gateway_identity {
            identity.validate().map_err(|e| invalid(e.path, e.message))?;
        }
        if self.push.as_ref().is_some_and(|p| p.enabled) && self.gateway_identity.is_none() {
            return Err(invalid("push", "needs a gateway_identity section: deliveries are signed with its key"));
        }
        if self.push.as_ref().is_some_and(|p| p.queue_size == 0 || p.timeout.is_zero()) {
            return Err(invalid("push", "queue_size and timeout must be greater than zero"));
        }
        if let Some(concurrency) = &self.concurrency {
            a2a_policies::concurrency::LiveTasks::new(concurrency).map_err(|e| invalid("concurrency", e))?;
        }
        Ok(())
    }

    /// Client certificates are asked for (`listeners.tls.client_ca`) exactly when they identify
    /// callers (`auth.mtls`): a CA list nobody reads, or a mode without CAs, is a mistake.
    fn check_mtls(&self) -> Result<(), ConfigError> {
        let cas = self.listeners.tls.as_ref().is_some_and(|tls| !tls.client_ca.is_empty());
        let mtls = self.auth.as_ref().is_some_and(|auth| auth.mtls.is_some());
        match (cas, mtls) {
            (true, false) => Err(invalid(
                "listeners.tls.client_ca",
                "client certificates are verified but identify no one: add auth.mtls (mode: required, optional or with_token)",
            )),
            (false, true) => Err(invalid(
                "auth.mtls",
                "needs listeners.tls with client_ca: the CA files client certificates are verified against",
            )),
            _ => Ok(()),
        }
    }

    /// Settings that are valid but unwise, for `check` (and the log at start) to point out.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.auth.is_some() {
            for key in self.listeners.protection.disabled() {
                warnings.push(format!(
                    "listeners.protection.{key}: turned off while auth is configured; slow or flooding clients can then hold the listener before anyone is authenticated"
                ));
            }
        }
        warnings
    }

    /// The public URL without a trailing slash.
    pub fn public_base(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None if self.listeners.tls.is_some() => format!("https://{bound}"),
            None => format!("http://{bound}"),
        }
    }
}

/// A policy module's error path, under its section of this file.
pub(crate) fn section(name: &str, path: &str) -> String {
    if path.starts_with(name) { path.to_string() } else { format!("{name}.{path}") }
}

fn is_path_safe_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn check_http_url(path: &str, url: &str) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| invalid(path, format!("not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(path, "must be an http:// or https:// URL"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid(path, "must name a host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid(path, "must not carry a query or fragment"));
    }
    Ok(())
}

/// Replaces `${NAME}` in every string of the document; `$${` stands for a literal `${`.
fn expand_env(
    value: &mut yaml_serde::Value,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    use yaml_serde::Value;
    match value {
        Value::String(s) if s.contains("${") => *s = expand_str(s, path, env)?,
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_env(item, &format!("{path}[{i}]"), env)?;
            }
        }
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                let key = key.as_str().unwrap_or("?");
                let child = if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
                expand_env(item, &child, env)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn expand_str(s: &str, path: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        if rest[..start].ends_with('$') {
            out.push_str(&rest[..start - 1]);
            out.push_str("${");
            rest = &rest[start + 2..];
            continue;
        }
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find('}') else {
            return Err(invalid(path, "unterminated ${...} reference"));
        };
        let name = &rest[start + 2..start + 2 + len];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(invalid(path, format!("'${{{name}}}' is not a valid environment variable reference")));
        }
        let value = env(name).ok_or_else(|| invalid(path, format!("environment variable {name} is not set")))?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses a duration in the file's one grammar ([`a2a_core::duration`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    a2a_core::duration::parse(text)
}

/// `#[serde(with = …)]` for the gateway's sections: the policies' duration grammar, so the whole
/// file reads durations one way.
pub use a2a_core::duration as duration_serde;
pub(crate) use a2a_core::duration::option as opt_duration;
use a2a_core::duration::{self, map as duration_map};

mod admin;
mod backend_tls;
mod listeners;
mod push;
mod sections;
mod state;
mod telemetry;

pub use self::admin::*;
pub use self::backend_tls::*;
pub use self::listeners::*;
pub use self::push::*;
pub use self::sections::*;
pub use self::state::*;
pub use self::telemetry::*;

#[cfg(test)]
mod tests;
