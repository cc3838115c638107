//! Process lifecycle: graceful shutdown with draining, hot reload, health and readiness.

use std::time::Duration;

use a2a_e2e::{
    config, example_agent, gateway, gateway_with_file, get_json, rpc, sse_data, text_message, wait_for_skills,
};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::BIN;

async fn stream_all(url: String, body: Value) -> Vec<Value> {
    let response =
        a2a_e2e::client().post(url).header("A2A-Version", "1.0").json(&body).send().await.expect("stream opens");
    let mut bytes = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(&chunk.expect("the stream is never cut off"));
    }
    sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("whole events")).collect()
}

fn final_state(events: &[Value]) -> String {
    events.last().and_then(|e| e["statusUpdate"]["status"]["state"].as_str()).unwrap_or("none").to_string()
}

#[tokio::test]
async fn health_and_readiness_on_the_admin_listener() {
    let mut echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let admin = gw.admin.clone().expect("admin listener");
    assert_eq!(get_json(&format!("{admin}/healthz")).await.0, 200);
    assert_eq!(get_json(&format!("{admin}/readyz")).await.0, 200);
    echo.kill().await;
    wait_for_skills(&gw.url, &[]).await;
    let (status, body) = get_json(&format!("{admin}/readyz")).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("no healthy backend")));
    assert_eq!(get_json(&format!("{admin}/healthz")).await.0, 200, "alive, just not ready");
}

#[tokio::test]
async fn sigterm_drains_fifty_calls_and_twenty_streams_then_exits_zero() {
    let slow = example_agent(BIN, "slow", &["--slow-secs", "3"]).await;
    let audit = std::env::temp_dir().join(format!("a2a-drain-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let extra = format!("shutdown:\n  drain_timeout: 20s\naudit:\n  file: {{path: '{}'}}\n", audit.display());
    let mut gw = gateway(BIN, &config(&[("slow", &slow.url)], &extra)).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    let admin = gw.admin.clone().unwrap();

    let mut calls = Vec::new();
    for i in 0..50 {
        let url = format!("{}/", gw.url);
        calls.push(tokio::spawn(async move {
            rpc(&url, "SendMessage", json!({"message": text_message(&format!("c{i}"), Some("slow"))})).await
        }));
    }
    let mut streams = Vec::new();
    for i in 0..20 {
        let url = format!("{}/message:stream", gw.url);
        streams.push(tokio::spawn(stream_all(url, json!({"message": text_message(&format!("s{i}"), Some("slow"))}))));
    }
    // Every call and stream is at the backend before the signal.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, seen) = get_json(&format!("{}/debug/requests", slow.url)).await;
        let sends = seen
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["operation"].as_str().is_some_and(|o| o.contains("Message")))
            .count();
        if sends == 70 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "only {sends} of 70 requests reached the backend");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gw.signal("TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get_json(&format!("{admin}/readyz")).await.0, 503, "not ready while draining");

    for call in calls {
        let answer = call.await.unwrap();
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    }
    for stream in streams {
        assert_eq!(final_state(&stream.await.unwrap()), "TASK_STATE_COMPLETED");
    }
    assert_eq!(gw.wait(Duration::from_secs(30)).await, Some(0));
    // The audit log was flushed before the exit: every call and every task's end is in it.
    let records: Vec<Value> =
        std::fs::read_to_string(&audit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let count = |event: &str| records.iter().filter(|r| r["event"] == event).count();
    let sends = records
        .iter()
        .filter(|r| {
            r["event"] == "request" && (r["operation"] == "SendMessage" || r["operation"] == "SendStreamingMessage")
        })
        .count();
    assert_eq!(sends, 70, "one request record per call");
    assert_eq!(count("task.ended"), 70, "every task's end was recorded");
    let _ = std::fs::remove_file(&audit);
}

#[tokio::test]
async fn at_the_drain_deadline_streams_get_a_terminal_event_and_calls_an_answer() {
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let mut gw = gateway(BIN, &config(&[("slow", &slow.url)], "shutdown:\n  drain_timeout: 1s\n")).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    let url = format!("{}/", gw.url);
    let call =
        tokio::spawn(
            async move { rpc(&url, "SendMessage", json!({"message": text_message("c", Some("slow"))})).await },
        );
    let stream = tokio::spawn(stream_all(
        format!("{}/message:stream", gw.url),
        json!({"message": text_message("s", Some("slow"))}),
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let sends = |seen: Value| {
        seen.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["operation"].as_str().is_some_and(|o| o.contains("Message")))
            .count()
    };
    while sends(get_json(&format!("{}/debug/requests", slow.url)).await.1) < 2 {
        assert!(std::time::Instant::now() < deadline, "both requests reach the backend");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gw.signal("TERM");
    let events = stream.await.unwrap();
    assert_eq!(final_state(&events), "TASK_STATE_FAILED", "{events:?}");
    let answer = call.await.unwrap();
    assert_eq!(answer["error"]["data"][0]["reason"], "BACKEND_UNAVAILABLE", "{answer}");
    assert_eq!(gw.wait(Duration::from_secs(15)).await, Some(0));
}

#[tokio::test]
async fn reload_adds_and_removes_backends_while_a_stream_on_the_removed_one_completes() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "2"]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let path = std::env::temp_dir().join(format!("a2a-reload-{}.yaml", uuid::Uuid::new_v4().simple()));
    let gw = gateway_with_file(BIN, &config(&[("echo", &echo.url), ("slow", &slow.url)], ""), path.clone()).await;
    wait_for_skills(&gw.url, &["echo", "slow"]).await;

    let open = tokio::spawn(stream_all(
        format!("{}/message:stream", gw.url),
        json!({"message": text_message("s", Some("slow"))}),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Swap slow for review, by rewriting the file.
    std::fs::write(&path, config(&[("echo", &echo.url), ("review", &review.url)], "")).unwrap();
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    assert_eq!(final_state(&open.await.unwrap()), "TASK_STATE_COMPLETED", "the open stream finished on the old config");

    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("slow"))})).await;
    assert_eq!(answer["error"]["code"], -32602, "slow is gone: {answer}");

    // An invalid file is refused and the gateway keeps serving what it had.
    std::fs::write(&path, "backends: [ {name: 'NOT VALID', url: nope} ]\n").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    gw.signal("HUP");
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("still here", Some("echo"))})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_backend_slow_to_answer_gets_the_first_byte_timeout() {
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], "limits:\n  first_byte_timeout: 500ms\n")).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    let started = std::time::Instant::now();
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("slow"))})).await;
    assert_eq!(answer["error"]["data"][0]["reason"], "BACKEND_UNAVAILABLE", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("in time"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Voluntary context switches of each of `pid`'s threads named `a2a-worker-*`, by name.
fn worker_switches(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut workers = std::collections::BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).map(str::to_owned);
        if let Some(name) = field("Name:").filter(|n| n.starts_with("a2a-worker-")) {
            workers.insert(name, field("voluntary_ctxt_switches:").unwrap().parse().unwrap());
        }
    }
    workers
}

/// An echo agent behind a gateway running a worker thread per core, and the gateway's pid.
async fn per_core_gateway() -> (a2a_e2e::Proc, a2a_e2e::Proc, u32) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = a2a_e2e::gateway_with_env(BIN, &config(&[("echo", &echo.url)], ""), &[("A2A_RUNTIME", "per_core")]).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let pid = gw.pid().unwrap();
    (echo, gw, pid)
}

/// One SendMessage to the echo agent on `client`'s connection; the answer's HTTP version.
async fn echo_call(client: &reqwest::Client, url: &str, id: u32) -> reqwest::Version {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage",
        "params": {"message": text_message("hi", Some("echo"))}});
    let response = client.post(url).header("A2A-Version", "1.0").json(&body).send().await.unwrap();
    let version = response.version();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    version
}

/// The workers of `pid` whose voluntary context switches grew by at least `by` since `before`.
fn busy_workers(pid: u32, before: &std::collections::BTreeMap<String, u64>, by: u64) -> Vec<String> {
    let after = worker_switches(pid);
    after.iter().filter(|(name, n)| **n >= before[*name] + by).map(|(name, _)| name.clone()).collect()
}

/// Thread per core: each accepted connection is served on a worker thread of its own (round robin),
/// not on the thread that accepted it. Two callers' connections, each making calls one after another,
/// make both workers wait for the network (a worker only parks when it serves something).
#[tokio::test]
async fn per_core_connections_are_served_on_the_worker_threads_in_turn() {
    let (_echo, gw, pid) = per_core_gateway().await;
    let before = worker_switches(pid);
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    assert_eq!(before.len(), cpus, "one worker thread per CPU: {before:?}");
    // Two connections, one per client, opened one after the other: two different workers.
    let url = format!("{}/", gw.url);
    let caller = |url: String| async move {
        let client = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
        for i in 0..100 {
            echo_call(&client, &url, i).await;
        }
    };
    let first = tokio::spawn(caller(url.clone()));
    // The first connection is accepted before the second opens.
    tokio::time::sleep(Duration::from_millis(100)).await;
    if cpus > 1 {
        caller(url).await;
    }
    first.await.unwrap();
    let busy = busy_workers(pid, &before, 50);
    assert_eq!(busy.len(), 2.min(cpus), "workers that served the calls: {busy:?} (before {before:?})");
}

/// Thread per core with HTTP/2: the calls of one connection (a gRPC channel, a proxy in front) are
/// spread over the workers, not all served by the worker that accepted it.
#[tokio::test]
async fn per_core_one_http2_connections_calls_are_spread_over_the_workers() {
    let (_echo, gw, pid) = per_core_gateway().await;
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let before = worker_switches(pid);
    let client = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let url = format!("{}/", gw.url);
    for wave in 0..10 {
        let calls = (0..10).map(|i| echo_call(&client, &url, wave * 10 + i));
        for version in futures::future::join_all(calls).await {
            assert_eq!(version, reqwest::Version::HTTP_2);
        }
    }
    let busy = busy_workers(pid, &before, 5);
    assert_eq!(busy.len(), workers, "workers that served the calls: {busy:?} (before {before:?})");
}
