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

const SECRET: &str = "0123456789abcdef0123456789abcdef-test";
const ISSUER: &str = "https://idp.test/";

/// An HS256 token for `sub` with `scope`, signed with the test issuer's secret.
fn token(sub: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "scope": scope, "org": "acme", "iat": now, "exp": now + 600});
    a2a_e2e::hs256_token(SECRET, &claims)
}

async fn secured() -> (Vec<a2a_e2e::Proc>, a2a_e2e::Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n        tenant_claim: org\npermissions:\n  default: deny\n  rules:\n    - skills: ['*']\n      any_scope: [agents]\n    - skills: [echo]\n      any_scope: [echo]\n"
    );
    let backends = [("echo", echo.url.as_str()), ("clarify", clarify.url.as_str()), ("slow", slow.url.as_str())];
    let gw = gateway(BIN, &a2a_e2e::config(&backends, &extra)).await;
    wait_for_skills(&gw.url, &["echo", "clarify", "slow"]).await;
    (vec![echo, clarify, slow], gw)
}

#[tokio::test]
async fn callers_without_valid_credentials_get_401_with_a_challenge() {
    let (_agents, gw) = secured().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": text_message("x", Some("echo"))}});
    let forged = token("alice", "agents").replace('.', ".x");
    for (credential, challenge_error) in [(None, false), (Some("garbage"), true), (Some(forged.as_str()), true)] {
        let mut request = a2a_e2e::client().post(format!("{}/", gw.url)).header("A2A-Version", "1.0").json(&body);
        if let Some(credential) = credential {
            request = request.bearer_auth(credential);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401);
        let challenge = response.headers()["www-authenticate"].to_str().unwrap().to_string();
        assert!(challenge.starts_with("Bearer realm="), "{challenge}");
        assert_eq!(challenge.contains("invalid_token"), challenge_error, "{challenge}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["id"], 1);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message == "missing credentials" || message == "invalid credentials", "no detail leaks: {message}");
    }
    let (status, _) =
        a2a_e2e::rest_post(&format!("{}/message:send", gw.url), json!({"message": text_message("x", Some("echo"))}))
            .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn the_card_advertises_the_gateways_security_and_the_extended_card_is_per_caller() {
    let (_agents, gw) = secured().await;
    let (_, card) = get_json(&format!("{}/.well-known/agent-card.json", gw.url)).await;
    assert!(card["securitySchemes"]["bearer"].is_object(), "{card}");
    assert!(card["securityRequirements"].is_array(), "{card}");
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);

    let skills = |card: &Value| -> Vec<String> {
        card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
    };
    let carol = token("carol", "echo");
    let (_, extended) = a2a_e2e::rpc_as(Some(&carol), &format!("{}/", gw.url), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(skills(&extended["result"]), ["echo"], "{extended}");
    let response = a2a_e2e::client()
        .get(format!("{}/extendedAgentCard", gw.url))
        .header("A2A-Version", "1.0")
        .bearer_auth(token("alice", "agents"))
        .send()
        .await
        .unwrap();
    let extended: Value = response.json().await.unwrap();
    let mut all = skills(&extended);
    all.sort();
    assert_eq!(all, ["clarify", "echo", "slow"]);

    // Under an agent's path, that agent's extended card: its skills the caller may use, its name and
    // its interfaces, not the fleet's.
    let agent = format!("{}/agents/clarify", gw.url);
    let alice = token("alice", "agents");
    let (_, extended) = a2a_e2e::rpc_as(Some(&alice), &format!("{agent}/"), "GetExtendedAgentCard", json!({})).await;
    let card = &extended["result"];
    assert_eq!(skills(card), ["clarify"], "{extended}");
    assert_eq!(card["supportedInterfaces"][0]["url"], format!("{agent}/"), "{card}");
    assert!(card.get("url").is_none(), "the 1.0 card carries no 0.3 fields: {card}");
    let (_, own) = get_json(&format!("{agent}/.well-known/agent-card.json")).await;
    assert_eq!(card["name"], own["name"]);
    let (_, extended) = a2a_e2e::rpc_as(Some(&carol), &format!("{agent}/"), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(skills(&extended["result"]), Vec::<String>::new(), "carol may use none of clarify's: {extended}");
    let response = a2a_e2e::client()
        .get(format!("{}/agents/echo/extendedAgentCard", gw.url))
        .header("A2A-Version", "1.0")
        .bearer_auth(&carol)
        .send()
        .await
        .unwrap();
    let extended: Value = response.json().await.unwrap();
    assert_eq!(skills(&extended), ["echo"]);
    assert_eq!(extended["supportedInterfaces"][1]["url"], format!("{}/agents/echo", gw.url), "{extended}");
    let (status, missing) =
        a2a_e2e::rpc_as(Some(&alice), &format!("{}/agents/nobody/", gw.url), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(status, 404, "{missing}");
}

#[tokio::test]
async fn a_known_caller_is_refused_a_skill_it_may_not_use_with_403() {
    let (_agents, gw) = secured().await;
    let carol = token("carol", "echo");
    let (status, ok) = a2a_e2e::rpc_as(
        Some(&carol),
        &format!("{}/", gw.url),
        "SendMessage",
        json!({"message": text_message("x", Some("echo"))}),
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    let (status, refused) = a2a_e2e::rpc_as(
        Some(&carol),
        &format!("{}/", gw.url),
        "SendMessage",
        json!({"message": text_message("x", Some("clarify"))}),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["data"][0]["reason"], "PERMISSION_DENIED");
    assert!(refused["error"]["message"].as_str().unwrap().contains("clarify"));
}

/// The error object without its request id: two refusals that must look the same.
fn error_of(answer: &Value) -> Value {
    answer["error"].clone()
}

#[tokio::test]
async fn another_callers_task_answers_exactly_as_a_task_that_does_not_exist() {
    let (_agents, gw) = secured().await;
    let root = format!("{}/", gw.url);
    let (alice, bob) = (token("alice", "agents"), token("bob", "agents"));
    let (_, made) =
        a2a_e2e::rpc_as(Some(&alice), &root, "SendMessage", json!({"message": text_message("plan", Some("clarify"))}))
            .await;
    let task = made["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{made}");
    let missing = json!("00000000-0000-0000-0000-000000000000");

    let mut continuation = text_message("hijack", None);
    continuation["taskId"] = task["id"].clone();
    let calls = [
        ("GetTask", json!({"id": task["id"]}), json!({"id": missing})),
        ("CancelTask", json!({"id": task["id"]}), json!({"id": missing})),
        ("SubscribeToTask", json!({"id": task["id"]}), json!({"id": missing})),
        (
            "SendMessage",
            json!({"message": continuation}),
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": missing}}),
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task["id"], "config": {"url": "https://example.com/hook"}}),
            json!({"taskId": missing, "config": {"url": "https://example.com/hook"}}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task["id"]}), json!({"taskId": missing})),
    ];
    for (method, foreign, nonexistent) in calls {
        let (status_foreign, foreign) = a2a_e2e::rpc_as(Some(&bob), &root, method, foreign).await;
        let (status_missing, missing) = a2a_e2e::rpc_as(Some(&bob), &root, method, nonexistent).await;
        // The gateway's card promises no push notifications: push config calls are refused as such
        // before any task is looked up; every other call finds no task.
        let code = if method.contains("PushNotification") { -32003 } else { -32001 };
        assert_eq!(foreign["error"]["code"], code, "{method}: {foreign}");
        assert_eq!((status_foreign, error_of(&foreign)), (status_missing, error_of(&missing)), "{method}");
    }
    // Over HTTP+JSON too.
    let get = |who: String, id: Value| {
        let url = format!("{}/tasks/{}", gw.url, id.as_str().unwrap());
        async move {
            let response =
                a2a_e2e::client().get(url).header("A2A-Version", "1.0").bearer_auth(who).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    assert_eq!(get(bob.clone(), task["id"].clone()).await, get(bob.clone(), missing.clone()).await);
    assert_eq!(get(alice.clone(), task["id"].clone()).await.0, 200, "the owner still sees it");

    // Listing shows each caller only its own tasks.
    let (_, listed) = a2a_e2e::rpc_as(Some(&bob), &root, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let (_, listed) = a2a_e2e::rpc_as(Some(&alice), &root, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 1, "{listed}");

    // And the owner can still continue it.
    let mut reply = text_message("production", None);
    reply["taskId"] = task["id"].clone();
    reply["contextId"] = task["contextId"].clone();
    let (_, done) = a2a_e2e::rpc_as(Some(&alice), &root, "SendMessage", json!({"message": reply})).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
}

#[tokio::test]
async fn a_backend_can_receive_a_gateway_minted_token_verifiable_with_the_gateways_jwks() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let key = a2a_e2e::repo_root().join("policies/tests/fixtures/gateway-keys/ec-p256.pem");
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n        tenant_claim: org\n\
         gateway_identity:\n  issuer: https://gateway.test/\n  signing_key: '{}'\n  key_id: gw-1\n",
        key.display()
    );
    let yaml = a2a_e2e::config(&[("echo", &echo.url)], &extra).replace(
        &format!("url: {}\n", echo.url),
        &format!("url: {}\n    auth: {{mint_jwt: {{audience: echo, ttl: 60s}}}}\n", echo.url),
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let alice = token("alice", "agents");
    let (status, answer) = a2a_e2e::rpc_as(
        Some(&alice),
        &format!("{}/", gw.url),
        "SendMessage",
        json!({"message": text_message("x", Some("echo"))}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let sent = authorizations(&echo.url).await;
    let minted = sent[0].as_str().unwrap().strip_prefix("Bearer ").expect("a bearer token");
    assert_ne!(minted, alice, "never the caller's own token");
    let (_, jwks) = get_json(&format!("{}/.well-known/jwks.json", gw.url)).await;
    let claims = a2a_e2e::verify_with_jwks(minted, &jwks, "echo");
    assert_eq!(claims["sub"], format!("jwt:{ISSUER}|alice"));
    assert_eq!(claims["iss"], "https://gateway.test/");
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["scope"], "agents");
}
