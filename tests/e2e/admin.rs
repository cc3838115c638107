//! The admin API on the admin listener: refusals without credentials, the fleet's state, runtime
//! register / drain / refresh / deregister (surviving a reload), the redacted effective config,
//! live tasks by caller, audit records of every change, and agent self-registration.

use std::process::Command;
use std::time::{Duration, Instant};

use a2a_e2e::{
    TempFile, client, config, example_agent, gateway_with_file, python_agent, rpc, text_message, wait_for_skills,
};
use serde_json::{Value, json};

use crate::BIN;

/// A fresh key and its config hash, from `a2a-gateway hash-key`.
pub fn new_key(id: &str) -> (String, String) {
    let output = Command::new(BIN).args(["hash-key", "--id", id]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let key = text.lines().find_map(|l| l.split("): ").nth(1)).unwrap().trim().to_string();
    let hash = text.lines().find_map(|l| l.trim().strip_prefix("hash: ")).unwrap().trim_matches('"').to_string();
    (key, hash)
}

pub async fn admin_call(method: &str, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut request = client().request(method.parse().unwrap(), url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("admin call");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn audit_events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"] == "admin.change")
        .collect()
}

#[tokio::test]
async fn admin_api_manages_the_fleet_and_audits_every_change() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let (key, hash) = new_key("ops");
    let audit = std::env::temp_dir().join(format!("a2a-admin-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let _audit_file = TempFile(audit.clone());
    let extra = format!(
        "audit:\n  file: {{path: '{}'}}\nadmin:\n  auth:\n    api_keys:\n      keys:\n        - {{id: ops, hash: '{hash}', caller: ops}}\n",
        audit.display()
    );
    let yaml = config(&[("echo", &echo.url)], &extra);
    let path = std::env::temp_dir().join(format!("a2a-admin-{}.yaml", uuid::Uuid::new_v4().simple()));
    let gw = gateway_with_file(BIN, &yaml, path.clone()).await;
    let admin = gw.admin.clone().expect("admin listener");
    let api = format!("{admin}/admin/v1");
    wait_for_skills(&gw.url, &["echo"]).await;

    // Refusals: no credential, a wrong one, a caller key that is not an admin key.
    let (status, body) = admin_call("GET", &format!("{api}/backends"), None, None).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = admin_call("GET", &format!("{api}/backends"), Some("a2a_ops_00"), None).await;
    assert_eq!(status, 401);
    let (status, _) =
        admin_call("POST", &format!("{api}/backends"), None, Some(json!({"name": "x", "url": "http://127.0.0.1:1"})))
            .await;
    assert_eq!(status, 401);
    let token = Some(key.as_str());

    let (status, list) = admin_call("GET", &format!("{api}/backends"), token, None).await;
    assert_eq!(status, 200, "{list}");
    let first = &list["backends"][0];
    assert_eq!((first["name"].as_str(), first["healthy"].as_bool()), (Some("echo"), Some(true)), "{list}");
    assert_eq!(first["dialect"], "1.0");
    assert_eq!(first["skills"], json!(["echo"]));
    assert_eq!(first["source"], "file");
    assert!(first["last_card_fetch"].is_string(), "{list}");

    // Register at runtime: its skills are routed.
    let (status, added) =
        admin_call("POST", &format!("{api}/backends"), token, Some(json!({"name": "review", "url": review.url}))).await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["source"], "admin");
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let (status, _) =
        admin_call("POST", &format!("{api}/backends"), token, Some(json!({"name": "review", "url": review.url}))).await;
    assert_eq!(status, 409, "a name that exists");

    // A task, then a drain: no new task for echo, the existing task still reachable.
    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("hi", Some("echo"))})).await;
    let task_id = answer["result"]["task"]["id"].as_str().expect("task").to_string();
    let (status, drained) = admin_call("POST", &format!("{api}/backends/echo/drain"), token, None).await;
    assert_eq!((status, &drained["draining"]), (200, &json!(true)), "{drained}");
    wait_for_skills(&gw.url, &["review-pr"]).await;
    let refused =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    // The skill is known, its only agent drained: an outage to retry, not the caller's mistake.
    assert_eq!(refused["error"]["code"], -32032, "{refused}");
    assert_eq!(refused["error"]["data"][0]["reason"], "AGENT_UNAVAILABLE", "{refused}");
    let got = rpc(&format!("{}/", gw.url), "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["id"], task_id.as_str(), "a draining backend's tasks stay reachable: {got}");

    // Live tasks by caller: ids and states only.
    let (status, tasks) = admin_call("GET", &format!("{api}/tasks?all=true"), token, None).await;
    assert_eq!(status, 200);
    let listed = &tasks["callers"][0]["tasks"][0];
    assert_eq!(listed["id"], task_id.as_str(), "{tasks}");
    assert!(listed.get("history").is_none() && listed.get("artifacts").is_none());

    // Refresh; the effective config with the key's hash redacted.
    let (status, refreshed) = admin_call("POST", &format!("{api}/backends/review/refresh"), token, None).await;
    assert_eq!((status, &refreshed["healthy"]), (200, &json!(true)), "{refreshed}");
    let (status, effective) = admin_call("GET", &format!("{api}/config"), token, None).await;
    assert_eq!(status, 200);
    let text = effective.to_string();
    assert!(!text.contains(&hash) && text.contains("[redacted]"), "{text}");
    assert_eq!(effective["runtime"]["draining"], json!(["echo"]));

    // A reload of the file keeps the runtime layer.
    std::fs::write(&path, yaml.replace("interval: 200ms", "interval: 300ms")).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (_, list) = admin_call("GET", &format!("{api}/backends"), token, None).await;
    let names: Vec<(&str, bool)> = list["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["draining"] == true))
        .collect();
    assert_eq!(names, [("echo", true), ("review", false)], "{list}");

    // Undrain, deregister, and the 404s.
    let (status, _) = admin_call("DELETE", &format!("{api}/backends/echo/drain"), token, None).await;
    assert_eq!(status, 200);
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let (status, _) = admin_call("DELETE", &format!("{api}/backends/review"), token, None).await;
    assert_eq!(status, 200);
    wait_for_skills(&gw.url, &["echo"]).await;
    let (status, _) = admin_call("DELETE", &format!("{api}/backends/review"), token, None).await;
    assert_eq!(status, 404);
    let (status, body) = admin_call("DELETE", &format!("{api}/backends/echo"), token, None).await;
    assert_eq!(status, 409, "the last backend stays: {body}");

    // Every change is in the audit log with the admin's identity.
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = ["backend.register", "backend.drain", "backend.refresh", "backend.undrain", "backend.deregister"];
    loop {
        let events = audit_events(&audit);
        let actions: Vec<&str> = events.iter().filter_map(|e| e["action"].as_str()).collect();
        if actions == want {
            assert!(events.iter().all(|e| e["admin"] == "key:ops" && e["admin_auth"] == "api_key"), "{events:?}");
            assert_eq!(events[0]["target"], "review");
            break;
        }
        assert!(Instant::now() < deadline, "audit actions {actions:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn without_admin_auth_only_a_loopback_admin_listener_answers() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    let admin = gw.admin.clone().unwrap();
    let (status, list) = admin_call("GET", &format!("{admin}/admin/v1/backends"), None, None).await;
    assert_eq!(status, 200, "loopback listener, no admin auth: {list}");
    let page = client().get(format!("{admin}/admin/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("a2a-gateway"));
    // The same config with the admin listener on every interface is refused.
    let check = std::env::temp_dir().join(format!("a2a-admin-any-{}.yaml", uuid::Uuid::new_v4().simple()));
    let _cleanup = TempFile(check.clone());
    let yaml = config(&[("echo", &echo.url)], "").replace("admin: 127.0.0.1:0", "admin: 0.0.0.0:0");
    std::fs::write(&check, &yaml).unwrap();
    let wide = a2a_e2e::gateway_with_file(BIN, &yaml, check.clone()).await;
    // Reached over loopback, but the listener is not bound to it.
    let port = wide.admin.as_ref().unwrap().rsplit(':').next().unwrap().to_string();
    let (status, body) = admin_call("GET", &format!("http://127.0.0.1:{port}/admin/v1/backends"), None, None).await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn a_self_registered_agent_receives_tasks_and_leaves_when_stopped() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let mut agent = example_agent(BIN, "review", &[]).await;
    let (key, hash) = new_key("team-a");
    let extra = format!(
        "admin:\n  registration:\n    heartbeat_ttl: 30s\n    credentials:\n      - id: team-a\n        hash: '{hash}'\n        names: ['team-a-*']\n        skills: ['review-*']\n        origins: ['http://127.0.0.1:*']\n        allow_addresses: ['127.0.0.0/8']\n"
    );
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let url = format!("{}/admin/v1/registrations", gw.admin.clone().unwrap());
    let token = Some(key.as_str());

    // Refused: no credential, a name outside the pattern, an origin outside the allow-list, a
    // metadata address.
    let body = json!({"name": "team-a-review", "url": agent.url});
    assert_eq!(admin_call("POST", &url, None, Some(body.clone())).await.0, 401);
    let (status, _) = admin_call("POST", &url, token, Some(json!({"name": "other", "url": agent.url}))).await;
    assert_eq!(status, 403);
    let (status, _) =
        admin_call("POST", &url, token, Some(json!({"name": "team-a-x", "url": "http://localhost:1"}))).await;
    assert_eq!(status, 403, "origin not on the allow-list");
    let (status, _) =
        admin_call("POST", &url, token, Some(json!({"name": "team-a-x", "url": "ftp://127.0.0.1:1"}))).await;
    assert_eq!(status, 400);

    let (status, registered) = admin_call("POST", &url, token, Some(body.clone())).await;
    assert_eq!(status, 201, "{registered}");
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let (status, _) = admin_call("POST", &url, token, Some(body)).await;
    assert_eq!(status, 200, "a repeated registration is a heartbeat");
    let mut message = text_message("x", Some("review-pr"));
    message["parts"] = json!([{"data": {"diff": "+a", "title": "PR"}}]);
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": message})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");

    // The agent stops: failed health checks make it leave the fleet.
    agent.kill().await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let admin = gw.admin.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, list) = admin_call("GET", &format!("{admin}/admin/v1/backends"), None, None).await;
        if list["backends"].as_array().is_some_and(|b| b.len() == 1) {
            break;
        }
        assert!(Instant::now() < deadline, "the agent is still registered: {list}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A real a2a-sdk agent (`tests/python/sdk_agent.py --register`) joins the fleet by itself, is
/// sent a task through the gateway, and on SIGTERM drains (new tasks refused, its running task
/// finishes and reaches the caller), then leaves; each step is audited under its credential.
#[tokio::test]
async fn an_sdk_agent_registers_itself_takes_a_task_drains_and_leaves() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let (key, hash) = new_key("team-py");
    let key_file = std::env::temp_dir().join(format!("a2a-reg-key-{}", uuid::Uuid::new_v4().simple()));
    let _key_file = TempFile(key_file.clone());
    std::fs::write(&key_file, &key).unwrap();
    let audit = std::env::temp_dir().join(format!("a2a-reg-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let _audit_file = TempFile(audit.clone());
    let extra = format!(
        "audit:\n  file: {{path: '{}'}}\nadmin:\n  registration:\n    heartbeat_ttl: 30s\n    credentials:\n      - id: team-py\n        hash: '{hash}'\n        names: ['team-py-*']\n        skills: ['py-*']\n        origins: ['http://127.0.0.1:*']\n        allow_addresses: ['127.0.0.0/8']\n",
        audit.display()
    );
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let admin = gw.admin.clone().unwrap();
    let key_path = key_file.display().to_string();
    let mut agent = python_agent(
        "slow",
        &["--duration", "6", "--register", &admin, "--register-name", "team-py-slow", "--register-key-file", &key_path],
    )
    .await;
    wait_for_skills(&gw.url, &["echo", "py-slow"]).await;

    // Traffic: a streamed task that the agent works on for a few seconds.
    let url = format!("{}/", gw.url);
    let send = {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": text_message("work", Some("py-slow"))}});
        let url = url.clone();
        tokio::spawn(async move { a2a_e2e::stream_events(&url, body).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, tasks) = admin_call("GET", &format!("{admin}/admin/v1/tasks"), None, None).await;
        if tasks.to_string().contains("TASK_STATE_WORKING") {
            break;
        }
        assert!(Instant::now() < deadline, "the task never started: {tasks}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // SIGTERM: the agent drains itself; new tasks are refused while its task runs to the end.
    agent.signal("TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = rpc(&url, "SendMessage", json!({"message": text_message("more", Some("py-slow"))})).await;
        if answer["error"].is_object() {
            break;
        }
        assert!(Instant::now() < deadline, "the draining agent still takes new tasks: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events = send.await.unwrap();
    let last = events.last().cloned().unwrap_or_default();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "the task finished: {events:?}"
    );
    assert_eq!(agent.wait(Duration::from_secs(30)).await, Some(0), "the agent stopped cleanly");
    wait_for_skills(&gw.url, &["echo"]).await;
    let (_, list) = admin_call("GET", &format!("{admin}/admin/v1/backends"), None, None).await;
    assert_eq!(list["backends"].as_array().map(Vec::len), Some(1), "{list}");

    // Joined, drained, left — in that order, under the agent's credential.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events = audit_events(&audit);
        let actions: Vec<&str> = events.iter().filter_map(|e| e["action"].as_str()).collect();
        if actions == ["agent.register", "agent.drain", "agent.leave"] {
            assert!(
                events.iter().all(|e| e["admin"] == "agent:team-py" && e["target"] == "team-py-slow"),
                "{events:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "audit actions {actions:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs the CLI (the same binary) against the admin API; returns (success, stdout, stderr).
fn cli(admin: &str, token: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(BIN);
    command.args(args).args(["--admin", admin]).env_remove("A2A_ADMIN_TOKEN").env_remove("A2A_ADMIN_URL");
    if let Some(token) = token {
        command.env("A2A_ADMIN_TOKEN", token);
    }
    let output = command.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

#[tokio::test]
async fn the_cli_drives_every_verb_and_is_refused_without_a_token() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let (key, hash) = new_key("ops");
    let extra =
        format!("admin:\n  auth:\n    api_keys:\n      keys:\n        - {{id: ops, hash: '{hash}', caller: ops}}\n");
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let admin = gw.admin.clone().unwrap();
    wait_for_skills(&gw.url, &["echo"]).await;
    let token = Some(key.as_str());

    // Refused without (or with a wrong) token: the API's message, a non-zero exit.
    let (ok, out, err) = cli(&admin, None, &["backends", "list"]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("401") && err.contains("needs credentials"), "{err}");
    let (ok, _, err) = cli(&admin, Some("a2a_ops_00"), &["tasks", "list"]);
    assert!(!ok && err.contains("not valid"), "{err}");

    let (ok, out, err) = cli(&admin, token, &["backends", "list"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("HEALTH"), "{out}");
    assert!(lines[1].starts_with("echo ") && lines[1].contains("healthy") && lines[1].contains(&echo.url), "{out}");

    let (ok, out, err) = cli(&admin, token, &["backends", "add", "review", &review.url]);
    assert!(ok && out.contains("review"), "{out}{err}");
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let (ok, _, err) = cli(&admin, token, &["backends", "add", "review", &review.url]);
    assert!(!ok && err.contains("409") && err.contains("exists"), "{err}");

    let (ok, out, err) = cli(&admin, token, &["backends", "list", "--json"]);
    assert!(ok, "{err}");
    let list: Value = serde_json::from_str(&out).expect("--json prints JSON");
    let names: Vec<&str> = list["backends"].as_array().unwrap().iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(names, ["echo", "review"]);

    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("hi", Some("echo"))})).await;
    let task_id = answer["result"]["task"]["id"].as_str().expect("task").to_string();
    let (ok, out, _) = cli(&admin, token, &["tasks", "list", "--all"]);
    assert!(ok && out.starts_with("CALLER") && out.contains(&task_id), "{out}");
    let (ok, out, _) = cli(&admin, token, &["tasks", "list", "--all", "--json"]);
    let tasks: Value = serde_json::from_str(&out).unwrap();
    assert!(ok && tasks["callers"][0]["tasks"][0]["id"] == task_id.as_str(), "{out}");

    let (ok, out, err) = cli(&admin, token, &["backends", "drain", "echo"]);
    assert!(ok && out.lines().nth(1).is_some_and(|l| l.contains("yes")), "{out}{err}");
    wait_for_skills(&gw.url, &["review-pr"]).await;
    let (ok, _, _) = cli(&admin, token, &["backends", "drain", "echo", "--undo"]);
    assert!(ok);
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;

    let (ok, out, _) = cli(&admin, token, &["backends", "remove", "review"]);
    assert!(ok && out.trim() == "removed review", "{out}");
    wait_for_skills(&gw.url, &["echo"]).await;
    let (ok, _, err) = cli(&admin, token, &["backends", "remove", "review"]);
    assert!(!ok && err.contains("404") && err.contains("no backend named 'review'"), "{err}");
}
