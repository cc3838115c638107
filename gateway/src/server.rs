//! Over 400 lines on purpose: start, reload, rebuild and drain share the runtime's state and read as
//! one life; the card endpoints are in [`cards`].
//!
//! The listeners and the process lifecycle: the public router (cards, then every other request
//! through the current generation's A2A stack), the admin listener (health, readiness), hot reload
//! (SIGHUP or a change of the config file) and graceful shutdown (drain up to a deadline).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use a2a_core::{A2aError, Dialect};
use arc_swap::ArcSwap;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::routing::get;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use a2a_policies::audit::Audit;

use crate::card::CardDoc;
use crate::config::{Config, Policies};
use crate::directory::TaskDirectory;
use crate::gateway::{Gateway, Shared};
use crate::listener::{ClientCerts, ListenerTls, PublicListener};
use crate::protocol::early_ids::EarlyIds;
use crate::protocol::errors::Refusal;
use crate::protocol::translate::early;
use crate::stack::{ForwardService, ServeA2a, a2a_stack};
use a2a_model as model;

type Stack = Arc<dyn ServeA2a>;

/// One configuration generation with its stack and the health loops it owns.
struct Generation {
    gateway: Arc<Gateway>,
    stack: Stack,
    health_stop: CancellationToken,
}

impl Generation {
    async fn start(
        config: Config,
        policies: Policies,
        public_base: String,
        shared: Arc<Shared>,
        previous: Option<&Generation>,
    ) -> anyhow::Result<Generation> {
        let health_stop = CancellationToken::new();
        let gateway = Gateway::new(
            config,
            policies,
            public_base,
            shared,
            previous.map(|p| p.gateway.registry.as_ref()),
            &health_stop,
        )?;
        gateway.registry.check_unknown().await;
        if let Some(authenticator) = &gateway.authenticator {
            // Warm the JWKS caches so the first callers do not wait for them (bounded: an issuer
            // that is down must not hold up the start).
            let _ = tokio::time::timeout(Duration::from_secs(5), authenticator.refresh_jwks()).await;
        }
        gateway.registry.spawn_health_loops(health_stop.clone());
        let stack: Stack = Arc::new(a2a_stack(gateway.clone(), ForwardService::new(gateway.clone())));
        Ok(Generation { gateway, stack, health_stop })
    }
}

/// The running gateway: the current generation, swapped whole on reload.
pub struct Runtime {
    current: ArcSwap<Generation>,
    metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    shared: Arc<Shared>,
    bound: SocketAddr,
    draining: AtomicBool,
    /// The configuration file as last loaded, before the admin API's runtime layer.
    file_config: std::sync::Mutex<Config>,
    /// Reloads and runtime changes build and swap generations one at a time.
    swapping: tokio::sync::Mutex<()>,
    admin_bound: std::sync::OnceLock<SocketAddr>,
}

impl Runtime {
    fn gateway(&self) -> Arc<Gateway> {
        self.current.load().gateway.clone()
    }

    /// Serves a call through the current generation's A2A stack.
    fn serve(&self, request: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
        self.current.load().stack.serve(request)
    }

    /// Ready: configuration loaded (it is, once this exists), a healthy backend, not draining, and
    /// the shared state store reachable (when there is one).
    fn readiness(&self) -> Result<(), &'static str> {
        if self.draining.load(Ordering::Relaxed) {
            return Err("draining");
        }
        if !self.gateway().registry.any_healthy() {
            return Err("no healthy backend");
        }
        // Calls that need shared state would fail: let the balancer send them elsewhere. An operator
        // who chose `on_unavailable: local` keeps the replica serving from its own state instead.
        let fails_closed =
            |redis: &crate::state::Redis| redis.on_unavailable == crate::state::OnUnavailable::FailClosed;
        if self.shared.redis.as_ref().is_some_and(|redis| fails_closed(redis) && !redis.reachable()) {
            return Err("the shared state store (Redis) is unreachable");
        }
        Ok(())
    }

    /// Loads `path` aside and swaps it in (with the admin API's runtime layer over it); an invalid
    /// file leaves the running configuration alone.
    async fn reload(&self, path: &std::path::Path) {
        let file = match Config::load(path) {
            Ok(config) => config,
            Err(error) => {
                tracing::error!(%error, "configuration reload refused; the running configuration stays");
                return;
            }
        };
        let _one_at_a_time = self.swapping.lock().await;
        let config = self.shared.overlay.apply(&file);
        let policies = match config.compile() {
            Ok(policies) => policies,
            Err(error) => {
                tracing::error!(%error, "configuration reload refused with the runtime changes applied; the running configuration stays");
                return;
            }
        };
        if let Ok(mut stored) = self.file_config.lock() {
            *stored = file;
        }
        let previous = self.current.load_full();
        if config.listeners != previous.gateway.config.listeners {
            // (A changed certificate or key file at the same paths is reloaded on its own.)
            tracing::warn!("listener settings changed: that takes a restart; the rest is applied");
        }
        let public_base = config.public_base(self.bound);
        match Generation::start(config, policies, public_base, self.shared.clone(), Some(&previous)).await {
            Ok(generation) => {
                self.shared.deadlines.set(generation.gateway.config.deadlines.clone());
                self.current.store(Arc::new(generation));
                // In-flight requests keep the old generation alive until they finish.
                previous.health_stop.cancel();
                tracing::info!(path = %path.display(), "configuration reloaded");
            }
            Err(error) => tracing::error!(%error, "configuration reload failed; the running configuration stays"),
        }
    }

    /// Builds a generation from the file with the current runtime layer and swaps it in.
    async fn rebuild(&self) -> anyhow::Result<()> {
        let _one_at_a_time = self.swapping.lock().await;
        let file = self.file_config.lock().map_err(|_| anyhow::anyhow!("configuration lock poisoned"))?.clone();
        let config = self.shared.overlay.apply(&file);
        let policies = config.compile()?;
        let previous = self.current.load_full();
        let public_base = config.public_base(self.bound);
        let generation = Generation::start(config, policies, public_base, self.shared.clone(), Some(&previous)).await?;
        self.current.store(Arc::new(generation));
        previous.health_stop.cancel();
        Ok(())
    }
}

impl crate::admin::Host for Runtime {
    fn gateway(&self) -> Arc<Gateway> {
        Runtime::gateway(self)
    }

    fn file_config(&self) -> Config {
        match self.file_config.lock() {
            Ok(config) => config.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn rebuild(&self) -> futures::future::BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(Runtime::rebuild(self))
    }

    fn admin_address(&self) -> Option<SocketAddr> {
        self.admin_bound.get().copied()
    }
}

/// What ends the gateway: `begin` (the first SIGTERM) makes it not ready, then, after
/// `shutdown.unready_delay`, it stops accepting and drains; `hurry` (a second signal) cuts the
/// rest of that delay short.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    pub begin: CancellationToken,
    pub hurry: CancellationToken,
}

impl From<CancellationToken> for Stop {
    fn from(begin: CancellationToken) -> Stop {
        Stop { begin, hurry: CancellationToken::new() }
    }
}

/// Runs the gateway on `listener` until `stop.begin` is cancelled, then drains. With
/// `config_path`, the file is watched and reloaded on change or SIGHUP.
pub async fn run(
    config: Config,
    listener: TcpListener,
    config_path: Option<PathBuf>,
    stop: Stop,
) -> anyhow::Result<()> {
    let admin = match config.listeners.admin {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("admin listener {addr}: {e}"))?),
        None => None,
    };
    run_with_admin(config, listener, admin, config_path, stop).await
}

/// [`run`] with the admin listener already bound (the demo prints its address before it starts).
pub async fn run_with_admin(
    config: Config,
    listener: TcpListener,
    admin: Option<TcpListener>,
    config_path: Option<PathBuf>,
    stop: Stop,
) -> anyhow::Result<()> {
    let Stop { begin: stop, hurry } = stop;
    let bound = listener.local_addr()?;
    let public_base = config.public_base(bound);
    let drain_timeout = config.shutdown.drain_timeout;
    let unready_delay = config.shutdown.unready_delay;
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    // Owns the background tasks (reloaders, sweepers): cancelled once everything has drained.
    let background = CancellationToken::new();
    let tls = |clients| {
        config
            .listeners
            .tls
            .as_ref()
            .map(|tls| ListenerTls::start(tls, &config.base_dir, clients, background.clone()))
            .transpose()
            .map_err(|e| anyhow::anyhow!("{}: {e}", e.path()))
    };
    let public_tls = tls(config.client_certs())?;
    let admin_tls = if config.listeners.tls.as_ref().is_some_and(|t| t.admin) { tls(ClientCerts::Off)? } else { None };
    let public = PublicListener::new(&config.listeners.protection, config.listeners.trusted()).with_tls(public_tls);
    let (audit, audit_sink) = match &config.audit {
        Some(audit) => {
            let (audit, sink) = Audit::start(audit).await.map_err(|e| anyhow::anyhow!("audit: {e}"))?;
            (Some(audit), Some(sink))
        }
        None => (None, None),
    };
    let policies = config.compile()?;
    let shared = Shared::new(&config, audit).await?;
    let file_config = std::sync::Mutex::new(config.clone());
    let generation = Generation::start(config, policies, public_base.clone(), shared.clone(), None).await?;
    let runtime = Arc::new(Runtime {
        current: ArcSwap::from_pointee(generation),
        metrics: crate::metrics::install(),
        shared: shared.clone(),
        bound,
        draining: AtomicBool::new(false),
        file_config,
        swapping: tokio::sync::Mutex::new(()),
        admin_bound: std::sync::OnceLock::new(),
    });
    // Expired deadlines are canceled through whatever generation is current then.
    let weak = Arc::downgrade(&runtime);
    shared.deadlines.on_expiry(move |expired| {
        let Some(runtime) = weak.upgrade() else { return };
        tokio::spawn(async move { runtime.gateway().cancel_expired(expired).await });
    });
    // Push watchers poll and sign through whatever generation is current then.
    if let Some(push) = &shared.push {
        let weak = Arc::downgrade(&runtime);
        push.deliveries.set_gateway(move || weak.upgrade().map(|runtime| runtime.gateway()));
    }
    let admin = match admin {
        Some(admin) => {
            let _ = runtime.admin_bound.set(admin.local_addr()?);
            let stop = background.clone();
            let app = admin_app(runtime.clone());
            match admin_tls {
                // Over TLS through the public listener's accept loop (with default protections).
                Some(tls) => {
                    println!("admin https://{}", admin.local_addr()?);
                    let listener = PublicListener::new(&Default::default(), Default::default()).with_tls(Some(tls));
                    Some(tokio::spawn(async move {
                        listener.serve(admin, app, stop.cancelled_owned()).await;
                        Ok(())
                    }))
                }
                None => {
                    println!("admin http://{}", admin.local_addr()?);
                    let app = app.into_make_service_with_connect_info::<SocketAddr>();
                    Some(tokio::spawn(async move {
                        axum::serve(admin, app).with_graceful_shutdown(stop.cancelled_owned()).await
                    }))
                }
            }
        }
        None => None,
    };
    spawn_directory_sweeper(
        shared.directory.clone(),
        shared.early_ids.clone(),
        runtime.gateway().config.routing.sweep_interval,
        background.clone(),
    );
    if let Some(redis) = &shared.redis {
        redis.spawn_pinger(Duration::from_secs(1), background.clone());
    }
    shared.deadlines.spawn_sweeper(background.clone());
    crate::admin::spawn_expiry(runtime.clone(), background.clone());
    if let Some(path) = config_path {
        spawn_reloader(runtime.clone(), path, background.clone());
    }
    println!("listening {public_base}");

    // Not ready first: load balancers take a while to notice, and calls they still send during
    // `unready_delay` are served rather than refused at a closed port.
    let closing = CancellationToken::new();
    {
        let (runtime, stop, closing) = (runtime.clone(), stop.clone(), closing.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            runtime.draining.store(true, Ordering::Relaxed);
            if !unready_delay.is_zero() {
                tracing::info!(?unready_delay, "shutting down: not ready; still accepting calls until the delay ends");
                tokio::select! {
                    () = tokio::time::sleep(unready_delay) => {}
                    () = hurry.cancelled() => tracing::info!("second signal: ending the unready delay early"),
                }
            }
            closing.cancel();
        });
    }
    let shutdown = {
        let (runtime, closing) = (runtime.clone(), closing.clone());
        async move {
            closing.cancelled().await;
            tracing::info!(?drain_timeout, "shutting down: no longer accepting; draining in-flight calls and streams");
            let deadline = runtime.shared.drain_deadline.clone();
            tokio::spawn(async move {
                tokio::time::sleep(drain_timeout).await;
                deadline.cancel();
            });
        }
    };
    let serve = public.serve(listener, public_app(runtime.clone()), shutdown);
    // After the deadline every stream gets its terminal event and every waiting call its answer; the
    // grace period only covers writing those out.
    let hard_stop = async {
        closing.cancelled().await;
        tokio::time::sleep(drain_timeout + Duration::from_secs(5)).await;
    };
    tokio::select! {
        () = serve => {}
        _ = hard_stop => tracing::warn!("connections still open after the drain deadline; closing them"),
    }
    runtime.current.load().health_stop.cancel();
    background.cancel();
    if let Some(sink) = audit_sink {
        // Everything in flight has ended: write out every record before exiting.
        match tokio::time::timeout(Duration::from_secs(10), sink.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::error!(%error, "audit log not flushed"),
            Err(_) => tracing::error!("audit log flush timed out"),
        }
    }
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Sweeps the task directory every `every`, and the early ids with it (at most one per task). Off
/// the runtime's workers: a sweep that finds entries old enough walks every entry (a million of
/// them take a few hundred milliseconds). What passes `routing.max_tasks` is forgotten as it comes.
fn spawn_directory_sweeper(
    directory: Arc<dyn TaskDirectory>,
    early_ids: Arc<dyn EarlyIds>,
    every: Duration,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = ticker.tick() => {}
            }
            let (directory, early_ids) = (directory.clone(), early_ids.clone());
            let _ = tokio::task::spawn_blocking(move || {
                directory.sweep();
                early_ids.sweep();
            })
            .await;
        }
    });
}

/// Reloads on SIGHUP and when the file's content changes (checked every second: robust against
/// editors that replace the file, and cheap for a small file).
fn spawn_reloader(runtime: Arc<Runtime>, path: PathBuf, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut last = std::fs::read(&path).ok();
        let mut hangups = crate::hangup::Hangups::listen();
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = hangups.next() => {
                    last = std::fs::read(&path).ok();
                    runtime.reload(&path).await;
                }
                _ = ticker.tick() => {
                    let now = std::fs::read(&path).ok();
                    if now.is_some() && now != last {
                        last = now;
                        runtime.reload(&path).await;
                    }
                }
            }
        }
    });
}

/// The public app: the documents under `/.well-known/` (cards, keys, catalog) through the router,
/// every other request straight to the current generation's A2A stack (the router's fallback, as it
/// was, without matching each call's path against the document routes first).
fn public_app(runtime: Arc<Runtime>) -> PublicApp {
    let stacks = runtime.clone();
    let fallback = tower::service_fn(move |request: Request<Body>| stacks.serve(request));
    let documents = Router::new()
        .route("/.well-known/agent-card.json", get(gateway_card))
        .route("/agents/{name}/.well-known/agent-card.json", get(agent_card))
        // The early dialect's card, for early clients.
        .route("/.well-known/agent.json", get(early_gateway_card))
        .route("/agents/{name}/.well-known/agent.json", get(early_agent_card))
        .route("/.well-known/jwks.json", get(gateway_jwks))
        // The caller's catalog of the agents behind the gateway.
        .route(crate::catalog::CATALOG_PATH, get(catalog::ai_catalog))
        .with_state(runtime.clone())
        .fallback_service(fallback);
    PublicApp { documents, runtime }
}

/// See [`public_app`].
#[derive(Clone)]
struct PublicApp {
    documents: Router,
    runtime: Arc<Runtime>,
}

/// Where the router's document routes live: every one is under it.
const DOCUMENTS: &str = "/.well-known/";

impl tower::Service<Request<Body>> for PublicApp {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = futures::future::Either<
        tower::util::Oneshot<Router, Request<Body>>,
        BoxFuture<'static, Result<Response<Body>, Infallible>>,
    >;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.uri().path().contains(DOCUMENTS) {
            futures::future::Either::Left(self.documents.clone().oneshot(request))
        } else {
            futures::future::Either::Right(self.runtime.serve(request))
        }
    }
}

fn admin_app(runtime: Arc<Runtime>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(scrape))
        .with_state(runtime.clone())
        .merge(crate::admin::router(runtime))
}

/// The public keys of the tokens the gateway mints for backends.
async fn gateway_jwks(State(runtime): State<Arc<Runtime>>) -> axum::Json<serde_json::Value> {
    axum::Json(runtime.gateway().credentials.jwks_json())
}

/// Prometheus text: the recorded series plus gauges read now.
async fn scrape(State(runtime): State<Arc<Runtime>>) -> Response<Body> {
    let Some(handle) = &runtime.metrics else {
        return axum::response::IntoResponse::into_response((
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics are not recorded",
        ));
    };
    let gateway = runtime.gateway();
    for backend in &gateway.registry.snapshot().backends {
        metrics::gauge!("a2a_backend_healthy", "backend" => backend.name.to_string())
            .set(f64::from(u8::from(backend.healthy)));
    }
    metrics::gauge!("a2a_open_streams").set(crate::metrics::OPEN_STREAMS.load(Ordering::Relaxed) as f64);
    if let Some(live) = &runtime.shared.live_tasks {
        metrics::gauge!("a2a_live_tasks").set(live.total_leased() as f64);
    }
    let directory = runtime.shared.directory.size();
    metrics::gauge!("a2a_task_directory_entries", "kind" => "task").set(directory.tasks as f64);
    metrics::gauge!("a2a_task_directory_entries", "kind" => "context").set(directory.contexts as f64);
    metrics::counter!(crate::directory::EVICTED).absolute(directory.evicted);
    if let Some(audit) = &runtime.shared.audit {
        let stats = audit.stats();
        metrics::gauge!("a2a_audit_queue_depth").set(stats.queue_depth as f64);
        metrics::gauge!("a2a_audit_dropped_total").set(stats.dropped_total as f64);
        metrics::gauge!("a2a_audit_write_errors_total").set(stats.write_errors_total as f64);
        metrics::gauge!("a2a_audit_lost_total").set(stats.lost_total as f64);
        metrics::gauge!("a2a_audit_refused_total").set(stats.refused_total as f64);
        metrics::gauge!("a2a_audit_writable").set(if stats.writable { 1.0 } else { 0.0 });
    }
    let mut response = Response::new(Body::from(crate::metrics::render(handle)));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}

async fn readyz(State(runtime): State<Arc<Runtime>>) -> Response<Body> {
    let (status, body) = match runtime.readiness() {
        Ok(()) => (StatusCode::OK, json!({"ready": true})),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, json!({"ready": false, "reason": reason})),
    };
    axum::response::IntoResponse::into_response((status, axum::Json(body)))
}

mod cards;
mod catalog;
use self::cards::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::MemoryDirectory;
    use crate::protocol::early_ids::{AgentTask, MemoryEarlyIds};

    /// Early ids are swept with the directory, off the call path: expired ones leave the map.
    #[tokio::test]
    async fn the_directory_sweeper_sweeps_the_early_ids_too() {
        let directory: Arc<dyn TaskDirectory> = Arc::new(MemoryDirectory::new(Duration::from_secs(60)));
        let ids = Arc::new(MemoryEarlyIds::new(Duration::from_millis(50)));
        for i in 0..100 {
            ids.insert("alice", &format!("e{i}"), AgentTask { task_id: format!("a{i}"), context_id: None });
        }
        assert_eq!(ids.len(), 100);
        let stop = CancellationToken::new();
        spawn_directory_sweeper(directory, ids.clone(), Duration::from_millis(20), stop.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !ids.is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
        assert_eq!(ids.len(), 0, "expired ids are forgotten by the sweeper");
    }
}
