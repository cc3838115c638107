//! The gateway's state. [`Shared`] lives as long as the process (HTTP client, task directory,
//! observers, drain signal); a [`Gateway`] is one generation of configuration built on it — a reload
//! builds a new one beside the old, and requests in flight finish on the generation they started on.

use std::sync::Arc;

use a2a_core::{A2aCall, Binding, Operation, TaskObserver};
use a2a_policies::audit::Audit;
use a2a_policies::auth::Authenticator;
use a2a_policies::authorize::Permissions;
use a2a_policies::backend_auth::BackendCredentials;
use a2a_policies::concurrency::LiveTasks;
use a2a_policies::rate_limit::RateLimits;
use a2a_policies::validate::InputValidation;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::deadlines::{DeadlineObserver, Deadlines, Expired};

use crate::card::{CardSettings, Security};
use crate::config::{Config, Policies};
use crate::directory::TaskDirectory;
use crate::observers::Observers;
use crate::protocol::early_ids::EarlyIds;
use crate::proxy::Forwarder;
use crate::registry::{Registry, RegistryCatalog};
use crate::relay::StreamSettings;
use crate::routing::RouteState;
use crate::workers::PerWorker;

/// What outlives configuration generations.
pub struct Shared {
    /// To backends: no redirects followed.
    pub client: reqwest::Client,
    /// To identity providers (JWKS, introspection): redirects are followed within the provider's
    /// own origin only, never to another host.
    pub idp_client: reqwest::Client,
    /// The forwarder's pooled client to agents (its pool outlives reloads).
    pub agent_client: crate::clients::AgentClients,
    pub directory: Arc<dyn TaskDirectory>,
    pub observers: Arc<Observers>,
    /// Cancelled when the drain deadline passes: open streams and waiting calls are ended.
    pub drain_deadline: CancellationToken,
    /// The drain deadline's child on each worker, which that worker's calls and streams wait on.
    /// tokio-util's token locks its node to answer `is_cancelled` and registers every waiter in the
    /// node's `Notify` under a mutex (and again at each poll of a waiting stream): waited on by
    /// every call of every worker, one token is a lock that all cores take several times per call.
    pub drain_per_worker: PerWorker<CancellationToken>,
    pub deadlines: Arc<Deadlines>,
    /// Live-task leases, kept across reloads (a reload must not forget who holds what).
    pub live_tasks: Option<Arc<LiveTasks>>,
    /// The audit log, kept across reloads (one chain per file).
    pub audit: Option<Audit>,
    /// Early-dialect callers' task ids ↔ agents' ids, kept across reloads.
    pub early_ids: Arc<dyn EarlyIds>,
    /// The key of ListTasks page tokens, kept across reloads (tokens stay valid).
    pub page_tokens: crate::page_token::PageTokens,
    /// Runtime changes to the fleet (admin API, self-registration), applied over every reload.
    pub overlay: Arc<crate::overlay::Overlay>,
    /// Push-notification configs and deliveries (`push:`; read at start).
    pub push: Option<Arc<crate::push::Push>>,
    /// The shared store, when state is kept in Redis (its health is part of readiness).
    pub redis: Option<crate::state::Redis>,
}

impl Shared {
    pub async fn new(config: &Config, audit: Option<Audit>) -> anyhow::Result<Arc<Shared>> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.limits.connect_timeout)
            .tcp_nodelay(true)
            // Bounded, so the memory of a burst of streams is returned once it has passed.
            .pool_max_idle_per_host(config.limits.backend_idle_connections)
            .pool_idle_timeout(config.limits.backend_idle_timeout)
            // A backend's redirect is not followed: the gateway reaches only configured origins
            // (and not re-parsing every URL for a redirect policy is cheaper too).
            .redirect(reqwest::redirect::Policy::none())
            // Backends are reached directly; an HTTP(S)_PROXY in the environment is for callers.
            .no_proxy()
            .build()?;
        let agent_client = crate::clients::agent_clients(&config.limits, crate::clients::platform_tls())?;
        let idp_client = reqwest::Client::builder()
            .connect_timeout(config.limits.connect_timeout)
            .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
            .build()?;
        let crate::state::Stores { directory, early_ids, page_tokens, redis } =
            crate::state::build(&config.state, config.routing.task_ttl, config.routing.max_tasks).await?;
        let deadlines = Deadlines::new(config.deadlines.clone());
        if let Some(redis) = &redis {
            deadlines.share(crate::state::redis_deadlines::RedisDeadlines::new(redis.clone()));
        }
        let mut list: Vec<Arc<dyn TaskObserver>> = vec![Arc::new(DeadlineObserver(deadlines.clone()))];
        let live_tasks = match &config.concurrency {
            Some(limits) => {
                let shared = redis.clone().map(|redis| {
                    crate::state::redis_leases::RedisLeases::new(redis, limits.lease_ttl)
                        as Arc<dyn a2a_policies::concurrency::SharedLeases>
                });
                Some(LiveTasks::with_store(limits, shared).map_err(|e| anyhow::anyhow!("concurrency: {e}"))?)
            }
            None => None,
        };
        if let Some(live) = &live_tasks {
            list.push(live.clone());
        }
        if let Some(audit) = &audit {
            list.push(Arc::new(audit.clone()));
        }
        let drain_deadline = CancellationToken::new();
        let drain_per_worker = PerWorker::new(|| drain_deadline.child_token());
        let push = match config.push.clone().filter(|p| p.enabled) {
            Some(settings) => {
                let store: Arc<dyn crate::push::PushStore> = match &redis {
                    Some(redis) => {
                        crate::state::redis_push::RedisPushStore::new(redis.clone(), config.routing.task_ttl)
                    }
                    None => Arc::new(crate::push::MemoryPushStore::default()),
                };
                let deliveries = crate::push::Deliveries::new(
                    settings.clone(),
                    store.clone(),
                    audit.clone(),
                    drain_deadline.clone(),
                )?;
                let push = crate::push::Push::new(settings, store, deliveries);
                list.push(push.clone());
                Some(push)
            }
            None => None,
        };
        // Artifact descriptions (hashing their bytes) only when the audit log records them.
        let observers = Arc::new(Observers::new(directory.clone(), list, audit.is_some()));
        Ok(Arc::new(Shared {
            client,
            idp_client,
            agent_client,
            directory,
            observers,
            drain_deadline,
            drain_per_worker,
            deadlines,
            live_tasks,
            audit,
            early_ids,
            page_tokens,
            overlay: Arc::default(),
            push,
            redis,
        }))
    }
}

/// An identity provider may move a document within its own origin; a redirect to another origin
/// (or a long chain) is not followed, so an IdP's answer cannot send the gateway elsewhere.
fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
    if same_origin && attempt.previous().len() < 5 { attempt.follow() } else { attempt.stop() }
}

/// One generation of configuration: everything a request needs.
pub struct Gateway {
    pub config: Config,
    pub shared: Arc<Shared>,
    pub registry: Arc<Registry>,
    pub authenticator: Option<Arc<Authenticator>>,
    pub permissions: Arc<Permissions>,
    pub credentials: Arc<BackendCredentials>,
    pub rate_limits: Option<Arc<RateLimits>>,
    pub validation: Option<Arc<InputValidation>>,
    pub forwarder: Forwarder,
    pub route_state: Arc<RouteState>,
    /// Who may use the admin API and register agents.
    pub admin: Arc<crate::admin_guard::AdminGuard>,
}

impl Gateway {
    /// Builds a generation; backends that `previous` already knew (same name and URL) keep their
    /// card and health, so a reload causes no blip.
    /// `stop` ends the generation's background work (JWKS refreshes).
    /// `policies` are `config`'s, compiled ([`Config::compile`]).
    pub fn new(
        config: Config,
        policies: Policies,
        public_base: String,
        shared: Arc<Shared>,
        previous: Option<&Registry>,
        stop: &CancellationToken,
    ) -> anyhow::Result<Arc<Gateway>> {
        let authenticator = match &config.auth {
            Some(auth) => Some(Arc::new(Authenticator::new(auth, shared.idp_client.clone(), stop)?)),
            None => None,
        };
        let security = config
            .auth
            .as_ref()
            .map(|auth| Security { schemes: auth.security_schemes(), requirements: auth.security_requirements() });
        let push = shared.push.as_ref().is_some_and(|p| p.config.enabled);
        let grpc = config.listeners.grpc;
        let credentials = Arc::new(BackendCredentials::new(
            config.backends.iter().map(|b| b.credentials()),
            config.gateway_identity.as_ref(),
            shared.client.clone(),
        )?);
        // Every card served is signed with the gateway's key, when it has one.
        let signer = crate::card::CardSigner::new(credentials.clone(), &public_base);
        let cards = CardSettings { info: config.card.clone(), public_base, security, push, grpc, signer };
        let backend_clients = crate::clients::BackendClients::build(&config)
            .map_err(|(path, message)| anyhow::anyhow!("{path}: {message}"))?;
        let registry = Registry::new(&config, cards, shared.client.clone(), backend_clients.clone(), previous)?;
        if let Some(redis) = &shared.redis {
            registry.share_ejections(crate::state::redis_ejections::RedisEjections::new(redis.clone()));
        }
        for name in shared.overlay.draining() {
            registry.set_draining(&name, true);
        }
        let admin = Arc::new(crate::admin_guard::AdminGuard::new(&config.admin, shared.idp_client.clone(), stop)?);
        let Policies { permissions, rate_limits, validation } = policies;
        let rate_limits = rate_limits.map(|limits| {
            Arc::new(match &shared.redis {
                Some(redis) => limits.with_shared(crate::state::redis_quotas::RedisQuotas::new(redis.clone())),
                None => limits,
            })
        });
        let validation =
            validation.map(|rules| Arc::new(rules.with_catalog(Arc::new(RegistryCatalog(registry.clone())))));
        let forwarder = Forwarder::new(
            shared.agent_client.clone(),
            credentials.clone(),
            shared.observers.clone(),
            config.limits.max_response_bytes,
            config.limits.first_byte_timeout,
            StreamSettings {
                keepalive: config.limits.stream_keepalive,
                drain_deadline: shared.drain_per_worker.clone(),
                deadlines: Some(shared.deadlines.clone()),
                limits: Arc::new(config.streams.clone()),
            },
            backend_clients,
        );
        let route_state = Arc::new(RouteState {
            registry: registry.clone(),
            directory: shared.directory.clone(),
            early_ids: shared.early_ids.clone(),
            default_skill: config.routing.default_skill.clone(),
            isolation: config.routing.isolation,
            resolve: config.routing.resolve,
            resolve_margin: config.routing.resolve_margin,
            permissions: permissions.clone(),
        });
        Ok(Arc::new(Gateway {
            config,
            shared,
            registry,
            authenticator,
            permissions,
            credentials,
            rate_limits,
            validation,
            forwarder,
            route_state,
            admin,
        }))
    }

    pub fn directory(&self) -> &Arc<dyn TaskDirectory> {
        &self.shared.directory
    }

    /// Cancels a task whose deadline passed at its backend. The answer is observed like any other,
    /// so the directory, the leases and the audit log learn the task's end.
    pub async fn cancel_expired(&self, expired: Expired) {
        let snapshot = self.registry.snapshot();
        let Some(backend) = snapshot.backend(&expired.backend) else { return };
        let binding = if backend.jsonrpc_url.is_some() { Binding::JsonRpc } else { Binding::Rest };
        let mut call = A2aCall::new(binding, Operation::CancelTask);
        call.task_id = Some(expired.task_id.clone());
        if binding == Binding::JsonRpc {
            call.rpc_id = Some(serde_json::json!(format!("deadline-{}", expired.task_id)));
        }
        let request = a2a_model::Request::CancelTask(a2a_model::CancelTaskRequest {
            tenant: None,
            id: expired.task_id.clone(),
            metadata: None,
        });
        let exchange = crate::observers::Exchange {
            backend: backend.name.clone(),
            binding,
            owner: crate::routing::owner_key(expired.caller.as_ref(), self.config.routing.isolation),
            caller: expired.caller,
            request_id: Arc::from(format!("deadline-{}", expired.task_id)),
            skill: Some(Arc::from(expired.skill.as_str())),
        };
        if let Err(error) = self.forwarder.forward_own(backend, exchange, call, request).await {
            tracing::warn!(task_id = %expired.task_id, error = %error.into_error(), "could not cancel an expired task");
        }
    }
}

impl crate::push::Generation for Gateway {
    /// The task as its agent has it now (GetTask, 1.0 JSON-RPC; the forwarder speaks the agent's
    /// dialect). Observed like any answer, so the directory and the audit log learn from it too.
    fn fetch<'a>(
        &'a self,
        backend: &'a str,
        task_id: &'a str,
        config: &'a (Arc<str>, crate::push::StoredConfig),
    ) -> BoxFuture<'a, Option<serde_json::Value>> {
        Box::pin(async move {
            let snapshot = self.registry.snapshot();
            let backend = snapshot.backend(backend)?;
            let (owner, stored) = config;
            let exchange = crate::observers::Exchange {
                backend: backend.name.clone(),
                binding: Binding::JsonRpc,
                caller: stored.caller.clone(),
                owner: (!owner.is_empty()).then(|| owner.clone()),
                request_id: Arc::from(crate::push::deliver::POLL_REQUEST_ID),
                skill: None,
            };
            self.forwarder.get_task(backend, exchange, task_id, Some(0)).await
        })
    }

    fn credentials(&self) -> &BackendCredentials {
        &self.credentials
    }
}
