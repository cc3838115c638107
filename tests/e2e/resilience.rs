//! Resilience: a backend dying mid-stream, failover of new tasks, outlier ejection, keep-alives.

use std::time::{Duration, Instant};

use a2a_e2e::{config, example_agent, gateway, get_json, read_until, rpc, sse_data, text_message, wait_for_skills};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::BIN;

async fn open_stream(
    url: &str,
    body: Value,
) -> impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin + use<> {
    let response = a2a_e2e::client()
        .post(url)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.bytes_stream()
}

#[tokio::test]
async fn a_backend_killed_mid_stream_ends_the_stream_with_a_failed_event() {
    let mut slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    for binding in ["jsonrpc", "rest"] {
        if binding == "rest" {
            slow =
                example_agent(BIN, "slow", &["--slow-secs", "30", "--listen", &format!("127.0.0.1:{}", slow.port())])
                    .await;
            wait_for_skills(&gw.url, &["slow"]).await;
            // The restarted agent is healthy again only after its card is fetched.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let (url, body) = match binding {
            "jsonrpc" => (
                format!("{}/", gw.url),
                json!({"jsonrpc": "2.0", "id": "s-1", "method": "SendStreamingMessage",
                    "params": {"message": text_message("long job", Some("slow"))}}),
            ),
            _ => (format!("{}/message:stream", gw.url), json!({"message": text_message("long job", Some("slow"))})),
        };
        let mut stream = open_stream(&url, body).await;
        let mut got = Vec::new();
        read_until(&mut stream, &mut got, b"TASK_STATE_WORKING", Duration::from_secs(10)).await;
        slow.kill().await;
        let rest = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(chunk) = stream.next().await {
                got.extend_from_slice(&chunk.expect("the stream ends cleanly, not with an error"));
            }
        })
        .await;
        assert!(rest.is_ok(), "the stream ended after the backend died");
        // How soon is for benchmarks; here only that it ends, bounded by the timeout above.
        let events: Vec<Value> = sse_data(&got).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
        let last = events.last().unwrap();
        let update = if binding == "jsonrpc" {
            assert_eq!(last["id"], "s-1");
            &last["result"]["statusUpdate"]
        } else {
            &last["statusUpdate"]
        };
        assert_eq!(update["status"]["state"], "TASK_STATE_FAILED", "{binding}: {events:?}");
        assert_eq!(
            update["taskId"],
            events[0].pointer(if binding == "jsonrpc" { "/result/task/id" } else { "/task/id" }).unwrap().clone()
        );
    }
}

#[tokio::test]
async fn new_tasks_fail_over_from_a_stopped_backend_without_caller_visible_errors() {
    let mut first = example_agent(BIN, "echo", &[]).await;
    let second = example_agent(BIN, "echo", &[]).await;
    // Health checks too rare to notice the stop: failover and outlier detection must handle it.
    let gw =
        gateway(BIN, &config(&[("echo-a", &first.url), ("echo-b", &second.url)], "health:\n  interval: 1h\n")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    first.kill().await;
    for i in 0..10 {
        let answer = rpc(
            &format!("{}/", gw.url),
            "SendMessage",
            json!({"message": text_message(&format!("n{i}"), Some("echo"))}),
        )
        .await;
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "request {i}: {answer}");
    }
    // After the failed attempts, outlier detection took the stopped backend out before any health check.
    let (status, _) = get_json(&format!("{}/agents/echo-a/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(status, 503);
}

#[tokio::test]
async fn quiet_streams_get_keepalive_comments_between_events_when_configured() {
    let slow = example_agent(BIN, "slow", &["--slow-secs", "2"]).await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], "limits:\n  stream_keepalive: 150ms\n")).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    let stream =
        open_stream(&format!("{}/message:stream", gw.url), json!({"message": text_message("x", Some("slow"))})).await;
    let bytes: Vec<u8> = stream.map(|c| c.unwrap().to_vec()).concat().await;
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(": ka\r\n\r\n"), "{text}");
    // Every event still parses: no comment landed inside one.
    let events: Vec<Value> = sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("whole event")).collect();
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    for event in text.split("\r\n\r\n").filter(|e| e.contains("data:")) {
        assert!(!event.contains(": ka"), "comment inside an event: {event}");
    }
}

#[tokio::test]
async fn a_task_past_its_deadline_is_canceled_at_the_backend_and_the_caller_told() {
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], "deadlines:\n  slow: 1s\n")).await;
    wait_for_skills(&gw.url, &["slow"]).await;

    // A stream: it ends with a canceled status once the deadline passes.
    let started = Instant::now();
    let stream =
        open_stream(&format!("{}/message:stream", gw.url), json!({"message": text_message("x", Some("slow"))})).await;
    let bytes: Vec<u8> = tokio::time::timeout(Duration::from_secs(10), stream.map(|c| c.unwrap().to_vec()).concat())
        .await
        .expect("the stream ends soon after the deadline");
    assert!(started.elapsed() >= Duration::from_millis(900), "not before the deadline");
    let events: Vec<Value> = sse_data(&bytes).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{events:?}");

    // A task started with returnImmediately: canceled at its deadline, as GetTask then shows.
    let started = rpc(
        &format!("{}/", gw.url),
        "SendMessage",
        json!({"message": text_message("y", Some("slow")), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = started["result"]["task"]["id"].clone();
    // Polled rather than one look after a fixed sleep: timers run late on a loaded machine.
    let mut got = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        got = rpc(&format!("{}/", gw.url), "GetTask", json!({"id": id})).await;
        if got["result"]["status"]["state"] == "TASK_STATE_CANCELED" {
            break;
        }
    }
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_CANCELED", "{got}");

    // A blocking call never names its task before it ends: its wait ends at the deadline.
    let waited = Instant::now();
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("z", Some("slow"))})).await;
    assert_eq!(answer["error"]["data"][0]["reason"], "BACKEND_UNAVAILABLE", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("deadline"), "{answer}");
    assert!(waited.elapsed() < Duration::from_secs(10));

    let (_, seen) = get_json(&format!("{}/debug/requests", slow.url)).await;
    let cancels = seen.as_array().unwrap().iter().filter(|r| r["operation"] == "CancelTask").count();
    assert_eq!(cancels, 2, "the backend was told to cancel both tasks");
}

#[tokio::test]
async fn a_backend_restarted_under_steady_load_costs_no_call_that_never_reached_it() {
    let mut first = example_agent(BIN, "echo", &[]).await;
    let port = first.port();
    let second = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(
        BIN,
        &config(
            &[("echo-a", &first.url), ("echo-b", &second.url)],
            "health:\n  interval: 1h\n  unhealthy_after: 1000\n",
        ),
    )
    .await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..8 {
        let (url, stop) = (format!("{}/", gw.url), stop.clone());
        workers.push(tokio::spawn(async move {
            let (mut ok, mut lost, mut other) = (0, 0, Vec::new());
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                i += 1;
                let answer =
                    rpc(&url, "SendMessage", json!({"message": text_message(&format!("w{w}-{i}"), Some("echo"))}))
                        .await;
                if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                    ok += 1;
                } else if answer["error"]["data"][0]["reason"] == "AGENT_CONNECTION_LOST" {
                    // It reached the agent: the error says so and does not invite a blind retry.
                    assert_eq!(answer["error"]["data"][0]["metadata"]["taskMayExist"], "true", "{answer}");
                    lost += 1;
                } else {
                    other.push(answer);
                }
            }
            (ok, lost, other)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..3 {
        first.kill().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        first = example_agent(BIN, "echo", &["--listen", &format!("127.0.0.1:{port}")]).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut ok, mut lost, mut other) = (0, 0, Vec::new());
    for worker in workers {
        let (o, l, e) = worker.await.unwrap();
        (ok, lost) = (ok + o, lost + l);
        other.extend(e);
    }
    eprintln!("restarts under load: {ok} completed, {lost} lost after reaching the agent, {} other", other.len());
    assert!(ok > 20, "{ok} calls completed");
    assert!(other.is_empty(), "calls that never reached the agent failed: {other:?}");
}
