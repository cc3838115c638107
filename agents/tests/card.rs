//! The agent card, its ETag, and the process endpoints (`/healthz`, `/debug/requests`).

mod common;

use a2a_example_agents::{AgentKind, AgentOptions};
use common::{fast_options, start, start_with};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn card(agent: &common::TestAgent) -> (reqwest::header::HeaderMap, Value) {
    let response = agent.http.get(agent.url("/.well-known/agent-card.json")).send().await.expect("card");
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    (headers, response.json().await.expect("card json"))
}

#[tokio::test]
async fn every_agent_serves_a_1_0_card() {
    let skills = [
        (AgentKind::Echo, "echo", "Echo Agent"),
        (AgentKind::Review, "review-pr", "Review Agent"),
        (AgentKind::Clarify, "clarify", "Clarify Agent"),
        (AgentKind::Slow, "slow", "Slow Agent"),
    ];
    for (kind, skill, name) in skills {
        let agent = start(kind).await;
        let (headers, card) = card(&agent).await;
        assert_eq!(headers["content-type"], "application/json");
        assert!(headers["etag"].to_str().unwrap_or_default().starts_with("W/\""));
        assert_eq!(card["name"], name);
        assert!(card["description"].is_string());
        assert!(card["version"].is_string());
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url": agent.url("/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": agent.url("/a2a/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            ])
        );
        assert_eq!(card["capabilities"], json!({"streaming": true, "pushNotifications": false}));
        assert!(card["provider"]["organization"].is_string());
        assert!(card["defaultInputModes"].is_array());
        assert!(card["defaultOutputModes"].is_array());
        // No 0.3 legacy fields on a pure 1.0 card.
        for legacy in ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"] {
            assert!(card.get(legacy).is_none(), "{legacy}");
        }
        let skills = card["skills"].as_array().expect("skills");
        assert_eq!(skills.len(), 1);
        let found = &skills[0];
        assert_eq!(found["id"], skill);
        for field in ["name", "description"] {
            assert!(found[field].is_string(), "{field}");
        }
        for field in ["tags", "examples", "inputModes", "outputModes"] {
            assert!(found[field].is_array(), "{field}");
        }
        assert_eq!(found.get("inputSchema").is_some(), kind == AgentKind::Review);
        agent.stop().await;
    }
}

#[tokio::test]
async fn review_skill_publishes_its_input_schema() {
    let agent = start(AgentKind::Review).await;
    let (_, card) = card(&agent).await;
    let schema = &card["skills"][0]["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["diff"]));
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["properties"]["diff"], json!({"type": "string", "minLength": 1, "maxLength": 1_000_000}));
    assert_eq!(schema["properties"]["title"], json!({"type": "string", "maxLength": 300}));
    assert_eq!(
        schema["properties"]["focus"],
        json!({"type": "array", "uniqueItems": true,
            "items": {"type": "string", "enum": ["security", "correctness", "performance", "style"]}})
    );
    assert_eq!(schema["properties"]["language"], json!({"type": "string"}));
    agent.stop().await;
}

#[tokio::test]
async fn if_none_match_gets_304() {
    let agent = start(AgentKind::Echo).await;
    let (headers, _) = card(&agent).await;
    let etag = headers["etag"].clone();
    let again = agent
        .http
        .get(agent.url("/.well-known/agent-card.json"))
        .header("If-None-Match", etag.clone())
        .send()
        .await
        .expect("conditional card");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"], etag);
    assert!(again.bytes().await.expect("body").is_empty());
    let stale = agent
        .http
        .get(agent.url("/.well-known/agent-card.json"))
        .header("If-None-Match", "W/\"stale\"")
        .send()
        .await
        .expect("conditional card");
    assert_eq!(stale.status(), StatusCode::OK);
    agent.stop().await;
}

#[tokio::test]
async fn card_name_can_be_overridden() {
    let options = AgentOptions { name: Some("Backend A".into()), ..fast_options() };
    let agent = start_with(AgentKind::Echo, options).await;
    let (_, card) = card(&agent).await;
    assert_eq!(card["name"], "Backend A");
    agent.stop().await;
}

#[tokio::test]
async fn old_card_path_is_not_served() {
    let agent = start(AgentKind::Echo).await;
    let response = agent.http.get(agent.url("/.well-known/agent.json")).send().await.expect("old card path");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    agent.stop().await;
}

#[tokio::test]
async fn healthz_answers_200() {
    let agent = start(AgentKind::Slow).await;
    let response = agent.http.get(agent.url("/healthz")).send().await.expect("healthz");
    assert_eq!(response.status(), StatusCode::OK);
    agent.stop().await;
}

#[test]
fn router_builds_for_every_kind() {
    for kind in AgentKind::ALL {
        let _router = a2a_example_agents::router(kind, "http://127.0.0.1:4321", AgentOptions::default());
    }
}
