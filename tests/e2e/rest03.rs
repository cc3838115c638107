//! The A2A 0.3 HTTP+JSON binding, front and back, with the official a2a-sdk 0.3 (its REST
//! transport and its REST server app, `tests/python/sdk03_rest.py` in `tests/.venv03`): its client
//! through the gateway to 1.0 agents and to a 0.3 agent, a 0.3 REST-only agent behind the gateway
//! reached by 1.0 callers, and the attack suite's cases for the new front: repeated keys, ids in the
//! body against ids in the path, and another caller's tasks.

use std::path::PathBuf;
use std::time::Duration;

use a2a_e2e::{
    Proc, client, config, example_agent, gateway, hs256_token, python_agent, python_client, repo_root, start_command,
    wait_for_skills,
};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::BIN;
use crate::integrity::start_lab;

/// The interpreter of the a2a-sdk 0.3 virtualenv made by `tests/setup-python.sh`.
fn python03() -> PathBuf {
    let python = repo_root().join("tests/.venv03/bin/python");
    assert!(python.exists(), "{} is missing: run `bash tests/setup-python.sh`", python.display());
    python
}

fn script() -> String {
    repo_root().join("tests/python/sdk03_rest.py").display().to_string()
}

/// An a2a-sdk 0.3 agent served by the SDK's REST app only.
async fn agent03(kind: &str) -> Proc {
    let python = python03().display().to_string();
    start_command(&format!("py03-{kind}"), &python, &[&script(), "agent", "--kind", kind, "--port", "0"], "READY").await
}

/// Runs the a2a-sdk 0.3 REST client's flows against `base`; every flow must pass.
async fn sdk03(base: &str, flows: &[&str], extra: &[&str]) {
    let script = script();
    let mut args = vec![script.as_str(), "client", "--base", base];
    for flow in flows {
        args.extend(["--flow", flow]);
    }
    args.extend_from_slice(extra);
    let output = tokio::time::timeout(
        Duration::from_secs(180),
        Command::new(python03()).args(&args).kill_on_drop(true).output(),
    )
    .await
    .expect("sdk03_rest.py finishes")
    .expect("sdk03_rest.py runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(output.status.success(), "sdk 0.3 client {flows:?} on {base} failed:\n{report}");
    assert_eq!(lines.len(), flows.len(), "{report}");
    assert!(lines.iter().all(|l| l["ok"] == true), "{report}");
}

/// A card as a 0.3 client reads it (no `A2A-Version` header).
async fn card03(url: &str) -> Value {
    client().get(url).send().await.expect("card").json().await.expect("card JSON")
}

#[tokio::test]
async fn sdk03_rest_client_reaches_1_0_and_0_3_agents_through_the_gateway() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let py03 = agent03("echo").await;
    // An SDK agent spoken to in 0.3 JSON-RPC (its compat endpoint).
    let rpc03 = python_agent("echo", &["--v03"]).await;
    let backends = [
        ("echo", echo.url.as_str()),
        ("slow", slow.url.as_str()),
        ("py03", py03.url.as_str()),
        ("rpc03", rpc03.url.as_str()),
    ];
    let yaml = config(&backends, "");
    let rpc03_entry = format!("  - name: rpc03\n    url: {}\n", rpc03.url);
    let yaml = yaml.replace(&rpc03_entry, &format!("{rpc03_entry}    dialect: \"0.3\"\n"));
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["echo", "slow", "py03-echo", "py-echo"]).await;

    // The 0.3 HTTP+JSON interface is listed where 0.3 interfaces are: in supportedInterfaces as 0.3,
    // and in the 0.3 fields 0.3 clients read.
    for (card_url, base) in [
        (format!("{}/.well-known/agent-card.json", gw.url), gw.url.clone()),
        (format!("{}/agents/echo/.well-known/agent-card.json", gw.url), format!("{}/agents/echo", gw.url)),
    ] {
        let card = card03(&card_url).await;
        let listed = json!({"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"});
        assert!(card["supportedInterfaces"].as_array().unwrap().contains(&listed), "{card}");
        let additional = json!({"url": base, "transport": "HTTP+JSON"});
        assert!(card["additionalInterfaces"].as_array().unwrap().contains(&additional), "{card}");
        // 1.x clients get the strict card, without the 0.3 fields.
        let (_, strict) = a2a_e2e::get_json(&card_url).await;
        assert!(strict.get("additionalInterfaces").is_none(), "{strict}");
    }

    // The unified endpoint (by skill), a 1.0 agent's own path, and the 0.3 agent's.
    sdk03(&gw.url, &["send", "stream", "get", "cancel"], &[]).await;
    sdk03(&format!("{}/agents/echo", gw.url), &["send", "stream", "get"], &[]).await;
    sdk03(&format!("{}/agents/py03", gw.url), &["send", "stream", "get"], &["--skill-id", "py03-echo"]).await;
    sdk03(&format!("{}/agents/rpc03", gw.url), &["send", "stream", "get"], &["--skill-id", "py-echo"]).await;
    drop((echo, slow, py03, rpc03));
}

#[tokio::test]
async fn sdk03_rest_agent_serves_1_0_callers_behind_the_gateway() {
    let echo = agent03("echo").await;
    let slow = agent03("slow").await;
    let backends = [("py03echo", echo.url.as_str()), ("py03slow", slow.url.as_str())];
    let gw = gateway(BIN, &config(&backends, "")).await;
    wait_for_skills(&gw.url, &["py03-echo", "py03-slow"]).await;
    for binding in ["jsonrpc", "rest"] {
        for base in [gw.url.clone(), format!("{}/agents/py03echo", gw.url)] {
            let args = ["--base", &base, "--binding", binding, "--flow", "send", "--flow", "stream", "--flow", "get"];
            let (ok, lines, report) = python_client(&[&args[..], &["--echo-skill", "py03-echo"]].concat()).await;
            assert!(ok && lines.iter().all(|l| l["ok"] == true), "{binding} {base}:\n{report}");
        }
    }
    // A 1.0 JSON-RPC cancel of a 0.3 REST agent's task comes back canceled, in 1.0.
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m-slow", "role": "ROLE_USER", "parts": [{"text": "slowly"}], "metadata": {"skillId": "py03-slow"}},
        "configuration": {"returnImmediately": true}}});
    let answer: Value = rpc(&gw.url, &send).await;
    let task = answer["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    assert!(!task.is_empty(), "{answer}");
    let cancel = json!({"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": task}});
    let answer = rpc(&gw.url, &cancel).await;
    assert_eq!(answer["result"]["status"]["state"], "TASK_STATE_CANCELED", "{answer}");
    // And a 0.3 REST caller's cancel, 0.3 on both sides.
    sdk03(&format!("{}/agents/py03slow", gw.url), &["cancel"], &["--slow-skill", "py03-slow"]).await;
    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "no-such-task"}});
    let answer = rpc(&format!("{}/agents/py03echo", gw.url), &unknown).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    drop((echo, slow));
}

async fn rpc(base: &str, body: &Value) -> Value {
    let url = format!("{}/", base.trim_end_matches('/'));
    let response = client().post(url).header("A2A-Version", "1.0").json(body).send().await.expect("rpc");
    response.json().await.unwrap_or(Value::Null)
}

const ISSUER: &str = "https://idp-a.test/";
const SECRET: &str = "0123456789abcdef0123456789abcdef-idp-a";
const ALICE_SECRET: &str = "alice-private-rest03";

fn token(sub: &str, org: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "org": org, "scope": scope,
        "iat": now, "exp": now + 3600});
    hs256_token(SECRET, &claims)
}

/// One 0.3 HTTP+JSON call: status and text.
async fn call(method: &str, url: &str, token: &str, body: &str) -> (u16, String) {
    let mut request = client().request(method.parse().unwrap(), url).bearer_auth(token);
    if !body.is_empty() {
        request = request.header("content-type", "application/json").body(body.to_owned());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

fn send_body(extra: &str, text: &str, skill: &str) -> String {
    format!(
        r#"{{"message":{{"messageId":"{}","role":"ROLE_USER","content":[{{"text":"{text}"}}]{extra},"metadata":{{"skillId":"{skill}"}}}}}}"#,
        uuid::Uuid::new_v4()
    )
}

#[tokio::test]
async fn rest03_front_refuses_ambiguity_and_other_callers_tasks() {
    let lab = start_lab().await;
    let policy = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n        tenant_claim: org\npermissions:\n  default: deny\n  rules:\n    - skills: ['*']\n      any_scope: [all]\n    - skills: [rec-a]\n      any_scope: [some]\nrouting:\n  isolation: tenant\n"
    );
    let gw = gateway(BIN, &config(&[("lab", &lab.url)], &policy)).await;
    wait_for_skills(&gw.url, &["rec-a", "rec-b"]).await;
    let (alice, mallory) = (token("alice", "acme", "all"), token("mallory", "evil", "some"));
    let v1 = format!("{}/v1", gw.url);
    let seen = || lab.seen.lock().unwrap().len();

    // alice's task, over 0.3 HTTP+JSON: the legitimate call works (a 404 before this binding).
    let (status, answer) =
        call("POST", &format!("{v1}/message:send"), &alice, &send_body("", ALICE_SECRET, "rec-b")).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let victim = answer["task"]["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(answer["task"]["history"][0]["content"][0]["text"], ALICE_SECRET, "{answer}");
    let (status, got) = call("GET", &format!("{v1}/tasks/{victim}"), &alice, "").await;
    assert!(status == 200 && got.contains(ALICE_SECRET), "{status} {got}");
    let leaked = |text: &str| text.contains(ALICE_SECRET);

    let before = seen();
    let mut failed = Vec::new();
    let mut check = |name: &str, status: u16, text: &str, want: u16| {
        if status != want || leaked(text) {
            failed.push(format!("{name}: {status} {text}"));
        }
    };
    // Repeated keys: the skill, the task, the message.
    let twice = send_body(r#","metadata":{"skillId":"rec-a"}"#, "x", "rec-b");
    let (status, text) = call("POST", &format!("{v1}/message:send"), &mallory, &twice).await;
    check("repeated metadata", status, &text, 422);
    let repeated = send_body(&format!(r#","taskId":"{victim}","taskId":"own""#), "x", "rec-a");
    let (status, text) = call("POST", &format!("{v1}/message:stream"), &mallory, &repeated).await;
    check("repeated taskId", status, &text, 422);
    // Both spellings of one field.
    let both = send_body(&format!(r#","taskId":"own","task_id":"{victim}""#), "x", "rec-a");
    let (status, text) = call("POST", &format!("{v1}/message:send"), &mallory, &both).await;
    check("taskId and task_id", status, &text, 422);
    // Ids in the body against ids in the path.
    let (status, text) =
        call("POST", &format!("{v1}/tasks/own:cancel"), &mallory, &format!(r#"{{"name":"tasks/{victim}"}}"#)).await;
    check("cancel name vs path", status, &text, 422);
    let (status, text) =
        call("GET", &format!("{v1}/tasks/own"), &mallory, &format!(r#"{{"name":"tasks/{victim}"}}"#)).await;
    check("get name vs path", status, &text, 422);
    let push = format!(
        r#"{{"parent":"tasks/{victim}","config":{{"pushNotificationConfig":{{"url":"http://127.0.0.1:9/hook"}}}}}}"#
    );
    let (status, text) = call("POST", &format!("{v1}/tasks/own/pushNotificationConfigs"), &mallory, &push).await;
    check("push parent vs path", status, &text, 422);
    let push = format!(
        r#"{{"config":{{"name":"tasks/{victim}/pushNotificationConfigs/c","pushNotificationConfig":{{"url":"http://127.0.0.1:9/hook"}}}}}}"#
    );
    let (status, text) = call("POST", &format!("{v1}/tasks/own/pushNotificationConfigs"), &mallory, &push).await;
    check("push name vs path", status, &text, 422);
    assert_eq!(seen(), before, "a refused call reached the agent: {:?}", lab.seen.lock().unwrap());
    // Another caller's task: not found, however named, and never continued. A subscription to it
    // ends at once, as the 0.3 SDK's server ends one to a task it does not know (200, no event).
    for (method, path, want) in [
        ("GET", format!("{v1}/tasks/{victim}"), 404),
        ("GET", format!("{}/agents/lab/v1/tasks/{victim}?historyLength=5", gw.url), 404),
        ("POST", format!("{v1}/tasks/{victim}:cancel"), 404),
        ("GET", format!("{v1}/tasks/{victim}:subscribe"), 200),
    ] {
        let (status, text) = call(method, &path, &mallory, "").await;
        let want = if text.contains("data:") { 0 } else { want };
        check(&format!("foreign {method} {path}"), status, &text, want);
    }
    let continued = send_body(&format!(r#","taskId":"{victim}""#), "mallory-was-here", "rec-a");
    let (status, text) = call("POST", &format!("{v1}/message:send"), &mallory, &continued).await;
    check("continue a foreign task", status, &text, 404);
    // A skill the caller may not use.
    let (status, text) = call("POST", &format!("{v1}/message:send"), &mallory, &send_body("", "x", "rec-b")).await;
    check("forbidden skill", status, &text, 403);
    assert!(failed.is_empty(), "cases that did not hold:\n{}", failed.join("\n"));
    let bodies = lab.seen.lock().unwrap().clone();
    assert!(bodies.iter().all(|b| !b.contains("mallory-was-here")), "{bodies:?}");
}

/// A card served to a 0.3 client names the gateway's authentication in 0.3 form too (`{type,
/// scheme}` schemes and a `security` list, as the reference SDK merges them into its cards): before,
/// the a2a-sdk 0.3 client read the 1.0-only schemes as "no authentication required". With the
/// bearer the card asks for, the same client then works.
#[tokio::test]
async fn sdk03_client_reads_the_gateways_authentication_from_its_card() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let policy = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\npermissions:\n  default: allow\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], &policy)).await;
    for _ in 0..100 {
        let card = card03(&format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
        if card["skills"].is_array() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sdk03(&gw.url, &["auth-card"], &[]).await;
    sdk03(&format!("{}/agents/echo", gw.url), &["auth-card"], &[]).await;
    // The strict 1.0 card keeps the 1.0 form only (its schema allows no other).
    let (_, strict) = a2a_e2e::get_json(&format!("{}/.well-known/agent-card.json", gw.url)).await;
    assert!(strict.get("security").is_none(), "{strict}");
    assert!(strict["securitySchemes"]["bearer"].get("type").is_none(), "{strict}");
    let alice = token("alice", "acme", "all");
    sdk03(&gw.url, &["send", "get"], &["--bearer", &alice]).await;
}

/// The 0.3 HTTP+JSON clients get through the gateway, from 1.0 agents, what an a2a-sdk 0.3 server
/// gives them (each flow passes against `sdk03_rest.py agent` directly): an unknown task is 404 and
/// a completed one's cancel 409 (the a2a-sdk 0.3 client reads only the status); a non-blocking send
/// answers at once; a subscription streams a running task to its end, and one to an ended task is a
/// stream that ends (the SDK's own server drops the connection there). The 1.x SDK's 0.3 transport
/// reads the error's `type`: GetTask of an unknown task raises TaskNotFoundError (against the SDK's
/// own server it raises MethodNotFoundError, which reads a bare 404).
#[tokio::test]
async fn sdk03_rest_clients_get_0_3_server_answers_from_1_0_agents() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "3"]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "slow"]).await;
    let flows = ["get-unknown", "cancel-completed", "nonblocking", "subscribe", "subscribe-ended"];
    sdk03(&gw.url, &flows, &[]).await;
    sdk03(&format!("{}/agents/slow", gw.url), &["nonblocking", "subscribe"], &[]).await;
    sdk03(&format!("{}/agents/echo", gw.url), &["get-unknown", "cancel-completed", "subscribe-ended"], &[]).await;
    for base in [gw.url.clone(), format!("{}/agents/echo", gw.url)] {
        let args = ["--base", &base, "--binding", "rest", "--protocol-version", "0.3", "--flow", "get-unknown"];
        let (ok, lines, report) = python_client(&args).await;
        assert!(ok && lines.iter().all(|l| l["ok"] == true), "{base}:\n{report}");
    }
    drop((echo, slow));
}

/// Issue #28 (finding 5): behind the gateway, an agent on the official JavaScript SDK's server (1.0)
/// serves 0.3 REST callers like a 0.3 server: a non-blocking send answers at once, and `:subscribe`
/// to its running task streams it to its end (this agent once answered the bridged subscribe 501).
#[tokio::test]
async fn sdk03_rest_client_subscribes_to_a_javascript_agents_task_through_the_gateway() {
    let dir = repo_root().join("tests/js");
    assert!(dir.join("node_modules/express").exists(), "run `bash tests/setup-js.sh` (tests/run.sh does it)");
    let script = dir.join("agent.mjs").display().to_string();
    let js = start_command("js-agent", "node", &[&script, "0", "3"], "READY").await;
    let gw = gateway(BIN, &config(&[("js", &js.url)], "")).await;
    wait_for_skills(&gw.url, &["js-slow"]).await;
    for base in [gw.url.clone(), format!("{}/agents/js", gw.url)] {
        sdk03(&base, &["nonblocking", "subscribe"], &["--slow-skill", "js-slow"]).await;
    }
    drop(js);
}
