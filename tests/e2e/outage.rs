//! Outages that callers and operators can reason about: no healthy agent is a retryable
//! "unavailable" in every dialect (an unknown skill stays the caller's mistake), and SIGTERM goes
//! not-ready first and keeps accepting through `shutdown.unready_delay` before it drains.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2a_e2e::{client, config, example_agent, gateway, get_json, rpc, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

/// Status, `Retry-After` and body of a POST; `version` is the `A2A-Version` header, if any.
async fn post(url: &str, version: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
    let mut request = client().post(url).json(&body);
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, retry, response.json().await.unwrap_or(Value::Null))
}

fn rpc_body(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "o-1", "method": method, "params": params})
}

fn message03(skill: &str) -> Value {
    json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
           "parts": [{"kind": "text", "text": "hi"}], "metadata": {"skillId": skill}})
}

fn early_send(skill: &str) -> Value {
    json!({"id": uuid::Uuid::new_v4().to_string(), "metadata": {"skillId": skill},
           "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}})
}

/// Every dialect's answer to a send for `skill`: (dialect, status, Retry-After, body).
async fn send_in_every_dialect(base: &str, skill: &str) -> Vec<(&'static str, u16, Option<String>, Value)> {
    let message = text_message("hi", Some(skill));
    let (s1, r1, b1) =
        post(&format!("{base}/"), Some("1.0"), rpc_body("SendMessage", json!({"message": message.clone()}))).await;
    let (s2, r2, b2) = post(&format!("{base}/message:send"), Some("1.0"), json!({"message": message})).await;
    let (s3, r3, b3) =
        post(&format!("{base}/"), None, rpc_body("message/send", json!({"message": message03(skill)}))).await;
    let (s4, r4, b4) = post(&format!("{base}/tasks/send"), None, early_send(skill)).await;
    vec![
        ("1.0 JSON-RPC", s1, r1, b1),
        ("1.0 HTTP+JSON", s2, r2, b2),
        ("0.3 JSON-RPC", s3, r3, b3),
        ("early REST", s4, r4, b4),
    ]
}

#[tokio::test]
async fn no_healthy_agent_is_a_retryable_outage_in_every_dialect_and_an_unknown_skill_stays_invalid() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let mut review = example_agent(BIN, "review", &[]).await;
    let port = review.port();
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("review", &review.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    review.kill().await;
    wait_for_skills(&gw.url, &["echo"]).await;

    for (dialect, status, retry, body) in send_in_every_dialect(&gw.url, "review-pr").await {
        assert_eq!(status, 503, "{dialect}: an outage is 503: {body}");
        let seconds: u64 = retry.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0);
        assert!(seconds >= 1, "{dialect}: Retry-After in whole seconds: {retry:?}");
        let text = body.to_string();
        assert!(text.contains("retry later") && !text.contains("127.0.0.1"), "{dialect}: {text}");
        match dialect {
            "1.0 JSON-RPC" => {
                assert_eq!(body["error"]["code"], -32032, "{body}");
                assert_eq!(body["error"]["data"][0]["reason"], "AGENT_UNAVAILABLE", "{body}");
                assert_eq!(body["id"], "o-1");
            }
            "0.3 JSON-RPC" => assert_eq!((&body["error"]["code"], &body["id"]), (&json!(-32032), &json!("o-1"))),
            "1.0 HTTP+JSON" => {
                assert_eq!(body["error"]["status"], "UNAVAILABLE", "{body}");
                assert_eq!(body["error"]["details"][0]["reason"], "AGENT_UNAVAILABLE", "{body}");
            }
            _ => assert!(body["detail"].is_string(), "{body}"),
        }
    }
    // The agent's own path is the same outage.
    let (status, retry, body) = post(
        &format!("{}/agents/review/message:send", gw.url),
        Some("1.0"),
        json!({"message": text_message("x", None)}),
    )
    .await;
    assert_eq!((status, retry.is_some()), (503, true), "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "AGENT_UNAVAILABLE", "{body}");

    // A skill nobody offers is the caller's mistake, in every dialect: not retryable.
    for (dialect, status, retry, body) in send_in_every_dialect(&gw.url, "no-such-skill").await {
        assert_eq!(retry, None, "{dialect}: {body}");
        match dialect {
            "1.0 JSON-RPC" | "0.3 JSON-RPC" => {
                assert_eq!((status, &body["error"]["code"]), (200, &json!(-32602)), "{dialect}: {body}")
            }
            _ => assert_eq!(status, 400, "{dialect}: {body}"),
        }
    }

    // Retrying once the agent is back succeeds.
    let listen = format!("127.0.0.1:{port}");
    let _review = example_agent(BIN, "review", &["--listen", &listen]).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let mut message = text_message("x", Some("review-pr"));
    message["parts"] = json!([{"data": {"diff": "+a", "title": "PR 2"}}]);
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": message})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
}

/// One call's outcome under load: whether it was answered, and whether the test had already asked
/// the gateway to stop accepting when the call ended.
struct Outcome {
    answered: bool,
    closing: bool,
}

#[tokio::test]
async fn sigterm_under_load_goes_not_ready_keeps_accepting_through_the_delay_then_drains() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "2"]).await;
    // A delay far longer than the test: the second signal ends it, so nothing depends on timing.
    let extra = "shutdown:\n  unready_delay: 10m\n  drain_timeout: 30s\n";
    let mut gw = gateway(BIN, &config(&[("echo", &echo.url), ("slow", &slow.url)], extra)).await;
    wait_for_skills(&gw.url, &["echo", "slow"]).await;
    let admin = gw.admin.clone().expect("admin listener");

    // Steady load: every call on a new connection, as a load balancer's new flows would arrive.
    let fresh = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let (stop, closing) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let unready_served = Arc::new(AtomicUsize::new(0));
    let unready = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..6 {
        let (fresh, url) = (fresh.clone(), format!("{}/", gw.url));
        let (stop, closing, unready, unready_served) =
            (stop.clone(), closing.clone(), unready.clone(), unready_served.clone());
        workers.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let was_unready = unready.load(Ordering::SeqCst);
                let body =
                    rpc_body("SendMessage", json!({"message": text_message(&format!("w{w}-{i}"), Some("echo"))}));
                let sent = fresh.post(&url).header("A2A-Version", "1.0").json(&body).send().await;
                let answered = match sent {
                    Ok(response) => response
                        .json::<Value>()
                        .await
                        .is_ok_and(|v| v["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"),
                    Err(_) => false,
                };
                if answered && was_unready {
                    unready_served.fetch_add(1, Ordering::SeqCst);
                }
                outcomes.push(Outcome { answered, closing: closing.load(Ordering::SeqCst) });
                if !answered {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            outcomes
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    gw.signal("TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_json(&format!("{admin}/readyz")).await.0 != 503 {
        assert!(Instant::now() < deadline, "not ready after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unready.store(true, Ordering::SeqCst);
    // Not ready, and still serving new connections.
    while unready_served.load(Ordering::SeqCst) < 60 {
        assert!(Instant::now() < deadline, "calls are still served while not ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A call in flight when the listener closes is drained, as before.
    let url = format!("{}/", gw.url);
    let in_flight =
        tokio::spawn(
            async move { rpc(&url, "SendMessage", json!({"message": text_message("d", Some("slow"))})).await },
        );
    loop {
        let (_, seen) = get_json(&format!("{}/debug/requests", slow.url)).await;
        if seen
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["operation"].as_str().is_some_and(|o| o.contains("Message"))))
        {
            break;
        }
        assert!(Instant::now() < deadline, "the slow call reaches its agent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    closing.store(true, Ordering::SeqCst);
    gw.signal("TERM");
    let answer = in_flight.await.unwrap();
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "drained: {answer}");
    assert_eq!(gw.wait(Duration::from_secs(40)).await, Some(0));
    stop.store(true, Ordering::SeqCst);

    let mut outcomes = Vec::new();
    for worker in workers {
        outcomes.extend(worker.await.unwrap());
    }
    let refused_before_closing = outcomes.iter().filter(|o| !o.answered && !o.closing).count();
    assert_eq!(refused_before_closing, 0, "no call failed before the listener was told to close");
    assert!(outcomes.iter().any(|o| !o.answered && o.closing), "after the delay the listener closed");
}

/// The value of `series` (name and labels, as Prometheus prints them) on the admin listener.
async fn metric(admin: &str, series: &str) -> Option<f64> {
    let text = client().get(format!("{admin}/metrics")).send().await.ok()?.text().await.ok()?;
    text.lines().find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

#[tokio::test]
async fn the_task_directory_size_is_a_metric_and_its_sweep_interval_is_configurable() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let extra = "routing:\n  task_ttl: 1s\n  sweep_interval: 100ms\n";
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let admin = gw.admin.clone().expect("admin listener");
    for i in 0..3 {
        let answer = rpc(
            &format!("{}/", gw.url),
            "SendMessage",
            json!({"message": text_message(&format!("{i}"), Some("echo"))}),
        )
        .await;
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    }
    let tasks = "a2a_task_directory_entries{kind=\"task\"}";
    assert_eq!(metric(&admin, tasks).await, Some(3.0));
    // Past the time-to-live, the next sweep (every 100 ms here, not every minute) forgets them.
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&admin, tasks).await != Some(0.0) {
        assert!(Instant::now() < deadline, "the sweep forgets expired tasks");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A gateway under a steady stream of new tasks keeps at most `routing.max_tasks` of them (it grew
/// without bound for `task_ttl`, 24 h by default: ~0.7 KiB per task): past it, the least recently
/// seen are forgotten at once, not at the next sweep tick, and a forgotten task is not found.
#[tokio::test]
async fn the_task_directory_keeps_at_most_max_tasks_and_forgets_the_oldest() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let extra = "routing:\n  max_tasks: 5\n  sweep_interval: 1h\n";
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let admin = gw.admin.clone().expect("admin listener");
    let mut ids = Vec::new();
    for i in 0..12 {
        let answer = rpc(
            &format!("{}/", gw.url),
            "SendMessage",
            json!({"message": text_message(&format!("{i}"), Some("echo"))}),
        )
        .await;
        ids.push(answer["result"]["task"]["id"].as_str().expect("a task").to_owned());
    }
    let tasks = "a2a_task_directory_entries{kind=\"task\"}";
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&admin, tasks).await.is_none_or(|n| n > 5.0) {
        assert!(Instant::now() < deadline, "the directory stays within max_tasks: {:?}", metric(&admin, tasks).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(metric(&admin, "a2a_task_directory_evicted_total").await.is_some_and(|n| n >= 7.0));
    let endpoint = format!("{}/", gw.url);
    let get = |id: &str| rpc(&endpoint, "GetTask", json!({"id": id}));
    let newest = get(ids.last().unwrap()).await;
    assert_eq!(newest["result"]["id"], ids.last().unwrap().as_str(), "{newest}");
    let oldest = get(&ids[0]).await;
    assert_eq!(oldest["error"]["code"], -32001, "{oldest}");
}
