//! The audit log and the metrics, after a scripted run through the real gateway: one audit record
//! per expected event with the right fields, no message content, a chain that verifies and breaks
//! at the altered record; counters that moved.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use a2a_e2e::{example_agent, gateway, get_json, hs256_token, rpc_as, stream_events_as, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

const SECRET: &str = "audit-test-secret-0123456789abcdef";
const ISSUER: &str = "https://idp.audit/";

fn token(sub: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    hs256_token(
        SECRET,
        &json!({"iss": ISSUER, "aud": "gw", "sub": sub, "scope": "agents", "iat": now, "exp": now + 600}),
    )
}

fn caller_id(sub: &str) -> String {
    format!("jwt:{ISSUER}|{sub}")
}

fn events(records: &[Value], filter: impl Fn(&Value) -> bool) -> Vec<String> {
    records.iter().filter(|r| filter(r)).map(|r| r["event"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_scripted_run_leaves_one_audit_record_per_event_and_moves_the_counters() {
    let dir = std::env::temp_dir().join(format!("a2a-audit-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("audit.jsonl");
    let agents = [
        example_agent(BIN, "echo", &[]).await,
        example_agent(BIN, "review", &["--step-ms", "1"]).await,
        example_agent(BIN, "slow", &["--slow-secs", "30"]).await,
        example_agent(BIN, "clarify", &[]).await,
    ];
    let names = ["echo", "review", "slow", "clarify"];
    let backends: Vec<(&str, &str)> = names.iter().zip(&agents).map(|(n, a)| (*n, a.url.as_str())).collect();
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - {{issuer: '{ISSUER}', audiences: [gw], hs256_secret: {SECRET}}}\n\
         permissions:\n  default: allow\n  rules:\n    - {{skills: [slow], callers: ['{mallory}'], effect: deny}}\n\
         rate_limit:\n  default: {{per_second: 1000, burst: 1000}}\n  callers: {{'{dave}': {{per_minute: 1, burst: 1}}}}\n\
         concurrency:\n  default_max_live_tasks: 10\n  callers: {{'{erin}': 1}}\n\
         validation: {{}}\n\
         audit:\n  file: {{path: '{path}'}}\n",
        mallory = caller_id("mallory"),
        dave = caller_id("dave"),
        erin = caller_id("erin"),
        path = file.display()
    );
    let mut gw = gateway(BIN, &a2a_e2e::config(&backends, &extra)).await;
    wait_for_skills(&gw.url, &["echo", "review-pr", "slow", "clarify"]).await;
    let root = format!("{}/", gw.url);
    let alice = token("alice");

    // A blocking task.
    let (_, blocking) =
        rpc_as(Some(&alice), &root, "SendMessage", json!({"message": text_message("secret words", Some("echo"))}))
            .await;
    let blocking_id = blocking["result"]["task"]["id"].as_str().unwrap().to_string();
    // A streamed task with an artifact.
    let mut review = text_message("", Some("review-pr"));
    review["parts"] = json!([{"data": {"diff": "+confidential.unwrap()", "title": "private PR"}}]);
    let streamed =
        stream_events_as(Some(&alice), &format!("{}/message:stream", gw.url), json!({"message": review})).await;
    let streamed_id = streamed[0]["task"]["id"].as_str().unwrap().to_string();
    // A canceled task.
    let (_, started) = rpc_as(
        Some(&alice),
        &root,
        "SendMessage",
        json!({"message": text_message("long", Some("slow")), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let canceled_id = started["result"]["task"]["id"].as_str().unwrap().to_string();
    rpc_as(Some(&alice), &root, "CancelTask", json!({"id": canceled_id})).await;
    // A multi-turn task.
    let (_, turn1) =
        rpc_as(Some(&alice), &root, "SendMessage", json!({"message": text_message("deploy", Some("clarify"))})).await;
    let multi = turn1["result"]["task"].clone();
    let mut reply = text_message("production", None);
    reply["taskId"] = multi["id"].clone();
    reply["contextId"] = multi["contextId"].clone();
    rpc_as(Some(&alice), &root, "SendMessage", json!({"message": reply})).await;
    let multi_id = multi["id"].as_str().unwrap().to_string();
    // One denial of each kind.
    let (status, _) = rpc_as(None, &root, "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    assert_eq!(status, 401);
    let (status, _) =
        rpc_as(Some(&token("mallory")), &root, "SendMessage", json!({"message": text_message("x", Some("slow"))}))
            .await;
    assert_eq!(status, 403);
    let dave = token("dave");
    rpc_as(Some(&dave), &root, "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    let (status, _) =
        rpc_as(Some(&dave), &root, "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    assert_eq!(status, 429);
    let erin = token("erin");
    rpc_as(Some(&erin), &root, "SendMessage", json!({"message": text_message("x", Some("clarify"))})).await;
    let (status, limited) =
        rpc_as(Some(&erin), &root, "SendMessage", json!({"message": text_message("x", Some("clarify"))})).await;
    assert_eq!((status, limited["error"]["data"][0]["reason"].as_str()), (429, Some("TOO_MANY_TASKS")));
    let mut bad = text_message("", Some("review-pr"));
    bad["parts"] = json!([{"data": {"diff": 42}}]);
    let (_, invalid) = rpc_as(Some(&alice), &root, "SendMessage", json!({"message": bad})).await;
    assert_eq!(invalid["error"]["code"], -32602);

    // The counters moved.
    let admin = gw.admin.clone().unwrap();
    let metrics = a2a_e2e::client().get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap();
    for needle in [
        "a2a_requests_total{",
        "outcome=\"RATE_LIMITED\"",
        "a2a_limits_hit_total{kind=\"authentication\"}",
        "a2a_limits_hit_total{kind=\"concurrency\"}",
        "http_server_request_duration_seconds_bucket",
        "a2a_backend_request_duration_seconds_bucket{backend=\"echo\"",
        "a2a_gateway_overhead_seconds_bucket",
        "a2a_backend_healthy{backend=\"review\"} 1",
        "a2a_audit_queue_depth",
    ] {
        assert!(metrics.contains(needle), "{needle} missing from /metrics:\n{metrics}");
    }
    let ok_sends = metrics
        .lines()
        .find(|l| {
            l.starts_with("a2a_requests_total{")
                && l.contains("operation=\"SendMessage\"")
                && l.contains("skill=\"echo\"")
                && l.contains("outcome=\"ok\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .expect("a counter of successful echo sends");
    assert!(ok_sends >= 2.0, "{ok_sends}");

    // Stop (flushes the audit log) and read it.
    gw.signal("TERM");
    assert_eq!(gw.wait(Duration::from_secs(20)).await, Some(0));
    let text = std::fs::read_to_string(&file).unwrap();
    for content in ["secret words", "confidential", "private PR", "production", "deploy"] {
        assert!(!text.contains(content), "message content '{content}' is in the audit log");
    }
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for record in &records[1..] {
        assert!(record["ts"].is_string() && record["prev"].is_string(), "{record}");
    }
    let of_task = |id: &str| events(&records, |r| r["task_id"] == id);
    assert_eq!(
        of_task(&blocking_id),
        ["task.received", "artifact.delivered", "task.state", "task.ended", "request"],
        "blocking"
    );
    // A stream names its task only in its first event, after the request was received: the
    // received record is tied to the task by the request id.
    assert_eq!(
        of_task(&streamed_id),
        ["task.state", "task.state", "artifact.delivered", "task.state", "task.ended"],
        "streamed"
    );
    let request_id = records.iter().find(|r| r["task_id"] == streamed_id.as_str()).unwrap()["request_id"].clone();
    assert_eq!(
        events(&records, |r| r["request_id"] == request_id && r["task_id"].is_null()),
        ["task.received", "request"]
    );
    let canceled: Vec<&Value> =
        records.iter().filter(|r| r["task_id"] == canceled_id.as_str() && r["event"] == "task.ended").collect();
    assert_eq!(canceled.len(), 1);
    assert_eq!(canceled[0]["state"], "TASK_STATE_CANCELED");
    let multi_events = of_task(&multi_id);
    assert_eq!(multi_events.iter().filter(|e| *e == "task.received").count(), 2, "two turns: {multi_events:?}");
    let states: Vec<&str> = records
        .iter()
        .filter(|r| r["task_id"] == multi_id.as_str() && r["event"] == "task.state")
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]);
    let blocking_record =
        records.iter().find(|r| r["task_id"] == blocking_id.as_str() && r["event"] == "artifact.delivered").unwrap();
    assert_eq!(blocking_record["caller"], caller_id("alice"));
    assert_eq!((blocking_record["skill"].as_str(), blocking_record["backend"].as_str()), (Some("echo"), Some("echo")));
    assert!(blocking_record["sha256"].as_str().is_some_and(|h| h.len() == 64));
    let denials: Vec<(String, String)> = records
        .iter()
        .filter(|r| r["event"] == "denied")
        .map(|r| (r["category"].as_str().unwrap_or("").to_string(), r["reason"].as_str().unwrap_or("").to_string()))
        .collect();
    for reason in ["UNAUTHENTICATED", "PERMISSION_DENIED", "RATE_LIMITED", "TOO_MANY_TASKS", "VALIDATION_FAILED"] {
        assert_eq!(denials.iter().filter(|(_, r)| r == reason).count(), 1, "{reason} in {denials:?}");
    }

    // The chain verifies, and breaks at the record with one altered byte.
    let verify = |path: &PathBuf| Command::new(BIN).args(["audit", "verify"]).arg(path).output().unwrap();
    let good = verify(&file);
    assert!(good.status.success(), "{}", String::from_utf8_lossy(&good.stdout));
    let mut bytes = std::fs::read(&file).unwrap();
    let line_five = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(3).map(|(i, _)| i + 1).unwrap();
    let at = line_five + bytes[line_five..].iter().position(|b| *b == b'"').unwrap() + 2;
    bytes[at] ^= 0x01;
    std::fs::write(&file, bytes).unwrap();
    let broken = verify(&file);
    let report = String::from_utf8_lossy(&broken.stdout).to_string();
    assert!(!broken.status.success(), "{report}");
    assert!(report.contains(":5"), "names the altered record on line 5: {report}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = get_json;
}

/// `include_content_for_skills`: a send to a listed skill has its message parts in its
/// `task.received` record, as the agent got them — a 0.3 caller's `kind`-tagged parts in their 1.0
/// form — and a send to another skill has none.
#[tokio::test]
async fn content_is_logged_for_a_listed_skill_as_the_agent_got_it_whatever_the_dialect() {
    let dir = std::env::temp_dir().join(format!("a2a-audit-content-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("audit.jsonl");
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let extra = format!("audit:\n  file: {{path: '{}'}}\n  include_content_for_skills: [echo]\n", file.display());
    let mut gw = gateway(BIN, &a2a_e2e::config(&[("echo", &echo.url), ("clarify", &clarify.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo", "clarify"]).await;
    let root = format!("{}/", gw.url);

    // 1.0, to the listed skill and to another.
    let (status, _) =
        rpc_as(None, &root, "SendMessage", json!({"message": text_message("logged 1.0", Some("echo"))})).await;
    assert_eq!(status, 200);
    let (status, _) =
        rpc_as(None, &root, "SendMessage", json!({"message": text_message("not logged", Some("clarify"))})).await;
    assert_eq!(status, 200);
    // 0.3, kind-tagged parts.
    let message03 = json!({"kind": "message", "messageId": "m-03", "role": "user", "metadata": {"skillId": "echo"},
        "parts": [{"kind": "text", "text": "logged 0.3"}, {"kind": "data", "data": {"n": 1}}]});
    let body = json!({"jsonrpc": "2.0", "id": "q-1", "method": "message/send", "params": {"message": message03}});
    let answer = a2a_e2e::client().post(&root).json(&body).send().await.expect("POST");
    assert_eq!(answer.status().as_u16(), 200);

    gw.signal("TERM");
    assert_eq!(gw.wait(Duration::from_secs(20)).await, Some(0));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("not logged"), "content of an unlisted skill is in the log");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut contents: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "task.received" && r.get("content").is_some())
        .map(|r| &r["content"]["parts"])
        .collect();
    contents.sort_by_key(|parts| parts.to_string());
    assert_eq!(
        contents,
        [&json!([{"text": "logged 0.3"}, {"data": {"n": 1}}]), &json!([{"text": "logged 1.0"}])],
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tiny OTLP/HTTP (JSON) receiver on loopback: keeps every export request body.
async fn otlp_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>, tokio::task::JoinHandle<()>) {
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let store = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: bytes::Bytes| {
            let store = store.clone();
            async move {
                if let Ok(value) = serde_json::from_slice::<Value>(&body) {
                    store.lock().unwrap().push(value);
                }
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, received, task)
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key)?["value"]["stringValue"].as_str()
}

#[tokio::test]
async fn spans_reach_an_otlp_receiver_and_the_backend_gets_the_propagated_traceparent() {
    let (collector, received, receiver) = otlp_receiver().await;
    let echo = example_agent(BIN, "echo", &[]).await;
    let extra = format!("telemetry:\n  otlp_endpoint: {collector}\n  export_interval: 100ms\n");
    let gw = gateway(BIN, &a2a_e2e::config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": text_message("traced", Some("echo"))}});
    let response = a2a_e2e::client()
        .post(format!("{}/", gw.url))
        .header("A2A-Version", "1.0")
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);

    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let spans = || -> Vec<Value> {
        let exports = received.lock().unwrap().clone();
        let mut all = Vec::new();
        for export in exports {
            for resource in export["resourceSpans"].as_array().cloned().unwrap_or_default() {
                for scope in resource["scopeSpans"].as_array().cloned().unwrap_or_default() {
                    all.extend(scope["spans"].as_array().cloned().unwrap_or_default());
                }
            }
        }
        all
    };
    let (span, client) = loop {
        let all = spans();
        let named = |name: &str| all.iter().find(|s| s["name"] == name).cloned();
        if let (Some(span), Some(client)) = (named("a2a SendMessage"), named("a2a backend echo")) {
            break (span, client);
        }
        assert!(std::time::Instant::now() < deadline, "the spans did not arrive at the OTLP receiver");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The backend call is a span of its own, child of the call's.
    assert_eq!(client["parentSpanId"], span["spanId"], "{client}");
    assert_eq!(client["traceId"], span["traceId"]);
    assert_eq!(span["traceId"].as_str().map(str::to_lowercase), Some(trace_id.to_string()), "{span}");
    assert_eq!(span["parentSpanId"].as_str().map(str::to_lowercase), Some(caller_span.to_string()), "{span}");
    assert_eq!(attribute(&span, "a2a.skill"), Some("echo"), "{span}");
    assert_eq!(attribute(&span, "a2a.backend"), Some("echo"), "{span}");
    assert_eq!(attribute(&span, "a2a.outcome"), Some("ok"), "{span}");
    assert!(attribute(&span, "a2a.caller").is_some_and(|c| c.starts_with("ip:")), "{span}");

    // The backend's parent is the gateway's backend-call span, in the caller's trace.
    let (_, seen) = get_json(&format!("{}/debug/requests", echo.url)).await;
    let send = seen.as_array().unwrap().iter().find(|r| r["operation"] == "SendMessage").unwrap();
    let gateway_span = client["spanId"].as_str().unwrap().to_lowercase();
    assert_eq!(send["headers"]["traceparent"], format!("00-{trace_id}-{gateway_span}-01"), "{send}");
    receiver.abort();
}
