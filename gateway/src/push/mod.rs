//! Push notifications, terminated at the gateway: callers' webhook configs are answered and kept
//! here ([`api`], [`store`]), never forwarded, so an agent is never given a caller's URL; the
//! gateway follows each task with a config and delivers its updates itself ([`deliver`]), to
//! webhooks that passed the address screen ([`crate::screen`]) when registered and again at
//! connect time, signed with the gateway's key.

pub mod api;
pub mod deliver;
pub mod store;

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::{TaskEvent, TaskObserver};
use a2a_model::TaskPushNotificationConfig;
use dashmap::DashMap;

pub use crate::config::PushConfig;
pub use deliver::{Deliveries, Generation, SIGNATURE_HEADER};
pub use store::{MemoryPushStore, PushStore, StoredConfig};

/// A config given on a send, waiting for the send's answer to name its task.
struct Pending {
    owner: Arc<str>,
    stored: StoredConfig,
    since: Instant,
}

/// A send whose answer has not named its task after this long failed: its config is dropped.
const PENDING_FOR: Duration = Duration::from_secs(300);

/// The gateway's push state, shared by all configuration generations.
pub struct Push {
    pub config: PushConfig,
    pub store: Arc<dyn PushStore>,
    pub deliveries: Arc<Deliveries>,
    /// Configs given on sends, by the gateway's request id.
    pending: DashMap<Arc<str>, Pending>,
}

impl Push {
    /// The push state on `store`, delivering through `deliveries` (built on the same store).
    pub fn new(config: PushConfig, store: Arc<dyn PushStore>, deliveries: Arc<Deliveries>) -> Arc<Push> {
        Arc::new(Push { config, store, deliveries, pending: DashMap::new() })
    }

    /// Keeps a send's config until its answer names the task.
    fn expect(&self, request_id: Arc<str>, owner: Arc<str>, stored: StoredConfig) {
        let now = Instant::now();
        self.pending.retain(|_, pending| now.duration_since(pending.since) < PENDING_FOR);
        self.pending.insert(request_id, Pending { owner, stored, since: now });
    }

    /// The owner key of configs: the task owner, or `""` when tasks are not isolated.
    pub fn owner(owner: Option<&Arc<str>>) -> Arc<str> {
        owner.cloned().unwrap_or_else(|| Arc::from(""))
    }
}

/// Learns task progress from what the gateway relays: a send's config is bound to the task its
/// answer names, and every observation of a task with configs wakes its watcher.
impl TaskObserver for Push {
    fn observe(&self, event: &TaskEvent<'_>) {
        let Some(task_id) = event.task_id else { return };
        // The watcher's own polls would wake it again.
        if event.request_id == Some(deliver::POLL_REQUEST_ID) {
            return;
        }
        if let Some(request_id) = event.request_id
            && let Some((_, pending)) = self.pending.remove(request_id)
        {
            let mut stored = pending.stored;
            stored.config.task_id = Some(task_id.to_owned());
            let store = self.store.clone();
            let deliveries = self.deliveries.clone();
            let (owner, task, max) = (pending.owner, task_id.to_owned(), self.config.max_configs_per_task);
            // The observer must not wait: storing (a network call for a shared store) runs beside.
            tokio::spawn(async move {
                if store.put(&owner, &task, stored.clone(), max).await.is_ok() {
                    deliveries.watch(&task, &stored.backend);
                }
            });
            return;
        }
        self.deliveries.wake(task_id, event.backend);
    }
}

/// A new config's id when the caller gave none.
fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The config as the caller sees it: its id and task set, the tenant as the caller named it.
fn answer_form(mut config: TaskPushNotificationConfig, task_id: &str) -> TaskPushNotificationConfig {
    config.task_id = Some(task_id.to_owned());
    config
}
