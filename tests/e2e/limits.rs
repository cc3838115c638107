//! Per-caller limits and input validation, through the real gateway: rate quotas (429 with
//! Retry-After), live-task limits released through every observation path, skill schema checks,
//! sizes and part kinds.

use std::net::IpAddr;
use std::time::Duration;

use a2a_e2e::{
    client_from, config, example_agent, gateway, get_json, rpc, stream_events, text_message, wait_for_skills,
};
use serde_json::{Value, json};

use crate::BIN;

async fn send_from(source: &str, url: &str, message: Value) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let response = client_from(source.parse::<IpAddr>().unwrap())
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    (status, retry, response.json().await.unwrap())
}

#[tokio::test]
async fn a_burst_over_quota_gets_429_with_retry_after_and_recovers_per_caller() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "rate_limit:\n  default: {per_second: 1, burst: 2}\n")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let root = format!("{}/", gw.url);
    for _ in 0..2 {
        let (status, _, answer) = send_from("127.0.0.1", &root, text_message("x", Some("echo"))).await;
        assert_eq!(status, 200, "{answer}");
    }
    let (status, retry, answer) = send_from("127.0.0.1", &root, text_message("x", Some("echo"))).await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(answer["error"]["data"][0]["reason"], "RATE_LIMITED");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");

    // Another caller has its own quota.
    let (status, _, _) = send_from("127.0.0.2", &root, text_message("x", Some("echo"))).await;
    assert_eq!(status, 200);

    // After the stated wait the first caller may send again.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let (status, _, answer) = send_from("127.0.0.1", &root, text_message("x", Some("echo"))).await;
    assert_eq!(status, 200, "{answer}");
}

async fn refused_as_too_many(gw: &str) {
    let answer = rpc(&format!("{gw}/"), "SendMessage", json!({"message": text_message("n+1", Some("clarify"))})).await;
    assert_eq!(answer["error"]["data"][0]["reason"], "TOO_MANY_TASKS", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("2 of at most 2"), "{answer}");
}

async fn allowed(gw: &str) -> Value {
    let answer =
        rpc(&format!("{gw}/"), "SendMessage", json!({"message": text_message("again", Some("clarify"))})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{answer}");
    answer["result"]["task"].clone()
}

/// Continues an input-required clarify task to completion, over `how`.
async fn finish(gw: &str, task: &Value, how: &str) {
    let mut reply = text_message("production", None);
    reply["taskId"] = task["id"].clone();
    reply["contextId"] = task["contextId"].clone();
    match how {
        "unary" => {
            let done = rpc(&format!("{gw}/"), "SendMessage", json!({"message": reply})).await;
            assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
        }
        "stream" => {
            let events = stream_events(&format!("{gw}/message:stream"), json!({"message": reply})).await;
            assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{events:?}");
        }
        "get" => {
            let started = rpc(
                &format!("{gw}/"),
                "SendMessage",
                json!({"message": reply, "configuration": {"returnImmediately": true}}),
            )
            .await;
            assert!(started["result"]["task"].is_object(), "{started}");
            // Only a later GetTask shows the gateway the task ended.
            let mut state = Value::Null;
            for _ in 0..50 {
                let got = rpc(&format!("{gw}/"), "GetTask", json!({"id": task["id"]})).await;
                state = got["result"]["status"]["state"].clone();
                if state == "TASK_STATE_COMPLETED" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(state, "TASK_STATE_COMPLETED");
        }
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn the_n_plus_first_live_task_is_refused_until_one_ends_by_any_path() {
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let extra = "concurrency:\n  default_max_live_tasks: 2\n  lease_ttl: 2s\n";
    let gw = gateway(BIN, &config(&[("clarify", &clarify.url)], extra)).await;
    wait_for_skills(&gw.url, &["clarify"]).await;
    // clarify tasks wait in input-required: live until continued.
    let mut held = vec![allowed(&gw.url).await, allowed(&gw.url).await];
    refused_as_too_many(&gw.url).await;
    for how in ["unary", "stream", "get"] {
        let task = held.remove(0);
        finish(&gw.url, &task, how).await;
        held.push(allowed(&gw.url).await);
        refused_as_too_many(&gw.url).await;
    }
    // Leases also expire: after the TTL both slots are free again.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    allowed(&gw.url).await;
}

async fn review_gateway(extra: &str) -> (a2a_e2e::Proc, a2a_e2e::Proc, a2a_e2e::Proc) {
    let review = example_agent(BIN, "review", &["--step-ms", "1"]).await;
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("review", &review.url), ("echo", &echo.url)], extra)).await;
    wait_for_skills(&gw.url, &["review-pr", "echo"]).await;
    (review, echo, gw)
}

fn data_message(data: Value) -> Value {
    let mut message = text_message("", Some("review-pr"));
    message["parts"] = json!([{"data": data}]);
    message
}

fn pointers(answer: &Value) -> Vec<String> {
    answer["error"]["data"][1]["fieldViolations"]
        .as_array()
        .map(|v| v.iter().map(|f| f["field"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn review_pr_input_is_checked_against_its_schema_before_forwarding() {
    let (review, _echo, gw) = review_gateway("validation: {}\n").await;
    let root = format!("{}/", gw.url);
    let cases: [(Value, &[&str]); 4] = [
        (json!({"title": "no diff"}), &["/diff"]),
        (json!({"diff": 42}), &["/diff"]),
        (json!({"diff": "+a", "focus": ["speed"]}), &["/focus/0"]),
        // An extra (nested) property: reported at the object or at the property itself.
        (json!({"diff": "+a", "extra": {"nested": {"deep": true}}}), &["", "/extra"]),
    ];
    for (data, accepted) in cases {
        let answer = rpc(&root, "SendMessage", json!({"message": data_message(data.clone())})).await;
        assert_eq!(answer["error"]["code"], -32602, "{data}: {answer}");
        assert!(
            pointers(&answer).iter().any(|p| accepted.contains(&p.as_str())),
            "{data}: want {accepted:?} in {answer}"
        );
    }
    let (_, seen) = get_json(&format!("{}/debug/requests", review.url)).await;
    assert_eq!(
        seen.as_array().unwrap().iter().filter(|r| r["operation"] == "SendMessage").count(),
        0,
        "nothing invalid was forwarded"
    );

    let ok = rpc(
        &root,
        "SendMessage",
        json!({"message": data_message(json!({"diff": "+x.unwrap()", "focus": ["correctness"]}))}),
    )
    .await;
    assert_eq!(ok["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{ok}");
    // echo has no schema: its text is not schema-checked ...
    let mut free = text_message("", Some("echo"));
    free["parts"] = json!([{"text": "hi"}, {"text": "{\"diff\": 42}"}]);
    let answer = rpc(&root, "SendMessage", json!({"message": free})).await;
    assert!(answer["result"].is_object(), "{answer}");
    // ... but it accepts text only (its card's input modes): a data part is refused.
    let mut data = text_message("", Some("echo"));
    data["parts"] = json!([{"text": "hi"}, {"data": {"anything": [1, 2, 3]}}]);
    let answer = rpc(&root, "SendMessage", json!({"message": data})).await;
    assert_eq!(pointers(&answer), ["/parts/1"], "{answer}");
}

/// Validation reads the checked request the decoder built, whatever carried it: the same bad input
/// is refused in 1.0 HTTP+JSON, in 0.3 JSON-RPC, under ProtoJSON's snake_case spelling and in a
/// second data part, and none of it reaches the agent.
#[tokio::test]
async fn the_schema_holds_whatever_dialect_binding_or_spelling_carries_the_input() {
    let (review, _echo, gw) = review_gateway("validation: {}\n").await;
    let bad = json!({"diff": 42});

    let rest = a2a_e2e::client()
        .post(format!("{}/message:send", gw.url))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": data_message(bad.clone())}))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let text = rest.text().await.unwrap();
    assert!(text.contains("/diff"), "1.0 HTTP+JSON: {text}");

    let v03 = json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m-03", "role": "user", "metadata": {"skillId": "review-pr"},
        "parts": [{"kind": "data", "data": bad}]}}});
    let answer: Value =
        a2a_e2e::client().post(format!("{}/", gw.url)).json(&v03).send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32602, "0.3 JSON-RPC: {answer}");
    assert!(answer["error"].to_string().contains("/diff"), "0.3 JSON-RPC: {answer}");

    let snake = json!({"message": {"message_id": "m-snake", "role": "ROLE_USER",
        "metadata": {"skillId": "review-pr"}, "parts": [{"data": bad}]}});
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", snake).await;
    assert_eq!(pointers(&answer), ["/diff"], "snake_case spelling: {answer}");

    let mut second = data_message(json!({"diff": "+a"}));
    second["parts"] = json!([{"data": {"diff": "+a"}}, {"text": "and"}, {"data": bad}]);
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": second})).await;
    assert_eq!(pointers(&answer), ["/parts/2/data/diff"], "a second data part: {answer}");

    let (_, seen) = get_json(&format!("{}/debug/requests", review.url)).await;
    let forwarded = seen.as_array().unwrap().iter().filter(|r| r["operation"] == "SendMessage").count();
    assert_eq!(forwarded, 0, "nothing invalid was forwarded: {seen}");
}

#[tokio::test]
async fn sizes_and_part_kinds_are_limited() {
    let (_review, _echo, gw) = review_gateway("validation:\n  limits: {max_parts: 3, max_text_bytes: 100}\n").await;
    let root = format!("{}/", gw.url);
    let mut many = text_message("", Some("echo"));
    many["parts"] = json!([{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"}]);
    let long = text_message(&"x".repeat(101), Some("echo"));
    let mut odd = text_message("", Some("echo"));
    odd["parts"] = json!([{"video": "cat.mp4"}]);
    let mut no_id = text_message("x", Some("echo"));
    no_id.as_object_mut().unwrap().remove("messageId");
    for (name, message) in
        [("many parts", many), ("long text", long), ("unknown part kind", odd), ("no messageId", no_id)]
    {
        let answer = rpc(&root, "SendMessage", json!({"message": message})).await;
        assert_eq!(answer["error"]["code"], -32602, "{name}: {answer}");
    }
}

/// `max_message_bytes` holds the message as the agent gets it, not the caller's bytes: numbers
/// such as `1e15` that the model writes out four times longer push a short request over the limit,
/// and a 0.3 caller's `kind` tags, dropped on the way, do not count against one that fits.
#[tokio::test]
async fn the_message_size_limit_holds_the_message_as_the_agent_gets_it() {
    let (_review, echo, gw) = review_gateway("validation:\n  limits: {max_message_bytes: 400}\n").await;
    let root = format!("{}/", gw.url);
    // Written by hand: a JSON library would write the numbers out in full before sending them.
    let with_numbers = |count: usize| {
        let numbers = vec!["1e15"; count].join(",");
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{count}","role":"ROLE_USER","parts":[{{"text":"n"}}],"metadata":{{"skillId":"echo","n":[{numbers}]}}}}}}}}"#
        )
    };
    let send = |body: String| {
        let request =
            a2a_e2e::client().post(&root).header("A2A-Version", "1.0").header("Content-Type", "application/json");
        async move { request.body(body).send().await.unwrap().json::<Value>().await.unwrap() }
    };
    // About 220 bytes from the caller, about 500 written for the agent (`1000000000000000.0` each).
    let expanding = with_numbers(20);
    assert!(expanding.len() < 400, "{expanding}");
    let answer = send(expanding).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"].to_string().contains("bytes long; at most 400"), "{answer}");
    // The same with five numbers fits when written.
    let answer = send(with_numbers(5)).await;
    assert!(answer["result"].is_object(), "{answer}");

    // 0.3: twelve kind-tagged parts are over 400 bytes as sent and under it as written.
    let parts: Vec<Value> = (0..12).map(|_| json!({"kind": "text", "text": "a"})).collect();
    let message03 = json!({"kind": "message", "messageId": "m-03", "role": "user",
        "metadata": {"skillId": "echo"}, "parts": parts});
    assert!(message03.to_string().len() > 400, "{message03}");
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message03}});
    let answer: Value = a2a_e2e::client().post(&root).json(&body).send().await.unwrap().json().await.unwrap();
    assert!(answer["result"].is_object(), "0.3, under the limit as written: {answer}");
    let mut long03 = body.clone();
    long03["params"]["message"]["parts"] = json!([{"kind": "text", "text": "x".repeat(400)}]);
    let answer: Value = a2a_e2e::client().post(&root).json(&long03).send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32602, "0.3, over the limit: {answer}");

    let (_, seen) = get_json(&format!("{}/debug/requests", echo.url)).await;
    let sends = seen.as_array().unwrap().iter().filter(|r| r["operation"] == "SendMessage").count();
    assert_eq!(sends, 2, "only the two messages within the limit reached the agent: {seen}");
}

#[tokio::test]
async fn a_100_mb_body_is_refused_without_being_read_whole() {
    let (_review, _echo, gw) = review_gateway("").await;
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", gw.pid().unwrap())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let before = rss();
    // Declared: refused from the header alone.
    let big = vec![b'x'; 100 * 1024 * 1024];
    let response =
        a2a_e2e::client().post(format!("{}/message:send", gw.url)).header("A2A-Version", "1.0").body(big).send().await;
    if let Ok(response) = response {
        assert_eq!(response.status().as_u16(), 413);
    }
    // Undeclared (chunked): refused once the limit is crossed.
    let chunks =
        futures::stream::iter((0..100).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'y'; 1024 * 1024]))));
    let response = a2a_e2e::client()
        .post(format!("{}/message:send", gw.url))
        .header("A2A-Version", "1.0")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    if let Ok(response) = response {
        assert_eq!(response.status().as_u16(), 413);
    }
    let grown_kib = rss().saturating_sub(before);
    assert!(grown_kib < 32 * 1024, "the gateway grew by {grown_kib} KiB reading a refused body");
    // And it still serves.
    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("ok", Some("echo"))})).await;
    assert!(answer["result"].is_object());
}
