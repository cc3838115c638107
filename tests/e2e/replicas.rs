//! Several replicas behave as one: two real gateway processes sharing one real redis-server. A task
//! created through one is usable through the other in every binding, stays invisible to another
//! caller through both, and losing Redis gives clear retryable errors until it is back.

use std::time::Duration;

use a2a_e2e::{
    Proc, RedisServer, client, config, example_agent, gateway, get_json, hs256_token, sse_data, text_message,
    wait_for_skills,
};
use serde_json::{Value, json};

use crate::BIN;

const ISSUER: &str = "https://idp.test/";
const SECRET: &str = "0123456789abcdef0123456789abcdef-replicas";

fn token(sub: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    hs256_token(SECRET, &json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "iat": now, "exp": now + 3600}))
}

struct Fleet {
    /// echo, clarify, slow.
    agents: Vec<Proc>,
    a: Proc,
    b: Proc,
}

/// Two replicas over one Redis; `extra` adds top-level config (limits).
async fn fleet(redis: &RedisServer, extra: &str) -> Fleet {
    fleet_with(redis, extra, "30").await
}

/// [`fleet`] with the slow agent working `slow_secs` seconds.
async fn fleet_with(redis: &RedisServer, extra: &str, slow_secs: &str) -> Fleet {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", slow_secs]).await;
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\nstate:\n  redis:\n    url: {}\n    timeout: 300ms\n{extra}",
        redis.url()
    );
    let yaml = config(&[("echo", &echo.url), ("clarify", &clarify.url), ("slow", &slow.url)], &extra);
    let a = gateway(BIN, &yaml).await;
    let b = gateway(BIN, &yaml).await;
    for gw in [&a, &b] {
        wait_for_skills(&gw.url, &["echo", "clarify", "slow"]).await;
    }
    Fleet { agents: vec![echo, clarify, slow], a, b }
}

/// A JSON-RPC call (1.0 with `version` "1.0", 0.3 without the header); HTTP status, headers' Retry-After, body.
async fn call(gw: &Proc, token: &str, version: &str, method: &str, params: Value) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut request = client().post(format!("{}/", gw.url)).bearer_auth(token).json(&body);
    if version == "1.0" {
        request = request.header("A2A-Version", "1.0");
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, retry, response.json().await.unwrap_or(Value::Null))
}

async fn rest(gw: &Proc, token: &str, method: http::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request =
        client().request(method, format!("{}{path}", gw.url)).bearer_auth(token).header("A2A-Version", "1.0");
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("REST call");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_task_created_through_one_replica_is_used_through_the_other_and_hidden_from_others() {
    let redis = RedisServer::start().await;
    let fleet = fleet(&redis, "").await;
    let (a, b) = (&fleet.a, &fleet.b);
    let (alice, mallory) = (token("alice"), token("mallory"));

    // JSON-RPC 1.0: input-required through A, read and continued through B.
    let (_, _, first) =
        call(a, &alice, "1.0", "SendMessage", json!({"message": text_message("deploy", Some("clarify"))})).await;
    assert_eq!(first["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first}");
    let task_id = first["result"]["task"]["id"].as_str().expect("task id").to_string();
    let context = first["result"]["task"]["contextId"].clone();
    let (_, _, got) = call(b, &alice, "1.0", "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["id"], json!(task_id), "{got}");
    for gw in [a, b] {
        let (_, _, foreign) = call(gw, &mallory, "1.0", "GetTask", json!({"id": task_id})).await;
        assert_eq!(foreign["error"]["code"], -32001, "another caller sees nothing: {foreign}");
        let (status, _) = rest(gw, &mallory, http::Method::GET, &format!("/tasks/{task_id}"), None).await;
        assert_eq!(status, 404);
    }
    let mut reply = text_message("to staging", None);
    reply["taskId"] = json!(task_id);
    reply["contextId"] = context;
    let (_, _, second) = call(b, &alice, "1.0", "SendMessage", json!({"message": reply})).await;
    assert_eq!(second["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{second}");

    // HTTP+JSON: a slow task started through B, read, subscribed to and canceled through A.
    let started =
        json!({"message": text_message("take your time", Some("slow")), "configuration": {"returnImmediately": true}});
    let (status, started) = rest(b, &alice, http::Method::POST, "/message:send", Some(started)).await;
    assert_eq!(status, 200, "{started}");
    let slow_id = started["task"]["id"].as_str().expect("slow task id").to_string();
    let (status, got) = rest(a, &alice, http::Method::GET, &format!("/tasks/{slow_id}"), None).await;
    assert_eq!((status, &got["id"]), (200, &json!(slow_id)), "{got}");
    let (status, _) = rest(a, &mallory, http::Method::POST, &format!("/tasks/{slow_id}:cancel"), Some(json!({}))).await;
    assert_eq!(status, 404, "another caller cannot cancel it through either replica");
    let subscription = client()
        .get(format!("{}/tasks/{slow_id}:subscribe", a.url))
        .bearer_auth(&alice)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("subscribe");
    assert_eq!(subscription.status().as_u16(), 200);
    let subscription = tokio::spawn(async move { subscription.bytes().await.expect("stream") });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, canceled) =
        rest(a, &alice, http::Method::POST, &format!("/tasks/{slow_id}:cancel"), Some(json!({}))).await;
    assert_eq!((status, &canceled["status"]["state"]), (200, &json!("TASK_STATE_CANCELED")), "{canceled}");
    let bytes = tokio::time::timeout(Duration::from_secs(10), subscription).await.expect("stream ends").unwrap();
    let events: Vec<Value> = a2a_e2e::sse_data(&bytes).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{events:?}");

    // A2A 0.3: sent through A, read through B.
    let message03 = json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
        "parts": [{"kind": "text", "text": "hello 0.3"}], "metadata": {"skillId": "echo"}});
    let (_, _, sent) = call(a, &alice, "0.3", "message/send", json!({"message": message03})).await;
    let id03 = sent["result"]["id"].as_str().expect("0.3 task id").to_string();
    let (_, _, got) = call(b, &alice, "0.3", "tasks/get", json!({"id": id03})).await;
    assert_eq!((&got["result"]["id"], &got["result"]["status"]["state"]), (&json!(id03), &json!("completed")), "{got}");
    let (_, _, foreign) = call(b, &mallory, "0.3", "tasks/get", json!({"id": id03})).await;
    assert_eq!(foreign["error"]["code"], -32001, "{foreign}");

    // The early dialect: the caller's own task id, given through A, names the task through B; it is
    // taken for her on both, and means nothing for another caller.
    let early_id = uuid::Uuid::new_v4().to_string();
    let early_send = |text: &str| json!({"id": early_id, "message": {"role": "user", "parts": [{"type": "text", "text": text}]}, "metadata": {"skillId": "echo"}});
    let early = |gw: &Proc, who: &str, method: http::Method, path: String, body: Option<Value>| {
        let mut request = client().request(method, format!("{}{path}", gw.url)).bearer_auth(who.to_owned());
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.expect("early call");
            (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, sent) = early(a, &alice, http::Method::POST, "/tasks/send".into(), Some(early_send("hi early"))).await;
    assert_eq!((status, &sent["id"]), (200, &json!(early_id)), "{sent}");
    let (status, got) = early(b, &alice, http::Method::GET, format!("/tasks/{early_id}"), None).await;
    assert_eq!((status, &got["id"], &got["status"]["state"]), (200, &json!(early_id), &json!("completed")), "{got}");
    let (status, reused) = early(b, &alice, http::Method::POST, "/tasks/send".into(), Some(early_send("again"))).await;
    assert_eq!(status, 400, "the id is taken through the other replica too: {reused}");
    let (status, _) = early(b, &mallory, http::Method::GET, format!("/tasks/{early_id}"), None).await;
    assert_eq!(status, 404, "another caller's early id means nothing");

    // ListTasks through B lists what A created, and a page token made by one replica works on the other.
    let (_, _, page) = call(b, &alice, "1.0", "ListTasks", json!({"pageSize": 1})).await;
    let token = page["result"]["nextPageToken"].as_str().expect("a next page").to_string();
    assert_eq!(page["result"]["totalSize"], 4, "{page}");
    let (_, _, next) = call(a, &alice, "1.0", "ListTasks", json!({"pageSize": 1, "pageToken": token})).await;
    assert_eq!(next["result"]["tasks"].as_array().map(Vec::len), Some(1), "{next}");
    let (_, _, none) = call(a, &mallory, "1.0", "ListTasks", json!({})).await;
    assert_eq!(none["result"]["totalSize"], 0, "{none}");

    // Most recently updated first, across replicas: a task started through A before another through
    // B, then canceled through A, heads the list through B.
    let (_, _, started) = call(a, &alice, "1.0", "SendMessage", slow_send()).await;
    let first_id = started["result"]["task"]["id"].as_str().expect("slow task id").to_string();
    let (_, _, _) =
        call(b, &alice, "1.0", "SendMessage", json!({"message": text_message("later", Some("echo"))})).await;
    let (status, canceled) =
        rest(a, &alice, http::Method::POST, &format!("/tasks/{first_id}:cancel"), Some(json!({}))).await;
    assert_eq!((status, &canceled["status"]["state"]), (200, &json!("TASK_STATE_CANCELED")), "{canceled}");
    // The cancel's sighting reaches Redis from A's writer a moment after its answer.
    eventually("the canceled task heads the list through B", || async {
        let (_, _, page) = call(b, &alice, "1.0", "ListTasks", json!({"pageSize": 1})).await;
        page["result"]["tasks"][0]["id"] == first_id.as_str()
    })
    .await;
}

#[tokio::test]
async fn a_task_in_use_stays_listed_past_the_time_to_live_counted_from_its_creation() {
    let redis = RedisServer::start().await;
    let fleet = fleet(&redis, "routing:\n  task_ttl: 2s\n").await;
    let dana = token("dana");
    let (_, _, started) = call(&fleet.a, &dana, "1.0", "SendMessage", slow_send()).await;
    let task_id = started["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {started}")).to_string();
    // Read through A for longer than the time-to-live: each sighting keeps the task alive.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let (status, got) = rest(&fleet.a, &dana, http::Method::GET, &format!("/tasks/{task_id}"), None).await;
        assert_eq!((status, &got["id"]), (200, &json!(task_id)), "{got}");
    }
    let (_, _, listed) = call(&fleet.b, &dana, "1.0", "ListTasks", json!({})).await;
    assert_eq!(crate::routing::listed_ids(&listed), [task_id], "still in use, still listed: {listed}");
}

#[tokio::test]
async fn redis_down_gives_retryable_errors_and_service_resumes_when_it_is_back() {
    let mut redis = RedisServer::start().await;
    let fleet = fleet(&redis, "").await;
    let (a, b) = (&fleet.a, &fleet.b);
    let alice = token("alice");
    let send = || json!({"message": text_message("hi", Some("echo"))});

    redis.stop();
    // A new task needs no shared read; looking it up through the other replica does.
    let (_, _, sent) = call(a, &alice, "1.0", "SendMessage", send()).await;
    let task_id = sent["result"]["task"]["id"].as_str().expect("task id").to_string();
    let started = std::time::Instant::now();
    let (status, retry, refused) = call(b, &alice, "1.0", "GetTask", json!({"id": task_id})).await;
    assert!(started.elapsed() < Duration::from_secs(5), "no hang");
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{refused}");
    assert_eq!(refused["error"]["code"], -32031, "{refused}");
    assert_eq!(refused["error"]["data"][0]["reason"], "STATE_UNAVAILABLE", "{refused}");
    assert!(!refused.to_string().contains("127.0.0.1"), "no internals: {refused}");
    let (status, body) = rest(b, &alice, http::Method::GET, &format!("/tasks/{task_id}"), None).await;
    assert_eq!((status, &body["error"]["status"]), (503, &json!("UNAVAILABLE")), "{body}");

    redis.resume().await;
    // Redis came back empty: new tasks are shared again, without restarting either gateway.
    let mut shared = None;
    for _ in 0..50 {
        let (_, _, sent) = call(a, &alice, "1.0", "SendMessage", send()).await;
        let id = sent["result"]["task"]["id"].as_str().expect("task id").to_string();
        let (status, _, got) = call(b, &alice, "1.0", "GetTask", json!({"id": id})).await;
        if status == 200 && got["result"]["id"] == json!(id) {
            shared = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(shared.is_some(), "service resumed after Redis came back");
}

async fn readyz(gw: &Proc) -> (u16, Value) {
    let admin = gw.admin.as_deref().expect("admin listener");
    let response = client().get(format!("{admin}/readyz")).send().await.expect("readyz");
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// Polls until `check` holds (bounded; what it waits for is another process catching up).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {what}");
}

fn slow_send() -> Value {
    json!({"message": text_message("take your time", Some("slow")), "configuration": {"returnImmediately": true}})
}

#[tokio::test]
async fn a_callers_rate_quota_and_live_task_limit_are_counted_across_both_replicas() {
    let mut redis = RedisServer::start().await;
    let limits = "rate_limit:\n  default: {per_second: 1000, burst: 1000}\n  skills:\n    echo: {per_minute: 4, burst: 4}\nconcurrency:\n  default_max_live_tasks: 2\n";
    let fleet = fleet(&redis, limits).await;
    let (a, b) = (&fleet.a, &fleet.b);
    let carol = token("carol");

    // Four sends to echo, alternating replicas, use up carol's one quota for the skill.
    for gw in [a, b, a, b] {
        let (status, _, sent) =
            call(gw, &carol, "1.0", "SendMessage", json!({"message": text_message("hi", Some("echo"))})).await;
        assert_eq!(
            (status, &sent["result"]["task"]["status"]["state"]),
            (200, &json!("TASK_STATE_COMPLETED")),
            "{sent}"
        );
    }
    for gw in [a, b] {
        let (status, retry, refused) =
            call(gw, &carol, "1.0", "SendMessage", json!({"message": text_message("hi", Some("echo"))})).await;
        assert_eq!(status, 429, "over the quota through either replica: {refused}");
        assert_eq!(refused["error"]["data"][0]["reason"], "RATE_LIMITED", "{refused}");
        assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok_and(|s| (1..=15).contains(&s))), "Retry-After");
    }

    // Two live tasks, one through each replica; a third is refused through either.
    let (_, _, first) = call(a, &carol, "1.0", "SendMessage", slow_send()).await;
    let first_id = first["result"]["task"]["id"].as_str().expect("first task").to_string();
    let (_, _, second) = call(b, &carol, "1.0", "SendMessage", slow_send()).await;
    assert!(second["result"]["task"]["id"].is_string(), "{second}");
    // The replicas' lease writes land in the background: wait until both count two.
    eventually("both replicas count two live tasks", || async {
        let (status_a, _, _) = call(a, &carol, "1.0", "SendMessage", slow_send()).await;
        let (status_b, _, refused) = call(b, &carol, "1.0", "SendMessage", slow_send()).await;
        status_a == 429 && status_b == 429 && refused["error"]["data"][0]["reason"] == "TOO_MANY_TASKS"
    })
    .await;
    // The task started through A is canceled through B: a slot is free again, through A.
    let (_, _, canceled) = call(b, &carol, "1.0", "CancelTask", json!({"id": first_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    eventually("the canceled task's slot is free through the other replica", || async {
        let (status, _, _) = call(a, &carol, "1.0", "SendMessage", slow_send()).await;
        status == 200
    })
    .await;

    // Readiness follows Redis: not ready (with the reason) while it is down, ready again after.
    for gw in [a, b] {
        assert_eq!(readyz(gw).await.0, 200);
    }
    redis.stop();
    for gw in [a, b] {
        eventually("not ready without Redis", || async { readyz(gw).await.0 == 503 }).await;
        let (_, body) = readyz(gw).await;
        assert!(body["reason"].as_str().is_some_and(|r| r.contains("Redis")), "{body}");
    }
    // A send needs the shared quotas: a clear retryable error, no hang, nothing internal.
    let started = std::time::Instant::now();
    let (status, retry, refused) =
        call(a, &carol, "1.0", "SendMessage", json!({"message": text_message("hi", Some("clarify"))})).await;
    assert!(started.elapsed() < Duration::from_secs(5), "no hang");
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{refused}");
    assert_eq!(refused["error"]["data"][0]["reason"], "STATE_UNAVAILABLE", "{refused}");
    assert!(!refused.to_string().contains("127.0.0.1"), "no internals: {refused}");

    redis.resume().await;
    for gw in [a, b] {
        eventually("ready again once Redis is back", || async { readyz(gw).await.0 == 200 }).await;
        eventually("sends are metered again", || async {
            let send = json!({"message": text_message("hi", Some("clarify"))});
            call(gw, &carol, "1.0", "SendMessage", send).await.0 == 200
        })
        .await;
    }
}

/// The shared store as a test reads it (the gateways' default key prefix).
fn store(redis: &RedisServer) -> a2a_gateway::state::Redis {
    a2a_gateway::state::Redis::new(&a2a_gateway::state::RedisConfig {
        url: redis.url(),
        username: None,
        password: None,
        tls: false,
        key_prefix: "a2a:".into(),
        timeout: Duration::from_secs(2),
        on_unavailable: a2a_gateway::state::OnUnavailable::FailClosed,
        page_token_secret: None,
    })
    .expect("redis client")
}

#[tokio::test]
async fn a_deadline_set_through_a_replica_that_dies_is_still_enforced_by_the_other() {
    let redis = RedisServer::start().await;
    let mut fleet = fleet(&redis, "deadlines:\n  slow: 2s\n").await;
    let alice = token("alice");

    let (_, _, started) = call(&fleet.a, &alice, "1.0", "SendMessage", slow_send()).await;
    let task_id = started["result"]["task"]["id"].as_str().expect("task id").to_string();
    // A writes the deadline in the background: wait until it is in the store, then kill A (as a
    // crash would, SIGKILL) before the deadline passes.
    let shared = store(&redis);
    eventually("the deadline is in the shared store", || async {
        shared.query::<i64>(redis::cmd("ZCARD").arg("a2a:deadlines")).await.is_ok_and(|n| n == 1)
    })
    .await;
    fleet.a.kill().await;

    // B (the sweep lease's holder once A's has lapsed) cancels the task at its backend.
    let slow = &fleet.agents[2];
    let mut cancels = 0;
    for _ in 0..300 {
        let (_, seen) = get_json(&format!("{}/debug/requests", slow.url)).await;
        cancels = seen.as_array().unwrap().iter().filter(|r| r["operation"] == "CancelTask").count();
        if cancels > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cancels, 1, "the backend was told to cancel the task once");
    let (_, _, got) = call(&fleet.b, &alice, "1.0", "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_CANCELED", "{got}");
    let left: i64 = shared.query(redis::cmd("ZCARD").arg("a2a:deadlines")).await.expect("redis answers");
    assert_eq!(left, 0, "the entry was claimed");
}

#[tokio::test]
async fn a_deadline_is_enforced_once_by_the_replica_that_saw_the_task_while_it_lives() {
    let redis = RedisServer::start().await;
    let fleet = fleet(&redis, "deadlines:\n  slow: 1s\n").await;
    let alice = token("alice");
    // A stream through A: it ends with canceled at the deadline, as without shared state.
    let stream = client()
        .post(format!("{}/message:stream", fleet.a.url))
        .bearer_auth(&alice)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&json!({"message": text_message("x", Some("slow"))}))
        .send()
        .await
        .expect("stream");
    let bytes = tokio::time::timeout(Duration::from_secs(30), stream.bytes()).await.expect("stream ends").unwrap();
    let events: Vec<Value> = sse_data(&bytes).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{events:?}");
    // Both replicas sweep for a while: still exactly one cancel reached the backend.
    let shared = store(&redis);
    eventually("the entry is claimed", || async {
        shared.query::<i64>(redis::cmd("ZCARD").arg("a2a:deadlines")).await.is_ok_and(|n| n == 0)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, seen) = get_json(&format!("{}/debug/requests", fleet.agents[2].url)).await;
    let cancels = seen.as_array().unwrap().iter().filter(|r| r["operation"] == "CancelTask").count();
    assert_eq!(cancels, 1, "exactly one replica canceled it");
}

#[tokio::test]
async fn a_stream_cut_by_a_dying_replica_is_resumed_through_the_other() {
    let redis = RedisServer::start().await;
    let mut fleet = fleet_with(&redis, "", "6").await;
    let alice = token("alice");
    let mut stream = client()
        .post(format!("{}/message:stream", fleet.a.url))
        .bearer_auth(&alice)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&json!({"message": text_message("take your time", Some("slow"))}))
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status().as_u16(), 200);
    // Read until the task has an id and has reported progress once.
    let mut seen = Vec::new();
    let task_id = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk()).await.expect("an event").unwrap();
        seen.extend_from_slice(&chunk.expect("the stream goes on"));
        let events: Vec<Value> = sse_data(&seen).iter().filter_map(|d| serde_json::from_str(d).ok()).collect();
        let working = events.iter().any(|e| e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING");
        let id = events
            .iter()
            .find_map(|e| e["task"]["id"].as_str().or(e["statusUpdate"]["taskId"].as_str()).map(str::to_owned));
        if let (true, Some(id)) = (working, id) {
            break id;
        }
    };
    // A shares the task in the background: it is known through B before A dies.
    eventually("the task is known through B", || async {
        call(&fleet.b, &alice, "1.0", "GetTask", json!({"id": task_id})).await.2["result"]["id"] == json!(task_id)
    })
    .await;
    fleet.a.kill().await;
    // The cut stream ends (the connection is gone).
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.bytes()).await.expect("the cut stream ends");

    // Resubscribed through B: the rest of the stream, to its end.
    let mallory = token("mallory");
    let (status, _) = rest(&fleet.b, &mallory, http::Method::GET, &format!("/tasks/{task_id}"), None).await;
    assert_eq!(status, 404, "another caller still sees nothing through the survivor");
    let resumed = client()
        .get(format!("{}/tasks/{task_id}:subscribe", fleet.b.url))
        .bearer_auth(&alice)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("resubscribe");
    assert_eq!(resumed.status().as_u16(), 200);
    let bytes = tokio::time::timeout(Duration::from_secs(30), resumed.bytes()).await.expect("stream ends").unwrap();
    let events: Vec<Value> = sse_data(&bytes).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert!(
        events.iter().any(|e| e["artifactUpdate"]["artifact"]["parts"].to_string().contains("worked for")),
        "the rest of the stream, its result included: {events:?}"
    );
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{events:?}");
}

/// A webhook receiver on loopback: records every body it gets, answers 200.
async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let record = got.clone();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let record = record.clone();
        async move {
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap_or_default();
            record.lock().unwrap().push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            http::StatusCode::OK
        }
    });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, got, task)
}

#[tokio::test]
async fn a_push_config_set_through_one_replica_is_shared_and_delivered_by_the_survivor() {
    let redis = RedisServer::start().await;
    let key = a2a_e2e::repo_root().join("policies/tests/fixtures/gateway-keys/ec-p256.pem");
    let extra = format!(
        "gateway_identity:\n  issuer: https://gateway.test/\n  signing_key: '{}'\n  key_id: gw-1\n\
         push:\n  allow_http: true\n  allow: ['127.0.0.1']\n  retries: 1\n  backoff: 50ms\n  timeout: 2s\n  poll_max: 500ms\n",
        key.display()
    );
    let mut fleet = fleet_with(&redis, &extra, "4").await;
    let (alice, mallory) = (token("alice"), token("mallory"));
    let (hook, got, _receiver) = receiver().await;

    let (_, _, started) = call(&fleet.a, &alice, "1.0", "SendMessage", slow_send()).await;
    let task_id = started["result"]["task"]["id"].as_str().expect("task id").to_string();
    let (_, _, created) = call(
        &fleet.a,
        &alice,
        "1.0",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "url": hook, "token": "tok-alice"}),
    )
    .await;
    let config_id = created["result"]["id"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();

    // Read and listed through B; another caller finds nothing through either.
    let (_, _, listed) =
        call(&fleet.b, &alice, "1.0", "ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await;
    assert_eq!(listed["result"]["configs"][0]["id"], json!(config_id), "{listed}");
    let (_, _, one) =
        call(&fleet.b, &alice, "1.0", "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id}))
            .await;
    assert_eq!(one["result"]["url"], json!(hook), "{one}");
    for gw in [&fleet.a, &fleet.b] {
        let (_, _, foreign) =
            call(gw, &mallory, "1.0", "GetTaskPushNotificationConfig", json!({"taskId": task_id, "id": config_id}))
                .await;
        assert!(foreign["result"].is_null(), "another caller sees nothing: {foreign}");
    }

    // A dies; B, which sees the task's progress, delivers the rest, its end included.
    fleet.a.kill().await;
    let mut completed = false;
    for _ in 0..300 {
        let (_, _, task) = call(&fleet.b, &alice, "1.0", "GetTask", json!({"id": task_id})).await;
        let delivered = got.lock().unwrap().iter().any(|body| {
            body["task"]["id"] == json!(task_id) && body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        });
        if delivered {
            completed = true;
            break;
        }
        assert!(task["result"]["id"].is_string(), "{task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(completed, "the end of the task was delivered through the survivor: {:?}", got.lock().unwrap());
    let finals =
        got.lock().unwrap().iter().filter(|body| body["task"]["status"]["state"] == "TASK_STATE_COMPLETED").count();
    assert_eq!(finals, 1, "delivered once");
}

/// Whether `gw`'s metrics count an ejection of `backend` for `reason`.
async fn ejected(gw: &Proc, backend: &str, reason: &str) -> bool {
    let admin = gw.admin.as_deref().expect("admin listener");
    let metrics = client().get(format!("{admin}/metrics")).send().await.expect("metrics").text().await.unwrap();
    metrics.lines().any(|l| {
        l.starts_with("a2a_backend_ejections_total")
            && l.contains(&format!("backend=\"{backend}\""))
            && l.contains(&format!("reason=\"{reason}\""))
    })
}

#[tokio::test]
async fn a_backend_ejected_by_one_replica_is_out_for_the_other() {
    let redis = RedisServer::start().await;
    let twin = example_agent(BIN, "echo", &[]).await;
    let grey = crate::health::grey_agent().await;
    // Cards answer for both; sends to grey hang past the first-byte timeout. The ejection lasts
    // longer than the test, so nothing here races its half-open probe.
    let extra = format!(
        "health:\n  interval: 200ms\n  timeout: 1s\n  unhealthy_after: 2\n  ejection_time: 120s\nlimits:\n  first_byte_timeout: 1s\nstate:\n  redis:\n    url: {}\n    timeout: 300ms\n",
        redis.url()
    );
    let yaml = config(&[("twin", &twin.url), ("grey", &grey.url)], &extra);
    let (a, b) = (gateway(BIN, &yaml).await, gateway(BIN, &yaml).await);
    for gw in [&a, &b] {
        wait_for_skills(&gw.url, &["echo"]).await;
    }

    // Calls through A fail on grey until A ejects it.
    eventually("A ejects grey", || async {
        crate::health::send_echo(&a.url).await;
        ejected(&a, "grey", "request_failures").await
    })
    .await;
    // B, which sent grey nothing, takes it out too, from the shared store.
    eventually("B sees grey ejected", || async { ejected(&b, "grey", "shared").await }).await;
    // Round robin would send every other call to grey, where it would hang and fail.
    for _ in 0..10 {
        assert!(crate::health::send_echo(&b.url).await, "every call through B goes to the twin");
    }
    assert!(!ejected(&b, "grey", "request_failures").await, "B never had to find out by itself");
}
