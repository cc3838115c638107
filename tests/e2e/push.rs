//! Push notifications terminated at the gateway: a loopback webhook receiver (allow-listed) gets the
//! updates of a task on an a2a-sdk agent, signed with the gateway's key; another caller can neither
//! read, list, delete nor receive a config that is not theirs, in every dialect; a recording agent
//! never receives a push URL; refused addresses and redirects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_e2e::{client, config, gateway, get_json, hs256_token, python_agent, text_message, wait_for_skills};
use serde_json::{Value, json};
use sha2::Digest;

use super::BIN;

const ISSUER: &str = "https://idp.push.test/";
const SECRET: &str = "0123456789abcdef0123456789abcdef-push";

fn token(sub: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    hs256_token(SECRET, &json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "iat": now, "exp": now + 3600}))
}

/// Auth, the gateway's signing key, and push with loopback receivers allow-listed.
fn extra() -> String {
    let key = a2a_e2e::repo_root().join("policies/tests/fixtures/gateway-keys/ec-p256.pem");
    format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n\
         gateway_identity:\n  issuer: https://gateway.test/\n  signing_key: '{}'\n  key_id: gw-1\n\
         push:\n  allow_http: true\n  allow: ['127.0.0.1']\n  retries: 1\n  backoff: 50ms\n  timeout: 2s\n  poll_max: 500ms\n",
        key.display()
    )
}

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: http::HeaderMap,
    body: bytes::Bytes,
}

/// A webhook receiver on loopback: `/hook/*` answers 200, `/redirect/*` a redirect to `/hook/*`.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<Received>>> = Default::default();
        let record = got.clone();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let record = record.clone();
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
                let path = parts.uri.path().to_owned();
                record.lock().unwrap().push(Received { path: path.clone(), headers: parts.headers, body });
                match path.strip_prefix("/redirect") {
                    Some(rest) => http::Response::builder()
                        .status(307)
                        .header("location", format!("/hook{rest}"))
                        .body(axum::body::Body::empty())
                        .unwrap(),
                    None => http::Response::new(axum::body::Body::empty()),
                }
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, got, task }
    }

    fn at(&self, path: &str) -> Vec<Received> {
        self.got.lock().unwrap().iter().filter(|r| r.path == path).cloned().collect()
    }

    /// Waits until `path` got a payload whose task is in `state`.
    async fn until_state(&self, path: &str, state_of: impl Fn(&Value) -> Option<String>, state: &str) -> Vec<Received> {
        for _ in 0..300 {
            let got = self.at(path);
            if got.iter().any(|r| {
                serde_json::from_slice::<Value>(&r.body).ok().and_then(|v| state_of(&v)).as_deref() == Some(state)
            }) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{path} never got a {state} update; got {:?}", self.at(path));
    }
}

fn v1_state(payload: &Value) -> Option<String> {
    payload["task"]["status"]["state"].as_str().map(str::to_owned)
}

fn v03_state(payload: &Value) -> Option<String> {
    payload["status"]["state"].as_str().map(str::to_owned)
}

/// A call with a bearer token: (status, body as JSON or `Null`).
async fn call(method: &str, url: &str, bearer: &str, version: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut request = client().request(method.parse().unwrap(), url).bearer_auth(bearer);
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn rpc(url: &str, bearer: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let version = (!method.contains('/')).then_some("1.0");
    call("POST", url, bearer, version, Some(body)).await.1
}

/// Checks a delivery's headers and signature against the gateway's JWKS.
fn check_signed(received: &Received, jwks: &Value, url: &str, token: &str) {
    assert_eq!(received.headers["x-a2a-notification-token"], token);
    let signature = received.headers["x-a2a-gateway-signature"].to_str().unwrap();
    let claims = a2a_e2e::verify_with_jwks(signature, jwks, url);
    assert_eq!(claims["iss"], "https://gateway.test/");
    assert_eq!(claims["body_sha256"], hex::encode(sha2::Sha256::digest(&received.body)));
}

#[tokio::test]
async fn webhooks_get_signed_updates_and_only_their_owner_sees_them_in_every_dialect() {
    let slow = python_agent("slow", &["--duration", "2"]).await;
    let receiver = Receiver::start().await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], &extra())).await;
    wait_for_skills(&gw.url, &["py-slow"]).await;
    let root = format!("{}/", gw.url);
    let per_agent = format!("{}/agents/slow/", gw.url);
    let (alice, mallory) = (token("alice"), token("mallory"));
    let (_, card) = get_json(&format!("{}/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    let (_, jwks) = get_json(&format!("{}/.well-known/jwks.json", gw.url)).await;

    // 1.0 JSON-RPC: alice starts a task and registers a webhook for it.
    let mut params = json!({"message": text_message("take your time", Some("py-slow"))});
    params["configuration"] = json!({"returnImmediately": true});
    let sent = rpc(&root, &alice, "SendMessage", params).await;
    let task_id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_owned();
    let hook = format!("{}/hook/alice", receiver.url);
    let created = rpc(
        &root,
        &alice,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "url": hook, "token": "tok-alice"}),
    )
    .await;
    let config_id = created["result"]["id"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    assert_eq!(created["result"]["taskId"], task_id.as_str());

    // Mallory, who knows both ids, finds nothing: JSON-RPC 1.0 on both endpoints, HTTP+JSON, 0.3.
    for endpoint in [&root, &per_agent] {
        for (method, params) in [
            ("GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": task_id})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})),
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "url": format!("{}/hook/mallory", receiver.url)}),
            ),
        ] {
            let answer = rpc(endpoint, &mallory, method, params).await;
            assert_eq!(answer["error"]["code"], -32001, "mallory {method} at {endpoint}: {answer}");
        }
    }
    let rest = format!("{}/tasks/{task_id}/pushNotificationConfigs", gw.url);
    for (method, url, body) in [
        ("GET", format!("{rest}/{config_id}"), None),
        ("GET", rest.clone(), None),
        ("DELETE", format!("{rest}/{config_id}"), None),
        ("POST", rest.clone(), Some(json!({"url": format!("{}/hook/mallory", receiver.url)}))),
    ] {
        let (status, answer) = call(method, &url, &mallory, Some("1.0"), body).await;
        assert_eq!(status, 404, "mallory REST {method} {url}: {answer}");
    }
    for (method, params) in [
        ("tasks/pushNotificationConfig/get", json!({"id": task_id, "pushNotificationConfigId": config_id})),
        ("tasks/pushNotificationConfig/list", json!({"id": task_id})),
        ("tasks/pushNotificationConfig/delete", json!({"id": task_id, "pushNotificationConfigId": config_id})),
        (
            "tasks/pushNotificationConfig/set",
            json!({"taskId": task_id, "pushNotificationConfig": {"url": format!("{}/hook/mallory", receiver.url)}}),
        ),
    ] {
        let answer = rpc(&per_agent, &mallory, method, params).await;
        assert!(answer["error"].is_object(), "mallory 0.3 {method}: {answer}");
        assert!(!answer.to_string().contains(&hook), "{answer}");
    }

    // Alice sees her config in every dialect.
    let got = rpc(&root, &alice, "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})).await;
    assert_eq!(got["result"]["url"], hook.as_str(), "{got}");
    let (status, listed) = call("GET", &rest, &alice, Some("1.0"), None).await;
    assert_eq!((status, listed["configs"][0]["id"].as_str()), (200, Some(config_id.as_str())), "{listed}");
    let listed03 = rpc(&per_agent, &alice, "tasks/pushNotificationConfig/list", json!({"id": task_id})).await;
    assert_eq!(listed03["result"][0]["pushNotificationConfig"]["url"], hook.as_str(), "{listed03}");

    // The updates arrive, signed, with alice's token; mallory's receiver got nothing.
    let deliveries = receiver.until_state("/hook/alice", v1_state, "TASK_STATE_COMPLETED").await;
    for delivery in &deliveries {
        check_signed(delivery, &jwks, &hook, "tok-alice");
        let payload: Value = serde_json::from_slice(&delivery.body).unwrap();
        assert_eq!(payload["task"]["id"], task_id.as_str());
    }
    assert!(deliveries.len() >= 2, "working and completed at least: {deliveries:?}");
    assert!(receiver.at("/hook/mallory").is_empty());

    // A 0.3 caller gives its webhook on the send; its updates come as 0.3 tasks.
    let hook03 = format!("{}/hook/alice03", receiver.url);
    let send03 = json!({"message": {"kind": "message", "role": "user", "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": "take your time"}]},
        "configuration": {"blocking": false, "pushNotificationConfig": {"url": hook03, "token": "tok-03"}}});
    let sent03 = rpc(&per_agent, &alice, "message/send", send03).await;
    let task03 = sent03["result"]["id"].as_str().unwrap_or_else(|| panic!("{sent03}")).to_owned();
    let deliveries = receiver.until_state("/hook/alice03", v03_state, "completed").await;
    for delivery in &deliveries {
        check_signed(delivery, &jwks, &hook03, "tok-03");
        assert_eq!(serde_json::from_slice::<Value>(&delivery.body).unwrap()["id"], task03.as_str());
    }
    // Alice deletes her 1.0 config; it is gone.
    let deleted =
        rpc(&root, &alice, "DeleteTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})).await;
    assert!(deleted["error"].is_null(), "{deleted}");
    let gone = rpc(&root, &alice, "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id})).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
}

/// A recording 1.0 agent: answers every send with a completed task, keeps every body.
async fn recorder() -> (String, Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let card = json!({
        "name": "rec", "description": "records", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false, "pushNotifications": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "rec", "name": "rec", "description": "records", "tags": []}]
    });
    let record = seen.clone();
    let rpc = move |body: String| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push(body.clone());
            let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let id = request["params"]["id"].as_str().unwrap_or("t-rec").to_owned();
            let task = json!({"id": id, "contextId": "c-rec", "status": {"state": "TASK_STATE_COMPLETED"}});
            let result = match request["method"].as_str() {
                Some("GetTask") => task,
                _ => {
                    json!({"task": {"id": "t-rec", "contextId": "c-rec", "status": {"state": "TASK_STATE_COMPLETED"}}})
                }
            };
            axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
        }
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", get(move || async move { axum::Json(card.clone()) }))
        .route("/rpc", post(rpc));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, seen, task)
}

#[tokio::test]
async fn an_agent_never_receives_a_push_url_and_the_screen_refuses_internal_addresses_and_redirects() {
    let (agent, seen, agent_task) = recorder().await;
    let receiver = Receiver::start().await;
    let audit = std::env::temp_dir().join(format!("a2a-push-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let _audit_file = a2a_e2e::TempFile(audit.clone());
    let with_audit = format!("{}audit:\n  file: {{path: '{}'}}\n", extra(), audit.display());
    let gw = gateway(BIN, &config(&[("rec", &agent)], &with_audit)).await;
    wait_for_skills(&gw.url, &["rec"]).await;
    let root = format!("{}/", gw.url);
    let alice = token("alice");
    let hook = format!("{}/hook/sent", receiver.url);

    // The webhook on a send is kept by the gateway; the agent gets the send without it.
    let mut params = json!({"message": text_message("hi", Some("rec"))});
    params["configuration"] = json!({"taskPushNotificationConfig": {"url": hook, "token": "tok-sent"}});
    let sent = rpc(&root, &alice, "SendMessage", params).await;
    assert_eq!(sent["result"]["task"]["id"], "t-rec", "{sent}");
    receiver.until_state("/hook/sent", v1_state, "TASK_STATE_COMPLETED").await;
    // Push-config calls are answered by the gateway too.
    let created = rpc(&root, &alice, "CreateTaskPushNotificationConfig", json!({"taskId": "t-rec", "url": hook})).await;
    assert!(created["result"]["id"].is_string(), "{created}");
    let (status, _) = call(
        "POST",
        &format!("{}/tasks/t-rec/pushNotificationConfigs", gw.url),
        &alice,
        Some("1.0"),
        Some(json!({"url": hook})),
    )
    .await;
    assert_eq!(status, 200);
    let bodies = seen.lock().unwrap().clone();
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert!(!body.contains("/hook/") && !body.contains("ushNotification"), "the agent got a push URL: {body}");
    }

    // Internal addresses and other schemes are refused when the config is made.
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/h",
        "http://[::1]:9/h",
        "http://[fd00::1]/h",
        "http://[::ffff:192.168.0.1]/h",
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/",
    ] {
        let answer =
            rpc(&root, &alice, "CreateTaskPushNotificationConfig", json!({"taskId": "t-rec", "url": url})).await;
        assert_eq!(answer["error"]["code"], -32602, "{url}: {answer}");
    }
    // A redirect is not followed: the receiver sees the first request only.
    let redirect = format!("{}/redirect/r", receiver.url);
    let created =
        rpc(&root, &alice, "CreateTaskPushNotificationConfig", json!({"taskId": "t-rec", "url": redirect})).await;
    assert!(created["result"]["id"].is_string(), "{created}");
    for _ in 0..100 {
        if receiver.at("/redirect/r").len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(receiver.at("/redirect/r").len(), 2, "one attempt and one retry");
    assert!(receiver.at("/hook/r").is_empty(), "the redirect was followed");
    // Every delivery and failure is in the audit log, with whose it was.
    let mut records: Vec<Value> = Vec::new();
    for _ in 0..100 {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        records = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if records.iter().any(|r| r["event"] == "push.failed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let delivered = records.iter().find(|r| r["event"] == "push.delivered").expect("a push.delivered record");
    assert_eq!(delivered["task_id"], "t-rec");
    assert!(delivered["caller"].as_str().unwrap_or("").contains("alice"), "{delivered}");
    let failed = records.iter().find(|r| r["event"] == "push.failed").expect("a push.failed record");
    assert_eq!(failed["attempts"], 2, "{failed}");
    assert!(failed["detail"].as_str().unwrap_or("").contains("redirect"), "{failed}");
    agent_task.abort();
}

#[tokio::test]
async fn sdk_clients_of_both_versions_register_webhooks_through_the_gateway_and_receive_signed_updates() {
    let slow = python_agent("slow", &["--duration", "2"]).await;
    let receiver = Receiver::start().await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], &extra())).await;
    wait_for_skills(&gw.url, &["py-slow"]).await;
    let (_, jwks) = get_json(&format!("{}/.well-known/jwks.json", gw.url)).await;
    let alice = token("alice");
    for (binding, version, state_of, completed) in [
        ("jsonrpc", "1.0", v1_state as fn(&Value) -> Option<String>, "TASK_STATE_COMPLETED"),
        ("rest", "1.0", v1_state, "TASK_STATE_COMPLETED"),
        ("jsonrpc", "0.3", v03_state, "completed"),
    ] {
        let path = format!("/hook/{binding}-{version}");
        let hook = format!("{}{path}", receiver.url);
        let token = format!("tok-{binding}-{version}");
        let (ok, lines, report) = a2a_e2e::python_client(&[
            "--base",
            &gw.url,
            "--binding",
            binding,
            "--protocol-version",
            version,
            "--flow",
            "push",
            "--slow-skill",
            "py-slow",
            "--push-url",
            &hook,
            "--push-token",
            &token,
            "--bearer",
            &alice,
        ])
        .await;
        assert!(ok, "{binding} {version}: {report}");
        let task_id = lines[0]["detail"]["task_id"].as_str().expect("task id").to_owned();
        let deliveries = receiver.until_state(&path, state_of, completed).await;
        for delivery in &deliveries {
            check_signed(delivery, &jwks, &hook, &token);
            let payload: Value = serde_json::from_slice(&delivery.body).unwrap();
            let id = if version == "0.3" { &payload["id"] } else { &payload["task"]["id"] };
            assert_eq!(id, task_id.as_str(), "{binding} {version}: {payload}");
        }
    }
}
