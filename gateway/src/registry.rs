//! The backend registry: fetches each backend's Agent Card at start and then periodically, keeps
//! health, and publishes an immutable [`Snapshot`] — healthy backends, the skill index and the
//! rendered cards — that the request path reads without locks.
//!
//! Health has two sources. N failed card fetches in a row make a backend unhealthy until a fetch
//! succeeds. N failed requests in a row (failures to answer and timeouts: a grey failure whose card
//! still answers) eject it; then only real traffic brings it back: after the ejection time it is
//! half-open — one request at a time may probe it — and the first success re-admits it, while a
//! failure ejects it again for twice as long.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_policies::Dialect;
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

/// Everything routing and the card endpoints need, swapped as a whole when anything changes.
pub struct Snapshot {
    /// In configuration order.
    pub backends: Vec<Arc<Backend>>,
    by_name: HashMap<Arc<str>, usize>,
    /// Skill id → indices of healthy, not draining backends that declare it.
    by_skill: HashMap<String, Vec<usize>>,
    pub gateway_card: CardDoc,
    agent_cards: HashMap<Arc<str>, CardDoc>,
    /// (backend, skill id) → what input validation needs of the skill.
    skill_specs: HashMap<(Arc<str>, String), Arc<SkillSpec>>,
    /// Healthy backends' skills, indexed to resolve messages that name none.
    pub skill_index: Arc<crate::resolve::SkillIndex>,
    /// Skills that known backends declare but none can take now (unhealthy or draining): a call
    /// for one meets an outage, not a wrong name.
    resting_skills: std::collections::HashSet<String>,
    /// Backends whose card was never read: they may offer any skill.
    unread: Vec<Arc<str>>,
}

impl Snapshot {
    pub fn backend(&self, name: &str) -> Option<&Arc<Backend>> {
        self.by_name.get(name).map(|&i| &self.backends[i])
    }

    /// Healthy backends declaring `skill`.
    pub fn with_skill(&self, skill: &str) -> Vec<&Arc<Backend>> {
        self.by_skill.get(skill).map(|list| list.iter().map(|&i| &self.backends[i]).collect()).unwrap_or_default()
    }

    /// Skill ids of healthy backends, sorted.
    pub fn skill_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.by_skill.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// Whether a call for `skill`, which no backend can take now, meets an outage: a known backend
    /// declares it but is unhealthy or draining, or a backend was never read and may declare it.
    pub fn skill_resting(&self, skill: &str) -> bool {
        self.resting_skills.contains(skill) || !self.unread.is_empty()
    }

    /// Backends whose card was never read.
    pub fn unread(&self) -> &[Arc<str>] {
        &self.unread
    }

    /// What input validation needs to know about `skill` of `backend`.
    pub fn skill_spec(&self, backend: &str, skill: &str) -> Option<&Arc<SkillSpec>> {
        // Keyed by owned strings; the lookup builds the key (one small allocation per checked send).
        self.skill_specs.get(&(Arc::from(backend), skill.to_string()))
    }

    /// The per-agent card of a healthy backend.
    pub fn agent_card(&self, name: &str) -> Option<&CardDoc> {
        self.agent_cards.get(name)
    }
}

/// What the health loop knows about one backend between rounds.
struct BackendState {
    config: config::Backend,
    base: Url,
    card_url: Url,
    card: Option<Arc<Value>>,
    healthy: bool,
    failures: u32,
    draining: bool,
    /// When the card was last fetched (successfully or not), and why the last fetch failed.
    last_fetch: Option<std::time::SystemTime>,
    last_error: Option<String>,
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

/// Backends taken out of routing, by reason (`request_failures`, `probe_failed`).
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
    pub consecutive_failures: u32,
    /// Why the backend is out of routing although its card answers: `request_failures` (ejected),
    /// `probing` (half-open: one request at a time tries it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ejected: Option<&'static str>,
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
    round_robin: AtomicUsize,
}

/// Why a card fetch did not count as a successful health check.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error("card fetch failed: {0}")]
    Fetch(#[from] reqwest::Error),
    #[error("card fetch answered HTTP {0}")]
    Status(u16),
    #[error("card is not JSON: {0}")]
    Json(serde_json::Error),
    #[error("card is larger than limits.max_card_bytes ({0} bytes)")]
    TooLarge(usize),
    #[error("card offers no A2A 1.0 JSONRPC or HTTP+JSON interface")]
    NoInterface,
}

impl Registry {
    /// A registry for `config`'s backends; those `previous` knew with the same name, URL and card
    /// path start with its card and health.
    pub fn new(
        config: &Config,
        cards: CardSettings,
        client: reqwest::Client,
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
                card: before.and_then(|b| b.card.clone()),
                healthy: before.is_some_and(|b| b.healthy),
                failures: before.map_or(0, |b| b.failures),
                draining: false,
                last_fetch: before.and_then(|b| b.last_fetch),
                last_error: before.and_then(|b| b.last_error.clone()),
                ejection: before.and_then(|b| b.ejection),
            });
        }
        drop(known);
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
            round_robin: AtomicUsize::new(0),
        });
        Ok(registry)
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Picks one of `candidates` in turn. A half-open backend is picked only while no other probe
    /// of it is in flight.
    pub fn pick<'a>(&self, candidates: &[&'a Arc<Backend>]) -> Option<&'a Arc<Backend>> {
        if candidates.is_empty() {
            return None;
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
        self.probing[index].store(0, Ordering::Release);
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
    }

    /// A half-open backend answered a request: it is back.
    fn readmit(&self, index: usize, name: &str) {
        let Ok(mut states) = self.states.lock() else { return };
        let state = &mut states[index];
        if state.ejection.take().is_some() {
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
        states
            .iter()
            .map(|state| {
                let backend = snapshot.backend(&state.config.name);
                let dialect = state.card.as_ref().map(|_| match backend.map(|b| b.dialect) {
                    Some(Dialect::V03) => "0.3",
                    Some(Dialect::Early) => "early",
                    _ => "1.0",
                });
                let skills = state
                    .card
                    .as_deref()
                    .and_then(|c| c.get("skills")?.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|s| Some(s.get("id")?.as_str()?.to_string()))
                    .collect();
                BackendStatus {
                    name: state.config.name.clone(),
                    url: state.config.url.clone(),
                    healthy: state.healthy && state.card.is_some(),
                    draining: state.draining,
                    dialect,
                    skills,
                    last_card_fetch: state.last_fetch.map(|t| humantime::format_rfc3339_millis(t).to_string()),
                    last_card_error: state.last_error.clone(),
                    consecutive_failures: state.failures,
                    ejected: state.ejection.map(|e| if e.half_open { "probing" } else { "request_failures" }),
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
        let Some((card_url, name)) = self
            .states
            .lock()
            .ok()
            .and_then(|states| states.get(index).map(|s| (s.card_url.clone(), s.config.name.clone())))
        else {
            return;
        };
        let result = self.fetch_card(card_url).await;
        let changed = {
            let Ok(mut states) = self.states.lock() else { return };
            let state = &mut states[index];
            let was_healthy = state.healthy;
            state.last_fetch = Some(std::time::SystemTime::now());
            state.last_error = result.as_ref().err().map(ToString::to_string);
            let changed = match result {
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

    async fn fetch_card(&self, url: Url) -> Result<Value, CheckError> {
        fetch_card(&self.client, url, self.health.timeout, self.max_card_bytes).await
    }
}

/// Fetches the card at `url` and checks that it offers an interface the gateway can use (a
/// self-registering agent's card is checked so before it is admitted).
pub async fn probe_card(client: &reqwest::Client, url: Url, timeout: Duration, max_bytes: usize) -> Result<(), String> {
    fetch_card(client, url, timeout, max_bytes).await.map(drop).map_err(|e| e.to_string())
}

async fn fetch_card(client: &reqwest::Client, url: Url, timeout: Duration, max: usize) -> Result<Value, CheckError> {
    let response = client
        .get(url.clone())
        .header("a2a-version", crate::protocol::PROTOCOL_VERSION)
        .timeout(timeout)
        .send()
        .await?;
    if !response.status().is_success() {
        return Err(CheckError::Status(response.status().as_u16()));
    }
    let bytes = read_capped(response, max).await?;
    let card: Value = serde_json::from_slice(&bytes).map_err(CheckError::Json)?;
    let card = normalize_card(card);
    let (_, jsonrpc, rest) = interfaces_of(&card, None);
    if jsonrpc.is_none() && rest.is_none() && grpc_interface(&card, &url).is_none() {
        return Err(CheckError::NoInterface);
    }
    Ok(card)
}

/// The body of `response`, refused as soon as it passes `max` bytes (by its declared length, or while
/// it streams in): a huge card costs the gateway at most `max` bytes of memory. The health check's
/// timeout bounds the time.
async fn read_capped(response: reqwest::Response, max: usize) -> Result<Vec<u8>, CheckError> {
    use futures::StreamExt;
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(CheckError::TooLarge(max));
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max {
            return Err(CheckError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A card in the 1.0 shape: 1.0 cards as they are, a 0.3 card (top-level `url` and a 0.x
/// `protocolVersion`, or `preferredTransport` / `additionalInterfaces`) and an early card (a `url`
/// and no version) through their translations, which list their interfaces as 0.x ones.
fn normalize_card(card: Value) -> Value {
    if card.get("supportedInterfaces").is_some_and(Value::is_array) || card.get("url").is_none() {
        return card;
    }
    let version = card.get("protocolVersion").and_then(Value::as_str);
    let is_v03 = version.is_some_and(|v| v.starts_with("0."))
        || card.get("preferredTransport").is_some()
        || card.get("additionalInterfaces").is_some();
    let translated = if is_v03 {
        serde_json::from_value::<v03::AgentCard>(card.clone()).ok().map(v03::card_to_v1)
    } else {
        serde_json::from_value::<early::AgentCard>(card.clone()).ok().map(early::card_to_v1)
    };
    translated.and_then(|c| serde_json::to_value(c).ok()).unwrap_or(card)
}

/// The dialect the gateway speaks to a backend and the paths of its interfaces in it: the first
/// 1.x JSONRPC and HTTP+JSON interfaces; without any, a 0.x JSONRPC one (A2A 0.3) or the early
/// dialect's HTTP+JSON one. `force` picks a dialect the card offers (e.g. the 0.3 interface of an
/// agent that serves both).
fn interfaces_of(card: &Value, force: Option<Dialect>) -> (Dialect, Option<String>, Option<String>) {
    let order = match force {
        Some(dialect) => vec![dialect],
        None => vec![Dialect::V1, Dialect::V03, Dialect::Early],
    };
    for dialect in order {
        let (jsonrpc, rest) = interface_paths(card, dialect);
        if jsonrpc.is_some() || rest.is_some() {
            return (dialect, jsonrpc, rest);
        }
    }
    (Dialect::V1, None, None)
}

/// The paths of the card's first JSONRPC and HTTP+JSON interfaces of `dialect` (0.3: JSON-RPC only,
/// the one 0.3 binding the gateway bridges; early: HTTP+JSON of version 0.1 only).
fn interface_paths(card: &Value, dialect: Dialect) -> (Option<String>, Option<String>) {
    let mut jsonrpc = None;
    let mut rest = None;
    let Some(Value::Array(list)) = card.get("supportedInterfaces") else {
        return (None, None);
    };
    for interface in list {
        let version = interface.get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0");
        let binding = interface.get("protocolBinding").and_then(Value::as_str);
        let wanted = match dialect {
            Dialect::V1 => version.split('.').next() == Some("1"),
            Dialect::Early => version == early::PROTOCOL_VERSION && binding == Some("HTTP+JSON"),
            Dialect::V03 => {
                version.starts_with("0.") && version != early::PROTOCOL_VERSION && binding == Some("JSONRPC")
            }
        };
        if !wanted {
            continue;
        }
        let Some(url) = interface.get("url").and_then(Value::as_str) else { continue };
        let Some(path) = url_path(url) else { continue };
        let slot = match interface.get("protocolBinding").and_then(Value::as_str) {
            Some("JSONRPC") => &mut jsonrpc,
            Some("HTTP+JSON") => &mut rest,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(path);
        }
    }
    (jsonrpc, rest)
}

/// The card's first A2A 1.x GRPC interface, on the host of `base`: a card may name the port its gRPC
/// service listens on (gRPC servers rarely share the card's port), never another host. Interfaces
/// that need TLS are not used (the gateway speaks gRPC to agents over plain HTTP/2).
fn grpc_interface(card: &Value, base: &Url) -> Option<GrpcTarget> {
    let Some(Value::Array(list)) = card.get("supportedInterfaces") else { return None };
    list.iter().find_map(|interface| {
        let version = interface.get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0");
        if interface.get("protocolBinding").and_then(Value::as_str) != Some("GRPC")
            || version.split('.').next() != Some("1")
        {
            return None;
        }
        let address = interface.get("url").and_then(Value::as_str)?;
        let with_scheme = if address.contains("://") { address.to_owned() } else { format!("http://{address}") };
        let named = Url::parse(&with_scheme).ok()?;
        if !matches!(named.scheme(), "http" | "grpc") || named.host_str() != base.host_str() {
            return None;
        }
        let mut url = base.clone();
        url.set_port(named.port().or(base.port())).ok()?;
        url.set_path(named.path().trim_end_matches('/'));
        url.set_query(None);
        let tenant = interface.get("tenant").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
        Some(GrpcTarget { url, tenant })
    })
}

/// The path of an absolute or root-relative URL.
fn url_path(url: &str) -> Option<String> {
    match Url::parse(url) {
        Ok(parsed) => Some(parsed.path().to_string()),
        Err(_) if url.starts_with('/') => Some(url.to_string()),
        Err(_) => None,
    }
}

/// The interface path on the configured origin: a card cannot send the gateway to another host.
fn on_origin(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url
}

/// The address forms of a backend (its configured URL and the URLs its card names), for redaction
/// from the cards the gateway serves.
fn redactor(state: &BackendState, card: &Value) -> Redactor {
    let mut urls = vec![state.base.as_str().to_owned(), state.card_url.as_str().to_owned()];
    if let Some(Value::Array(list)) = card.get("supportedInterfaces") {
        urls.extend(list.iter().filter_map(|i| Some(i.get("url")?.as_str()?.to_owned())));
    }
    if let Some(url) = card.get("url").and_then(Value::as_str) {
        urls.push(url.to_owned());
    }
    Redactor::new(urls.iter().map(String::as_str))
}

/// The routing view of `states`; cards whose content is unchanged keep `previous`'s date.
fn build_snapshot(states: &[BackendState], cards: &CardSettings, previous: Option<&Snapshot>) -> Snapshot {
    let mut backends = Vec::with_capacity(states.len());
    let mut by_name = HashMap::new();
    let mut by_skill: HashMap<String, Vec<usize>> = HashMap::new();
    let mut agent_cards = HashMap::new();
    let mut healthy_cards = Vec::new();
    let mut resting_skills = std::collections::HashSet::new();
    let mut unread = Vec::new();
    let redactors: Vec<(usize, Redactor)> =
        states.iter().enumerate().filter_map(|(i, s)| Some((i, redactor(s, s.card.as_deref()?)))).collect();
    let no_redactor = Redactor::default();
    for (i, state) in states.iter().enumerate() {
        let name: Arc<str> = Arc::from(state.config.name.as_str());
        let card = state.card.as_deref().filter(|_| state.healthy);
        let force = state.config.dialect.map(config::BackendDialect::dialect);
        let (dialect, jsonrpc, rest) = card.map(|c| interfaces_of(c, force)).unwrap_or((Dialect::V1, None, None));
        let skills: Vec<String> = card
            .and_then(|c| c.get("skills")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|s| Some(s.get("id")?.as_str()?.to_string()))
            .collect();
        for skill in skills.iter().filter(|_| !state.draining) {
            let list = by_skill.entry(skill.clone()).or_default();
            if !list.contains(&i) {
                list.push(i);
            }
        }
        if let Some(card) = card {
            healthy_cards.push((i, card));
        }
        match state.card.as_deref() {
            None => unread.push(name.clone()),
            Some(known) if card.is_none() || state.draining => resting_skills.extend(skill_ids(known)),
            Some(_) => {}
        }
        backends.push(Arc::new(Backend {
            name: name.clone(),
            healthy: card.is_some(),
            jsonrpc_url: jsonrpc.map(|p| on_origin(&state.base, &p)),
            rest_url: rest.map(|p| on_origin(&state.base, p.trim_end_matches('/'))),
            grpc: card.filter(|_| dialect == Dialect::V1).and_then(|c| grpc_interface(c, &state.base)),
            skills,
            dialect,
            draining: state.draining,
            half_open: state.ejection.is_some_and(|e| e.half_open),
        }));
        by_name.insert(name, i);
    }
    let views: Vec<BackendCard<'_>> = healthy_cards
        .iter()
        .map(|&(i, card)| BackendCard {
            name: &states[i].config.name,
            card,
            redactor: redactors.iter().find(|(j, _)| *j == i).map_or(&no_redactor, |(_, r)| r),
            // Every backend is offered in every binding: the gateway bridges the ones it lacks.
            has_jsonrpc: reachable(&backends[i]),
            has_rest: reachable(&backends[i]),
        })
        .collect();
    for view in &views {
        let before = previous.and_then(|p| p.agent_cards.get(view.name));
        let doc = CardDoc::new(&card::agent_card(cards, view)).since(before);
        agent_cards.insert(backends[by_name[view.name]].name.clone(), doc);
    }
    // A draining backend's skills are not on offer for new tasks.
    let offered: Vec<BackendCard<'_>> = views
        .iter()
        .filter(|v| !backends[by_name[v.name]].draining)
        .map(|v| BackendCard {
            name: v.name,
            card: v.card,
            redactor: v.redactor,
            has_jsonrpc: v.has_jsonrpc,
            has_rest: v.has_rest,
        })
        .collect();
    let gateway_card = CardDoc::new(&card::gateway_card(cards, &offered)).since(previous.map(|p| &p.gateway_card));
    let mut skill_specs = HashMap::new();
    for view in &views {
        let version = card_version(view.card);
        let defaults = string_list(view.card.get("defaultInputModes"));
        for skill in view.card.get("skills").and_then(Value::as_array).into_iter().flatten() {
            let Some(id) = skill.get("id").and_then(Value::as_str) else { continue };
            let modes = skill.get("inputModes").map(|m| string_list(Some(m))).unwrap_or_else(|| defaults.clone());
            let spec = SkillSpec {
                version,
                input_schema: skill.get("inputSchema").cloned().map(Arc::new),
                input_modes: modes,
            };
            skill_specs.insert((Arc::from(view.name), id.to_string()), Arc::new(spec));
        }
    }
    let skill_index = Arc::new(crate::resolve::SkillIndex::build(healthy_cards.iter().map(|&(_, card)| card)));
    Snapshot {
        backends,
        by_name,
        by_skill,
        gateway_card,
        agent_cards,
        skill_specs,
        skill_index,
        resting_skills,
        unread,
    }
}

/// A backend the gateway can send calls to in some binding (and so, bridging, in every binding).
fn reachable(backend: &Backend) -> bool {
    backend.jsonrpc_url.is_some()
        || backend.rest_url.is_some()
        || backend.grpc.is_some()
        || backend.dialect != Dialect::V1
}

fn card_version(card: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(card).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

/// The skill ids a card declares.
fn skill_ids(card: &Value) -> impl Iterator<Item = String> + '_ {
    card.get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| Some(s.get("id")?.as_str()?.to_string()))
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect()
}

/// The registry as input validation's skill catalog: always the current snapshot.
pub struct RegistryCatalog(pub Arc<Registry>);

impl SkillCatalog for RegistryCatalog {
    fn skill(&self, backend: &str, skill_id: &str) -> Option<Arc<SkillSpec>> {
        self.0.snapshot().skill_spec(backend, skill_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interface_paths_prefer_1_x_and_skip_0_3() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://x/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://x/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://x/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://x/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ]});
        assert_eq!(interface_paths(&card, Dialect::V1), (Some("/a2a/jsonrpc".into()), Some("/a2a/rest".into())));
        assert_eq!(interface_paths(&json!({"url": "http://x/"}), Dialect::V1), (None, None));
        assert_eq!(interfaces_of(&card, Some(Dialect::V03)), (Dialect::V03, Some("/old".into()), None));
    }

    #[test]
    fn cards_of_0_3_and_early_agents_are_read_in_their_dialect() {
        let v03 = normalize_card(json!({"name": "a", "url": "http://x/rpc", "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC", "version": "1", "skills": [{"id": "s", "name": "S"}]}));
        assert_eq!(interfaces_of(&v03, None), (Dialect::V03, Some("/rpc".into()), None));
        assert_eq!(v03["skills"][0]["id"], "s");
        let early = normalize_card(json!({"name": "e", "url": "http://x/", "version": "0.1.0",
            "skills": [{"id": "early-echo", "name": "E", "inputSchema": {"type": "object"}}]}));
        assert_eq!(interfaces_of(&early, None), (Dialect::Early, None, Some("/".into())));
        assert_eq!(early["skills"][0]["inputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn interfaces_are_joined_to_the_configured_origin() {
        let base = Url::parse("http://10.0.0.5:8000").unwrap();
        assert_eq!(on_origin(&base, "/a2a/jsonrpc").as_str(), "http://10.0.0.5:8000/a2a/jsonrpc");
    }
}
