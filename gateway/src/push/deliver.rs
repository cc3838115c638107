//! Delivery: a watcher per task with configs learns the task's progress (woken by what the gateway
//! relays, and polling the owning agent with GetTask and backoff for what it does not see) and
//! POSTs each new state to every config of the task — the A2A payload (1.0: a `StreamResponse`
//! holding the task; 0.3: the task), the caller's `token` in `X-A2A-Notification-Token`, the
//! caller's `authentication` as `Authorization`, and the gateway's signature in
//! [`SIGNATURE_HEADER`]. Failed attempts are retried with exponential backoff and jitter; each
//! caller has a bounded number of deliveries waiting; what is given up on is counted as a dead
//! letter. Every delivery and failure goes to the audit log.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use a2a_core::TaskState;
use a2a_policies::audit::{Audit, PushOutcome};
use a2a_policies::backend_auth::BackendCredentials;
use bytes::Bytes;
use dashmap::DashMap;
use futures::future::BoxFuture;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{PushConfig, PushStore, StoredConfig};

#[cfg(test)]
mod tests;
mod webhook;

pub use webhook::SIGNATURE_HEADER;
use webhook::payload;

/// The request id of the watcher's own GetTask polls (their answers do not wake it).
pub const POLL_REQUEST_ID: &str = "push-poll";
/// The first pause between polls; it doubles up to `poll_max` while nothing changes.
const FIRST_POLL: Duration = Duration::from_millis(200);
/// A watcher gives up on a task that has not ended after this long.
const MAX_WATCH: Duration = Duration::from_secs(24 * 3600);
/// How often a task this replica does not follow is looked up in a shared store.
const LOOK_EVERY: Duration = Duration::from_secs(2);
/// Lookups remembered at most (older ones are dropped past it).
const LOOKED_MAX: usize = 10_000;

/// What deliveries need of a configuration generation: polls of tasks at their agents and the key
/// deliveries are signed with (the gateway implements it).
pub trait Generation: Send + Sync {
    /// The task as its agent `backend` has it now, polled for `config` (its owner and caller);
    /// `None` when the agent cannot say.
    fn fetch<'a>(
        &'a self,
        backend: &'a str,
        task_id: &'a str,
        config: &'a (Arc<str>, StoredConfig),
    ) -> BoxFuture<'a, Option<Value>>;
    /// The gateway's credentials (their key signs deliveries).
    fn credentials(&self) -> &BackendCredentials;
}

/// The current configuration generation, for polls and signatures (set by the server).
type CurrentGateway = Box<dyn Fn() -> Option<Arc<dyn Generation>> + Send + Sync>;

/// Watchers and deliveries.
pub struct Deliveries {
    config: PushConfig,
    store: Arc<dyn PushStore>,
    client: reqwest::Client,
    audit: Option<Audit>,
    gateway: OnceLock<CurrentGateway>,
    watchers: DashMap<String, Arc<Notify>>,
    /// When a task this replica does not follow was last looked up in a shared store.
    looked: DashMap<String, std::time::Instant>,
    /// Deliveries waiting or in flight, per owner.
    queued: DashMap<Arc<str>, usize>,
    stop: CancellationToken,
}

impl Deliveries {
    pub fn new(
        config: PushConfig,
        store: Arc<dyn PushStore>,
        audit: Option<Audit>,
        stop: CancellationToken,
    ) -> anyhow::Result<Arc<Deliveries>> {
        // No redirect (it could point anywhere), and every name resolved and screened again at
        // connect time (DNS rebinding).
        let client = crate::screen::client_builder(Arc::new(config.screen_policy()))
            .connect_timeout(config.timeout)
            .timeout(config.timeout)
            .build()?;
        Ok(Arc::new(Deliveries {
            config,
            store,
            client,
            audit,
            gateway: OnceLock::new(),
            watchers: DashMap::new(),
            looked: DashMap::new(),
            queued: DashMap::new(),
            stop,
        }))
    }

    /// Tells the watchers how to reach the current configuration generation.
    pub fn set_gateway<G: Generation + 'static>(&self, current: impl Fn() -> Option<Arc<G>> + Send + Sync + 'static) {
        let _ = self.gateway.set(Box::new(move || current().map(|gateway| gateway as Arc<dyn Generation>)));
    }

    /// Starts following `task_id` (at `backend`) unless it is followed already.
    pub fn watch(self: &Arc<Self>, task_id: &str, backend: &Arc<str>) {
        let notify = match self.watchers.entry(task_id.to_owned()) {
            dashmap::Entry::Occupied(existing) => {
                existing.get().notify_one();
                return;
            }
            dashmap::Entry::Vacant(slot) => slot.insert(Arc::new(Notify::new())).clone(),
        };
        let this = self.clone();
        let (task_id, backend) = (task_id.to_owned(), backend.clone());
        // Owned by `stop` (the process's drain): the loop ends with it.
        tokio::spawn(async move {
            let mut served = Served::default();
            loop {
                this.follow(&task_id, &backend, &notify, &mut served).await;
                this.watchers.remove(&task_id);
                // A `watch` that found this watcher as it ended (a config made meanwhile) left a
                // permit: follow on for it, unless a new watcher has taken the task since.
                if futures::FutureExt::now_or_never(notify.notified()).is_none() {
                    return;
                }
                match this.watchers.entry(task_id.clone()) {
                    dashmap::Entry::Occupied(_) => return,
                    dashmap::Entry::Vacant(slot) => {
                        slot.insert(notify.clone());
                    }
                }
            }
        });
    }

    /// Something about `task_id` was seen: its watcher looks now. With a shared store, a task this
    /// replica does not follow may have configs registered through another replica (which may have
    /// died): they are looked up (at most once per [`LOOK_EVERY`] per task) and followed from here.
    pub fn wake(self: &Arc<Self>, task_id: &str, backend: &str) {
        if let Some(notify) = self.watchers.get(task_id) {
            notify.notify_one();
            return;
        }
        if !self.store.shared() {
            return;
        }
        let now = std::time::Instant::now();
        if self.looked.get(task_id).is_some_and(|at| now.duration_since(*at) < LOOK_EVERY) {
            return;
        }
        if self.looked.len() >= LOOKED_MAX {
            self.looked.retain(|_, at| now.duration_since(*at) < LOOK_EVERY);
        }
        self.looked.insert(task_id.to_owned(), now);
        let (this, task_id, backend) = (self.clone(), task_id.to_owned(), Arc::<str>::from(backend));
        // The observer must not wait: the lookup runs beside.
        tokio::spawn(async move {
            if this.store.of_task(&task_id).await.is_ok_and(|configs| !configs.is_empty()) {
                this.watch(&task_id, &backend);
            }
        });
    }

    /// Whether this replica delivers `seen` (an update of the task) to `stored`: exactly one
    /// replica does; if the shared store cannot say, this one does (a duplicate beats a loss).
    async fn claim(&self, task_id: &str, owner: &str, stored: &StoredConfig, seen: &str) -> bool {
        let mut digest = Sha256::new();
        for part in [owner, stored.config.id.as_deref().unwrap_or(""), stored.config.url.as_str(), seen] {
            digest.update(part.as_bytes());
            digest.update([0]);
        }
        self.store.claim_delivery(task_id, &hex::encode(digest.finalize())).await.unwrap_or(true)
    }

    /// Follows `task_id` until it ends: each new update goes to every config not served it yet
    /// (`served`, kept by the caller across follows of the same task).
    async fn follow(self: &Arc<Self>, task_id: &str, backend: &Arc<str>, notify: &Notify, served: &mut Served) {
        let started = tokio::time::Instant::now();
        let mut pause = FIRST_POLL;
        while started.elapsed() < MAX_WATCH {
            // The shared store being down is waited out: the next look may find it back.
            let configs = match self.store.of_task(task_id).await {
                Ok(configs) if configs.is_empty() => return,
                Ok(configs) => Some(configs),
                Err(_) => None,
            };
            if let Some(configs) = configs {
                let Some(gateway) = self.gateway.get().and_then(|current| current()) else { return };
                if let Some(task) = gateway.fetch(backend, task_id, &configs[0]).await {
                    let seen = fingerprint(&task);
                    let state = task["status"]["state"].as_str().map(TaskState::from_wire);
                    let unserved = served.take_unserved(configs, &seen);
                    if !unserved.is_empty() {
                        let sends = unserved.into_iter().map(|(owner, stored)| {
                            let this = self.clone();
                            let (gateway, task, task_id, seen) =
                                (gateway.clone(), task.clone(), task_id.to_owned(), &seen);
                            async move {
                                if this.claim(&task_id, &owner, &stored, seen).await {
                                    this.deliver(&*gateway, &owner, &stored, &task_id, state, &task).await;
                                }
                            }
                        });
                        futures::future::join_all(sends).await;
                        pause = FIRST_POLL;
                    }
                    // The configs stay (the caller may still read them) until the task is forgotten.
                    if state.is_some_and(TaskState::is_terminal) {
                        // A config made while this state was delivered: read the configs again.
                        if futures::FutureExt::now_or_never(notify.notified()).is_some() {
                            continue;
                        }
                        return;
                    }
                }
            }
            tokio::select! {
                () = notify.notified() => {}
                () = tokio::time::sleep(pause) => {}
                () = self.stop.cancelled() => return,
            }
            pause = (pause * 2).min(self.config.poll_max);
        }
    }

    /// One update to one config: queued per owner, retried, audited.
    async fn deliver(
        &self,
        gateway: &dyn Generation,
        owner: &Arc<str>,
        stored: &StoredConfig,
        task_id: &str,
        state: Option<TaskState>,
        task: &Value,
    ) {
        let caller = stored.caller.as_ref();
        let audit = |delivered: bool, attempts: u32, detail: Option<String>| {
            if let Some(audit) = &self.audit {
                audit.push(caller, &stored.backend, task_id, PushOutcome { delivered, attempts, state, detail });
            }
        };
        {
            let mut queued = self.queued.entry(owner.clone()).or_insert(0);
            if *queued >= self.config.queue_size {
                drop(queued);
                metrics::counter!(crate::metrics::PUSH_DEAD_LETTERS, "reason" => "queue_full").increment(1);
                audit(false, 0, Some("the caller's delivery queue is full".into()));
                return;
            }
            *queued += 1;
        }
        let body = Bytes::from(payload(stored.dialect, task));
        let mut attempts = 0;
        let mut failure = String::new();
        while attempts <= self.config.retries {
            if attempts > 0 {
                tokio::select! {
                    () = tokio::time::sleep(backoff(self.config.backoff, attempts)) => {}
                    () = self.stop.cancelled() => break,
                }
            }
            attempts += 1;
            match self.attempt(gateway, stored, task_id, &body).await {
                Ok(()) => {
                    failure.clear();
                    break;
                }
                Err(reason) => failure = reason,
            }
        }
        if let Some(mut queued) = self.queued.get_mut(owner) {
            *queued = queued.saturating_sub(1);
        }
        self.queued.remove_if(owner, |_, n| *n == 0);
        let delivered = failure.is_empty();
        let outcome = if delivered { "delivered" } else { "failed" };
        metrics::counter!(crate::metrics::PUSH_DELIVERIES, "outcome" => outcome).increment(1);
        if delivered {
            audit(true, attempts, None);
        } else {
            metrics::counter!(crate::metrics::PUSH_DEAD_LETTERS, "reason" => "failed").increment(1);
            tracing::info!(task_id, attempts, reason = %failure, "a push notification was given up on");
            audit(false, attempts, Some(failure));
        }
    }
}

/// The update each config of a task was served last (by its owner, id and URL): a watcher serves
/// a config made after an update was delivered, and no config twice.
#[derive(Default)]
struct Served(std::collections::HashMap<String, String>);

impl Served {
    /// The configs not yet served `update`, marked as served it.
    fn take_unserved(&mut self, configs: super::store::OwnedConfigs, update: &str) -> super::store::OwnedConfigs {
        configs
            .into_iter()
            .filter(|(owner, stored)| {
                let id = stored.config.id.as_deref().unwrap_or("");
                let key = format!("{owner}\0{id}\0{}", stored.config.url);
                self.0.insert(key, update.to_owned()).is_none_or(|before| before != update)
            })
            .collect()
    }
}

/// The delay before attempt `n + 1`: `base · 2^(n-1)` plus up to `base` of jitter.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exponential = base.saturating_mul(1 << (attempt - 1).min(16));
    let jitter = base.mul_f64((uuid::Uuid::new_v4().as_u128() % 1000) as f64 / 1000.0);
    exponential + jitter
}

/// What changed for a receiver: the state, its time, and the artifacts.
fn fingerprint(task: &Value) -> String {
    let status = &task["status"];
    let artifacts = task["artifacts"].as_array().map_or(0, Vec::len);
    format!("{}|{}|{artifacts}", status["state"], status["timestamp"])
}
