//! Backend health: an unhealthy backend leaves the card and routing, and comes back when it recovers;
//! a backend that dies between checks is answered with a clean error, not a hang.

use std::time::{Duration, Instant};

use a2a_e2e::{config, example_agent, gateway, get_json, rest_post, rpc, text_message, wait_for_skills};
use serde_json::json;

use crate::BIN;

#[tokio::test]
async fn unhealthy_backend_leaves_card_and_routing_until_it_recovers() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let mut review = example_agent(BIN, "review", &[]).await;
    let port = review.port();
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("review", &review.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;

    review.kill().await;
    wait_for_skills(&gw.url, &["echo"]).await;

    let answer =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("review-pr"))})).await;
    // The skill is known but its agent is down: an outage, not the caller's mistake.
    assert_eq!(answer["error"]["code"], -32032, "{answer}");
    assert_eq!(answer["error"]["data"][0]["reason"], "AGENT_UNAVAILABLE", "{answer}");
    let (status, body) =
        rest_post(&format!("{}/agents/review/message:send", gw.url), json!({"message": text_message("x", None)})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["status"], "UNAVAILABLE");
    let (status, _) = get_json(&format!("{}/agents/review/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(status, 503);

    let listen = format!("127.0.0.1:{port}");
    let _review = example_agent(BIN, "review", &["--listen", &listen]).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let mut message = text_message("x", Some("review-pr"));
    message["parts"] = json!([{"data": {"diff": "+a", "title": "PR 2"}}]);
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": message})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
}

#[tokio::test]
async fn a_backend_that_died_between_checks_gets_a_clean_error() {
    let mut echo = example_agent(BIN, "echo", &[]).await;
    // Checks so rare that the gateway still believes the backend healthy when it is gone.
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "health:\n  interval: 1h\n")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    echo.kill().await;

    let started = Instant::now();
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["data"][0]["reason"], "BACKEND_UNAVAILABLE");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(!message.contains("127.0.0.1") && !message.contains("refused"), "no internals: {message}");
    assert!(started.elapsed() < Duration::from_secs(30), "answered, not hung");

    let (status, body) =
        rest_post(&format!("{}/message:send", gw.url), json!({"message": text_message("x", Some("echo"))})).await;
    assert_eq!((status, body["error"]["status"].as_str()), (503, Some("UNAVAILABLE")), "{body}");
}
