//! Over 400 lines on purpose: the registry's one state machine (card fetches, health, ejection,
//! draining) is one impl; card reading and snapshots live in submodules.
//!
//! The backend registry: fetches each backend's Agent Card at start and then periodically, keeps
//! health, and publishes an immutable [`Snapshot`] — healthy backends, the skill index and the
//! rendered cards — that the request path reads without locks.
//!
//! Health has two sources. N failed card fetches in a row make a backend unhealthy until a fetch
//! succeeds. N failed requests in a row (failures to answer and timeouts: a grey failure whose card
//! still answers) eject it; then only real traffic brings it back: after the ejection time it is
//! half-open — one request at a time may probe it — and the first success re-admits it, while a
//! failure ejects it again for twice as long.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::Dialect;
use a2a_policies::validate::{SkillCatalog, SkillSpec};
use arc_swap::ArcSwap;
use reqwest::Url;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::card::{self, BackendCard, CardDoc, CardSettings};
use crate::config::{self, Config};
use crate::protocol::translate::{early, v03};
use crate::redact::Redactor;

/// One backend as the request path sees it.
#[derive(Debug)]
pub struct Backend {
    pub name: Arc<str>,
    pub healthy: bool,
    /// Where the gateway sends JSON-RPC calls (from the card's interface, on the configured origin).
    pub jsonrpc_url: Option<Url>,
    /// `jsonrpc_url` as the request target, parsed once here instead of on every call.
    pub jsonrpc_uri: Option<http::Uri>,
    /// Base of the HTTP+JSON binding (of the early dialect for an early agent); operation paths are
    /// appended.
    pub rest_url: Option<Url>,
    /// The agent's A2A 1.0 gRPC interface, used when it offers neither JSON binding.
    pub grpc: Option<GrpcTarget>,
    pub skills: Vec<String>,
    /// The A2A dialect the gateway speaks to this backend: 1.0 when its card offers a 1.x interface
    /// (or config says so), else 0.3 JSON-RPC or the early REST dialect (bridged).
    pub dialect: Dialect,
    /// Drained by an operator: picked for no new task (not in the skill index nor the gateway's
    /// card), while calls about its tasks still reach it.
    pub draining: bool,
    /// Ejected by failed requests and now probed: one new task at a time is sent to it.
    pub half_open: bool,
}

/// Where the gateway calls an agent's gRPC service (HTTP/2 without TLS), and the tenant its interface
/// names (set on every request to it).
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcTarget {
    pub url: Url,
    pub tenant: Option<String>,
}

/// What the health loop knows about one backend between rounds.
struct BackendState {
    config: config::Backend,
    base: Url,
    card_url: Url,
    /// A self-registered agent's card is fetched through its screen; others through the registry's
    /// client.
    client: Option<reqwest::Client>,
    card: Option<Arc<Value>>,
    healthy: bool,
    failures: u32,
    draining: bool,
    /// When the card was last fetched (successfully or not), and why the last fetch failed.
    last_fetch: Option<std::time::SystemTime>,
    last_error: Option<String>,
    /// The `kid` of the configured key that verified the card's signature (provenance).
    signed_by: Option<String>,
    /// Out of routing because requests failed, until a request succeeds.
    ejection: Option<Ejection>,
}

/// A backend taken out by failed requests.
#[derive(Clone, Copy)]
struct Ejection {
    /// Probing starts then (half-open).
    until: std::time::Instant,
    /// How long the next ejection lasts if the probe fails.
    next: Duration,
    half_open: bool,
}

/// Ejections every replica sees (Redis): one replica's ejection takes the backend out for all.
pub trait SharedEjections: Send + Sync + 'static {
    /// `backend` is out for `lasts` (queued, off the request path).
    fn eject(&self, backend: &str, lasts: Duration);
    /// `backend` answered a probe: it is back.
    fn readmit(&self, backend: &str);
    /// How much longer `backend` is out, if another replica ejected it.
    fn ejected_for(
        &self,
        backend: &str,
    ) -> futures::future::BoxFuture<'static, Result<Option<Duration>, crate::store_error::StoreError>>;
}

/// Backends taken out of routing, by reason (`request_failures`, `probe_failed`, `shared`).
pub const EJECTIONS: &str = "a2a_backend_ejections_total";

/// The longest an ejection lasts.
const MAX_EJECTION: Duration = Duration::from_secs(300);

/// One backend as the admin API reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackendStatus {
    pub name: String,
    pub url: String,
    pub healthy: bool,
    pub draining: bool,
    /// `1.0`, `0.3` or `early`; `null` before a card was read.
    pub dialect: Option<&'static str>,
    pub skills: Vec<String>,
    /// RFC 3339, UTC.
    pub last_card_fetch: Option<String>,
    pub last_card_error: Option<String>,
    /// The `kid` (from `card_jwks`) whose signature on the backend's card verified at the last
    /// fetch: the card the gateway rewrote and re-signed came from that key's holder.
    pub card_signed_by: Option<String>,
    pub consecutive_failures: u32,
    /// Why the backend is out of routing although its card answers: `request_failures` (ejected),
    /// `probing` (half-open: one request at a time tries it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ejected: Option<&'static str>,
    /// A self-registered agent's grant: the credential that registered it and the skills it may
    /// offer (`skills` above are those of its card the grant allows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_grant: Option<config::SkillGrant>,
}

pub struct Registry {
    states: Mutex<Vec<BackendState>>,
    /// Consecutive failed requests per backend (outlier detection), by configuration index.
    request_failures: Vec<std::sync::atomic::AtomicU32>,
    /// When a half-open backend's probe was claimed (ms since `epoch`, 0: none in flight), by
    /// configuration index. A claim older than the ejection time lapses: a probe whose call was
    /// refused before it was forwarded must not keep the backend out for good.
    probing: Vec<std::sync::atomic::AtomicU64>,
    epoch: std::time::Instant,
    snapshot: ArcSwap<Snapshot>,
    cards: CardSettings,
    health: config::Health,
    /// A card larger than this fails its fetch (read in chunks, never buffered past it).
    max_card_bytes: usize,
    client: reqwest::Client,
    /// Card fetches of backends with their own TLS settings.
    tls_clients: crate::clients::BackendClients,
    /// The keys of backends whose card signatures are checked, and whether a failure fails.
    card_keys: std::collections::HashMap<String, (Arc<crate::card::verify::CardKeys>, bool)>,
    round_robin: AtomicUsize,
    shared_ejections: std::sync::OnceLock<Arc<dyn SharedEjections>>,
}

/// Why a card fetch did not count as a successful health check.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error("card fetch failed: {}", with_causes(.0))]
    Fetch(#[from] reqwest::Error),
    #[error("card fetch answered HTTP {0}")]
    Status(u16),
    #[error("card is not JSON: {0}")]
    Json(serde_json::Error),
    #[error("card is larger than limits.max_card_bytes ({0} bytes)")]
    TooLarge(usize),
    #[error("card offers no A2A 1.0 JSONRPC or HTTP+JSON interface")]
    NoInterface,
    #[error("card signature: {0}")]
    Signature(String),
}

/// An error with its causes: reqwest's own message leaves out why (a TLS certificate refused, a
/// connection refused), which is what the operator needs to read in the admin API.
fn with_causes(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Registry {
    /// A registry for `config`'s backends; those `previous` knew with the same name, URL and card
    /// path start with its card and health.
    pub fn new(
        config: &Config,
        cards: CardSettings,
        client: reqwest::Client,
        tls_clients: crate::clients::BackendClients,
        previous: Option<&Registry>,
    ) -> anyhow::Result<Arc<Registry>> {
        let known = previous.and_then(|p| p.states.lock().ok());
        let mut states = Vec::new();
        for backend in &config.backends {
            let base = Url::parse(&backend.url)?;
            let card_url = Url::parse(&format!("{}{}", backend.url.trim_end_matches('/'), backend.card_path))?;
            let before =
                known.as_ref().and_then(|k| k.iter().find(|s| s.config.name == backend.name && s.card_url == card_url));
            states.push(BackendState {
                config: backend.clone(),
                base,
                card_url,
                client: backend.screen.as_ref().map(screened_client).transpose()?,
                card: before.and_then(|b| b.card.clone()),
                healthy: before.is_some_and(|b| b.healthy),
                failures: before.map_or(0, |b| b.failures),
                draining: false,
                last_fetch: before.and_then(|b| b.last_fetch),
                last_error: before.and_then(|b| b.last_error.clone()),
                signed_by: before.and_then(|b| b.signed_by.clone()),
                ejection: before.and_then(|b| b.ejection),
            });
        }
        drop(known);
        let mut card_keys = std::collections::HashMap::new();
        for backend in config.backends.iter().filter(|b| b.card_jwks.is_some()) {
            let path = config.base_dir.join(backend.card_jwks.as_deref().unwrap_or(std::path::Path::new("")));
            let keys = crate::card::verify::CardKeys::load(&path)
                .map_err(|e| anyhow::anyhow!("backends '{}'.card_jwks: {e}", backend.name))?;
            card_keys.insert(backend.name.clone(), (Arc::new(keys), backend.require_signed_card));
        }
        let registry = Arc::new(Registry {
            request_failures: states.iter().map(|_| std::sync::atomic::AtomicU32::new(0)).collect(),
            probing: states.iter().map(|_| std::sync::atomic::AtomicU64::new(0)).collect(),
            epoch: std::time::Instant::now(),
            snapshot: ArcSwap::from_pointee(build_snapshot(&states, &cards, None)),
            states: Mutex::new(states),
            cards,
            health: config.health.clone(),
            max_card_bytes: config.limits.max_card_bytes,
            client,
            tls_clients,
            card_keys,
            round_robin: AtomicUsize::new(0),
            shared_ejections: std::sync::OnceLock::new(),
        });
        Ok(registry)
    }

    /// What signs the cards served (`gateway_identity`), for cards made per call.
    pub fn card_signer(&self) -> Option<&crate::card::CardSigner> {
        self.cards.signer.as_ref()
    }

    /// Shares ejections through `store` (set once, when the generation is built).
    pub fn share_ejections(&self, store: Arc<dyn SharedEjections>) {
        let _ = self.shared_ejections.set(store);
    }

    /// The current snapshot, to hold (across awaits, for a whole call).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// The current snapshot for a short look: no write to the snapshot's shared reference count,
    /// which every worker's calls would otherwise pass back and forth.
    pub fn current(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// Picks one of `candidates` in turn. A half-open backend is picked only while no other probe
    /// of it is in flight.
    pub fn pick<'a>(&self, candidates: &[&'a Arc<Backend>]) -> Option<&'a Arc<Backend>> {
        if candidates.is_empty() {
            return None;
        }
        if let [only] = candidates {
            return (!only.half_open || self.take_probe(only)).then_some(*only);
        }
        let n = self.round_robin.fetch_add(1, Ordering::Relaxed);
        (0..candidates.len())
            .map(|i| candidates[(n + i) % candidates.len()])
            .find(|c| !c.half_open || self.take_probe(c))
    }

    /// Claims the one probe of half-open backend `backend`.
    fn take_probe(&self, backend: &Backend) -> bool {
        let Some(&index) = self.snapshot.load().by_name.get(&backend.name) else { return false };
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX).max(1);
        let claimed = self.probing[index].load(Ordering::Acquire);
        let lapse = u64::try_from(self.health.ejection_time.as_millis()).unwrap_or(u64::MAX);
        if claimed != 0 && now.saturating_sub(claimed) < lapse {
            return false;
        }
        self.probing[index].compare_exchange(claimed, now, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Outlier detection: `unhealthy_after` failed requests in a row eject a backend at once; only a
    /// successful request (a probe, once half-open) brings it back — a card fetch does not.
    pub fn report_request(&self, name: &str, ok: bool) {
        let Some(index) = self.snapshot.load().by_name.get(name).copied() else { return };
        let half_open = self.snapshot.load().backends[index].half_open;
        // Read first, as below: a healthy backend's slot is 0, and writing it anyway would pass its
        // cache line between every worker on every call.
        if self.probing[index].load(Ordering::Relaxed) != 0 {
            self.probing[index].store(0, Ordering::Release);
        }
        let counter = &self.request_failures[index];
        if ok {
            // Read first: the common case writes nothing to the shared cache line.
            if counter.load(Ordering::Relaxed) != 0 {
                counter.store(0, Ordering::Relaxed);
            }
            if half_open {
                self.readmit(index, name);
            }
            return;
        }
        let failures = counter.fetch_add(1, Ordering::Relaxed) + 1;
        if failures < self.health.unhealthy_after && !half_open {
            return;
        }
        let Ok(mut states) = self.states.lock() else { return };
        let state = &mut states[index];
        let reason = if half_open { "probe_failed" } else { "request_failures" };
        let next = match state.ejection {
            Some(e) if e.half_open => e.next,
            Some(_) => return,
            None => self.health.ejection_time,
        };
        let lasts = next;
        tracing::warn!(backend = name, failures, reason, out_for = ?lasts, "backend ejected: its requests fail, whatever its card says");
        metrics::counter!(EJECTIONS, "backend" => name.to_owned(), "reason" => reason).increment(1);
        state.healthy = false;
        state.failures = self.health.unhealthy_after;
        state.ejection = Some(Ejection {
            until: std::time::Instant::now() + lasts,
            next: (lasts * 2).min(MAX_EJECTION),
            half_open: false,
        });
        self.snapshot.store(Arc::new(build_snapshot(&states, &self.cards, Some(&self.snapshot.load()))));
        counter.store(0, Ordering::Relaxed);
        if let Some(shared) = self.shared_ejections.get() {
            shared.eject(name, lasts);
        }
    }

    /// A half-open backend answered a request: it is back.
    fn readmit(&self, index: usize, name: &str) {
        let Ok(mut states) = self.states.lock() else { return };
        let state = &mut states[index];
        if state.ejection.take().is_some() {
            if let Some(shared) = self.shared_ejections.get() {
                shared.readmit(name);
            }
            tracing::info!(backend = name, "backend re-admitted: a probe request succeeded");
            self.snapshot.store(Arc::new(build_snapshot(&states, &self.cards, Some(&self.snapshot.load()))));
        }
    }

    /// Checks every backend once, concurrently; used at start so the first requests find backends.
    pub async fn check_all(self: &Arc<Self>) {
        let count = self.states.lock().map(|s| s.len()).unwrap_or(0);
        futures::future::join_all((0..count).map(|i| self.check(i))).await;
    }

    /// Drains (or undrains) backend `name`; `false` when there is no such backend.
    pub fn set_draining(&self, name: &str, draining: bool) -> bool {
        let Ok(mut states) = self.states.lock() else { return false };
        let Some(state) = states.iter_mut().find(|s| s.config.name == name) else { return false };
        if state.draining != draining {
            state.draining = draining;
            self.snapshot.store(Arc::new(build_snapshot(&states, &self.cards, Some(&self.snapshot.load()))));
        }
        true
    }

    /// Fetches backend `name`'s card now; its status after, or `None` when there is no such backend.
    pub async fn refresh(&self, name: &str) -> Option<BackendStatus> {
        let index = self.states.lock().ok()?.iter().position(|s| s.config.name == name)?;
        self.check(index).await;
        self.status().into_iter().find(|s| s.name == name)
    }

    /// Every backend's state, in configuration order.
    pub fn status(&self) -> Vec<BackendStatus> {
        let snapshot = self.snapshot();
        let Ok(states) = self.states.lock() else { return Vec::new() };
        let granted = granted_cards(&states);
        states
            .iter()
            .zip(&granted)
            .map(|(state, card)| {
                let backend = snapshot.backend(&state.config.name);
                let dialect = state.card.as_ref().map(|_| match backend.map(|b| b.dialect) {
                    Some(Dialect::V03) => "0.3",
                    Some(Dialect::Early) => "early",
                    _ => "1.0",
                });
                let skills = card.as_deref().map(|c| skill_ids(c).collect()).unwrap_or_default();
                BackendStatus {
                    name: state.config.name.clone(),
                    url: state.config.url.clone(),
                    healthy: state.healthy && state.card.is_some(),
                    draining: state.draining,
                    dialect,
                    skills,
                    last_card_fetch: state.last_fetch.map(|t| humantime::format_rfc3339_millis(t).to_string()),
                    last_card_error: state.last_error.clone(),
                    card_signed_by: state.signed_by.clone(),
                    consecutive_failures: state.failures,
                    ejected: state.ejection.map(|e| if e.half_open { "probing" } else { "request_failures" }),
                    skill_grant: state.config.skill_grant.as_deref().cloned(),
                }
            })
            .collect()
    }

    /// Checks the backends that have no card yet (new in a reload), concurrently.
    pub async fn check_unknown(self: &Arc<Self>) {
        let unknown: Vec<usize> = match self.states.lock() {
            Ok(states) => states.iter().enumerate().filter(|(_, s)| s.card.is_none()).map(|(i, _)| i).collect(),
            Err(_) => return,
        };
        futures::future::join_all(unknown.into_iter().map(|i| self.check(i))).await;
    }

    /// When a caller refused for an outage may try again: the next health check may bring a
    /// backend back.
    pub fn retry_hint(&self) -> Duration {
        self.health.interval
    }

    /// Whether any backend is healthy (readiness).
    pub fn any_healthy(&self) -> bool {
        self.snapshot.load().backends.iter().any(|b| b.healthy)
    }

    /// Runs the periodic checks until `stop` is cancelled.
    pub fn spawn_health_loops(self: &Arc<Self>, stop: CancellationToken) {
        let intervals: Vec<Duration> = match self.states.lock() {
            Ok(states) => states.iter().map(|s| s.config.health_interval.unwrap_or(self.health.interval)).collect(),
            Err(_) => return,
        };
        for (i, interval) in intervals.into_iter().enumerate() {
            let registry = self.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(interval);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticker.tick().await; // the first tick is immediate; check_all covered it
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = ticker.tick() => registry.check(i).await,
                    }
                }
            });
        }
    }

    /// Sets a backend's card as if a health check had just read it (in-process tests: no network).
    #[cfg(test)]
    pub(crate) fn install_card(&self, name: &str, card: Value) {
        let Ok(mut states) = self.states.lock() else { return };
        let state = states.iter_mut().find(|s| s.config.name == name).expect("a configured backend");
        state.card = Some(Arc::new(normalize_card(card)));
        state.healthy = true;
        let snapshot = build_snapshot(&states, &self.cards, Some(&self.snapshot.load()));
        self.snapshot.store(Arc::new(snapshot));
    }

    async fn check(&self, index: usize) {
        let Some((card_url, name, client)) = self.states.lock().ok().and_then(|states| {
            states.get(index).map(|s| (s.card_url.clone(), s.config.name.clone(), s.client.clone()))
        }) else {
            return;
        };
        // Another replica's ejection (a failing store is not one: this replica judges by itself).
        let shared_ejection = match self.shared_ejections.get() {
            Some(shared) => shared.ejected_for(&name).await.ok().flatten(),
            None => None,
        };
        let (result, signed_by) = match self.fetch_card(&name, card_url, client.as_ref()).await {
            Ok(card) => match self.check_signatures(&name, &card) {
                Ok(signed_by) => (Ok(card), signed_by),
                Err(error) => (Err(error), None),
            },
            Err(error) => (Err(error), None),
        };
        let changed = {
            let Ok(mut states) = self.states.lock() else { return };
            let state = &mut states[index];
            let was_healthy = state.healthy;
            let newly_ejected = shared_ejection.is_some() && state.ejection.is_none();
            if let Some(lasts) = shared_ejection
                && newly_ejected
            {
                tracing::warn!(backend = %name, out_for = ?lasts, "backend ejected by another replica");
                metrics::counter!(EJECTIONS, "backend" => name.clone(), "reason" => "shared").increment(1);
                state.healthy = false;
                state.failures = self.health.unhealthy_after;
                state.ejection = Some(Ejection {
                    until: std::time::Instant::now() + lasts,
                    next: (self.health.ejection_time * 2).min(MAX_EJECTION),
                    half_open: false,
                });
            }
            state.last_fetch = Some(std::time::SystemTime::now());
            state.last_error = result.as_ref().err().map(ToString::to_string);
            state.signed_by = signed_by;
            let changed = newly_ejected
                | match result {
                    Ok(card) => {
                        let card_changed = state.card.as_deref() != Some(&card);
                        if card_changed {
                            state.card = Some(Arc::new(card));
                        }
                        match &mut state.ejection {
                            // Ejected by requests: a card that answers proves nothing about them. Once the
                            // ejection time is up, real requests may probe it.
                            Some(ejection) => {
                                if !ejection.half_open && std::time::Instant::now() >= ejection.until {
                                    ejection.half_open = true;
                                    tracing::info!(backend = %name, "ejected backend is half-open: one request at a time probes it");
                                }
                                let admit = ejection.half_open;
                                if admit {
                                    state.failures = 0;
                                    state.healthy = true;
                                }
                                card_changed || (admit && !was_healthy)
                            }
                            None => {
                                state.failures = 0;
                                state.healthy = true;
                                card_changed || !was_healthy
                            }
                        }
                    }
                    Err(error) => {
                        state.failures = state.failures.saturating_add(1);
                        tracing::warn!(backend = %name, failures = state.failures, %error, "health check failed");
                        if state.failures >= self.health.unhealthy_after {
                            state.healthy = false;
                        }
                        was_healthy && !state.healthy
                    }
                };
            if changed {
                tracing::info!(backend = %name, healthy = state.healthy, "backend state changed");
                let snapshot = build_snapshot(&states, &self.cards, Some(&self.snapshot.load()));
                self.snapshot.store(Arc::new(snapshot));
            }
            changed
        };
        let _ = changed;
    }

    /// The backend's card signatures against its `card_jwks`: a failure fails the check with
    /// `require_signed_card`, and is logged otherwise.
    /// `Ok(Some(kid))`: the signature of that key verified.
    fn check_signatures(&self, backend: &str, card: &Value) -> Result<Option<String>, CheckError> {
        let Some((keys, required)) = self.card_keys.get(backend) else { return Ok(None) };
        match keys.verify(card) {
            Ok(kid) => Ok(Some(kid)),
            Err(reason) if *required => Err(CheckError::Signature(reason)),
            Err(reason) => {
                tracing::warn!(%backend, %reason, "the backend's card signature does not verify");
                Ok(None)
            }
        }
    }

    /// Fetches a backend's card through its own client: a self-registered agent's screened one
    /// (`screened`), else the one with its TLS settings, else the shared one.
    async fn fetch_card(
        &self,
        backend: &str,
        url: Url,
        screened: Option<&reqwest::Client>,
    ) -> Result<Value, CheckError> {
        let tls = self.tls_clients.get(backend).map(|clients| &clients.cards);
        let client = screened.or(tls).unwrap_or(&self.client);
        fetch_card(client, url, self.health.timeout, self.max_card_bytes).await
    }
}

/// A client that connects only to addresses `policy` passes, however the name resolves by then.
fn screened_client(policy: &Arc<crate::screen::ScreenPolicy>) -> anyhow::Result<reqwest::Client> {
    Ok(crate::screen::client_builder(policy.clone()).build()?)
}

/// The registry as input validation's skill catalog: always the current snapshot.
pub struct RegistryCatalog(pub Arc<Registry>);

impl SkillCatalog for RegistryCatalog {
    fn skill(&self, backend: &str, skill_id: &str) -> Option<Arc<SkillSpec>> {
        self.0.current().skill_spec(backend, skill_id).cloned()
    }
}

mod agent_card;
mod snapshot;

use self::agent_card::*;
pub use self::agent_card::{endpoints, probe_card};
pub use self::snapshot::Snapshot;
use self::snapshot::*;

#[cfg(test)]
mod tests;
