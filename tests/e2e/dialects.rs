//! Callers of the other A2A dialects through the gateway: an A2A 0.3 JSON-RPC caller (raw, and the
//! official a2a-sdk client in its 0.3 compatibility mode) reaching 1.0 backends, answered in 0.3
//! throughout — unary results, every stream event, every error.

use a2a_e2e::{Proc, client, config, example_agent, gateway, python_agent, python_client, sse_data, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

async fn rust_fleet() -> (Vec<Proc>, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("clarify", &clarify.url), ("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "clarify", "slow"]).await;
    (vec![echo, clarify, slow], gw)
}

/// A 0.3 user message: `kind`-tagged, lower-case role.
fn message03(text: &str, skill: Option<&str>) -> Value {
    let mut message = json!({
        "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(skill) = skill {
        message["metadata"] = json!({"skillId": skill});
    }
    message
}

/// A 0.3 JSON-RPC call as 0.3 clients make it: no `A2A-Version` header. Returns status and answer.
async fn rpc03(url: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": "q-1", "method": method, "params": params});
    let response = client().post(url).json(&body).send().await.expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON-RPC answer is JSON"))
}

async fn stream03(url: &str, params: Value) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": "q-2", "method": "message/stream", "params": params});
    let response =
        client().post(url).header("Accept", "text/event-stream").json(&body).send().await.expect("stream request");
    let bytes = response.bytes().await.expect("stream body");
    sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("event data is JSON")).collect()
}

#[tokio::test]
async fn v03_json_rpc_caller_reaches_1_0_backends_send_stream_get_cancel_continue() {
    let (_agents, gw) = rust_fleet().await;
    let root = format!("{}/", gw.url);

    // Blocking send: a 0.3 task, lower-case state, kind-tagged parts.
    let (status, sent) = rpc03(&root, "message/send", json!({"message": message03("hello 0.3", Some("echo"))})).await;
    assert_eq!(status, 200);
    let task = &sent["result"];
    assert_eq!((&sent["id"], &task["kind"]), (&json!("q-1"), &json!("task")), "{sent}");
    assert_eq!(task["status"]["state"], "completed", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"kind": "text", "text": "hello 0.3"}), "{sent}");
    let task_id = task["id"].as_str().expect("task id").to_string();

    // Get: the same task, in 0.3.
    let (_, got) = rpc03(&root, "tasks/get", json!({"id": task_id})).await;
    assert_eq!((&got["result"]["id"], &got["result"]["kind"]), (&json!(task_id), &json!("task")), "{got}");
    assert_eq!(got["result"]["status"]["state"], "completed");

    // Stream: every event in 0.3, the last a final status update.
    let events = stream03(&root, json!({"message": message03("streamed", Some("echo"))})).await;
    assert!(!events.is_empty());
    for event in &events {
        assert_eq!(event["id"], "q-2", "{event}");
        assert!(event["result"]["kind"].is_string(), "{event}");
    }
    let last = &events.last().expect("events")["result"];
    assert_eq!((&last["kind"], &last["final"]), (&json!("status-update"), &json!(true)), "{events:?}");
    assert_eq!(last["status"]["state"], "completed");
    assert!(
        events
            .iter()
            .any(|e| e["result"]["kind"] == "artifact-update"
                && e["result"]["artifact"]["parts"][0]["text"] == "streamed"),
        "{events:?}"
    );

    // Cancel: a non-blocking send to the slow agent, then tasks/cancel.
    let params = json!({"message": message03("take your time", Some("slow")), "configuration": {"blocking": false}});
    let (_, started) = rpc03(&root, "message/send", params).await;
    let slow_id = started["result"]["id"].as_str().expect("slow task id").to_string();
    assert!(matches!(started["result"]["status"]["state"].as_str(), Some("submitted" | "working")), "{started}");
    let (_, canceled) = rpc03(&root, "tasks/cancel", json!({"id": slow_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "canceled", "{canceled}");

    // Multi-turn: input-required, then the answer continues the task.
    let (_, first) = rpc03(&root, "message/send", json!({"message": message03("deploy it", Some("clarify"))})).await;
    assert_eq!(first["result"]["status"]["state"], "input-required", "{first}");
    let (clarify_id, context) = (first["result"]["id"].clone(), first["result"]["contextId"].clone());
    let mut reply = message03("to staging", None);
    reply["taskId"] = clarify_id.clone();
    reply["contextId"] = context;
    let (_, second) = rpc03(&root, "message/send", json!({"message": reply})).await;
    assert_eq!((&second["result"]["id"], &second["result"]["status"]["state"]), (&clarify_id, &json!("completed")));

    // Errors in the 0.3 shape: `data: null`, 0.3 codes.
    let (_, missing) = rpc03(&root, "tasks/get", json!({"id": "no-such-task"})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    assert_eq!(missing["error"]["data"], Value::Null, "{missing}");
    let (_, bad) = rpc03(&root, "message/send", json!({"message": {"kind": "message", "parts": "nope"}})).await;
    assert_eq!((&bad["error"]["code"], &bad["error"]["data"]), (&json!(-32602), &Value::Null), "{bad}");
    assert_eq!(bad["id"], "q-1");
}

#[tokio::test]
async fn gateway_cards_list_the_0_3_json_rpc_interface() {
    let (_agents, gw) = rust_fleet().await;
    // A 0.3 client names no version; the 0.3 top-level fields are for it.
    let card_03 = |url: String| async move {
        let response = client().get(url).send().await.expect("GET");
        response.json::<Value>().await.expect("card")
    };
    let card = card_03(format!("{}/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(card["url"], format!("{}/", gw.url), "{card}");
    assert_eq!((&card["preferredTransport"], &card["protocolVersion"]), (&json!("JSONRPC"), &json!("0.3.0")));
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    assert!(interfaces.iter().any(|i| i["protocolVersion"] == "0.3" && i["protocolBinding"] == "JSONRPC"));
    assert_eq!(interfaces[0]["protocolVersion"], "1.0", "1.0 comes first");
    let agent = card_03(format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(agent["url"], format!("{}/agents/echo/", gw.url), "{agent}");
}

#[tokio::test]
async fn sdk_client_in_0_3_mode_reaches_1_0_backends() {
    let (_agents, gw) = rust_fleet().await;
    let (ok, lines, report) =
        python_client(&["--base", &gw.url, "--binding", "jsonrpc", "--protocol-version", "0.3", "--flow", "all"]).await;
    assert!(ok, "sdk client failed:\n{report}");
    assert!(!lines.is_empty() && lines.iter().all(|l| l["ok"] == true), "{report}");
    // The client kept only the card's 0.3 interfaces, so every flow went through its 0.3 transport.
    let card = lines.iter().find(|l| l["flow"] == "card").expect("card flow");
    let interfaces = card["detail"]["interfaces"].as_array().expect("interfaces");
    assert!(!interfaces.is_empty() && interfaces.iter().all(|i| i["version"] == "0.3"), "{report}");
}

/// An early-dialect send body: the caller's own task id, a `type`-tagged text part.
fn early_send(id: &str, text: &str, skill: Option<&str>) -> Value {
    let mut body = json!({"id": id, "message": {"role": "user", "parts": [{"type": "text", "text": text}]}});
    if let Some(skill) = skill {
        body["metadata"] = json!({"skillId": skill});
    }
    body
}

/// An early call as early clients make it: plain JSON, no `A2A-Version` header.
async fn early_post(url: &str, body: &Value) -> (u16, Value) {
    let response = client().post(url).json(body).send().await.expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn early_get(url: &str) -> (u16, Value) {
    let response = client().get(url).send().await.expect("GET");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test]
async fn early_caller_reaches_1_0_backends_under_its_own_task_ids() {
    let (_agents, gw) = rust_fleet().await;
    let base = &gw.url;

    // Blocking send: the whole task, under the caller's id, in the early shape.
    let id = new_id();
    let (status, task) = early_post(&format!("{base}/tasks/send"), &early_send(&id, "hello early", Some("echo"))).await;
    assert_eq!(status, 200, "{task}");
    assert_eq!((&task["id"], &task["status"]["state"]), (&json!(id), &json!("completed")), "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"type": "text", "text": "hello early"}), "{task}");
    assert!(task["sessionId"].is_string(), "{task}");

    // Get by the caller's id (the agent knows the task by another).
    let (status, got) = early_get(&format!("{base}/tasks/{id}")).await;
    assert_eq!((status, &got["id"], &got["status"]["state"]), (200, &json!(id), &json!("completed")), "{got}");

    // The id is taken now.
    let (status, reused) = early_post(&format!("{base}/tasks/send"), &early_send(&id, "again", Some("echo"))).await;
    assert_eq!(status, 400, "{reused}");
    assert!(reused["detail"].as_str().is_some_and(|d| d.contains("in use")), "{reused}");

    // Stream: every event a whole task under the caller's id, ending completed.
    let streamed = new_id();
    let response = client()
        .post(format!("{base}/tasks/sendSubscribe"))
        .json(&early_send(&streamed, "streamed", Some("echo")))
        .send()
        .await
        .expect("stream");
    let bytes = response.bytes().await.expect("stream body");
    let events: Vec<Value> = sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("JSON")).collect();
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e["id"] == json!(streamed)), "{events:?}");
    let last = events.last().expect("events");
    assert_eq!(last["status"]["state"], "completed", "{events:?}");
    assert_eq!(last["artifacts"][0]["parts"][0]["text"], "streamed", "{events:?}");

    // Multi-turn: input-required, then the caller continues its own id.
    let asked = new_id();
    let (_, first) = early_post(&format!("{base}/tasks/send"), &early_send(&asked, "deploy it", Some("clarify"))).await;
    assert_eq!((&first["id"], &first["status"]["state"]), (&json!(asked), &json!("input-required")), "{first}");
    let reply = json!({"message": {"role": "user", "parts": [{"type": "text", "text": "to staging"}]}});
    let (status, second) = early_post(&format!("{base}/tasks/{asked}/send"), &reply).await;
    assert_eq!(
        (status, &second["id"], &second["status"]["state"]),
        (200, &json!(asked), &json!("completed")),
        "{second}"
    );

    // Cancel: a stream to the slow agent names the task; the caller cancels it by its id.
    let slow = new_id();
    let response = client()
        .post(format!("{base}/tasks/sendSubscribe"))
        .json(&early_send(&slow, "take your time", Some("slow")))
        .send()
        .await
        .expect("slow stream");
    let mut stream = response.bytes_stream();
    let mut buffer = Vec::new();
    a2a_e2e::read_until(&mut stream, &mut buffer, b"\r\n\r\n", std::time::Duration::from_secs(10)).await;
    let (status, canceled) = early_post(&format!("{base}/tasks/{slow}/cancel"), &json!({})).await;
    assert_eq!((status, &canceled["id"], &canceled["status"]["state"]), (200, &json!(slow), &json!("canceled")));

    // Errors: `{"detail"}` with the status the early dialect uses.
    let (status, missing) = early_get(&format!("{base}/tasks/{}", new_id())).await;
    assert_eq!(status, 404, "{missing}");
    assert!(missing["detail"].is_string(), "{missing}");
    let (status, bad) = early_post(&format!("{base}/tasks/send"), &early_send("not-a-uuid", "x", Some("echo"))).await;
    assert_eq!(status, 400, "{bad}");
    assert!(bad["detail"].is_string(), "{bad}");

    // The early card: the gateway's HTTP+JSON base, where it takes early calls.
    let (status, card) = early_get(&format!("{base}/.well-known/agent.json")).await;
    assert_eq!((status, &card["url"]), (200, &json!(base)), "{card}");
    assert!(card["skills"].as_array().is_some_and(|s| s.iter().any(|s| s["id"] == "echo")), "{card}");
    let (_, agent) = early_get(&format!("{base}/agents/echo/.well-known/agent.json")).await;
    assert_eq!(agent["url"], format!("{base}/agents/echo"), "{agent}");
}

/// The start of a gateway config (as `a2a_e2e::config` writes it) before backends with extra keys.
const PREAMBLE: &str = "listeners:\n  public: 127.0.0.1:0\n  admin: 127.0.0.1:0\nhealth:\n  interval: 200ms\n  timeout: 1s\n  unhealthy_after: 2\n";

/// The caller dialects of the matrix.
#[derive(Debug, Clone, Copy)]
enum Caller {
    V1JsonRpc,
    V1Rest,
    V03,
    Early,
}

const CALLERS: [Caller; 4] = [Caller::V1JsonRpc, Caller::V1Rest, Caller::V03, Caller::Early];

/// A task as the matrix compares it, whatever the dialect: its id and its state in 1.0 names.
#[derive(Debug)]
struct Seen {
    id: String,
    context: Option<String>,
    state: String,
    text: Option<String>,
}

fn state_v1(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        return state.to_string();
    }
    format!("TASK_STATE_{}", state.replace('-', "_").to_uppercase())
}

fn seen(task: &Value) -> Seen {
    let text = task["artifacts"][0]["parts"][0]["text"].as_str().map(str::to_string);
    Seen {
        id: task["id"].as_str().unwrap_or_default().to_string(),
        context: task["contextId"].as_str().or(task["sessionId"].as_str()).map(str::to_string),
        state: state_v1(task["status"]["state"].as_str().unwrap_or_default()),
        text,
    }
}

/// One caller, with its dialect's way of doing each operation against `base` (gateway root or an
/// agent path).
struct Driver {
    caller: Caller,
    base: String,
}

impl Driver {
    fn message(&self, text: &str, skill: &str, task: Option<&Seen>) -> Value {
        let mut message = match self.caller {
            Caller::V03 => message03(text, Some(skill)),
            _ => a2a_e2e::text_message(text, Some(skill)),
        };
        if let Some(task) = task {
            message["taskId"] = json!(task.id);
            if let Some(context) = &task.context {
                message["contextId"] = json!(context);
            }
        }
        message
    }

    async fn send(&self, text: &str, skill: &str, task: Option<&Seen>) -> Seen {
        let base = &self.base;
        match self.caller {
            Caller::V1JsonRpc => {
                let answer = a2a_e2e::rpc(
                    &format!("{base}/"),
                    "SendMessage",
                    json!({"message": self.message(text, skill, task)}),
                )
                .await;
                seen(&answer["result"]["task"])
            }
            Caller::V1Rest => {
                let (_, answer) = a2a_e2e::rest_post(
                    &format!("{base}/message:send"),
                    json!({"message": self.message(text, skill, task)}),
                )
                .await;
                seen(&answer["task"])
            }
            Caller::V03 => {
                let (_, answer) =
                    rpc03(&format!("{base}/"), "message/send", json!({"message": self.message(text, skill, task)}))
                        .await;
                seen(&answer["result"])
            }
            Caller::Early => {
                let (url, body) = match task {
                    Some(task) => (
                        format!("{base}/tasks/{}/send", task.id),
                        json!({"message": {"role": "user", "parts": [{"type": "text", "text": text}]}}),
                    ),
                    None => (format!("{base}/tasks/send"), early_send(&new_id(), text, Some(skill))),
                };
                seen(&early_post(&url, &body).await.1)
            }
        }
    }

    /// Streams a new task; returns the task id named, the last state and the streamed text.
    async fn stream(&self, text: &str, skill: &str) -> (String, String, Option<String>) {
        let base = &self.base;
        let events: Vec<Value> = match self.caller {
            Caller::V1JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": self.message(text, skill, None)}});
                a2a_e2e::stream_events(&format!("{base}/"), body)
                    .await
                    .into_iter()
                    .map(|e| e["result"].clone())
                    .collect()
            }
            Caller::V1Rest => {
                a2a_e2e::stream_events(
                    &format!("{base}/message:stream"),
                    json!({"message": self.message(text, skill, None)}),
                )
                .await
            }
            Caller::V03 => stream03(&format!("{base}/"), json!({"message": self.message(text, skill, None)}))
                .await
                .into_iter()
                .map(|e| e["result"].clone())
                .collect(),
            Caller::Early => {
                let response = client()
                    .post(format!("{base}/tasks/sendSubscribe"))
                    .json(&early_send(&new_id(), text, Some(skill)))
                    .send()
                    .await
                    .expect("stream");
                let bytes = response.bytes().await.expect("body");
                sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("JSON")).collect()
            }
        };
        assert!(!events.is_empty(), "{:?}: no events", self.caller);
        let mut id = String::new();
        let mut state = String::new();
        let mut text_seen = None;
        for event in &events {
            // 1.0: {task|statusUpdate|artifactUpdate}; 0.3: kind-tagged; early: whole tasks.
            let inner = ["task", "statusUpdate", "artifactUpdate"].iter().find_map(|k| event.get(*k)).unwrap_or(event);
            if let Some(task_id) = inner["taskId"].as_str().or(inner["id"].as_str()) {
                id = task_id.to_string();
            }
            if let Some(s) = inner["status"]["state"].as_str() {
                state = state_v1(s);
            }
            if let Some(t) =
                inner["artifact"]["parts"][0]["text"].as_str().or(inner["artifacts"][0]["parts"][0]["text"].as_str())
            {
                text_seen = Some(t.to_string());
            }
        }
        (id, state, text_seen)
    }

    async fn get(&self, id: &str) -> Seen {
        let base = &self.base;
        match self.caller {
            Caller::V1JsonRpc => seen(&a2a_e2e::rpc(&format!("{base}/"), "GetTask", json!({"id": id})).await["result"]),
            Caller::V1Rest => seen(&a2a_e2e::get_json(&format!("{base}/tasks/{id}")).await.1),
            Caller::V03 => seen(&rpc03(&format!("{base}/"), "tasks/get", json!({"id": id})).await.1["result"]),
            Caller::Early => seen(&early_get(&format!("{base}/tasks/{id}")).await.1),
        }
    }

    async fn cancel(&self, id: &str) -> Seen {
        let base = &self.base;
        match self.caller {
            Caller::V1JsonRpc => {
                seen(&a2a_e2e::rpc(&format!("{base}/"), "CancelTask", json!({"id": id})).await["result"])
            }
            Caller::V1Rest => seen(&a2a_e2e::rest_post(&format!("{base}/tasks/{id}:cancel"), json!({})).await.1),
            Caller::V03 => seen(&rpc03(&format!("{base}/"), "tasks/cancel", json!({"id": id})).await.1["result"]),
            Caller::Early => seen(&early_post(&format!("{base}/tasks/{id}/cancel"), &json!({})).await.1),
        }
    }
}

/// The matrix row of one backend: every caller dialect × {blocking send, stream, get, cancel,
/// multi-turn continue}. `echo` answers with the text it got; `clarify` asks first (input-required),
/// and is what cancel and continue use.
async fn matrix_row(base: &str, echo: &str, clarify: &str) {
    for caller in CALLERS {
        let driver = Driver { caller, base: base.to_string() };
        let label = format!("{caller:?} → {base}");
        let sent = driver.send("matrix hello", echo, None).await;
        assert_eq!(
            (sent.state.as_str(), sent.text.as_deref()),
            ("TASK_STATE_COMPLETED", Some("matrix hello")),
            "{label}: send {sent:?}"
        );
        let got = driver.get(&sent.id).await;
        assert_eq!(
            (got.id.as_str(), got.state.as_str()),
            (sent.id.as_str(), "TASK_STATE_COMPLETED"),
            "{label}: get {got:?}"
        );
        let (id, state, text) = driver.stream("matrix stream", echo).await;
        assert!(!id.is_empty(), "{label}: stream named no task");
        assert_eq!(
            (state.as_str(), text.as_deref()),
            ("TASK_STATE_COMPLETED", Some("matrix stream")),
            "{label}: stream"
        );
        let asked = driver.send("deploy it", clarify, None).await;
        assert_eq!(asked.state, "TASK_STATE_INPUT_REQUIRED", "{label}: clarify {asked:?}");
        let canceled = driver.cancel(&asked.id).await;
        assert_eq!(
            (canceled.id.as_str(), canceled.state.as_str()),
            (asked.id.as_str(), "TASK_STATE_CANCELED"),
            "{label}: cancel {canceled:?}"
        );
        let asked = driver.send("deploy it", clarify, None).await;
        let answered = driver.send("staging", clarify, Some(&asked)).await;
        assert_eq!(
            (answered.id.as_str(), answered.state.as_str()),
            (asked.id.as_str(), "TASK_STATE_COMPLETED"),
            "{label}: continue {answered:?}"
        );
    }
}

#[tokio::test]
async fn matrix_every_caller_dialect_to_1_0_backends() {
    let (_agents, gw) = rust_fleet().await;
    matrix_row(&gw.url, "echo", "clarify").await;
}

#[tokio::test]
async fn matrix_every_caller_dialect_to_an_early_backend() {
    let early = example_agent(BIN, "early", &[]).await;
    let yaml = format!(
        "{PREAMBLE}backends:\n  - name: early\n    url: {}\n    card_path: /.well-known/agent.json\n",
        early.url
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["early-echo", "early-clarify"]).await;
    matrix_row(&gw.url, "early-echo", "early-clarify").await;
    matrix_row(&format!("{}/agents/early", gw.url), "early-echo", "early-clarify").await;
}

#[tokio::test]
async fn matrix_every_caller_dialect_to_an_sdk_agent_serving_0_3() {
    let echo = python_agent("echo", &["--v03"]).await;
    let clarify = python_agent("clarify", &["--v03"]).await;
    let yaml = format!(
        "{PREAMBLE}backends:\n  - name: pyecho\n    url: {}\n    dialect: \"0.3\"\n  - name: pyclarify\n    url: {}\n    dialect: \"0.3\"\n",
        echo.url, clarify.url
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["py-echo", "py-clarify"]).await;
    matrix_row(&gw.url, "py-echo", "py-clarify").await;
    // The official 1.0 client, both bindings, through the gateway to the agent's 0.3 interface.
    for binding in ["jsonrpc", "rest"] {
        let base = format!("{}/agents/pyecho", gw.url);
        let args = ["--base", &base, "--binding", binding, "--echo-skill", "py-echo"];
        let flows = ["--flow", "send", "--flow", "stream", "--flow", "get"];
        let (ok, lines, report) = python_client(&[&args[..], &flows[..]].concat()).await;
        assert!(
            ok && !lines.is_empty() && lines.iter().all(|l| l["ok"] == true),
            "sdk 1.0 client ({binding}):\n{report}"
        );
    }
    // And its 0.3 client to the same agent: 0.3 on both sides, passed through unchanged.
    let base = format!("{}/agents/pyecho", gw.url);
    let args = ["--base", &base, "--binding", "jsonrpc", "--protocol-version", "0.3", "--echo-skill", "py-echo"];
    let flows = ["--flow", "send", "--flow", "stream", "--flow", "get"];
    let (ok, lines, report) = python_client(&[&args[..], &flows[..]].concat()).await;
    assert!(ok && !lines.is_empty() && lines.iter().all(|l| l["ok"] == true), "sdk 0.3 client:\n{report}");
}

/// A backend for the pass-through diagonal: records the bytes of every call and answers with canned
/// bytes (odd spacing, unknown fields), so the test can hold the gateway to "bytes unchanged" both
/// ways. `early`: the early dialect; otherwise A2A 0.3 JSON-RPC.
struct Lab {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<bytes::Bytes>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const LAB03_UNARY: &str = r#"{"jsonrpc":"2.0","id":"q-1","result":{"kind":"task","id":"lab-1","contextId":"c-1",  "status":{"state":"completed"},"x-lab-field":{"kept":[1,2]}}}"#;
const LAB03_STREAM: &str = "data: {\"jsonrpc\":\"2.0\",\"id\":\"q-2\",\"result\":{\"kind\":\"task\",\"id\":\"lab-2\",\"contextId\":\"c-2\",\"status\":{\"state\":\"working\"}}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"q-2\",\"result\":{\"kind\":\"status-update\",\"taskId\":\"lab-2\",\"contextId\":\"c-2\",\"final\":true,\"status\":{\"state\":\"completed\"},\"x-lab\":1}}\n\n";

fn lab_early_task(id: &str, state: &str) -> String {
    format!(r#"{{"id":"{id}", "sessionId":"s-1","status":{{"state":"{state}"}},"artifacts":[],"x-lab-field":true}}"#)
}

async fn start_lab(early: bool) -> Lab {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: std::sync::Arc<std::sync::Mutex<Vec<bytes::Bytes>>> = Default::default();
    let record = {
        let seen = seen.clone();
        move |body: bytes::Bytes| seen.lock().expect("lock").push(body)
    };
    let sse = |body: String| {
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from(body))
            .expect("response")
    };
    let json = |body: String| {
        axum::response::Response::builder()
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .expect("response")
    };
    let app = if early {
        let card = json!({"name": "lab early", "url": format!("{base}/"), "version": "0.1.0",
            "capabilities": {"streaming": true}, "skills": [{"id": "lab-early", "name": "lab"}]});
        let (r1, r2) = (record.clone(), record.clone());
        axum::Router::new()
            .route("/.well-known/agent.json", get(move || async move { axum::Json(card) }))
            .route(
                "/tasks/send",
                post(move |body: bytes::Bytes| async move {
                    let id =
                        serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["id"].as_str().map(str::to_string));
                    r1(body);
                    json(lab_early_task(&id.unwrap_or_default(), "completed"))
                }),
            )
            .route(
                "/tasks/sendSubscribe",
                post(move |body: bytes::Bytes| async move {
                    let id =
                        serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["id"].as_str().map(str::to_string));
                    r2(body);
                    let id = id.unwrap_or_default();
                    sse(format!(
                        "data: {}\n\ndata: {}\n\n",
                        lab_early_task(&id, "working"),
                        lab_early_task(&id, "completed")
                    ))
                }),
            )
    } else {
        let card = json!({"name": "lab 0.3", "url": format!("{base}/rpc"), "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC", "version": "1", "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "lab-03", "name": "lab", "description": "d", "tags": []}]});
        axum::Router::new().route("/.well-known/agent-card.json", get(move || async move { axum::Json(card) })).route(
            "/rpc",
            post(move |body: bytes::Bytes| async move {
                let streaming = body.windows(16).any(|w| w == b"\"message/stream\"");
                record(body);
                if streaming { sse(LAB03_STREAM.to_string()) } else { json(LAB03_UNARY.to_string()) }
            }),
        )
    };
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Lab { url: base, seen, task }
}

#[tokio::test]
async fn pass_through_diagonal_sends_the_checked_request_and_relays_0_3_answers_unchanged() {
    let lab03 = start_lab(false).await;
    let lab_early = start_lab(true).await;
    let yaml = format!(
        "{PREAMBLE}backends:\n  - name: lab03\n    url: {}\n  - name: labearly\n    url: {}\n    card_path: /.well-known/agent.json\n",
        lab03.url, lab_early.url
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["lab-03", "lab-early"]).await;

    // 0.3 caller → 0.3 agent: the request as the gateway checked it (written again: no unknown
    // fields, no caller spacing), the answer as the agent wrote it.
    let send = r#"{"jsonrpc":"2.0", "id":"q-1","method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}],"metadata":{"skillId":"lab-03"}},"x-caller-field":[true]}}"#;
    let answer = client()
        .post(format!("{}/", gw.url))
        .body(send)
        .header("content-type", "application/json")
        .send()
        .await
        .expect("send");
    assert_eq!(answer.bytes().await.expect("body"), LAB03_UNARY.as_bytes());
    let stream = send.replace("\"q-1\"", "\"q-2\"").replace("message/send", "message/stream");
    let answer = client()
        .post(format!("{}/", gw.url))
        .body(stream.clone())
        .header("content-type", "application/json")
        .send()
        .await
        .expect("stream");
    assert_eq!(answer.bytes().await.expect("body"), LAB03_STREAM.as_bytes());
    let canonical = |id: &str, method: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"{method}","params":{{"message":{{"kind":"message","messageId":"m-1","role":"user","parts":[{{"kind":"text","text":"hi"}}],"metadata":{{"skillId":"lab-03"}}}}}}}}"#
        )
    };
    let seen: Vec<String> =
        lab03.seen.lock().expect("lock").iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    assert_eq!(seen, [canonical("q-1", "message/send"), canonical("q-2", "message/stream")]);
    // The tap learned the streamed task: a 1.0 caller can get it (bridged 1.0 → 0.3).
    let got = a2a_e2e::rpc(&format!("{}/", gw.url), "GetTask", json!({"id": "lab-2"})).await;
    assert!(got.get("error").is_none() || got["error"]["code"] != -32001, "{got}");

    // Early caller → early agent: bridged like any early caller (the agent gets a task id of the
    // gateway's making; the caller keeps its own).
    let id = new_id();
    let send = format!(
        r#"{{"id":"{id}",  "message":{{"role":"user","parts":[{{"type":"text","text":"hi"}}]}},"metadata":{{"skillId":"lab-early"}},"x-caller":1}}"#
    );
    let answer = client()
        .post(format!("{}/tasks/send", gw.url))
        .body(send.clone())
        .header("content-type", "application/json")
        .send()
        .await
        .expect("send");
    let task: Value = answer.json().await.expect("early task");
    assert_eq!((&task["id"], &task["status"]["state"]), (&json!(id), &json!("completed")), "{task}");
    let id2 = new_id();
    let stream = send.replace(&id, &id2);
    let answer = client()
        .post(format!("{}/tasks/sendSubscribe", gw.url))
        .body(stream.clone())
        .header("content-type", "application/json")
        .send()
        .await
        .expect("stream");
    let events = a2a_e2e::sse_data(&answer.bytes().await.expect("body"));
    let last: Value = serde_json::from_str(events.last().expect("events")).expect("json");
    assert_eq!((&last["id"], &last["status"]["state"]), (&json!(id2), &json!("completed")), "{events:?}");
    let seen: Vec<Value> =
        lab_early.seen.lock().expect("lock").iter().map(|b| serde_json::from_slice(b).expect("json")).collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for request in &seen {
        assert!(request["id"] != json!(id) && request["id"] != json!(id2), "the agent gets its own task id: {request}");
        assert_eq!(request["metadata"]["skillId"], "lab-early");
        assert!(request.get("x-caller").is_none(), "only checked fields go on: {request}");
    }
}

/// A 1.0 agent offering one binding only: a transparent proxy to a Rust example agent whose card
/// keeps just the interfaces of `binding` ("JSONRPC" or "HTTP+JSON").
async fn one_binding(agent: &Proc, binding: &'static str) -> Lab {
    use axum::extract::Request;
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let target = agent.url.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let target = target.clone();
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 24).await.unwrap_or_default();
            let path = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
            let mut outgoing = client().request(parts.method.clone(), format!("{target}{path}")).body(body);
            for (name, value) in &parts.headers {
                if name != "host" && name != "content-length" {
                    outgoing = outgoing.header(name, value);
                }
            }
            let answer = outgoing.send().await.expect("agent answers");
            let status = answer.status();
            let content_type = answer.headers().get("content-type").cloned();
            let is_card = path.starts_with("/.well-known/agent-card.json");
            let mut builder = axum::response::Response::builder().status(status);
            if let Some(content_type) = content_type {
                builder = builder.header("content-type", content_type);
            }
            if is_card {
                let mut card: Value = answer.json().await.expect("card");
                if let Some(list) = card["supportedInterfaces"].as_array_mut() {
                    list.retain(|i| i["protocolBinding"] == binding);
                }
                return builder.body(axum::body::Body::from(card.to_string())).expect("response");
            }
            builder.body(axum::body::Body::from_stream(answer.bytes_stream())).expect("response")
        }
    });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Lab { url: base, seen: Default::default(), task }
}

#[tokio::test]
async fn matrix_every_caller_dialect_to_1_0_agents_with_one_binding() {
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let echo = example_agent(BIN, "echo", &[]).await;
        let clarify = example_agent(BIN, "clarify", &[]).await;
        let (echo_lab, clarify_lab) = (one_binding(&echo, binding).await, one_binding(&clarify, binding).await);
        let gw = gateway(BIN, &config(&[("echo", &echo_lab.url), ("clarify", &clarify_lab.url)], "")).await;
        wait_for_skills(&gw.url, &["echo", "clarify"]).await;
        let (_, card) = a2a_e2e::get_json(&format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
        let offered: Vec<&Value> = card["supportedInterfaces"]
            .as_array()
            .expect("interfaces")
            .iter()
            .filter(|i| i["protocolVersion"] == "1.0")
            .collect();
        // The gateway bridges the bindings the agent lacks, so its card offers all of them.
        let bindings: Vec<&Value> = offered.iter().map(|i| &i["protocolBinding"]).collect();
        assert_eq!(bindings, [&json!("JSONRPC"), &json!("HTTP+JSON"), &json!("GRPC")], "{card}");
        matrix_row(&gw.url, "echo", "clarify").await;
    }
}

/// An HTTP+JSON answer the gateway bridged from an agent's JSON-RPC answer keeps the agent's media
/// type, `application/json` (it was `application/a2a+json`, which the conformance kit's
/// HTTP_JSON-SVC-001 refuses); the agent's own `application/a2a+json` stays so.
#[tokio::test]
async fn a_bridged_http_json_answer_keeps_the_agents_json_media_type() {
    let agent = python_agent("echo", &["--v03"]).await;
    let entry = format!("  - name: py\n    url: {}\n", agent.url);
    let yaml = config(&[("py", &agent.url)], "").replace(&entry, &format!("{entry}    dialect: \"0.3\"\n"));
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["py-echo"]).await;
    let body = json!({"message": {"messageId": "m-ct", "role": "ROLE_USER", "parts": [{"text": "hi"}],
        "metadata": {"skillId": "py-echo"}}});
    let response = client()
        .post(format!("{}/message:send", gw.url))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(response.status(), 200);
    assert!(content_type.starts_with("application/json"), "{content_type}");
}
