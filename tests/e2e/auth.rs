//! Authentication, permissions and credentials at the gateway: what a caller presents stays at the
//! gateway; backends get their own configured credentials.

use a2a_e2e::{example_agent, gateway, get_json, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

/// The `authorization` header of every SendMessage an example agent received.
async fn authorizations(agent_url: &str) -> Vec<Value> {
    let (_, seen) = get_json(&format!("{agent_url}/debug/requests")).await;
    seen.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["operation"] == "SendMessage")
        .map(|r| r["headers"]["authorization"].clone())
        .collect()
}

#[tokio::test]
async fn the_callers_token_stays_at_the_gateway_and_backends_get_their_own() {
    let own = example_agent(BIN, "echo", &[]).await;
    let forwarded = example_agent(BIN, "clarify", &[]).await;
    let yaml = format!(
        "listeners:\n  public: 127.0.0.1:0\n  admin: null\nhealth:\n  interval: 200ms\nbackends:\n  - name: echo\n    url: {}\n    auth: {{bearer: backend-secret}}\n  - name: clarify\n    url: {}\n    forward_caller_token: true\n",
        own.url, forwarded.url
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["echo", "clarify"]).await;
    for (agent, skill) in [("echo", "echo"), ("clarify", "clarify")] {
        let response = a2a_e2e::client()
            .post(format!("{}/agents/{agent}/", gw.url))
            .header("A2A-Version", "1.0")
            .header("Authorization", "Bearer caller-token")
            .header("Cookie", "session=caller")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": text_message("x", Some(skill))}}))
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        assert!(answer["result"]["task"]["id"].is_string(), "{answer}");
    }
    assert_eq!(authorizations(&own.url).await, [json!("Bearer backend-secret")]);
    assert_eq!(authorizations(&forwarded.url).await, [json!("Bearer caller-token")], "forwarded only where configured");
    let (_, seen) = get_json(&format!("{}/debug/requests", own.url)).await;
    assert!(!seen.to_string().contains("session=caller"), "cookies never reach a backend");
}
