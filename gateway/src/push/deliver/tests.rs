use a2a_core::Dialect;
use serde_json::json;

use super::*;

#[test]
fn backoff_doubles_with_jitter_below_one_base() {
    let base = Duration::from_millis(100);
    for attempt in 1..6 {
        let wait = backoff(base, attempt);
        let floor = base * (1 << (attempt - 1));
        assert!(wait >= floor && wait < floor + base, "attempt {attempt}: {wait:?}");
    }
}

#[test]
fn a_new_state_or_artifact_is_a_new_update() {
    let a = json!({"status": {"state": "TASK_STATE_WORKING", "timestamp": "1"}});
    let b = json!({"status": {"state": "TASK_STATE_WORKING", "timestamp": "1"}, "artifacts": [{}]});
    let c = json!({"status": {"state": "TASK_STATE_COMPLETED", "timestamp": "1"}, "artifacts": [{}]});
    assert_ne!(fingerprint(&a), fingerprint(&b));
    assert_ne!(fingerprint(&b), fingerprint(&c));
    assert_eq!(fingerprint(&c), fingerprint(&c.clone()));
}

#[test]
fn payloads_are_in_the_callers_dialect() {
    let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}});
    let v1: Value = serde_json::from_slice(&payload(Dialect::V1, &task)).unwrap();
    assert_eq!(v1["task"]["id"], "t");
    let v03: Value = serde_json::from_slice(&payload(Dialect::V03, &task)).unwrap();
    assert_eq!(v03["id"], "t");
    assert_eq!(v03["status"]["state"], "completed");
}

/// A generation whose first poll waits at a gate (the test opens it), and that answers every poll
/// with the task completed.
struct GatedPolls {
    gate: std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
    polls: std::sync::atomic::AtomicUsize,
    credentials: BackendCredentials,
}

impl Generation for GatedPolls {
    fn fetch<'a>(
        &'a self,
        _backend: &'a str,
        task_id: &'a str,
        _config: &'a (Arc<str>, StoredConfig),
    ) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            self.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let gate = self.gate.lock().unwrap().take();
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            Some(json!({"id": task_id, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}))
        })
    }

    fn credentials(&self) -> &BackendCredentials {
        &self.credentials
    }
}

/// A webhook receiver on loopback: the paths it was posted to.
async fn receiver() -> (std::net::SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |uri: http::Uri| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push(uri.path().to_owned());
            "ok"
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

/// Credentials with the gateway's key, which signs deliveries.
fn signing_credentials() -> BackendCredentials {
    let key =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies/tests/fixtures/gateway-keys/ec-p256.pem");
    let identity: a2a_policies::backend_auth::GatewayIdentityConfig = serde_json::from_value(json!({
        "issuer": "https://gateway.test/", "signing_key": key.display().to_string(), "key_id": "gw-1"
    }))
    .unwrap();
    BackendCredentials::new(std::iter::empty(), Some(&identity), reqwest::Client::new()).unwrap()
}

fn stored(url: String) -> StoredConfig {
    let config = a2a_model::TaskPushNotificationConfig {
        tenant: None,
        id: Some(url.rsplit('/').next().unwrap_or_default().to_owned()),
        task_id: Some("t1".into()),
        url,
        token: None,
        authentication: None,
    };
    StoredConfig { config, caller: None, backend: Arc::from("b"), dialect: Dialect::V1 }
}

/// A config made while the task's watcher delivers the task's last state to the configs it read
/// gets that state too: the watcher, told of it, reads the configs again before it ends, instead of
/// ending on the terminal state with the new config never served. And the config it had served
/// already is not served twice.
#[tokio::test]
async fn a_config_made_while_the_last_state_is_delivered_gets_it_too() {
    crate::install_crypto_provider();
    let (addr, seen) = receiver().await;
    let push: PushConfig = serde_json::from_value(json!({"allow_http": true, "allow": [addr.to_string()]})).unwrap();
    let store = Arc::new(crate::push::MemoryPushStore::default());
    let deliveries = Deliveries::new(push, store.clone(), None, CancellationToken::new()).unwrap();
    let (open, gate) = tokio::sync::oneshot::channel();
    let generation = Arc::new(GatedPolls {
        gate: std::sync::Mutex::new(Some(gate)),
        polls: Default::default(),
        credentials: signing_credentials(),
    });
    let current = generation.clone();
    deliveries.set_gateway(move || Some(current.clone()));

    store.put("o", "t1", stored(format!("http://{addr}/first")), 8).await.unwrap();
    deliveries.watch("t1", &Arc::from("b"));
    // The watcher has read its configs (the first one) and waits for the task at the gate.
    while generation.polls.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    store.put("o", "t1", stored(format!("http://{addr}/second")), 8).await.unwrap();
    deliveries.watch("t1", &Arc::from("b"));
    open.send(()).unwrap();

    // No timing asserted: the second delivery gets up to 10 s.
    for _ in 0..200 {
        if seen.lock().unwrap().iter().any(|p| p == "/second") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let paths = seen.lock().unwrap().clone();
    assert!(paths.iter().any(|p| p == "/second"), "the config made meanwhile got nothing: {paths:?}");
    assert_eq!(paths.iter().filter(|p| *p == "/first").count(), 1, "{paths:?}");
}
