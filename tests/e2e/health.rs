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

/// A grey failure: the card answers, sends hang (until `healthy` is set).
pub(crate) struct Grey {
    pub(crate) url: String,
    pub(crate) healthy: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) answered: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Grey {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn grey_agent() -> Grey {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let healthy = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let card = json!({
        "name": "grey", "description": "answers its card, not its calls", "version": "1",
        "supportedInterfaces": [{"url": format!("{url}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "d", "tags": []}]
    });
    let (h, a) = (healthy.clone(), answered.clone());
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card) }))
        .route(
            "/rpc",
            axum::routing::post(move |body: axum::body::Bytes| {
                let (healthy, answered) = (h.clone(), a.clone());
                async move {
                    if !healthy.load(Ordering::SeqCst) {
                        std::future::pending::<()>().await;
                    }
                    answered.fetch_add(1, Ordering::SeqCst);
                    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"task": {
                        "id": uuid::Uuid::new_v4().to_string(), "contextId": "c",
                        "status": {"state": "TASK_STATE_COMPLETED"}}}}))
                }
            }),
        );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Grey { url, healthy, answered, task }
}

pub(crate) async fn send_echo(gw: &str) -> bool {
    let answer = rpc(&format!("{gw}/"), "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
}

#[tokio::test]
async fn a_grey_failure_stays_out_until_real_traffic_succeeds_not_until_its_card_answers() {
    use std::sync::atomic::Ordering;
    let twin = example_agent(BIN, "echo", &[]).await;
    let grey = grey_agent().await;
    // Card checks every 200 ms succeed for both; sends to grey hang past the 1 s first-byte timeout.
    let extra = "health:\n  interval: 200ms\n  timeout: 1s\n  unhealthy_after: 2\n  ejection_time: 4s\nlimits:\n  first_byte_timeout: 1s\n";
    let gw = gateway(BIN, &config(&[("twin", &twin.url), ("grey", &grey.url)], extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Two timeouts eject grey; its answering card does not bring it back: the rest go to the twin.
    let mut failed = 0;
    for _ in 0..20 {
        if !send_echo(&gw.url).await {
            failed += 1;
        }
    }
    assert!(failed <= 3, "{failed} of 20 calls failed: grey was re-admitted by its card");
    let admin = gw.admin.clone().unwrap();
    let metrics = a2a_e2e::client().get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.lines().any(|l| l.starts_with("a2a_backend_ejections_total")
            && l.contains("backend=\"grey\"")
            && l.contains("reason=\"request_failures\"")),
        "{metrics}"
    );

    // Once grey answers again, real traffic probes it after the ejection time and re-admits it.
    grey.healthy.store(true, Ordering::SeqCst);
    let waited = Instant::now();
    while grey.answered.load(Ordering::SeqCst) == 0 {
        assert!(waited.elapsed() < Duration::from_secs(60), "grey was never probed");
        assert!(send_echo(&gw.url).await, "a call failed while grey recovered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = grey.answered.load(Ordering::SeqCst);
    for _ in 0..10 {
        assert!(send_echo(&gw.url).await);
    }
    assert!(grey.answered.load(Ordering::SeqCst) >= before + 4, "grey takes its share again");
}
