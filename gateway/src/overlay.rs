//! Runtime changes to the fleet, kept as a layer over the configuration file: backends registered
//! (by an admin or by the agents themselves), file backends deregistered, backends drained. Every
//! generation — at start, on each change, on each reload of the file — is built from the file with
//! this layer applied, so the changes survive a reload.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Instant;

use crate::config::{Backend, Config};

/// Who added a runtime backend.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    Admin,
    /// A self-registered agent, by its registration credential; it stays while it heartbeats.
    Agent {
        credential: String,
        last_heartbeat: Instant,
    },
}

#[derive(Debug, Clone)]
struct Added {
    backend: Backend,
    origin: Origin,
}

#[derive(Debug, Default)]
struct Layer {
    added: BTreeMap<String, Added>,
    removed: BTreeSet<String>,
    draining: BTreeSet<String>,
}

/// Where a backend of the effective configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    File,
    Admin,
    Agent,
}

#[derive(Debug, Default)]
pub struct Overlay {
    layer: Mutex<Layer>,
    /// Held while a change is applied and its generation built, so changes do not interleave.
    pub(crate) changes: tokio::sync::Mutex<()>,
    /// Agents whose last registration was refused after their credential was accepted, and why
    /// (the newest [`MAX_REFUSED`]).
    refused: Mutex<BTreeMap<String, serde_json::Value>>,
}

/// How many refused registrations the admin API remembers.
const MAX_REFUSED: usize = 100;

impl Overlay {
    fn lock(&self) -> std::sync::MutexGuard<'_, Layer> {
        // The layer is plain data: a panic while it was held leaves it usable.
        self.layer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `file` with the runtime changes applied: deregistered backends left out, runtime backends
    /// added (one of the same name as a file backend takes its place).
    pub fn apply(&self, file: &Config) -> Config {
        let layer = self.lock();
        let mut config = file.clone();
        config.backends.retain(|b| !layer.removed.contains(&b.name) && !layer.added.contains_key(&b.name));
        config.backends.extend(layer.added.values().map(|a| a.backend.clone()));
        config
    }

    pub fn source(&self, name: &str) -> Source {
        match self.lock().added.get(name).map(|a| &a.origin) {
            Some(Origin::Admin) => Source::Admin,
            Some(Origin::Agent { .. }) => Source::Agent,
            None => Source::File,
        }
    }

    /// Adds or replaces a runtime backend; undoes an earlier deregistration of the name.
    pub fn add(&self, backend: Backend, origin: Origin) {
        let mut layer = self.lock();
        layer.removed.remove(&backend.name);
        layer.added.insert(backend.name.clone(), Added { backend, origin });
    }

    /// Removes `name`: a runtime backend is forgotten, a file backend is hidden. Its draining mark
    /// goes with it.
    pub fn remove(&self, name: &str, in_file: bool) {
        let mut layer = self.lock();
        layer.added.remove(name);
        layer.draining.remove(name);
        if in_file {
            layer.removed.insert(name.to_string());
        }
    }

    /// Undoes [`Overlay::remove`] or [`Overlay::add`] after the resulting generation was refused.
    pub fn restore(&self, snapshot: OverlaySnapshot) {
        let mut layer = self.lock();
        layer.added = snapshot.added;
        layer.removed = snapshot.removed;
        layer.draining = snapshot.draining;
    }

    /// A copy of the layer, to restore when a change cannot be applied.
    pub fn snapshot(&self) -> OverlaySnapshot {
        let layer = self.lock();
        OverlaySnapshot { added: layer.added.clone(), removed: layer.removed.clone(), draining: layer.draining.clone() }
    }

    pub fn set_draining(&self, name: &str, draining: bool) {
        let mut layer = self.lock();
        if draining {
            layer.draining.insert(name.to_string());
        } else {
            layer.draining.remove(name);
        }
    }

    pub fn draining(&self) -> Vec<String> {
        self.lock().draining.iter().cloned().collect()
    }

    /// The credential that registered agent `name`, if it is a self-registered agent.
    pub fn agent_credential(&self, name: &str) -> Option<String> {
        match &self.lock().added.get(name)?.origin {
            Origin::Agent { credential, .. } => Some(credential.clone()),
            Origin::Admin => None,
        }
    }

    /// Records a heartbeat of agent `name` (registered by `credential`); `false` when it is not
    /// registered with that credential and URL.
    pub fn heartbeat(&self, name: &str, credential: &str, url: &str) -> bool {
        let mut layer = self.lock();
        match layer.added.get_mut(name) {
            Some(Added { backend, origin: Origin::Agent { credential: c, last_heartbeat } })
                if c == credential && backend.url == url =>
            {
                *last_heartbeat = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Self-registered agents whose last heartbeat is older than `ttl`.
    pub fn expired_agents(&self, ttl: std::time::Duration) -> Vec<(String, String)> {
        self.lock()
            .added
            .iter()
            .filter_map(|(name, added)| match &added.origin {
                Origin::Agent { credential, last_heartbeat } if last_heartbeat.elapsed() > ttl => {
                    Some((name.clone(), credential.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Notes why the registration of `name` (with `credential`) was refused.
    pub fn refuse_admission(&self, name: &str, credential: &str, reason: &str) {
        let mut refused = self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if refused.len() >= MAX_REFUSED && !refused.contains_key(name) {
            let oldest =
                refused.iter().min_by_key(|(_, v)| v["at"].as_str().map(str::to_owned)).map(|(k, _)| k.clone());
            oldest.map(|k| refused.remove(&k));
        }
        let at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let entry = serde_json::json!({"name": name, "credential": credential, "reason": reason, "at": at});
        refused.insert(name.to_string(), entry);
    }

    /// `name` was admitted: its earlier refusal is history.
    pub fn clear_admission(&self, name: &str) {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(name);
    }

    /// The refused registrations, by name.
    pub fn refused_admissions(&self) -> Vec<serde_json::Value> {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).values().cloned().collect()
    }

    /// The layer as the effective-config endpoint shows it.
    pub fn describe(&self) -> serde_json::Value {
        let layer = self.lock();
        let added: Vec<serde_json::Value> = layer
            .added
            .values()
            .map(|a| {
                serde_json::json!({
                    "name": a.backend.name,
                    "url": a.backend.url,
                    "card_path": a.backend.card_path,
                    "source": match a.origin { Origin::Admin => "admin", Origin::Agent { .. } => "agent" },
                })
            })
            .collect();
        serde_json::json!({"added": added, "removed": layer.removed, "draining": layer.draining})
    }
}

/// A saved copy of the layer.
pub struct OverlaySnapshot {
    added: BTreeMap<String, Added>,
    removed: BTreeSet<String>,
    draining: BTreeSet<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(name: &str, url: &str) -> Backend {
        Backend::at(name, url)
    }

    fn file() -> Config {
        Config::parse(
            "backends:\n  - {name: a, url: 'http://127.0.0.1:1'}\n  - {name: b, url: 'http://127.0.0.1:2'}\n",
            &|_| None,
        )
        .unwrap()
    }

    fn names(config: &Config) -> Vec<&str> {
        config.backends.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn changes_apply_over_any_version_of_the_file() {
        let overlay = Overlay::default();
        overlay.add(backend("c", "http://127.0.0.1:3"), Origin::Admin);
        overlay.remove("a", true);
        assert_eq!(names(&overlay.apply(&file())), ["b", "c"]);
        // A reloaded file with a new backend: the layer still applies.
        let mut reloaded = file();
        reloaded.backends.push(backend("d", "http://127.0.0.1:4"));
        assert_eq!(names(&overlay.apply(&reloaded)), ["b", "d", "c"]);
        assert_eq!(overlay.source("c"), Source::Admin);
        assert_eq!(overlay.source("b"), Source::File);
        // Registering a removed name brings it back as a runtime backend.
        overlay.add(backend("a", "http://127.0.0.1:9"), Origin::Admin);
        let applied = overlay.apply(&file());
        assert_eq!(names(&applied), ["b", "a", "c"]);
        assert_eq!(applied.backends[1].url, "http://127.0.0.1:9");
    }

    #[test]
    fn agents_expire_without_heartbeats() {
        let overlay = Overlay::default();
        let origin = Origin::Agent { credential: "k".into(), last_heartbeat: Instant::now() };
        overlay.add(backend("x", "http://127.0.0.1:5"), origin);
        assert!(overlay.heartbeat("x", "k", "http://127.0.0.1:5"));
        assert!(!overlay.heartbeat("x", "other", "http://127.0.0.1:5"), "another credential's agent");
        assert!(!overlay.heartbeat("x", "k", "http://127.0.0.1:6"), "another URL is a new registration");
        assert!(overlay.expired_agents(std::time::Duration::from_secs(60)).is_empty());
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(overlay.expired_agents(std::time::Duration::from_millis(1)), [("x".into(), "k".into())]);
    }
}
