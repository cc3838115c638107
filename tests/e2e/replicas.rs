//! Several replicas behave as one: two real gateway processes sharing one real redis-server. A task
//! created through one is usable through the other in every binding, stays invisible to another
//! caller through both, and losing Redis gives clear retryable errors until it is back.

use std::time::Duration;

use a2a_e2e::{Proc, RedisServer, client, config, example_agent, gateway, hs256_token, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

const ISSUER: &str = "https://idp.test/";
const SECRET: &str = "0123456789abcdef0123456789abcdef-replicas";

fn token(sub: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    hs256_token(SECRET, &json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "iat": now, "exp": now + 3600}))
}

struct Fleet {
    _agents: Vec<Proc>,
    a: Proc,
    b: Proc,
}

/// Two replicas over one Redis; `extra` adds top-level config (limits).
async fn fleet(redis: &RedisServer, extra: &str) -> Fleet {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
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
    Fleet { _agents: vec![echo, clarify, slow], a, b }
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
