//! Interop with the official Python SDK, a2a-sdk 1.3.0: its client through the gateway, and its agents
//! behind the gateway.

use std::time::Duration;

use a2a_e2e::{
    Proc, config, example_agent, gateway, python_agent, python_client, rest_post, rpc, stream_events, text_message,
    wait_for_skills,
};
use serde_json::json;

use crate::BIN;

async fn rust_fleet() -> (Vec<Proc>, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("clarify", &clarify.url), ("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "clarify", "slow"]).await;
    (vec![echo, clarify, slow], gw)
}

async fn sdk(args: &[&str]) {
    let (ok, lines, report) = python_client(args).await;
    assert!(ok, "sdk client {args:?} failed:\n{report}");
    assert!(!lines.is_empty() && lines.iter().all(|l| l["ok"] == true), "{report}");
}

#[tokio::test]
async fn sdk_client_uses_one_agent_behind_the_gateway_in_both_bindings() {
    let (_agents, gw) = rust_fleet().await;
    for binding in ["jsonrpc", "rest"] {
        let echo = format!("{}/agents/echo", gw.url);
        sdk(&[
            "--base",
            &echo,
            "--binding",
            binding,
            "--flow",
            "card",
            "--flow",
            "send",
            "--flow",
            "stream",
            "--flow",
            "get",
        ])
        .await;
        let clarify = format!("{}/agents/clarify", gw.url);
        sdk(&["--base", &clarify, "--binding", binding, "--flow", "multiturn"]).await;
        let slow = format!("{}/agents/slow", gw.url);
        sdk(&["--base", &slow, "--binding", binding, "--flow", "cancel"]).await;
    }
}

#[tokio::test]
async fn sdk_client_uses_the_unified_endpoint_by_skill_in_both_bindings() {
    let (_agents, gw) = rust_fleet().await;
    for binding in ["jsonrpc", "rest"] {
        sdk(&["--base", &gw.url, "--binding", binding, "--flow", "all"]).await;
    }
}

#[tokio::test]
async fn sdk_agents_serve_behind_the_gateway() {
    let echo = python_agent("echo", &[]).await;
    let clarify = python_agent("clarify", &[]).await;
    let slow = python_agent("slow", &["--duration", "30"]).await;
    let gw =
        gateway(BIN, &config(&[("pyecho", &echo.url), ("pyclarify", &clarify.url), ("pyslow", &slow.url)], "")).await;
    let card = wait_for_skills(&gw.url, &["py-echo", "py-clarify", "py-slow"]).await;
    assert!(!card.to_string().contains(&format!(":{}", echo.port())), "{card}");
    let root = format!("{}/", gw.url);

    // Blocking send and get over JSON-RPC.
    let sent = rpc(&root, "SendMessage", json!({"message": text_message("hello sdk", Some("py-echo"))})).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello sdk");
    let got = rpc(&root, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["result"]["id"], task["id"], "{got}");

    // Streaming over HTTP+JSON.
    let events = stream_events(
        &format!("{}/message:stream", gw.url),
        json!({"message": text_message("streamed", Some("py-echo"))}),
    )
    .await;
    assert!(events[0]["task"]["id"].is_string(), "{events:?}");
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{events:?}");

    // Multi-turn: the continuation names only the task.
    let first = rpc(&root, "SendMessage", json!({"message": text_message("plan a trip", Some("py-clarify"))})).await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first}");
    let mut reply = text_message("to Lisbon", None);
    reply["taskId"] = task["id"].clone();
    reply["contextId"] = task["contextId"].clone();
    let (status, second) = rest_post(&format!("{}/message:send", gw.url), json!({"message": reply})).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{second}");

    // Cancel a running task through the unified endpoint.
    let started = rpc(
        &root,
        "SendMessage",
        json!({"message": text_message("slowly", Some("py-slow")), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = started["result"]["task"]["id"].clone();
    assert!(id.is_string(), "{started}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, canceled) = rest_post(&format!("{}/tasks/{}:cancel", gw.url, id.as_str().unwrap()), json!({})).await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
}

/// A client-chosen contextId (a CLI's `--context-id`) is kept: the SDK client's two messages in it
/// stay in it and ListTasks finds both (A2A §3.4.1: an agent that cannot accept a client's contextId
/// rejects the request; it never makes up another). Before, with authentication on, every message
/// got a new context and the listing came back empty. The caller adopts the unseen context on first
/// use; another caller naming the same string is refused and never joins it, in every binding.
#[tokio::test]
async fn sdk_client_keeps_the_context_it_chose_and_no_other_caller_joins_it() {
    use crate::grpc::{ISSUER, SECRET, token};
    let echo = example_agent(BIN, "echo", &[]).await;
    let policy = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\npermissions:\n  default: allow\nrouting:\n  isolation: caller\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], &policy)).await;
    for _ in 0..100 {
        let (_, card) = a2a_e2e::get_json(&format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
        if card["skills"].is_array() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (alice, bob) = (token("alice", "all"), token("bob", "all"));
    for binding in ["jsonrpc", "rest", "grpc"] {
        let context = format!("my-conversation-{binding}");
        let as_alice = [
            "--base",
            &gw.url,
            "--binding",
            binding,
            "--flow",
            "context",
            "--context-id",
            &context,
            "--bearer",
            &alice,
        ];
        sdk(&as_alice).await;
        // Bob naming alice's context: refused, with an error that names nothing of hers.
        let as_bob =
            ["--base", &gw.url, "--binding", binding, "--flow", "context", "--context-id", &context, "--bearer", &bob];
        let (ok, lines, report) = python_client(&as_bob).await;
        assert!(!ok, "bob joined alice's context:\n{report}");
        let error = lines[0]["detail"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("contextId is not available"), "{report}");
        assert!(!error.contains("alice"), "{report}");
        // Alice goes on in her context; bob's own context is his.
        sdk(&as_alice).await;
        let own = format!("bob-{context}");
        sdk(&["--base", &gw.url, "--binding", binding, "--flow", "context", "--context-id", &own, "--bearer", &bob])
            .await;
    }
}
