//! Routing: by per-agent path, by explicit skill, by known context; task-scoped calls reach the
//! backend that owns the task.

use std::time::Duration;

use a2a_e2e::{
    Proc, config, example_agent, gateway, get_json, rest_post, rpc, stream_events, text_message, wait_for_skills,
};
use serde_json::{Value, json};

use crate::BIN;

/// How many `operation` requests (A2A 1.0 method name, either binding) an example agent received.
async fn seen(agent: &Proc, operation: &str) -> usize {
    let (_, requests) = get_json(&format!("{}/debug/requests", agent.url)).await;
    requests.as_array().expect("debug requests list").iter().filter(|r| r["operation"] == operation).count()
}

async fn two_backends(a: &str, b: &str) -> (Proc, Proc, Proc) {
    let first = example_agent(BIN, a, &["--slow-secs", "30"]).await;
    let second = example_agent(BIN, b, &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[(a, &first.url), (b, &second.url)], "")).await;
    (first, second, gw)
}

/// Starts a task on the `slow` skill without waiting for it to finish: the task as first answered.
async fn start_slow(root: &str, text: &str) -> Value {
    let started = rpc(
        root,
        "SendMessage",
        json!({"message": text_message(text, Some("slow")), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task = started["result"]["task"].clone();
    assert!(task["id"].is_string(), "a task: {started}");
    task
}

/// An echo agent and a slow one (a second per task) behind a gateway that publishes both.
async fn echo_and_slow() -> (Proc, Proc, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "1"]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "slow"]).await;
    (echo, slow, gw)
}

#[tokio::test]
async fn per_agent_paths_reach_that_agent_in_both_bindings() {
    let (echo, review, gw) = two_backends("echo", "review").await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;

    let answer =
        rpc(&format!("{}/agents/echo/", gw.url), "SendMessage", json!({"message": text_message("hi rpc", None)})).await;
    assert_eq!(answer["id"], "t-1");
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(answer["result"]["task"]["artifacts"][0]["parts"][0]["text"], "hi rpc");

    let (status, task) =
        rest_post(&format!("{}/agents/echo/message:send", gw.url), json!({"message": text_message("hi rest", None)}))
            .await;
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["task"]["artifacts"][0]["parts"][0]["text"], "hi rest");

    assert_eq!(seen(&echo, "SendMessage").await, 2);
    assert_eq!(seen(&review, "SendMessage").await, 0);
}

#[tokio::test]
async fn explicit_skill_on_the_unified_endpoint_picks_the_backend() {
    let (echo, review, gw) = two_backends("echo", "review").await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;

    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("to echo", Some("echo"))})).await;
    assert_eq!(answer["result"]["task"]["artifacts"][0]["parts"][0]["text"], "to echo", "{answer}");

    // Skill on the request's metadata instead of the message's.
    let mut message = text_message("x", None);
    message["parts"] = json!([{"data": {"diff": "--- a\n+++ b\n", "title": "PR 1"}}]);
    let events = stream_events(
        &format!("{}/message:stream", gw.url),
        json!({"message": message, "metadata": {"skillId": "review-pr"}}),
    )
    .await;
    let last = events.last().expect("events");
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{events:?}");
    assert_eq!(seen(&review, "SendStreamingMessage").await, 1);
    assert_eq!(seen(&echo, "SendStreamingMessage").await, 0);
}

#[tokio::test]
async fn a_known_context_routes_a_message_without_a_skill() {
    let (echo, clarify, gw) = two_backends("echo", "clarify").await;
    wait_for_skills(&gw.url, &["echo", "clarify"]).await;
    let first =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("one", Some("echo"))})).await;
    let context = first["result"]["task"]["contextId"].as_str().expect("context id").to_string();

    let mut message = text_message("two", None);
    message["contextId"] = json!(context);
    let second = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": message})).await;
    assert_eq!(second["result"]["task"]["contextId"], json!(context), "{second}");
    assert_eq!(second["result"]["task"]["artifacts"][0]["parts"][0]["text"], "two");
    assert_eq!(seen(&echo, "SendMessage").await, 2);
    assert_eq!(seen(&clarify, "SendMessage").await, 0);
}

#[tokio::test]
async fn no_skill_no_context_lists_the_available_skills() {
    let (_echo, _review, gw) = two_backends("echo", "review").await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    // A message that fits both: a rejected task whose status message lists them.
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("where?", None)})).await;
    let status = &answer["result"]["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_REJECTED", "{answer}");
    let message = status["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(message.contains("echo") && message.contains("review-pr"), "{message}");
    let listed = &status["message"]["parts"][1]["data"]["availableSkills"];
    assert_eq!((&listed[0]["id"], &listed[1]["id"]), (&json!("echo"), &json!("review-pr")), "{answer}");

    let (status, body) =
        rest_post(&format!("{}/message:send", gw.url), json!({"message": text_message("x", Some("nope"))})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["details"][0]["reason"], "INVALID_PARAMS");
}

#[tokio::test]
async fn a_configured_default_skill_takes_messages_that_name_none() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "routing:\n  default_skill: echo\n")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("default", None)})).await;
    assert_eq!(answer["result"]["task"]["artifacts"][0]["parts"][0]["text"], "default", "{answer}");
}

#[tokio::test]
async fn get_and_continue_reach_the_owning_backend() {
    let (clarify, echo, gw) = two_backends("clarify", "echo").await;
    wait_for_skills(&gw.url, &["clarify", "echo"]).await;
    let root = format!("{}/", gw.url);

    let first = rpc(&root, "SendMessage", json!({"message": text_message("deploy it", Some("clarify"))})).await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first}");
    let (task_id, context_id) =
        (task["id"].as_str().unwrap().to_string(), task["contextId"].as_str().unwrap().to_string());

    let got = rpc(&root, "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["id"], json!(task_id), "{got}");
    let (status, got) = a2a_e2e::get_json(&format!("{}/tasks/{task_id}", gw.url)).await;
    assert_eq!((status, got["id"].as_str()), (200, Some(task_id.as_str())), "{got}");

    // The continuation names the task only; no skill, and it must still reach clarify.
    let mut message = text_message("to production", None);
    message["taskId"] = json!(task_id);
    message["contextId"] = json!(context_id);
    let second = rpc(&root, "SendMessage", json!({"message": message})).await;
    assert_eq!(second["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{second}");
    assert_eq!(seen(&clarify, "GetTask").await, 2, "once per binding");
    assert_eq!(seen(&echo, "GetTask").await, 0);
    assert_eq!(seen(&echo, "SendMessage").await, 0);
}

#[tokio::test]
async fn cancel_and_subscribe_reach_the_owning_backend() {
    let (echo, slow, gw) = two_backends("echo", "slow").await;
    wait_for_skills(&gw.url, &["echo", "slow"]).await;
    let root = format!("{}/", gw.url);

    let task_id = start_slow(&root, "take your time").await["id"].as_str().expect("task id").to_string();

    // Subscribe over HTTP+JSON; the first event is the task snapshot.
    let client = a2a_e2e::client();
    let response = client
        .get(format!("{}/tasks/{task_id}:subscribe", gw.url))
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let subscription = tokio::spawn(async move { response.bytes().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let canceled = rpc(&root, "CancelTask", json!({"id": task_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");

    let bytes = tokio::time::timeout(Duration::from_secs(10), subscription).await.expect("stream ends").unwrap();
    let events: Vec<Value> = a2a_e2e::sse_data(&bytes).iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events[0]["task"]["id"], json!(task_id), "{events:?}");
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{events:?}");

    assert_eq!(seen(&slow, "CancelTask").await, 1);
    assert_eq!(seen(&echo, "CancelTask").await, 0);
    assert_eq!(seen(&slow, "SubscribeToTask").await, 1);
    assert_eq!(seen(&echo, "SubscribeToTask").await, 0);
}

#[tokio::test]
async fn unknown_and_foreign_tasks_are_not_found() {
    let (_echo, _review, gw) = two_backends("echo", "review").await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let root = format!("{}/", gw.url);

    let missing = rpc(&root, "GetTask", json!({"id": "00000000-0000-0000-0000-000000000000"})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    assert_eq!(missing["id"], "t-1");
    let (status, body) = get_json(&format!("{}/tasks/00000000-0000-0000-0000-000000000000", gw.url)).await;
    assert_eq!((status, body["error"]["status"].as_str()), (404, Some("NOT_FOUND")));
    let (status, _) = rest_post(&format!("{}/tasks/nope:cancel", gw.url), json!({})).await;
    assert_eq!(status, 404);

    // A task of echo asked for through review's path does not exist there.
    let made = rpc(&root, "SendMessage", json!({"message": text_message("mine", Some("echo"))})).await;
    let task_id = made["result"]["task"]["id"].as_str().unwrap();
    let foreign = rpc(&format!("{}/agents/review/", gw.url), "GetTask", json!({"id": task_id})).await;
    assert_eq!(foreign["error"]["code"], -32001, "{foreign}");
    let mine = rpc(&format!("{}/agents/echo/", gw.url), "GetTask", json!({"id": task_id})).await;
    assert_eq!(mine["result"]["id"], json!(task_id), "{mine}");
}

#[tokio::test]
async fn list_tasks_lists_what_the_gateway_routed() {
    let (_echo, _clarify, gw) = two_backends("echo", "clarify").await;
    wait_for_skills(&gw.url, &["echo", "clarify"]).await;
    let root = format!("{}/", gw.url);
    let a = rpc(&root, "SendMessage", json!({"message": text_message("a", Some("echo"))})).await;
    let b = rpc(&root, "SendMessage", json!({"message": text_message("b", Some("clarify"))})).await;
    let ids = [a["result"]["task"]["id"].clone(), b["result"]["task"]["id"].clone()];

    let listed = rpc(&root, "ListTasks", json!({})).await;
    let got: Vec<Value> =
        listed["result"]["tasks"].as_array().expect("tasks").iter().map(|t| t["id"].clone()).collect();
    assert_eq!(got.len(), 2, "{listed}");
    assert!(ids.iter().all(|id| got.contains(id)), "{listed}");

    let (status, one) = get_json(&format!("{}/agents/echo/tasks", gw.url)).await;
    assert_eq!(status, 200, "{one}");
    let got: Vec<Value> = one["tasks"].as_array().unwrap().iter().map(|t| t["id"].clone()).collect();
    assert_eq!(got, [ids[0].clone()]);
}

/// `ids` of a ListTasks answer, in order.
pub(crate) fn listed_ids(answer: &Value) -> Vec<String> {
    let tasks = answer["result"]["tasks"].as_array().unwrap_or_else(|| panic!("tasks: {answer}"));
    tasks.iter().map(|t| t["id"].as_str().expect("task id").to_owned()).collect()
}

/// `timestamp` (RFC 3339, UTC) written as the same instant at +02:00, microseconds kept.
fn at_plus_two(timestamp: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    let utc = time::OffsetDateTime::parse(timestamp, &Rfc3339).expect("an RFC 3339 status timestamp");
    let local = utc.to_offset(time::UtcOffset::from_hms(2, 0, 0).unwrap());
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+02:00",
        local.year(),
        u8::from(local.month()),
        local.day(),
        local.hour(),
        local.minute(),
        local.second(),
        local.microsecond()
    )
}

#[tokio::test]
async fn list_tasks_pages_newest_first_and_filters_by_what_the_agents_answer() {
    let (_echo, _slow, gw) = echo_and_slow().await;
    let root = format!("{}/", gw.url);
    let mut sent = Vec::new();
    for i in 0..5 {
        let answer = rpc(&root, "SendMessage", json!({"message": text_message(&format!("t{i}"), Some("echo"))})).await;
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
        sent.push(answer["result"]["task"].clone());
        // Distinct status timestamps (the agent writes microseconds).
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let newest_first: Vec<String> = sent.iter().rev().map(|t| t["id"].as_str().unwrap().to_owned()).collect();

    // Pages of two, newest first: 2, 2, 1, each page's token leading to the next.
    let mut pages = Vec::new();
    let mut params = json!({"pageSize": 2});
    loop {
        let answer = rpc(&root, "ListTasks", params.clone()).await;
        assert_eq!(answer["result"]["pageSize"], 2, "the page size used: {answer}");
        assert_eq!(answer["result"]["totalSize"], 5, "{answer}");
        pages.push(listed_ids(&answer));
        let token = answer["result"]["nextPageToken"].as_str().expect("nextPageToken").to_owned();
        if token.is_empty() {
            break;
        }
        assert!(pages.len() < 3, "a third page ends the list: {answer}");
        params = json!({"pageSize": 2, "pageToken": token});
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    assert_eq!(pages.concat(), newest_first);

    // A token is bound to the query it continues.
    let first = rpc(&root, "ListTasks", json!({"pageSize": 2})).await;
    let token = first["result"]["nextPageToken"].as_str().unwrap().to_owned();
    let other = rpc(&root, "ListTasks", json!({"pageSize": 2, "pageToken": token, "contextId": "another"})).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    // Page sizes outside 1–100 are refused (as the reference SDK), not cut to fit.
    for size in [101, -1] {
        let refused = rpc(&root, "ListTasks", json!({"pageSize": size})).await;
        assert_eq!(refused["error"]["code"], -32602, "pageSize {size}: {refused}");
    }
    let (status, refused) = get_json(&format!("{}/tasks?pageSize=150", gw.url)).await;
    assert_eq!(status, 400, "{refused}");

    // The third task's own status time, written at another offset, names the same instant: it and
    // the two after it are listed.
    let third = sent[2]["status"]["timestamp"].as_str().expect("the agent stamps its status");
    let after = at_plus_two(third);
    let answer = rpc(&root, "ListTasks", json!({"statusTimestampAfter": after})).await;
    assert_eq!(listed_ids(&answer), newest_first[..3], "after {after} ({third}): {answer}");

    let bad = rpc(&root, "ListTasks", json!({"statusTimestampAfter": "yesterday"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap_or("").contains("RFC 3339"), "{bad}");

    // A task the gateway last saw working that finished in the background, with nobody asking:
    // listed by the state its agent gives it now.
    let started = start_slow(&root, "take a second").await;
    let slow_id = started["id"].as_str().unwrap().to_owned();
    assert_ne!(started["status"]["state"], "TASK_STATE_COMPLETED", "{started}");
    let working = rpc(&root, "ListTasks", json!({"status": "TASK_STATE_COMPLETED"})).await;
    assert!(!listed_ids(&working).contains(&slow_id), "still working: {working}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let completed = rpc(&root, "ListTasks", json!({"status": "TASK_STATE_COMPLETED"})).await;
        let ids = listed_ids(&completed);
        if ids.contains(&slow_id) {
            assert_eq!(ids.len(), 6, "the echo tasks and the slow one: {completed}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the finished task is never listed as completed: {completed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn list_tasks_lists_the_most_recently_updated_first() {
    let (_echo, slow, gw) = echo_and_slow().await;
    let root = format!("{}/", gw.url);
    let slow_id = start_slow(&root, "take a second").await["id"].as_str().unwrap().to_owned();
    let mut echoed = Vec::new();
    for text in ["e1", "e2"] {
        let answer = rpc(&root, "SendMessage", json!({"message": text_message(text, Some("echo"))})).await;
        echoed.push(answer["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {answer}")).to_owned());
    }
    // It finishes with nobody asking the gateway (the test asks the agent itself): the gateway last
    // saw it before the two echo tasks, but the agents' dates put it first on the page.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (_, got) = get_json(&format!("{}/a2a/rest/tasks/{slow_id}", slow.url)).await;
        if got["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the slow task never completes: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = rpc(&root, "ListTasks", json!({})).await;
    assert_eq!(listed_ids(&listed), [slow_id.clone(), echoed[1].clone(), echoed[0].clone()], "{listed}");
    // And the gateway, having seen its new state, lists it first from then on, a page of one too.
    let first = rpc(&root, "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(listed_ids(&first), [slow_id], "{first}");
}
