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

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { path: path.into(), message: message.into() }
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The URL callers use to reach the gateway; the gateway's cards point there.
    /// Defaults to `http://<public listener address>`.
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
    #[schemars(with = "std::collections::HashMap<String, a2a_policies::duration::Text>")]
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
    pub push: Option<crate::push::PushConfig>,
    /// Where state shared by replicas lives: `memory` (default) or `{redis: {...}}`. Read at start.
    #[serde(default)]
    pub state: crate::state::StateConfig,
    /// Trace export (OTLP/HTTP). Read at start.
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryConfig,
    /// The admin API: operators' credentials and agent self-registration.
    #[serde(default)]
    pub admin: crate::admin::AdminConfig,
    /// The directory relative paths in the file (schema files) are resolved against.
    #[serde(skip)]
    pub base_dir: std::path::PathBuf,
    /// The file as written, `${VAR}` references unexpanded (the admin API shows it redacted).
    #[serde(skip)]
    pub document: Option<std::sync::Arc<serde_json::Value>>,
    pub backends: Vec<Backend>,
}

/// Graceful shutdown on SIGTERM / SIGINT.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shutdown {
    /// How long the gateway keeps accepting calls after SIGTERM while `/readyz` already fails, so
    /// that load balancers stop sending before the listener closes (a second signal ends it early).
    #[serde(default, with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub unready_delay: Duration,
    /// How long in-flight calls and open streams may take to finish before the gateway ends them
    /// (streams with a terminal event, waiting calls with an error).
    #[serde(default = "default_drain_timeout", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub drain_timeout: Duration,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown { unready_delay: Duration::ZERO, drain_timeout: default_drain_timeout() }
    }
}

fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Listeners {
    /// Address of the public A2A listener.
    #[serde(default = "default_public_listener")]
    pub public: SocketAddr,
    /// Address of the admin listener (`/healthz`, `/readyz`, `/metrics`); `null` turns it off.
    /// Loopback by default: it is for the operator, not for callers.
    #[serde(default = "default_admin_listener")]
    pub admin: Option<SocketAddr>,
    /// Timeouts and caps of the public listener (on by default).
    #[serde(default)]
    pub protection: crate::listener::Protection,
    /// Proxies (addresses or CIDRs) whose `Forwarded` / `X-Forwarded-For` headers name the caller's
    /// address. Anyone else's forwarding headers are ignored.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Serve the A2A gRPC binding on the public listener (HTTP/2, `content-type: application/grpc`)
    /// and list it on the cards. On by default.
    #[serde(default = "default_true")]
    pub grpc: bool,
}

fn default_true() -> bool {
    true
}

impl Default for Listeners {
    fn default() -> Self {
        Listeners {
            public: default_public_listener(),
            admin: default_admin_listener(),
            protection: Default::default(),
            trusted_proxies: Vec::new(),
            grpc: true,
        }
    }
}

impl Listeners {
    /// The parsed `trusted_proxies` (validated with the configuration).
    pub fn trusted(&self) -> crate::listener::TrustedProxies {
        crate::listener::TrustedProxies::parse(&self.trusted_proxies).unwrap_or_default()
    }
}

fn default_admin_listener() -> Option<SocketAddr> {
    Some(SocketAddr::from(([127, 0, 0, 1], 9090)))
}

fn default_public_listener() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}

/// How the registry checks backends: it fetches each card every `interval`; `unhealthy_after`
/// failures in a row take a backend out of routing and the card until a fetch succeeds again.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    #[serde(default = "default_health_interval", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub interval: Duration,
    #[serde(default = "default_health_timeout", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub timeout: Duration,
    #[serde(default = "default_unhealthy_after")]
    pub unhealthy_after: u32,
    /// A backend ejected by `unhealthy_after` failed requests in a row stays out this long (doubling
    /// at each failed probe, up to 5 minutes) before one real request at a time probes it; a
    /// successful card fetch does not bring it back, a successful request does.
    #[serde(default = "default_ejection_time", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub ejection_time: Duration,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            interval: default_health_interval(),
            timeout: default_health_timeout(),
            unhealthy_after: default_unhealthy_after(),
            ejection_time: default_ejection_time(),
        }
    }
}

fn default_ejection_time() -> Duration {
    Duration::from_secs(10)
}

fn default_health_interval() -> Duration {
    Duration::from_secs(10)
}
fn default_health_timeout() -> Duration {
    Duration::from_secs(3)
}
fn default_unhealthy_after() -> u32 {
    3
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    /// Skill used for a new task on the unified endpoint that names no skill and no known context.
    #[serde(default)]
    pub default_skill: Option<String>,
    /// How the skill of a message that names none is found: `explicit` (never), `single` (the one
    /// skill that fits) or `lexical` (also a clear best match of the message's words).
    #[serde(default)]
    pub resolve: crate::resolve::ResolveMode,
    /// How far ahead of the runner-up a lexical match must be, as a share of its score (0–1).
    #[serde(default = "default_resolve_margin")]
    pub resolve_margin: f32,
    /// How long the task directory remembers a task after its last sighting.
    #[serde(default = "default_task_ttl", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub task_ttl: Duration,
    /// How often the task directory forgets tasks past `task_ttl` (see `a2a_task_directory_entries`).
    #[serde(default = "default_sweep_interval", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub sweep_interval: Duration,
    /// Whether a task belongs to the caller that created it or to the caller's tenant.
    #[serde(default)]
    pub isolation: crate::routing::Isolation,
}

impl Default for Routing {
    fn default() -> Self {
        Routing {
            default_skill: None,
            resolve: Default::default(),
            resolve_margin: default_resolve_margin(),
            task_ttl: default_task_ttl(),
            sweep_interval: default_sweep_interval(),
            isolation: Default::default(),
        }
    }
}

fn default_resolve_margin() -> f32 {
    0.3
}

fn default_task_ttl() -> Duration {
    Duration::from_secs(24 * 3600)
}

fn default_sweep_interval() -> Duration {
    Duration::from_secs(60)
}

/// What the gateway's own card says about itself.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CardInfo {
    #[serde(default = "default_card_name")]
    pub name: String,
    #[serde(default = "default_card_description")]
    pub description: String,
    #[serde(default = "default_card_version")]
    pub version: String,
    #[serde(default)]
    pub provider: Option<Provider>,
}

impl Default for CardInfo {
    fn default() -> Self {
        CardInfo {
            name: default_card_name(),
            description: default_card_description(),
            version: default_card_version(),
            provider: None,
        }
    }
}

fn default_card_name() -> String {
    "A2A Gateway".into()
}
fn default_card_description() -> String {
    "One A2A endpoint for a fleet of agents.".into()
}
fn default_card_version() -> String {
    env!("CARGO_PKG_VERSION").into()
}

#[derive(Debug, Clone, Deserialize, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    pub organization: String,
    pub url: String,
}

/// Transport limits and timeouts on the way to backends.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest request body accepted from a caller.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: usize,
    /// Largest unary (non-stream) response accepted from a backend.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    #[serde(default = "default_connect_timeout", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub connect_timeout: Duration,
    /// How long a backend may take to send its response headers (a blocking send waits for the
    /// whole task, so this is generous by default).
    #[serde(default = "default_first_byte_timeout", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub first_byte_timeout: Duration,
    /// Opt-in: write an SSE comment (`: ka`) into a relayed stream whose backend has been quiet this
    /// long, between events only. The reference SDK client gives up after 5 s of silence, while its
    /// server pings every 15 s.
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_policies::duration::Text>")]
    pub stream_keepalive: Option<Duration>,
    /// Deepest nesting of arrays/objects accepted anywhere in a request body (checked before it is
    /// decoded or forwarded).
    #[serde(default = "default_max_json_depth")]
    pub max_json_depth: usize,
    /// Largest Agent Card accepted from a backend; a larger one fails the health check.
    #[serde(default = "default_max_card_bytes")]
    pub max_card_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: default_max_request_bytes(),
            max_response_bytes: default_max_response_bytes(),
            connect_timeout: default_connect_timeout(),
            first_byte_timeout: default_first_byte_timeout(),
            stream_keepalive: None,
            max_json_depth: default_max_json_depth(),
            max_card_bytes: default_max_card_bytes(),
        }
    }
}

/// Limits of relayed streams. A stream that breaks one ends with a failed status saying which.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Streams {
    /// A stream with no event bytes for this long is ended (comments and keep-alives do not count).
    #[serde(default = "default_stream_idle", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub idle_timeout: Duration,
    /// A stream open this long is ended (the caller may subscribe to the task again).
    #[serde(default = "default_stream_lifetime", with = "duration")]
    #[schemars(with = "a2a_policies::duration::Text")]
    pub max_lifetime: Duration,
    /// Largest single event relayed; a larger one ends the stream.
    #[serde(default = "default_max_event_bytes")]
    pub max_event_bytes: usize,
    /// Per-skill overrides of the three limits above.
    #[serde(default)]
    pub skills: std::collections::HashMap<String, StreamOverride>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamOverride {
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_policies::duration::Text>")]
    pub idle_timeout: Option<Duration>,
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_policies::duration::Text>")]
    pub max_lifetime: Option<Duration>,
    #[serde(default)]
    pub max_event_bytes: Option<usize>,
}

/// The limits of one stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamLimits {
    pub idle_timeout: Duration,
    pub max_lifetime: Duration,
    pub max_event_bytes: usize,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            idle_timeout: default_stream_idle(),
            max_lifetime: default_stream_lifetime(),
            max_event_bytes: default_max_event_bytes(),
            skills: Default::default(),
        }
    }
}

impl Streams {
    /// The limits of a stream for `skill`: its overrides over the defaults.
    pub fn for_skill(&self, skill: Option<&str>) -> StreamLimits {
        let over = skill.and_then(|s| self.skills.get(s));
        StreamLimits {
            idle_timeout: over.and_then(|o| o.idle_timeout).unwrap_or(self.idle_timeout),
            max_lifetime: over.and_then(|o| o.max_lifetime).unwrap_or(self.max_lifetime),
            max_event_bytes: over.and_then(|o| o.max_event_bytes).unwrap_or(self.max_event_bytes),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let all = std::iter::once(("streams".to_string(), self.for_skill(None)))
            .chain(self.skills.keys().map(|k| (format!("streams.skills.{k}"), self.for_skill(Some(k)))));
        for (path, limits) in all {
            if limits.idle_timeout.is_zero() {
                return Err(invalid(format!("{path}.idle_timeout"), "must be more than 0"));
            }
            if limits.max_lifetime.is_zero() {
                return Err(invalid(format!("{path}.max_lifetime"), "must be more than 0"));
            }
            if limits.max_event_bytes < 1024 {
                return Err(invalid(format!("{path}.max_event_bytes"), "must be at least 1024"));
            }
        }
        Ok(())
    }
}

fn default_stream_idle() -> Duration {
    Duration::from_secs(300)
}
fn default_stream_lifetime() -> Duration {
    Duration::from_secs(3600)
}
fn default_max_event_bytes() -> usize {
    16 * 1024 * 1024
}

fn default_max_json_depth() -> usize {
    crate::protocol::json_limits::DEFAULT_MAX_DEPTH
}
fn default_max_card_bytes() -> usize {
    1024 * 1024
}

fn default_max_request_bytes() -> usize {
    4 * 1024 * 1024
}
fn default_max_response_bytes() -> usize {
    32 * 1024 * 1024
}
fn default_connect_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_first_byte_timeout() -> Duration {
    Duration::from_secs(300)
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    /// Name of the backend; also its per-agent path `/agents/{name}/`.
    pub name: String,
    /// Base URL the gateway reaches the backend at. Interface paths from the backend's card are
    /// joined to this origin, so a card cannot point the gateway at another host.
    pub url: String,
    #[serde(default = "default_card_path")]
    pub card_path: String,
    /// Overrides `health.interval` for this backend.
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_policies::duration::Text>")]
    pub health_interval: Option<Duration>,
    /// The credential the gateway presents to this backend.
    #[serde(default)]
    pub auth: Option<BackendAuthConfig>,
    /// Forward the caller's own `Authorization` header to this backend. Off unless said: a
    /// caller's credential is for the gateway.
    #[serde(default)]
    pub forward_caller_token: bool,
    /// The A2A dialect to speak to this backend, when its card offers several (e.g. `"0.3"` to
    /// reach the 0.3 interface of an agent that serves both). Unset: 1.0 when offered, else what
    /// the card offers.
    #[serde(default)]
    pub dialect: Option<BackendDialect>,
}

/// A dialect a backend may be reached in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum BackendDialect {
    #[serde(rename = "1.0")]
    V1,
    #[serde(rename = "0.3")]
    V03,
    #[serde(rename = "early")]
    Early,
}

impl BackendDialect {
    pub fn dialect(self) -> a2a_policies::Dialect {
        match self {
            BackendDialect::V1 => a2a_policies::Dialect::V1,
            BackendDialect::V03 => a2a_policies::Dialect::V03,
            BackendDialect::Early => a2a_policies::Dialect::Early,
        }
    }
}

impl Backend {
    /// The backend's outbound credential settings.
    pub fn credentials(&self) -> BackendAuth {
        BackendAuth {
            name: self.name.clone(),
            auth: self.auth.clone(),
            forward_caller_token: self.forward_caller_token,
        }
    }
}

fn default_card_path() -> String {
    "/.well-known/agent-card.json".into()
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
        if self.health.interval.is_zero() {
            return Err(invalid("health.interval", "must be greater than zero"));
        }
        self.listeners.protection.validate().map_err(|(path, message)| invalid(path, message))?;
        crate::listener::TrustedProxies::parse(&self.listeners.trusted_proxies)
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

    /// Checks the configuration whole and compiles its policy sections (rules, quotas, schemas read
    /// from their files): once per configuration, handed to the gateway generation that serves it.
    pub fn compile(&self) -> Result<Policies, ConfigError> {
        self.validate()?;
        let permissions = match &self.permissions {
            Some(rules) => Permissions::new(rules).map_err(|e| invalid(e.path, e.message))?,
            None => Permissions::allow_all(),
        };
        let rate_limits = match &self.rate_limit {
            Some(quotas) => {
                Some(RateLimits::new(quotas).map_err(|e| invalid(section("rate_limit", &e.path), e.reason))?)
            }
            None => None,
        };
        let validation = match &self.validation {
            Some(rules) => Some(
                InputValidation::new(rules, &self.base_dir, std::sync::Arc::new(a2a_policies::validate::NoCatalog))
                    .map_err(|e| invalid(section("validation", &e.path), e.reason))?,
            ),
            None => None,
        };
        Ok(Policies { permissions: std::sync::Arc::new(permissions), rate_limits, validation })
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
            None => format!("http://{bound}"),
        }
    }
}

/// A policy module's error path, under its section of this file.
fn section(name: &str, path: &str) -> String {
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

/// Parses a duration in the file's one grammar ([`a2a_policies::duration`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    a2a_policies::duration::parse(text)
}

/// `#[serde(with = …)]` for the gateway's sections: the policies' duration grammar, so the whole
/// file reads durations one way.
pub use a2a_policies::duration as duration_serde;
pub(crate) use a2a_policies::duration::option as opt_duration;
use a2a_policies::duration::{self, map as duration_map};

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    const MINIMAL: &str = "backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n";

    #[test]
    fn minimal_config_gets_defaults() {
        let config = Config::parse(MINIMAL, &no_env).unwrap();
        assert_eq!(config.listeners.public, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(config.health.unhealthy_after, 3);
        assert_eq!(config.backends[0].card_path, "/.well-known/agent-card.json");
    }

    #[test]
    fn unknown_key_is_named_with_its_path() {
        let text = "backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n    colour: blue\n";
        let err = Config::parse(text, &no_env).unwrap_err().to_string();
        assert!(err.starts_with("backends[0]"), "{err}");
        assert!(err.contains("colour"), "{err}");
    }

    #[test]
    fn bad_url_is_named_with_its_path() {
        let text = "backends:\n  - name: a\n    url: http://127.0.0.1:1\n  - name: b\n    url: ftp://x\n";
        let err = Config::parse(text, &no_env).unwrap_err().to_string();
        assert!(err.starts_with("backends[1].url:"), "{err}");
    }

    #[test]
    fn duplicate_and_unsafe_names_are_refused() {
        let dup = "backends:\n  - {name: a, url: 'http://h:1'}\n  - {name: a, url: 'http://h:2'}\n";
        assert!(Config::parse(dup, &no_env).unwrap_err().to_string().starts_with("backends[1].name"));
        let bad = "backends:\n  - {name: 'A/b', url: 'http://h:1'}\n";
        assert!(Config::parse(bad, &no_env).unwrap_err().to_string().starts_with("backends[0].name"));
    }

    #[test]
    fn bad_duration_is_named_with_its_path() {
        let text = format!("health:\n  interval: soon\n{MINIMAL}");
        let err = Config::parse(&text, &no_env).unwrap_err().to_string();
        assert!(err.starts_with("health.interval"), "{err}");
    }

    #[test]
    fn env_references_are_expanded_and_missing_ones_named() {
        let text = "public_url: '${GW_URL}'\nbackends:\n  - name: echo\n    url: 'http://${HOST}:9001'\n";
        let env = |name: &str| match name {
            "GW_URL" => Some("https://gw.example".to_string()),
            "HOST" => Some("127.0.0.1".to_string()),
            _ => None,
        };
        let config = Config::parse(text, &env).unwrap();
        assert_eq!(config.public_url.as_deref(), Some("https://gw.example"));
        assert_eq!(config.backends[0].url, "http://127.0.0.1:9001");
        let err = Config::parse(text, &no_env).unwrap_err().to_string();
        assert!(err.starts_with("public_url:") && err.contains("GW_URL"), "{err}");
    }

    #[test]
    fn dollar_dollar_escapes_a_reference() {
        assert_eq!(expand_str("a$${B}c", "p", &no_env).unwrap(), "a${B}c");
    }

    #[test]
    fn push_needs_the_signing_key_and_reads_its_allow_list() {
        let push = "push:\n  allow_http: true\n  allow: ['127.0.0.1', '10.0.0.0/8', '[::1]:9000']\n  backoff: 50ms\n";
        let err = Config::parse(&format!("{push}{MINIMAL}"), &no_env).unwrap_err().to_string();
        assert!(err.starts_with("push:") && err.contains("gateway_identity"), "{err}");
        let bad = "push:\n  allow: ['example.com']\n";
        let err = Config::parse(&format!("{bad}{MINIMAL}"), &no_env).unwrap_err().to_string();
        assert!(err.starts_with("push.allow"), "{err}");
        let off = "push:\n  enabled: false\n";
        let config = Config::parse(&format!("{off}{MINIMAL}"), &no_env).unwrap();
        assert!(!config.push.unwrap().enabled);
        let typo = "push:\n  alow_http: true\n";
        assert!(Config::parse(&format!("{typo}{MINIMAL}"), &no_env).unwrap_err().to_string().contains("alow_http"));
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
