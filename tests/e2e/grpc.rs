//! The gRPC binding, front and back, with the official Python SDK (a2a-sdk 1.3.0 with its gRPC
//! extra): its gRPC client through the gateway to JSON agents, its gRPC-only agents behind the
//! gateway reached from every binding, and the attack suite's key cases sent as crafted gRPC calls
//! (`tests/python/grpc_raw.py`): another caller's task ids, skills and tenants, and unknown protobuf
//! fields, which must never reach an agent.

use a2a_e2e::{
    Proc, config, example_agent, gateway, get_json, hs256_token, python, python_agent, python_client, repo_root,
    wait_for_skills,
};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::BIN;
use crate::integrity::start_lab;

async fn sdk(args: &[&str]) {
    let (ok, lines, report) = python_client(args).await;
    assert!(ok, "sdk client {args:?} failed:\n{report}");
    assert!(!lines.is_empty() && lines.iter().all(|l| l["ok"] == true), "{report}");
}

/// One crafted gRPC call (`grpc_raw.py`): its status name, ErrorInfo reasons and answers.
pub(crate) async fn raw(target: &str, method: &str, request: Value, extra: &[&str]) -> Value {
    let script = repo_root().join("tests/python/grpc_raw.py");
    let request = request.to_string();
    let mut args = vec!["--target", target, "--method", method, "--request", &request];
    args.extend_from_slice(extra);
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        Command::new(python()).arg(script).args(&args).kill_on_drop(true).output(),
    )
    .await
    .expect("grpc_raw.py finishes")
    .expect("grpc_raw.py runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("grpc_raw.py {method}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)))
}

pub(crate) fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_owned()
}

#[tokio::test]
async fn sdk_grpc_client_reaches_json_agents_through_the_gateway() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let slow = example_agent(BIN, "slow", &["--slow-secs", "30"]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("clarify", &clarify.url), ("slow", &slow.url)], "")).await;
    let card = wait_for_skills(&gw.url, &["echo", "clarify", "slow"]).await;
    // A gRPC target (`HOST:PORT`), as the SDK's own server publishes it: the SDK client hands the URL
    // to `grpc.aio.insecure_channel` unchanged, and a scheme there fails name resolution.
    let target = host_port(&gw.url);
    let grpc = json!({"url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0"});
    assert!(card["supportedInterfaces"].as_array().unwrap().contains(&grpc), "{card}");
    let (_, agent_card) = get_json(&format!("{}/agents/echo/.well-known/agent-card.json", gw.url)).await;
    let grpc = json!({"url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "echo"});
    assert!(agent_card["supportedInterfaces"].as_array().unwrap().contains(&grpc), "{agent_card}");

    // Per agent: the card's GRPC interface names the agent as its tenant, which the SDK sends.
    let base = |name: &str| format!("{}/agents/{name}", gw.url);
    let echo_base = base("echo");
    sdk(&[
        "--base",
        &echo_base,
        "--binding",
        "grpc",
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
    sdk(&["--base", &base("clarify"), "--binding", "grpc", "--flow", "multiturn"]).await;
    sdk(&["--base", &base("slow"), "--binding", "grpc", "--flow", "cancel"]).await;
    // The unified endpoint, by skill.
    sdk(&["--base", &gw.url, "--binding", "grpc", "--flow", "all"]).await;
    drop((echo, clarify, slow));
}

#[tokio::test]
async fn sdk_grpc_agents_serve_behind_the_gateway_in_every_binding() {
    let echo = python_agent("echo", &["--grpc-only"]).await;
    let clarify = python_agent("clarify", &["--grpc-only"]).await;
    let slow = python_agent("slow", &["--grpc-only", "--duration", "30"]).await;
    let backends = [("pyecho", echo.url.as_str()), ("pyclarify", clarify.url.as_str()), ("pyslow", slow.url.as_str())];
    let gw = gateway(BIN, &config(&backends, "")).await;
    let card = wait_for_skills(&gw.url, &["py-echo", "py-clarify", "py-slow"]).await;
    let (_, agent_card) = get_json(&format!("{}/agents/pyecho/.well-known/agent-card.json", gw.url)).await;
    // The agent's own gRPC address is the gateway's business.
    for published in [&card, &agent_card] {
        assert!(!published.to_string().contains(&format!(":{}", echo.port())), "{published}");
    }
    for binding in ["jsonrpc", "rest", "grpc"] {
        let skills = ["--echo-skill", "py-echo", "--clarify-skill", "py-clarify", "--slow-skill", "py-slow"];
        let mut args = vec!["--base", gw.url.as_str(), "--binding", binding, "--flow", "all"];
        args.extend_from_slice(&skills);
        sdk(&args).await;
        let pyecho = format!("{}/agents/pyecho", gw.url);
        sdk(&[
            "--base",
            &pyecho,
            "--binding",
            binding,
            "--flow",
            "send",
            "--flow",
            "stream",
            "--echo-skill",
            "py-echo",
        ])
        .await;
    }
    // An agent's gRPC error comes back as the A2A error it is, in every binding.
    let target = host_port(&gw.url);
    let missing = raw(&target, "GetTask", json!({"tenant": "pyecho", "id": "no-such-task"}), &[]).await;
    assert_eq!((missing["code"].as_str(), missing["reasons"][0].as_str()), (Some("NOT_FOUND"), Some("TASK_NOT_FOUND")));
    let (_, rpc) =
        a2a_e2e::rpc_as(None, &format!("{}/agents/pyecho/", gw.url), "GetTask", json!({"id": "no-such-task"})).await;
    assert_eq!(rpc["error"]["code"], -32001, "{rpc}");
    // The codes of the specification's table (§5.4) where the reference SDKs answer
    // FAILED_PRECONDITION: an unsupported version, and push on an agent that promises none.
    let future =
        raw(&target, "GetTask", json!({"tenant": "pyecho", "id": "x"}), &["--metadata", "a2a-version: 2.0"]).await;
    assert_eq!(
        (future["code"].as_str(), future["reasons"][0].as_str()),
        (Some("UNIMPLEMENTED"), Some("VERSION_NOT_SUPPORTED"))
    );
    let get_push = json!({"tenant": "pyecho", "taskId": "x", "id": "c"});
    let push = raw(&target, "GetTaskPushNotificationConfig", get_push, &[]).await;
    let expected = (Some("UNIMPLEMENTED"), Some("PUSH_NOTIFICATION_NOT_SUPPORTED"));
    assert_eq!((push["code"].as_str(), push["reasons"][0].as_str()), expected, "{push}");
    drop((echo, clarify, slow));
}

pub(crate) const ISSUER: &str = "https://idp-grpc.test/";
pub(crate) const SECRET: &str = "0123456789abcdef0123456789abcdef-grpc";

/// A token of `ISSUER` for `sub` (its own tenant) with `scope`.
pub(crate) fn token(sub: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    hs256_token(
        SECRET,
        &json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": sub, "org": sub, "scope": scope, "iat": now, "exp": now + 3600}),
    )
}

/// Alice may use every skill; mallory only `py-echo`. Tasks are isolated per caller.
async fn guarded_fleet() -> (Proc, Proc, crate::integrity::Lab) {
    let lab = start_lab().await;
    let echo = python_agent("echo", &["--grpc-only"]).await;
    let policy = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET}\n        tenant_claim: org\npermissions:\n  default: deny\n  rules:\n    - skills: ['*']\n      any_scope: [all]\n    - skills: [py-echo]\n      any_scope: [some]\nrouting:\n  isolation: caller\n"
    );
    let gw = gateway(BIN, &config(&[("lab", &lab.url), ("pyecho", &echo.url)], &policy)).await;
    // The public card lists skills only for callers: wait on the health of both instead.
    for _ in 0..100 {
        let (_, status) = get_json(&format!("{}/agents/pyecho/.well-known/agent-card.json", gw.url)).await;
        let (_, lab_card) = get_json(&format!("{}/agents/lab/.well-known/agent-card.json", gw.url)).await;
        if status["skills"].is_array() && lab_card["skills"].is_array() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    (gw, echo, lab)
}

#[tokio::test]
async fn grpc_calls_are_judged_like_json_ones() {
    let (gw, _echo, lab) = guarded_fleet().await;
    let target = host_port(&gw.url);
    let alice = format!("authorization: Bearer {}", token("alice", "all"));
    let mallory = format!("authorization: Bearer {}", token("mallory", "some"));
    let as_alice = ["--metadata", alice.as_str()];
    let as_mallory = ["--metadata", mallory.as_str()];
    let message = |text: &str, skill: &str| json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}], "metadata": {"skillId": skill}});

    // No credentials: refused before anything else.
    let anonymous = raw(&target, "SendMessage", json!({"message": message("hi", "rec-a")}), &[]).await;
    assert_eq!(anonymous["code"], "UNAUTHENTICATED", "{anonymous}");

    // Alice's task, on the lab agent (by skill) and on the gRPC agent (by tenant).
    let sent = raw(&target, "SendMessage", json!({"message": message("alice-grpc-secret", "rec-a")}), &as_alice).await;
    assert_eq!(sent["code"], "OK", "{sent}");
    let lab_task = sent["responses"][0]["task"]["id"].as_str().unwrap().to_owned();
    let sent = raw(
        &target,
        "SendMessage",
        json!({"tenant": "pyecho", "message": message("alice-grpc-secret", "py-echo")}),
        &as_alice,
    )
    .await;
    assert_eq!(sent["code"], "OK", "{sent}");
    let py_task = sent["responses"][0]["task"]["id"].as_str().unwrap().to_owned();
    let got = raw(&target, "GetTask", json!({"id": py_task}), &as_alice).await;
    assert_eq!(got["responses"][0]["id"], py_task.as_str(), "{got}");

    let continuing = |task: &str| {
        let mut more = message("more", "py-echo");
        more["taskId"] = json!(task);
        more
    };
    // Mallory's reads, cancels, subscriptions and continuations of alice's tasks: as if the tasks
    // did not exist, with or without a tenant.
    let unknown = raw(&target, "GetTask", json!({"id": "no-such-task"}), &as_mallory).await;
    assert_eq!(unknown["code"], "NOT_FOUND", "{unknown}");
    for task in [&lab_task, &py_task] {
        for tenant in [None, Some("pyecho"), Some("lab")] {
            let with_tenant = |mut request: Value| {
                if let Some(tenant) = tenant {
                    request["tenant"] = json!(tenant);
                }
                request
            };
            for (method, request) in [
                ("GetTask", with_tenant(json!({"id": task}))),
                ("CancelTask", with_tenant(json!({"id": task}))),
                ("SubscribeToTask", with_tenant(json!({"id": task}))),
                ("SendMessage", with_tenant(json!({"message": continuing(task)}))),
            ] {
                let answer = raw(&target, method, request, &as_mallory).await;
                assert_eq!(
                    (&answer["code"], &answer["message"]),
                    (&unknown["code"], &unknown["message"]),
                    "{method} {tenant:?}: {answer}"
                );
                assert!(!answer.to_string().contains("alice-grpc-secret"), "{answer}");
            }
        }
    }

    // ListTasks is the gateway's: alice's page lists her tasks, mallory's none of them.
    let listed = raw(&target, "ListTasks", json!({}), &as_alice).await;
    assert_eq!(listed["code"], "OK", "{listed}");
    let ids: Vec<&str> =
        listed["responses"][0]["tasks"].as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert!(ids.contains(&lab_task.as_str()) && ids.contains(&py_task.as_str()), "{listed}");
    let listed = raw(&target, "ListTasks", json!({}), &as_mallory).await;
    assert_eq!(listed["code"], "OK", "{listed}");
    assert!(!listed.to_string().contains(&lab_task) && !listed.to_string().contains(&py_task), "{listed}");
    // A Timestamp filter reaches the gateway as the instant it names; a page size past 100 is refused.
    for (after, listed_any) in [("2000-01-01T00:00:00Z", true), ("2999-01-01T00:00:00Z", false)] {
        let listed = raw(&target, "ListTasks", json!({"statusTimestampAfter": after}), &as_alice).await;
        assert_eq!(listed["code"], "OK", "{listed}");
        let tasks = listed["responses"][0]["tasks"].as_array().map_or(0, Vec::len);
        assert_eq!(tasks > 0, listed_any, "after {after}: {listed}");
    }
    let refused = raw(&target, "ListTasks", json!({"pageSize": 101}), &as_alice).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");

    // Skills and tenants mallory may not use, and requests that name two skills.
    let denied = raw(&target, "SendMessage", json!({"message": message("x", "rec-a")}), &as_mallory).await;
    assert_eq!(denied["code"], "PERMISSION_DENIED", "{denied}");
    let denied =
        raw(&target, "SendMessage", json!({"tenant": "lab", "message": message("x", "py-echo")}), &as_mallory).await;
    assert_ne!(denied["code"], "OK", "{denied}");
    let two = raw(
        &target,
        "SendMessage",
        json!({"message": message("x", "py-echo"), "metadata": {"skillId": "rec-a"}}),
        &as_mallory,
    )
    .await;
    assert_eq!(
        (two["code"].as_str(), two["reasons"][0].as_str()),
        (Some("INVALID_ARGUMENT"), Some("INVALID_PARAMS")),
        "{two}"
    );
    let nowhere =
        raw(&target, "SendMessage", json!({"tenant": "nobody", "message": message("x", "py-echo")}), &as_alice).await;
    assert_eq!(nowhere["code"], "NOT_FOUND", "{nowhere}");

    // Unknown fields — in the request and inside its message — never reach the agent: field 15
    // (a string "smuggled-rec-b"), and field 9 of Message (a string "smuggled-meta").
    let before = lab.seen.lock().unwrap().len();
    let request_field = format!("7a0e{}", hex(b"smuggled-rec-b"));
    let message_field = format!("4a0d{}", hex(b"smuggled-meta"));
    let mut extra = as_alice.to_vec();
    extra.extend_from_slice(&["--append-hex", &request_field, "--append-message-hex", &message_field]);
    let smuggled = raw(&target, "SendMessage", json!({"message": message("plain", "rec-a")}), &extra).await;
    assert_eq!(smuggled["code"], "OK", "{smuggled}");
    let seen = lab.seen.lock().unwrap()[before..].join("\n");
    assert!(seen.contains("plain"), "the lab got the send: {seen}");
    assert!(!seen.contains("smuggled"), "unknown fields reached the agent: {seen}");
    let garbage = raw(
        &target,
        "SendMessage",
        json!({"message": message("plain", "rec-a")}),
        &[&as_alice[..], &["--append-hex", "ffffffff"]].concat(),
    )
    .await;
    assert_eq!(garbage["code"], "INVALID_ARGUMENT", "{garbage}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
