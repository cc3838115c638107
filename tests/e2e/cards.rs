//! The gateway's own card and the per-agent cards.

use a2a_e2e::{config, example_agent, gateway, get_json, wait_for_skills};
use serde_json::json;

use crate::BIN;

#[tokio::test]
async fn gateway_card_is_the_union_of_backend_skills_and_hides_backends() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("review", &review.url)], "")).await;
    let card = wait_for_skills(&gw.url, &["echo", "review-pr"]).await;

    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    // JSON-RPC, HTTP+JSON and gRPC in 1.0, then the JSON-RPC endpoint and the HTTP+JSON base again as
    // 0.3 (each takes both versions).
    assert_eq!(interfaces.len(), 5);
    assert_eq!((&interfaces[3]["url"], &interfaces[3]["protocolVersion"]), (&interfaces[0]["url"], &json!("0.3")));
    assert_eq!((&interfaces[4]["url"], &interfaces[4]["protocolVersion"]), (&interfaces[1]["url"], &json!("0.3")));
    // gRPC: a target, no scheme (what gRPC channels dial).
    let target = gw.url.trim_start_matches("http://");
    assert_eq!(interfaces[2], json!({"url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0"}));
    assert_eq!(interfaces[0]["url"], format!("{}/", gw.url));
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(interfaces[1]["url"], gw.url);
    assert_eq!(interfaces[1]["protocolBinding"], "HTTP+JSON");
    assert_eq!(card["capabilities"]["streaming"], true);

    // The review skill keeps its inputSchema extension for callers to read.
    let review_skill = card["skills"].as_array().unwrap().iter().find(|s| s["id"] == "review-pr").unwrap();
    assert!(review_skill["inputSchema"].is_object(), "{review_skill}");

    let text = card.to_string();
    for backend in [&echo, &review] {
        assert!(!text.contains(&format!(":{}", backend.port())), "backend port leaked: {text}");
        assert!(!text.contains("/a2a/"), "backend path leaked: {text}");
    }
}

#[tokio::test]
async fn per_agent_card_points_at_the_agent_path_behind_the_gateway() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;

    let (status, card) = get_json(&format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(status, 200);
    let urls: Vec<&str> =
        card["supportedInterfaces"].as_array().unwrap().iter().map(|i| i["url"].as_str().unwrap()).collect();
    let rpc = format!("{}/agents/echo/", gw.url);
    let rest = format!("{}/agents/echo", gw.url);
    let target = gw.url.trim_start_matches("http://");
    assert_eq!(urls, [rpc.clone(), rest.clone(), target.to_owned(), rpc, rest]);
    // gRPC has no paths: the agent is the request's tenant.
    assert_eq!(card["supportedInterfaces"][2]["tenant"], "echo");
    assert_eq!(card["skills"][0]["id"], "echo");
    assert!(!card.to_string().contains(&format!(":{}", echo.port())), "{card}");

    let (status, body) = get_json(&format!("{}/agents/nobody/.well-known/agent-card.json", gw.url)).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
}

#[tokio::test]
async fn cards_carry_an_etag_and_answer_if_none_match_with_304() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let client = a2a_e2e::client();
    for path in ["/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json"] {
        let url = format!("{}{path}", gw.url);
        let first = client.get(&url).send().await.unwrap();
        let etag = first.headers()["etag"].to_str().unwrap().to_string();
        let again = client.get(&url).header("If-None-Match", &etag).send().await.unwrap();
        assert_eq!(again.status().as_u16(), 304, "{path}");
        let stale = client.get(&url).header("If-None-Match", "W/\"stale\"").send().await.unwrap();
        assert_eq!(stale.status().as_u16(), 200, "{path}");
    }
}

#[tokio::test]
async fn cards_carry_no_spelling_of_a_backends_address() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}");
    let card = json!({"name": format!("Lab at localhost:{port}"), "version": "1",
        "description": format!("mirror on [::1]:{port}, admin on 127.0.0.1:9, docs http%3A%2F%2F127.0.0.1%3A{port}%2Fdocs"),
        "supportedInterfaces": [{"url": format!("{base}/internal-rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "iconUrl": format!("{base}/icon.png"), "documentationUrl": format!("http://localhost:{port}/docs"),
        "provider": {"organization": "lab", "url": format!("http://127.0.0.1:{port}")},
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "lab", "name": "Lab", "description": "calls /internal-rpc on 127.0.0.1", "tags": [],
            "inputSchema": {"type": "object", "properties": {format!("127.0.0.1:{port}"): {"type": "string"}}}}],
        "x-internal": {format!("localhost:{port}"): true}});
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card) }));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let gw = gateway(BIN, &config(&[("lab", &base)], "")).await;
    let served = wait_for_skills(&gw.url, &["lab"]).await;
    let (_, agent) = get_json(&format!("{}/agents/lab/.well-known/agent-card.json", gw.url)).await;
    for card in [served, agent] {
        // The gateway's own URLs are on 127.0.0.1 too: take them out before looking.
        // (the gRPC interface names it as HOST:PORT).
        let target = gw.url.trim_start_matches("http://");
        let text = card.to_string().replace(&gw.url, "GATEWAY").replace(target, "GATEWAY").to_lowercase();
        for leak in ["127.0.0.1", "localhost", "::1", &port.to_string(), "internal-rpc", "127%2e", "%3a%2f%2f"] {
            assert!(!text.contains(leak), "'{leak}' leaked: {text}");
        }
    }
    task.abort();
}

#[tokio::test]
async fn cards_may_be_cached_briefly_and_say_when_they_last_changed() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let client = a2a_e2e::client();
    for path in ["/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json"] {
        let url = format!("{}{path}", gw.url);
        let first = client.get(&url).send().await.unwrap();
        let cache = first.headers()["cache-control"].to_str().unwrap().to_string();
        assert!(cache.contains("max-age="), "{path}: {cache}");
        let modified = first.headers()["last-modified"].to_str().unwrap().to_string();
        assert!(httpdate::parse_http_date(&modified).is_ok(), "{path}: {modified}");
        let again = client.get(&url).header("If-Modified-Since", &modified).send().await.unwrap();
        assert_eq!(again.status().as_u16(), 304, "{path}");
        let older = client.get(&url).header("If-Modified-Since", "Thu, 01 Jan 2015 00:00:00 GMT").send().await.unwrap();
        assert_eq!(older.status().as_u16(), 200, "{path}");
    }
}

/// 0.3 clients (no `A2A-Version`, which the specification reads as 0.3) find their interface in the
/// 0.3 top-level fields; 1.x clients get a card without them, as the strict 1.0 schema requires.
#[tokio::test]
async fn cards_carry_the_0_3_fields_only_for_clients_that_name_no_1_x_version() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let client = a2a_e2e::client();
    for path in ["/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json"] {
        let url = format!("{}{path}", gw.url);
        for (version, legacy) in [(None, true), (Some("0.3"), true), (Some("1.0"), false), (Some("1.2"), false)] {
            let mut request = client.get(&url);
            if let Some(version) = version {
                request = request.header("A2A-Version", version);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.headers()["vary"], "a2a-version");
            let card: serde_json::Value = response.json().await.unwrap();
            for field in ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"] {
                assert_eq!(card.get(field).is_some(), legacy, "{path} {version:?} {field}: {card}");
            }
            assert!(card["supportedInterfaces"].as_array().unwrap().len() >= 3, "{card}");
        }
    }
}

/// The cards promise no push notifications, so push config calls are refused as such before any
/// task is looked up: an unknown task id gets the same answer as any other.
#[tokio::test]
async fn push_config_calls_are_refused_as_the_cards_promise() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let missing = "00000000-0000-0000-0000-000000000000";
    for base in [gw.url.clone(), format!("{}/agents/echo", gw.url)] {
        for (method, params) in [
            ("CreateTaskPushNotificationConfig", json!({"taskId": missing, "url": "https://example.com/hook"})),
            ("GetTaskPushNotificationConfig", json!({"taskId": missing, "id": "c"})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": missing})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": missing, "id": "c"})),
        ] {
            let answer = a2a_e2e::rpc(&format!("{base}/"), method, params).await;
            assert_eq!(answer["error"]["code"], -32003, "{base} {method}: {answer}");
        }
        let response = a2a_e2e::client()
            .get(format!("{base}/tasks/{missing}/pushNotificationConfigs"))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{base}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["status"], "FAILED_PRECONDITION", "{body}");
        assert_eq!(body["error"]["details"][0]["reason"], "PUSH_NOTIFICATION_NOT_SUPPORTED", "{body}");
    }
}

/// The documents under `/.well-known/` answer only GET (and HEAD): another method gets 405 with
/// `Allow`, not the A2A stack; any other path is the stack's, whatever its method (a POST of a card
/// path's neighbour is a JSON-RPC call there, answered as one).
#[tokio::test]
async fn documents_answer_only_get_and_every_other_path_is_an_a2a_call() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let client = a2a_e2e::client();
    for path in ["/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json", "/.well-known/jwks.json"] {
        let url = format!("{}{path}", gw.url);
        let posted = client.post(&url).json(&json!({})).send().await.unwrap();
        assert_eq!(posted.status().as_u16(), 405, "{path}");
        assert!(posted.headers()["allow"].to_str().unwrap().contains("GET"), "{path}");
        let head = client.head(&url).send().await.unwrap();
        assert_eq!(head.status().as_u16(), 200, "{path}");
    }
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}});
    for path in ["/", "/agents/echo/"] {
        let answer = client.post(format!("{}{path}", gw.url)).json(&call).send().await.unwrap();
        let body: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0", "{path}: {body}");
        assert!(body["error"]["code"].is_i64(), "{path}: {body}");
    }
    // Beside the documents, not under them: an HTTP+JSON path, refused in that binding's terms.
    let answer = client.post(format!("{}/agents/echo/.well-known", gw.url)).json(&call).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 404);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "METHOD_NOT_FOUND", "{body}");
}
