//! The sections of the configuration file besides the policies' own (which their crate defines):
//! listeners, shutdown, health, routing, the gateway's card, limits, streams and backends.
//! Over 400 lines on purpose: plain data types with their defaults, kept together as the file's shape.

use super::*;

/// Graceful shutdown on SIGTERM / SIGINT.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shutdown {
    /// How long the gateway keeps accepting calls after SIGTERM while `/readyz` already fails, so
    /// that load balancers stop sending before the listener closes (a second signal ends it early).
    #[serde(default, with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub unready_delay: Duration,
    /// How long in-flight calls and open streams may take to finish before the gateway ends them
    /// (streams with a terminal event, waiting calls with an error).
    #[serde(default = "default_drain_timeout", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
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
    pub protection: Protection,
    /// Proxies (addresses or CIDRs) whose `Forwarded` / `X-Forwarded-For` headers name the caller's
    /// address. Anyone else's forwarding headers are ignored.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Serve the A2A gRPC binding on the public listener (HTTP/2, `content-type: application/grpc`)
    /// and list it on the cards. On by default.
    #[serde(default = "default_true")]
    pub grpc: bool,
    /// TLS on the public listener (and the admin listener, unless `admin: false`): certificate and
    /// key from PEM files, reloaded when they change; client certificates with `client_ca`.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
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
            tls: None,
        }
    }
}

impl Listeners {
    /// The parsed `trusted_proxies` (validated with the configuration).
    pub fn trusted(&self) -> crate::client_address::TrustedProxies {
        crate::client_address::TrustedProxies::parse(&self.trusted_proxies).unwrap_or_default()
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
    #[schemars(with = "a2a_core::duration::Text")]
    pub interval: Duration,
    #[serde(default = "default_health_timeout", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub timeout: Duration,
    #[serde(default = "default_unhealthy_after")]
    pub unhealthy_after: u32,
    /// A backend ejected by `unhealthy_after` failed requests in a row stays out this long (doubling
    /// at each failed probe, up to 5 minutes) before one real request at a time probes it; a
    /// successful card fetch does not bring it back, a successful request does.
    #[serde(default = "default_ejection_time", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
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
    #[schemars(with = "a2a_core::duration::Text")]
    pub task_ttl: Duration,
    /// How often the task directory forgets tasks past `task_ttl` (see `a2a_task_directory_entries`).
    #[serde(default = "default_sweep_interval", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub sweep_interval: Duration,
    /// At most this many tasks (and as many contexts) in the in-memory task directory: past it, the
    /// least recently seen are forgotten, finished ones first (~0.7 KiB each; Redis keeps its own).
    #[serde(default = "default_max_tasks")]
    pub max_tasks: usize,
    /// Whether a task belongs to the caller that created it or to the caller's tenant.
    #[serde(default)]
    pub isolation: Isolation,
}

/// Who owns a task for isolation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Each caller sees only the tasks it created.
    #[default]
    Caller,
    /// Callers of one tenant share their tasks.
    Tenant,
}

impl Default for Routing {
    fn default() -> Self {
        Routing {
            default_skill: None,
            resolve: Default::default(),
            resolve_margin: default_resolve_margin(),
            task_ttl: default_task_ttl(),
            sweep_interval: default_sweep_interval(),
            max_tasks: default_max_tasks(),
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

fn default_max_tasks() -> usize {
    1_000_000
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
    /// How a card fetch that names no `A2A-Version` is read. `"0.3"` (the default, as the
    /// specification reads any request without the header): the card also carries the 0.3
    /// top-level interface fields and the 0.3 form of its authentication, which 0.3 clients need
    /// and the strict 1.0 card schema does not allow, as a reference SDK server with 0.3 support
    /// serves it. `"1.0"`: every fetch gets the strict 1.0 card, for a fleet without 0.3 clients
    /// that are unable to read `supportedInterfaces` (1.x clients send the header and get the strict
    /// card either way).
    #[serde(default)]
    pub unversioned_fetch: UnversionedFetch,
}

impl Default for CardInfo {
    fn default() -> Self {
        CardInfo {
            name: default_card_name(),
            description: default_card_description(),
            version: default_card_version(),
            provider: None,
            unversioned_fetch: UnversionedFetch::default(),
        }
    }
}

/// The card a client that names no A2A version is given (`card.unversioned_fetch`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub enum UnversionedFetch {
    /// The card with the 0.3 top-level fields too.
    #[default]
    #[serde(rename = "0.3")]
    V03,
    /// The strict 1.0 card.
    #[serde(rename = "1.0")]
    V1,
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
    #[schemars(with = "a2a_core::duration::Text")]
    pub connect_timeout: Duration,
    /// How long a backend may take to send its response headers (a blocking send waits for the
    /// whole task, so this is generous by default); and then, once a unary answer's body stalls,
    /// how long it may take to send the rest.
    #[serde(default = "default_first_byte_timeout", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub first_byte_timeout: Duration,
    /// Opt-in: write an SSE comment (`: ka`) into a relayed stream whose backend has been quiet this
    /// long, between events only. The reference SDK client gives up after 5 s of silence, while its
    /// server pings every 15 s.
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_core::duration::Text>")]
    pub stream_keepalive: Option<Duration>,
    /// Deepest nesting of arrays/objects accepted anywhere in a request body (checked before it is
    /// decoded or forwarded).
    #[serde(default = "default_max_json_depth")]
    pub max_json_depth: usize,
    /// Largest Agent Card accepted from a backend; a larger one fails the health check.
    #[serde(default = "default_max_card_bytes")]
    pub max_card_bytes: usize,
    /// Idle connections kept open per backend origin for reuse, per worker thread. Each holds its buffers, so after a
    /// burst of streams the pool would otherwise keep one per stream that ran.
    #[serde(default = "default_backend_idle_connections")]
    pub backend_idle_connections: usize,
    /// How long an idle backend connection is kept for reuse.
    #[serde(default = "default_backend_idle_timeout", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub backend_idle_timeout: Duration,
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
            backend_idle_connections: default_backend_idle_connections(),
            backend_idle_timeout: default_backend_idle_timeout(),
        }
    }
}

/// Limits of relayed streams. A stream that breaks one ends with a failed status saying which.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Streams {
    /// A stream with no event bytes for this long is ended (comments and keep-alives do not count).
    #[serde(default = "default_stream_idle", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub idle_timeout: Duration,
    /// A stream open this long is ended (the caller may subscribe to the task again).
    #[serde(default = "default_stream_lifetime", with = "duration")]
    #[schemars(with = "a2a_core::duration::Text")]
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
    #[schemars(with = "Option<a2a_core::duration::Text>")]
    pub idle_timeout: Option<Duration>,
    #[serde(default, with = "opt_duration")]
    #[schemars(with = "Option<a2a_core::duration::Text>")]
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

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
fn default_backend_idle_connections() -> usize {
    128
}
fn default_backend_idle_timeout() -> Duration {
    Duration::from_secs(30)
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
    #[schemars(with = "Option<a2a_core::duration::Text>")]
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
    /// TLS to this backend (an `https://` URL): its own CA bundle, a client certificate, or
    /// (development only) `insecure_skip_verify`. Unset: the platform's trust store.
    #[serde(default)]
    pub tls: Option<BackendTls>,
    /// A JWKS file with the keys this backend's card may be signed with (by `kid`; the `jku` a
    /// card names is never fetched). Set: the card's `signatures` are verified at every fetch.
    #[serde(default)]
    pub card_jwks: Option<std::path::PathBuf>,
    /// A card whose signatures do not verify against `card_jwks` fails the health check: the
    /// backend stays out of routing, with the reason in the admin API. Off: a failure is logged.
    #[serde(default)]
    pub require_signed_card: bool,
    /// Set only for a self-registered agent (never read from a file): the skills its registration
    /// credential lets it offer.
    #[serde(skip)]
    #[schemars(skip)]
    pub skill_grant: Option<std::sync::Arc<SkillGrant>>,
    /// Set only for a self-registered agent: the address screen its card refreshes go through
    /// (its credential's `allow_addresses`), so a name rebound after admission reaches nothing new.
    #[serde(skip)]
    #[schemars(skip)]
    pub screen: Option<std::sync::Arc<crate::screen::ScreenPolicy>>,
}

/// What a self-registered agent may offer: the skill patterns of the credential that registered it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkillGrant {
    /// The registration credential's id.
    pub credential: String,
    /// Skill id patterns (`*` matches any run of characters) the agent may offer.
    pub skills: Vec<String>,
    /// Of those, the ones it may offer although a file-configured or admin-registered backend
    /// serves them too.
    pub shared_skills: Vec<String>,
}

impl SkillGrant {
    /// Whether the agent may offer `skill`; `reserved`: a file or admin backend serves it.
    pub fn allows(&self, skill: &str, reserved: bool) -> bool {
        let any = |patterns: &[String]| patterns.iter().any(|p| glob_match(p, skill));
        any(&self.skills) && (!reserved || any(&self.shared_skills))
    }
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
    pub fn dialect(self) -> a2a_core::Dialect {
        match self {
            BackendDialect::V1 => a2a_core::Dialect::V1,
            BackendDialect::V03 => a2a_core::Dialect::V03,
            BackendDialect::Early => a2a_core::Dialect::Early,
        }
    }
}

impl Backend {
    /// A backend at `url` with every other setting as a configuration file's default.
    pub fn at(name: impl Into<String>, url: impl Into<String>) -> Backend {
        Backend {
            name: name.into(),
            url: url.into(),
            card_path: default_card_path(),
            health_interval: None,
            auth: None,
            forward_caller_token: false,
            dialect: None,
            tls: None,
            card_jwks: None,
            require_signed_card: false,
            skill_grant: None,
            screen: None,
        }
    }

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
