//! The gateway's state. [`Shared`] lives as long as the process (HTTP client, task directory,
//! observers, drain signal); a [`Gateway`] is one generation of configuration built on it — a reload
//! builds a new one beside the old, and requests in flight finish on the generation they started on.

use std::sync::Arc;

use a2a_policies::authorize::Permissions;
use a2a_policies::backend_auth::BackendCredentials;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::directory::{MemoryDirectory, TaskDirectory};
use crate::observers::Observers;
use crate::proxy::Forwarder;
use crate::registry::Registry;
use crate::relay::StreamSettings;
use crate::routing::RouteState;

/// What outlives configuration generations.
pub struct Shared {
    pub client: reqwest::Client,
    pub directory: Arc<dyn TaskDirectory>,
    pub observers: Arc<Observers>,
    /// Cancelled when the drain deadline passes: open streams and waiting calls are ended.
    pub drain_deadline: CancellationToken,
}

impl Shared {
    pub fn new(config: &Config) -> anyhow::Result<Arc<Shared>> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.limits.connect_timeout)
            .tcp_nodelay(true)
            // Backends are reached directly; an HTTP(S)_PROXY in the environment is for callers.
            .no_proxy()
            .build()?;
        let directory: Arc<dyn TaskDirectory> = Arc::new(MemoryDirectory::new(config.routing.task_ttl));
        let observers = Arc::new(Observers::new(directory.clone(), Vec::new(), false));
        Ok(Arc::new(Shared { client, directory, observers, drain_deadline: CancellationToken::new() }))
    }
}

/// One generation of configuration: everything a request needs.
pub struct Gateway {
    pub config: Config,
    pub shared: Arc<Shared>,
    pub registry: Arc<Registry>,
    pub permissions: Arc<Permissions>,
    pub credentials: Arc<BackendCredentials>,
    pub forwarder: Forwarder,
    pub route_state: Arc<RouteState>,
}

impl Gateway {
    /// Builds a generation; backends that `previous` already knew (same name and URL) keep their
    /// card and health, so a reload causes no blip.
    pub fn new(
        config: Config,
        public_base: String,
        shared: Arc<Shared>,
        previous: Option<&Registry>,
    ) -> anyhow::Result<Arc<Gateway>> {
        let registry = Registry::new(&config, public_base, shared.client.clone(), previous)?;
        let permissions = Arc::new(match &config.permissions {
            Some(rules) => Permissions::new(rules)?,
            None => Permissions::allow_all(),
        });
        let credentials = Arc::new(BackendCredentials::new(
            config.backends.iter().map(|b| b.credentials()),
            config.gateway_identity.as_ref(),
            shared.client.clone(),
        )?);
        let forwarder = Forwarder::new(
            shared.client.clone(),
            credentials.clone(),
            shared.observers.clone(),
            config.limits.max_response_bytes,
            config.limits.first_byte_timeout,
            StreamSettings { keepalive: config.limits.stream_keepalive, drain_deadline: shared.drain_deadline.clone() },
        );
        let route_state = Arc::new(RouteState {
            registry: registry.clone(),
            directory: shared.directory.clone(),
            default_skill: config.routing.default_skill.clone(),
            isolation: config.routing.isolation,
        });
        Ok(Arc::new(Gateway { config, shared, registry, permissions, credentials, forwarder, route_state }))
    }

    pub fn directory(&self) -> &Arc<dyn TaskDirectory> {
        &self.shared.directory
    }
}
