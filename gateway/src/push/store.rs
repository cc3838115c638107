//! Where push-notification configs are kept: per owner (see [`crate::routing::owner_key`]) and task,
//! behind [`PushStore`] so that replicas can share them (a Redis store comes with the shared state).

use std::sync::Arc;

use a2a_core::{Caller, Dialect};
use dashmap::DashMap;
use futures::future::BoxFuture;

use a2a_model::TaskPushNotificationConfig;

/// One stored config and whose it is.
#[derive(Debug, Clone)]
pub struct StoredConfig {
    pub config: TaskPushNotificationConfig,
    /// The caller who registered it (for the audit log of its deliveries).
    pub caller: Option<Caller>,
    /// The agent that owns the task.
    pub backend: Arc<str>,
    /// The dialect the caller registered it in: deliveries are written in it.
    pub dialect: Dialect,
}

/// A task's configs with their owners.
pub type OwnedConfigs = Vec<(Arc<str>, StoredConfig)>;

/// Whether `config`, stored by `stored_by`, is `owner`'s config `id` (any of `owner`'s when `id` is
/// none). Every store reads through this: another owner's config is indistinguishable from a
/// missing one.
pub fn is_owners(stored_by: &str, config: &StoredConfig, owner: &str, id: Option<&str>) -> bool {
    stored_by == owner && id.is_none_or(|id| config.config.id.as_deref() == Some(id))
}

/// Why a config was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("a task may have at most {0} push-notification configs")]
    TooMany(usize),
    /// The shared store failed (details logged where it failed, never shown to callers).
    #[error("the shared state store is unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for a2a_core::A2aError {
    fn from(error: StoreError) -> a2a_core::A2aError {
        match error {
            StoreError::TooMany(_) => a2a_core::A2aError::invalid_params(error.to_string()),
            StoreError::Unavailable(_) => a2a_core::A2aError::StateUnavailable,
        }
    }
}

/// Push-notification configs by (owner, task). Another owner's config is indistinguishable from a
/// missing one: every read names the owner.
pub trait PushStore: Send + Sync + 'static {
    /// Stores `config` (replacing one of the same id).
    fn put(
        &self,
        owner: &str,
        task_id: &str,
        config: StoredConfig,
        max: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    fn get(
        &self,
        owner: &str,
        task_id: &str,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<StoredConfig>, StoreError>>;
    fn list(&self, owner: &str, task_id: &str) -> BoxFuture<'_, Result<Vec<StoredConfig>, StoreError>>;
    /// Whether there was such a config.
    fn delete(&self, owner: &str, task_id: &str, id: Option<&str>) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Every owner's configs of a task (with their owners): what its updates are delivered to.
    fn of_task(&self, task_id: &str) -> BoxFuture<'_, Result<OwnedConfigs, StoreError>>;
    /// Forgets a task's configs (it ended and its last update was delivered).
    fn forget_task(&self, task_id: &str) -> BoxFuture<'_, ()>;
    /// Whether this process delivers the update `digest` of a task: with several replicas following
    /// a task, exactly one claims each update. One process alone always does.
    fn claim_delivery(&self, _task_id: &str, _digest: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async { Ok(true) })
    }
    /// Whether other processes share these configs (then a replica that sees a task's progress
    /// looks for configs registered elsewhere).
    fn shared(&self) -> bool {
        false
    }
}

/// The in-memory store: task id → owner → configs.
#[derive(Default)]
pub struct MemoryPushStore {
    tasks: DashMap<String, Vec<(Arc<str>, StoredConfig)>>,
}

impl PushStore for MemoryPushStore {
    fn put(
        &self,
        owner: &str,
        task_id: &str,
        config: StoredConfig,
        max: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut entry = self.tasks.entry(task_id.to_owned()).or_default();
        let list = entry.value_mut();
        let mine = list.iter().filter(|(o, _)| **o == *owner).count();
        let result = match list.iter_mut().find(|(o, c)| **o == *owner && c.config.id == config.config.id) {
            Some(existing) => {
                existing.1 = config;
                Ok(())
            }
            None if mine >= max => Err(StoreError::TooMany(max)),
            None => {
                list.push((Arc::from(owner), config));
                Ok(())
            }
        };
        Box::pin(async move { result })
    }

    fn get(
        &self,
        owner: &str,
        task_id: &str,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<StoredConfig>, StoreError>> {
        let found = self
            .tasks
            .get(task_id)
            .and_then(|list| list.iter().find(|(o, c)| is_owners(o, c, owner, id)).map(|(_, c)| c.clone()));
        Box::pin(async move { Ok(found) })
    }

    fn list(&self, owner: &str, task_id: &str) -> BoxFuture<'_, Result<Vec<StoredConfig>, StoreError>> {
        let found = self.tasks.get(task_id).map_or_else(Vec::new, |list| {
            list.iter().filter(|(o, c)| is_owners(o, c, owner, None)).map(|(_, c)| c.clone()).collect()
        });
        Box::pin(async move { Ok(found) })
    }

    fn delete(&self, owner: &str, task_id: &str, id: Option<&str>) -> BoxFuture<'_, Result<bool, StoreError>> {
        let removed = self.tasks.get_mut(task_id).is_some_and(|mut list| {
            let before = list.len();
            let mut first = true;
            list.retain(|(o, c)| {
                let hit = is_owners(o, c, owner, id) && first;
                if hit {
                    first = false;
                }
                !hit
            });
            list.len() < before
        });
        self.tasks.remove_if(task_id, |_, list| list.is_empty());
        Box::pin(async move { Ok(removed) })
    }

    fn of_task(&self, task_id: &str) -> BoxFuture<'_, Result<OwnedConfigs, StoreError>> {
        let found = self.tasks.get(task_id).map_or_else(Vec::new, |list| list.clone());
        Box::pin(async move { Ok(found) })
    }

    fn forget_task(&self, task_id: &str) -> BoxFuture<'_, ()> {
        self.tasks.remove(task_id);
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(id: &str, url: &str) -> StoredConfig {
        StoredConfig {
            config: TaskPushNotificationConfig {
                id: Some(id.into()),
                task_id: Some("t".into()),
                url: url.into(),
                ..Default::default()
            },
            caller: None,
            backend: Arc::from("b"),
            dialect: Dialect::V1,
        }
    }

    #[tokio::test]
    async fn another_owners_config_is_missing() {
        let store = MemoryPushStore::default();
        store.put("alice", "t", stored("c", "https://a.example/"), 4).await.unwrap();
        assert!(store.get("mallory", "t", Some("c")).await.unwrap().is_none());
        assert!(store.get("mallory", "t", None).await.unwrap().is_none());
        assert!(store.list("mallory", "t").await.unwrap().is_empty());
        assert!(!store.delete("mallory", "t", Some("c")).await.unwrap());
        assert_eq!(store.get("alice", "t", Some("c")).await.unwrap().unwrap().config.url, "https://a.example/");
        assert_eq!(store.of_task("t").await.unwrap().len(), 1);
        assert!(store.delete("alice", "t", Some("c")).await.unwrap());
        assert!(store.of_task("t").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn same_id_replaces_and_the_count_is_bounded() {
        let store = MemoryPushStore::default();
        store.put("alice", "t", stored("c", "https://a.example/1"), 2).await.unwrap();
        store.put("alice", "t", stored("c", "https://a.example/2"), 2).await.unwrap();
        store.put("alice", "t", stored("d", "https://a.example/3"), 2).await.unwrap();
        assert_eq!(store.put("alice", "t", stored("e", "https://a.example/4"), 2).await, Err(StoreError::TooMany(2)));
        // Another owner's configs do not count against alice's.
        store.put("bob", "t", stored("e", "https://b.example/"), 2).await.unwrap();
        assert_eq!(store.list("alice", "t").await.unwrap().len(), 2);
        assert_eq!(store.get("alice", "t", Some("c")).await.unwrap().unwrap().config.url, "https://a.example/2");
    }
}
