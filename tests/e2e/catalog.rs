//! Discovery by caller: the catalog at `/.well-known/ai-catalog.json` and the extended cards list
//! exactly what each caller is then allowed to call, with validators per caller's view.

use a2a_e2e::{Proc, example_agent, gateway, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

const SECRET: &str = "0123456789abcdef0123456789abcdef-test";
const ISSUER: &str = "https://idp.test/";

/// An HS256 token for `sub` of organisation `org` with `scope`.
fn token(sub: &str, org: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "scope": scope, "org": org, "iat": now, "exp": now + 600});
    a2a_e2e::hs256_token(SECRET, &claims)
}

/// Three agents (echo, review-pr, clarify) behind a gateway whose rules use scopes, a caller id and
/// a tenant: alice (scope `agents`) may use everything, carol (scope `echo`) only echo, dave (by his
/// id) only review-pr, and the acme tenant clarify.
async fn fleet() -> (Vec<Proc>, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n        tenant_claim: org\npermissions:\n  default: deny\n  rules:\n    - skills: ['*']\n      any_scope: [agents]\n    - skills: [echo]\n      any_scope: [echo]\n    - skills: [review-pr]\n      callers: ['jwt:{ISSUER}|dave']\n    - skills: [clarify]\n      tenants: [acme]\n"
    );
    let backends = [("echo", echo.url.as_str()), ("review", review.url.as_str()), ("clarify", clarify.url.as_str())];
    let gw = gateway(BIN, &a2a_e2e::config(&backends, &extra)).await;
    wait_for_skills(&gw.url, &["echo", "review-pr", "clarify"]).await;
    (vec![echo, review, clarify], gw)
}

async fn get(url: &str, token: Option<&str>, etag: Option<&str>) -> reqwest::Response {
    let mut request = a2a_e2e::client().get(url).header("A2A-Version", "1.0");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(etag) = etag {
        request = request.header("If-None-Match", etag);
    }
    request.send().await.unwrap()
}

/// (agent, skill) pairs a catalog lists.
fn catalog_skills(catalog: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for entry in catalog["entries"].as_array().unwrap() {
        let ours = &entry["extensions"]["a2a-gateway"];
        for skill in ours["skills"].as_array().unwrap() {
            pairs.push((ours["agent"].as_str().unwrap().to_string(), skill["id"].as_str().unwrap().to_string()));
        }
    }
    pairs.sort();
    pairs
}

fn card_skills(card: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

/// Sends a message for `skill` to `agent` as `token`: the HTTP status.
async fn call(gw: &str, agent: &str, skill: &str, token: &str) -> u16 {
    let params = json!({"message": text_message("hello", Some(skill))});
    let (status, answer) = a2a_e2e::rpc_as(Some(token), &format!("{gw}/agents/{agent}/"), "SendMessage", params).await;
    assert!(status != 200 || answer["result"].is_object(), "{answer}");
    status
}

#[tokio::test]
async fn three_callers_see_three_catalogs_and_extended_cards_matching_what_they_may_call() {
    let (_agents, gw) = fleet().await;
    let url = format!("{}/.well-known/ai-catalog.json", gw.url);
    let every = [("clarify", "clarify"), ("echo", "echo"), ("review", "review-pr")];
    let callers = [
        ("alice", token("alice", "globex", "agents"), vec![0, 1, 2]),
        ("carol", token("carol", "globex", "echo"), vec![1]),
        ("dave", token("dave", "globex", ""), vec![2]),
    ];
    let mut etags = Vec::new();
    for (name, token, allowed) in &callers {
        let response = get(&url, Some(token), None).await;
        assert_eq!(response.status().as_u16(), 200, "{name}");
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], "application/ai-catalog+json");
        assert!(headers["vary"].to_str().unwrap().contains("authorization"), "{headers:?}");
        assert!(headers["cache-control"].to_str().unwrap().starts_with("private"), "{headers:?}");
        let catalog: Value = response.json().await.unwrap();
        assert_eq!(catalog["specVersion"], "1.0");
        assert_eq!(catalog["extensions"]["a2a-gateway"]["catalogVersion"], 1);
        let want: Vec<(String, String)> =
            allowed.iter().map(|&i| (every[i].0.to_string(), every[i].1.to_string())).collect();
        assert_eq!(catalog_skills(&catalog), want, "{name}: {catalog}");
        for entry in catalog["entries"].as_array().unwrap() {
            let agent = entry["extensions"]["a2a-gateway"]["agent"].as_str().unwrap();
            assert_eq!(entry["type"], "application/a2a-agent-card+json");
            assert_eq!(entry["url"], format!("{}/agents/{agent}/.well-known/agent-card.json", gw.url));
            assert!(entry["displayName"].is_string() && entry["description"].is_string(), "{entry}");
            let bindings = entry["extensions"]["a2a-gateway"]["bindings"].as_array().unwrap();
            assert!(bindings.iter().any(|b| b["url"] == format!("{}/agents/{agent}/", gw.url)), "{entry}");
            if agent == "review" {
                let skill = &entry["extensions"]["a2a-gateway"]["skills"][0];
                assert!(skill["inputSchema"].is_object(), "review-pr lists its input schema: {skill}");
            }
        }
        // The fleet's extended card (JSON-RPC and HTTP+JSON) lists the same skills.
        let listed: Vec<String> = {
            let mut ids: Vec<String> = want.iter().map(|(_, s)| s.clone()).collect();
            ids.sort();
            ids
        };
        let (_, extended) =
            a2a_e2e::rpc_as(Some(token), &format!("{}/", gw.url), "GetExtendedAgentCard", json!({})).await;
        assert_eq!(card_skills(&extended["result"]), listed, "{name}: {extended}");
        let rest = get(&format!("{}/extendedAgentCard", gw.url), Some(token), None).await;
        let rest_etag = rest.headers()["etag"].to_str().unwrap().to_string();
        assert!(rest.headers()["vary"].to_str().unwrap().contains("authorization"));
        assert_eq!(card_skills(&rest.json().await.unwrap()), listed, "{name}");
        let again = get(&format!("{}/extendedAgentCard", gw.url), Some(token), Some(&rest_etag)).await;
        assert_eq!(again.status().as_u16(), 304, "{name}: the extended card revalidates");
        // Each agent's extended card lists that agent's skills the caller may use.
        for (i, (agent, skill)) in every.iter().enumerate() {
            let (_, extended) =
                a2a_e2e::rpc_as(Some(token), &format!("{}/agents/{agent}/", gw.url), "GetExtendedAgentCard", json!({}))
                    .await;
            let want: Vec<String> = if allowed.contains(&i) { vec![skill.to_string()] } else { vec![] };
            assert_eq!(card_skills(&extended["result"]), want, "{name} on {agent}");
            // And what discovery shows is what enforcement does.
            let status = call(&gw.url, agent, skill, token).await;
            assert_eq!(status == 200, allowed.contains(&i), "{name} calling {skill}: {status}");
            if !allowed.contains(&i) {
                assert_eq!(status, 403, "{name} calling {skill}");
            }
        }
        etags.push(headers["etag"].to_str().unwrap().to_string());
    }
    etags.dedup();
    assert_eq!(etags.len(), 3, "the ETag varies with the caller's view: {etags:?}");

    // A repeated fetch with the caller's ETag is 304; another caller's ETag is not its view.
    let alice = &callers[0].1;
    let again = get(&url, Some(alice), Some(&etags[0])).await;
    assert_eq!(again.status().as_u16(), 304);
    assert_eq!(again.headers()["etag"], etags[0].as_str());
    assert_eq!(get(&url, Some(alice), Some(&etags[1])).await.status().as_u16(), 200);
}

#[tokio::test]
async fn without_credentials_the_catalog_is_the_public_cards_and_bad_credentials_get_401() {
    let (_agents, gw) = fleet().await;
    let url = format!("{}/.well-known/ai-catalog.json", gw.url);
    let response = get(&url, None, None).await;
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers()["cache-control"].to_str().unwrap().starts_with("public"));
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    let catalog: Value = response.json().await.unwrap();
    let (_, card) = a2a_e2e::get_json(&format!("{}/.well-known/agent-card.json", gw.url)).await;
    let mut public: Vec<String> = catalog_skills(&catalog).into_iter().map(|(_, skill)| skill).collect();
    public.sort();
    assert_eq!(public, card_skills(&card), "{catalog}");
    assert_eq!(catalog["host"]["displayName"], card["name"]);
    assert_eq!(get(&url, None, Some(&etag)).await.status().as_u16(), 304);

    let refused = get(&url, Some("garbage"), None).await;
    assert_eq!(refused.status().as_u16(), 401);
    assert!(refused.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    let (status, _) = a2a_e2e::rpc_as(None, &format!("{}/", gw.url), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(status, 401, "the extended card needs credentials");
}

/// The official a2a-sdk client resolves the card and fetches the extended card for each caller.
#[tokio::test]
async fn the_python_sdk_resolves_the_card_and_gets_each_callers_extended_card() {
    let (_agents, gw) = fleet().await;
    for (token, want) in [
        (token("alice", "globex", "agents"), vec!["clarify", "echo", "review-pr"]),
        (token("carol", "globex", "echo"), vec!["echo"]),
        (token("dave", "globex", ""), vec!["review-pr"]),
    ] {
        // Every binding, and the 0.3 dialect through the SDK's compat transports.
        for (binding, version) in
            [("jsonrpc", "1.0"), ("rest", "1.0"), ("grpc", "1.0"), ("jsonrpc", "0.3"), ("rest", "0.3")]
        {
            let args = [
                "--base",
                gw.url.as_str(),
                "--binding",
                binding,
                "--protocol-version",
                version,
                "--flow",
                "extended",
                "--bearer",
                token.as_str(),
            ];
            let (ok, lines, stderr) = a2a_e2e::python_client(&args).await;
            assert!(ok, "{binding} {version}: {lines:?} {stderr}");
            let mut skills: Vec<String> =
                serde_json::from_value(lines[0]["detail"]["extended_skills"].clone()).unwrap();
            skills.sort();
            assert_eq!(skills, want, "{binding} {version}: {lines:?}");
        }
    }
}
