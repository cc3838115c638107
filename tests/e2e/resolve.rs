//! Messages that name no skill, from unmodified clients on the unified endpoint: the resolver
//! (`routing.resolve`) picks the one skill that fits, or a clear lexical winner, or answers with the
//! candidates to choose from; the decision is recorded and later turns in a context keep to it.

use a2a_e2e::{config, example_agent, gateway, python_client, wait_for_skills};
use serde_json::{Value, json};

use super::BIN;

async fn send(url: &str, message: Value) -> Value {
    a2a_e2e::rpc(&format!("{url}/"), "SendMessage", json!({"message": message})).await
}

fn message(parts: Value) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts})
}

async fn metrics(admin: &str) -> String {
    a2a_e2e::client().get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn an_unmodified_sdk_client_reaches_the_only_skill_of_the_fleet() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    for binding in ["jsonrpc", "rest"] {
        let args =
            ["--base", &gw.url, "--binding", binding, "--flow", "send", "--flow", "stream", "--no-skill-metadata"];
        let (ok, _, report) = python_client(&args).await;
        assert!(ok, "the SDK client sent without naming a skill:\n{report}");
    }
    let admin = gw.admin.as_deref().expect("admin listener");
    assert!(metrics(admin).await.contains(r#"a2a_skill_resolutions_total{rule="single"}"#));

    // With `explicit`, the same message is refused with the list of skills.
    let strict = gateway(BIN, &config(&[("echo", &echo.url)], "routing:\n  resolve: explicit\n")).await;
    wait_for_skills(&strict.url, &["echo"]).await;
    let answer = send(&strict.url, message(json!([{"text": "hello"}]))).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[tokio::test]
async fn the_resolver_picks_by_media_type_and_words_or_lists_the_candidates() {
    let mut agents = Vec::new();
    let mut backends = Vec::new();
    for kind in ["echo", "review", "clarify", "slow"] {
        agents.push(example_agent(BIN, kind, &[]).await);
    }
    for (kind, agent) in ["echo", "review", "clarify", "slow"].iter().zip(&agents) {
        backends.push((*kind, agent.url.as_str()));
    }
    let audit = std::env::temp_dir().join(format!("a2a-resolve-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let _cleanup = a2a_e2e::TempFile(audit.clone());
    let extra = format!("audit:\n  file: {{path: '{}'}}\n", audit.display());
    let gw = gateway(BIN, &config(&backends, &extra)).await;
    wait_for_skills(&gw.url, &["echo", "review-pr", "clarify", "slow"]).await;

    // Only review-pr takes JSON: a diff in a data part can only be for it.
    let diff = json!([{"data": {"diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}}]);
    let answer = send(&gw.url, message(diff)).await;
    assert!(answer["result"]["task"]["id"].is_string(), "a diff goes to review-pr: {answer}");
    // Words: a clear winner.
    let answer = send(&gw.url, message(json!([{"text": "please review pull request PR #123"}]))).await;
    assert!(answer["result"].is_object(), "{answer}");
    // Nothing stands out: a task the gateway rejects, whose status message lists the candidates with
    // their descriptions (text, and a data part).
    let answer = send(&gw.url, message(json!([{"text": "lorem ipsum"}]))).await;
    let status = &answer["result"]["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_REJECTED", "{answer}");
    let listing = status["message"]["parts"][0]["text"].as_str().unwrap_or("");
    for skill in ["echo: Echo the input text back.", "clarify", "slow", "review-pr"] {
        assert!(listing.contains(skill), "{skill} missing from {listing}");
    }
    let listed = status["message"]["parts"][1]["data"]["availableSkills"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), 4, "{answer}");
    // Nothing ran: the rejected task is not one to look up.
    let id = answer["result"]["task"]["id"].clone();
    let got = a2a_e2e::rpc(&format!("{}/", gw.url), "GetTask", json!({ "id": id })).await;
    assert_eq!(got["error"]["code"], -32001, "{got}");

    // A resolved skill holds for the context: a later message there without skill or task goes to
    // the same agent and skill.
    let answer = send(&gw.url, message(json!([{"text": "deploy my service"}]))).await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "clarify asks first: {answer}");
    let context = task["contextId"].as_str().expect("context");
    let mut follow = message(json!([{"text": "lorem ipsum"}]));
    follow["contextId"] = json!(context);
    let answer = send(&gw.url, follow).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "clarify again: {answer}");

    let admin = gw.admin.as_deref().expect("admin listener");
    let text = metrics(admin).await;
    assert!(text.contains(r#"a2a_skill_resolutions_total{rule="single"}"#), "{text}");
    assert!(text.contains(r#"a2a_skill_resolutions_total{rule="lexical"}"#), "{text}");
    drop(gw); // flushes the audit log
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let records = std::fs::read_to_string(&audit).unwrap_or_default();
    let resolved: Vec<Value> = records
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["routed_by"].is_string())
        .collect();
    assert!(
        resolved.iter().any(|r| r["skill"] == "review-pr" && r["routed_by"].as_str().unwrap().contains("only skill"))
    );
    assert!(resolved.iter().any(|r| r["routed_by"].as_str().unwrap().contains("lexical score")), "{records}");
}

/// The issue's acceptance scenario through the unmodified a2a-sdk client on the gateway's root
/// card, example fleet, no skill named: a diff in a data part reaches review-pr (only it takes
/// JSON; its findings come back), and a message that fits several skills gets a rejected task
/// listing them (it was an invalid-params error, which clients and linters read as a malformed
/// request) — in every binding.
#[tokio::test]
async fn an_unmodified_sdk_client_sends_a_diff_to_review_pr_and_sees_the_listing_when_ambiguous() {
    let kinds = ["echo", "review", "clarify", "slow"];
    let mut agents = Vec::new();
    for kind in kinds {
        agents.push(example_agent(BIN, kind, &[]).await);
    }
    let backends: Vec<(&str, &str)> = kinds.iter().zip(&agents).map(|(k, a)| (*k, a.url.as_str())).collect();
    let gw = gateway(BIN, &config(&backends, "")).await;
    wait_for_skills(&gw.url, &["echo", "review-pr", "clarify", "slow"]).await;
    for binding in ["jsonrpc", "rest", "grpc"] {
        let args =
            ["--base", &gw.url, "--binding", binding, "--flow", "data", "--flow", "ambiguous", "--no-skill-metadata"];
        let (ok, _, report) = python_client(&args).await;
        assert!(ok, "{binding}: the data part reached review-pr and the ambiguous text got the listing:\n{report}");
    }
}
