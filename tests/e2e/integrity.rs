//! The gateway's attack suite: two authenticated callers (alice, the victim; mallory, the attacker)
//! in front of real a2a-sdk agents (1.0 and 0.3) and a recording lab agent with two skills. Each
//! case is an attempt to act on, read or learn of something that is alice's, or to use a skill
//! mallory may not use, through an ambiguity between what the gateway checks and what the agent
//! reads: field-name aliases, repeated keys, ids in the body against ids in the path, page tokens,
//! contexts, tenants of another issuer, calls that name no skill or two, abandoned calls, and
//! answers given before authentication. Every case runs in every dialect and binding that has it,
//! on the unified endpoint and on per-agent paths.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_e2e::{client, config, gateway, hs256_token, python_agent, wait_for_skills};
use serde_json::{Value, json};

use super::BIN;

const ISSUER_A: &str = "https://idp-a.test/";
const ISSUER_B: &str = "https://idp-b.test/";
const SECRET_A: &str = "0123456789abcdef0123456789abcdef-idp-a";
const SECRET_B: &str = "0123456789abcdef0123456789abcdef-idp-b";
/// Text only alice ever sends: it must never reach mallory.
const ALICE_SECRET: &str = "alice-private-7f3a";

fn token(issuer: &str, secret: &str, sub: &str, org: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": issuer, "aud": "a2a-gateway", "sub": sub, "org": org, "scope": scope,
        "iat": now, "exp": now + 3600});
    hs256_token(secret, &claims)
}

/// The auth and permission sections: two issuers that both name tenants; alice (acme at A) may use
/// every skill, mallory (evil at A) `py-clarify` and `rec-a`, and `rec-b` is also open to acme as
/// issuer A says it (issuer B's acme is someone else).
///
/// `A2A_ATTACK_BASELINE=1` leaves out what a gateway before the integrity work cannot read (the
/// rule's `issuers`), so the suite can be run against an older binary to see which holes it had.
fn policy(extra: &str) -> String {
    let policy = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: {ISSUER_A}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET_A}\n        tenant_claim: org\n      - issuer: {ISSUER_B}\n        audiences: [a2a-gateway]\n        hs256_secret: {SECRET_B}\n        tenant_claim: org\npermissions:\n  default: deny\n  rules:\n    - skills: ['*']\n      any_scope: [all]\n    - skills: [py-clarify, rec-a]\n      any_scope: [some]\n    - skills: [rec-b]\n      tenants: [acme]\n      issuers: ['{ISSUER_A}']\nrouting:\n  isolation: tenant\n{extra}"
    );
    match std::env::var_os("A2A_ATTACK_BASELINE") {
        Some(_) => policy.replace(&format!("      issuers: ['{ISSUER_A}']\n"), ""),
        None => policy,
    }
}

/// A recording agent with two skills (`rec-a`, `rec-b`) on JSON-RPC and HTTP+JSON: it answers every
/// send with a completed task in the message's context (or a new one) and keeps each body.
pub(crate) struct Lab {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn start_lab() -> Lab {
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let card = json!({
        "name": "lab", "description": "records what it is sent", "version": "1",
        "supportedInterfaces": [
            {"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "rec-a", "name": "A", "description": "a", "tags": []},
                   {"id": "rec-b", "name": "B", "description": "b", "tags": []}]
    });
    // Tasks by id, each with the message that made it (its history).
    let tasks: Arc<Mutex<std::collections::HashMap<String, Value>>> = Default::default();
    let task_of = {
        let tasks = tasks.clone();
        move |params: &Value| {
            let context =
                params["message"]["contextId"].as_str().map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
            let id =
                params["message"]["taskId"].as_str().map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
            let task = json!({"id": id, "contextId": context, "status": {"state": "TASK_STATE_COMPLETED"},
                "history": [params["message"].clone()]});
            tasks.lock().unwrap().entry(id).or_insert(task).clone()
        }
    };
    let rpc = {
        let (seen, tasks, task_of) = (seen.clone(), tasks.clone(), task_of.clone());
        move |body: String| {
            let (seen, tasks, task_of) = (seen.clone(), tasks.clone(), task_of.clone());
            async move {
                seen.lock().unwrap().push(body.clone());
                let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let result = match request["method"].as_str() {
                    Some("GetTask") => {
                        tasks.lock().unwrap().get(request["params"]["id"].as_str().unwrap_or("")).cloned()
                    }
                    _ => Some(json!({"task": task_of(&request["params"])})),
                };
                axum::Json(match result {
                    Some(result) => json!({"jsonrpc": "2.0", "id": request["id"], "result": result}),
                    None => {
                        json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32001, "message": "Task not found"}})
                    }
                })
            }
        }
    };
    let rest = {
        let (seen, task_of) = (seen.clone(), task_of.clone());
        move |body: String| {
            let (seen, task_of) = (seen.clone(), task_of.clone());
            async move {
                seen.lock().unwrap().push(body.clone());
                let params: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                axum::Json(json!({"task": task_of(&params)}))
            }
        }
    };
    let rest_get = move |axum::extract::Path(id): axum::extract::Path<String>| {
        let tasks = tasks.clone();
        async move {
            match tasks.lock().unwrap().get(&id).cloned() {
                Some(task) => axum::Json(task).into_response(),
                None => http::StatusCode::NOT_FOUND.into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", get(move || async move { axum::Json(card.clone()) }))
        .route("/rpc", post(rpc))
        .route("/rest/message:send", post(rest))
        .route("/rest/tasks/{id}", get(rest_get));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Lab { url: base, seen, task }
}

/// One HTTP exchange with the gateway; the answer as status and text.
async fn send(method: &str, url: &str, token: Option<&str>, version: Option<&str>, body: &str) -> (u16, String) {
    let mut request = client().request(method.parse().unwrap(), url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    if !body.is_empty() {
        request = request.header("content-type", "application/json").body(body.to_owned());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

fn rpc_body(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":"x1","method":"{method}","params":{params}}}"#)
}

fn message(extra: &str, text: &str) -> String {
    format!(r#"{{"messageId":"{}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]{extra}}}"#, uuid::Uuid::new_v4())
}

fn message03(extra: &str, text: &str) -> String {
    format!(
        r#"{{"kind":"message","messageId":"{}","role":"user","parts":[{{"kind":"text","text":"{text}"}}]{extra}}}"#,
        uuid::Uuid::new_v4()
    )
}

/// The outcome of every case; the test fails listing each one that did not hold.
#[derive(Default)]
struct Cases {
    run: usize,
    failed: Vec<String>,
}

impl Cases {
    fn check(&mut self, name: &str, held: bool, detail: &str) {
        self.run += 1;
        if !held {
            self.failed.push(format!("{name}: {}", detail.chars().take(400).collect::<String>()));
        }
    }
}

/// The task (id, context) a 1.0 JSON-RPC send answer names.
fn task_ids(answer: &str) -> (String, String) {
    let v: Value = serde_json::from_str(answer).unwrap_or(Value::Null);
    let task = &v["result"]["task"];
    (task["id"].as_str().unwrap_or("").to_owned(), task["contextId"].as_str().unwrap_or("").to_owned())
}

/// Every context id an answer (JSON or SSE) names.
fn contexts_in(answer: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in answer.split("\"contextId\":").skip(1) {
        if let Some(rest) = piece.trim_start().strip_prefix('"') {
            out.push(rest.split('"').next().unwrap_or("").to_owned());
        }
    }
    out
}

#[tokio::test]
async fn attack_matrix_holds_in_every_dialect_and_binding() {
    let clarify = python_agent("clarify", &["--v03"]).await;
    let clarify03 = python_agent("clarify", &["--v03"]).await;
    let lab = start_lab().await;
    let yaml = format!(
        "{}backends:\n  - name: py\n    url: {}\n  - name: py03\n    url: {}\n    dialect: \"0.3\"\n  - name: lab\n    url: {}\n",
        a2a_e2e_preamble(),
        clarify.url,
        clarify03.url,
        lab.url
    );
    let yaml = yaml.replace("backends:\n", &format!("{}backends:\n", policy("")));
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["py-clarify", "rec-a", "rec-b"]).await;
    let alice = token(ISSUER_A, SECRET_A, "alice", "acme", "all");
    let mallory = token(ISSUER_A, SECRET_A, "mallory", "evil", "some");
    let mallory_b = token(ISSUER_B, SECRET_B, "mallory", "acme", "some");
    let (a, m, mb) = (Some(alice.as_str()), Some(mallory.as_str()), Some(mallory_b.as_str()));
    let root = format!("{}/", gw.url);
    let per_agent = format!("{}/agents/py/", gw.url);
    let v1 = Some("1.0");
    let mut cases = Cases::default();

    // alice's task on the 1.0 agent and on the 0.3 agent: both wait for her (input-required).
    let skill = r#","metadata":{"skillId":"py-clarify"}"#;
    let params = format!(r#"{{"message":{}}}"#, message(skill, ALICE_SECRET));
    let (_, answer) = send("POST", &root, a, v1, &rpc_body("SendMessage", &params)).await;
    let (victim, victim_context) = task_ids(&answer);
    assert!(!victim.is_empty() && !victim_context.is_empty(), "alice's task: {answer}");
    let params03 = format!(r#"{{"message":{}}}"#, message03("", ALICE_SECRET));
    let (_, answer03) =
        send("POST", &format!("{}/agents/py03/", gw.url), a, None, &rpc_body("message/send", &params03)).await;
    let v03: Value = serde_json::from_str(&answer03).unwrap_or(Value::Null);
    let victim03 = v03["result"]["id"].as_str().unwrap_or("").to_owned();
    assert!(!victim03.is_empty(), "alice's 0.3 task: {answer03}");
    // mallory's own task, to dress attacks up as calls on it.
    let params = format!(r#"{{"message":{}}}"#, message(skill, "mallory's own"));
    let (_, answer) = send("POST", &root, m, v1, &rpc_body("SendMessage", &params)).await;
    let (own, _) = task_ids(&answer);
    assert!(!own.is_empty(), "mallory's task: {answer}");
    let leaked = |text: &str| text.contains(ALICE_SECRET) || text.contains(&victim) || text.contains(&victim03);

    // 1. Field-name smuggling: a continuation of alice's task in every spelling, dialect, binding,
    //    endpoint and operation.
    let spellings: Vec<(&str, String)> = vec![
        ("snake", format!(r#","task_id":"{victim}""#)),
        ("both", format!(r#","taskId":"{own}","task_id":"{victim}""#)),
        ("both-reversed", format!(r#","task_id":"{victim}","taskId":"{own}""#)),
        ("repeated", format!(r#","taskId":"{own}","taskId":"{victim}""#)),
        ("repeated-reversed", format!(r#","taskId":"{victim}","taskId":"{own}""#)),
    ];
    for (spelling, ids) in &spellings {
        for endpoint in [&root, &per_agent] {
            for method in ["SendMessage", "SendStreamingMessage"] {
                let params = format!(r#"{{"message":{}}}"#, message(&format!("{ids}{skill}"), "mallory-was-here"));
                let (_, text) = send("POST", endpoint, m, v1, &rpc_body(method, &params)).await;
                cases.check(&format!("smuggle jsonrpc {method} {spelling} {endpoint}"), !leaked(&text), &text);
                let path = if method == "SendMessage" { "message:send" } else { "message:stream" };
                let body = format!(r#"{{"message":{}}}"#, message(&format!("{ids}{skill}"), "mallory-was-here"));
                let (_, text) = send("POST", &format!("{endpoint}{path}"), m, v1, &body).await;
                cases.check(&format!("smuggle rest {path} {spelling} {endpoint}"), !leaked(&text), &text);
            }
        }
        // 0.3 callers, to the 0.3 agent (pydantic reads both spellings) and to the 1.0 agent.
        let ids03 = ids.replace(&victim, &victim03);
        for agent in ["py03", "py"] {
            let params = format!(r#"{{"message":{}}}"#, message03(&ids03, "mallory-was-here"));
            let (_, text) =
                send("POST", &format!("{}/agents/{agent}/", gw.url), m, None, &rpc_body("message/send", &params)).await;
            cases.check(&format!("smuggle 0.3 message/send {spelling} {agent}"), !leaked(&text), &text);
        }
        // The same trick on request-level ids of task calls and push configs.
        for (method, params) in [
            ("GetTask", format!(r#"{{"id":"{own}","id":"{victim}"}}"#)),
            ("CancelTask", format!(r#"{{"id":"{victim}","id":"{own}"}}"#)),
            ("SubscribeToTask", format!(r#"{{"id":"{own}","id":"{victim}"}}"#)),
            ("GetTask", format!(r#"{{"id":"{own}","historyLength":5,"history_length":0}}"#)),
            (
                "CreateTaskPushNotificationConfig",
                format!(r#"{{"taskId":"{own}","task_id":"{victim}","url":"http://127.0.0.1:9/hook"}}"#),
            ),
            ("ListTaskPushNotificationConfigs", format!(r#"{{"taskId":"{own}","task_id":"{victim}"}}"#)),
            ("GetTaskPushNotificationConfig", format!(r#"{{"task_id":"{victim}","taskId":"{own}","id":"c"}}"#)),
            ("DeleteTaskPushNotificationConfig", format!(r#"{{"taskId":"{own}","task_id":"{victim}","id":"c"}}"#)),
        ] {
            if *spelling != "snake" {
                continue;
            }
            let (_, text) = send("POST", &root, m, v1, &rpc_body(method, &params)).await;
            cases.check(&format!("smuggle {method} {params}"), !leaked(&text) && text.contains("error"), &text);
        }
    }
    // A message may refer only to the caller's own tasks (an agent may read what they refer to).
    for field in ["referenceTaskIds", "reference_task_ids"] {
        for endpoint in [&root, &per_agent] {
            let extra = format!(r#","{field}":["{victim}"]{skill}"#);
            let params = format!(r#"{{"message":{}}}"#, message(&extra, "mallory-refers"));
            let (_, text) = send("POST", endpoint, m, v1, &rpc_body("SendMessage", &params)).await;
            cases.check(
                &format!("refers to alice's task {field} {endpoint}"),
                text.contains("\"error\"") && !leaked(&text),
                &text,
            );
        }
    }
    // HTTP+JSON: ids in the body against the id in the path, and aliases in the query.
    for (method, path, body) in [
        ("POST", format!("tasks/{own}:cancel"), format!(r#"{{"id":"{victim}"}}"#)),
        (
            "POST",
            format!("tasks/{own}/pushNotificationConfigs"),
            format!(r#"{{"taskId":"{victim}","url":"http://127.0.0.1:9/h"}}"#),
        ),
        (
            "POST",
            format!("tasks/{own}/pushNotificationConfigs"),
            format!(r#"{{"task_id":"{victim}","url":"http://127.0.0.1:9/h"}}"#),
        ),
        ("GET", format!("tasks/{own}?id={victim}"), String::new()),
        ("GET", format!("tasks/{own}?historyLength=1&history_length=9"), String::new()),
        ("GET", format!("tasks/{own}%2F..%2F{victim}"), String::new()),
        ("POST", format!("tasks/{own}:subscribe"), format!(r#"{{"id":"{victim}"}}"#)),
    ] {
        for endpoint in [&root, &per_agent] {
            let (_, text) = send(method, &format!("{endpoint}{path}"), m, v1, &body).await;
            cases.check(&format!("rest ids {method} {path} {body} {endpoint}"), !leaked(&text), &text);
        }
    }

    // 2. ListTasks page tokens: mallory walks every page and never meets alice's tasks; tokens the
    //    agent would accept, or alice's own, are worth nothing to her.
    for endpoint in [&root, &per_agent] {
        let mut token_param = String::new();
        let mut pages = 0;
        loop {
            let params = format!(r#"{{"pageSize":1{token_param}}}"#);
            let (_, text) = send("POST", endpoint, m, v1, &rpc_body("ListTasks", &params)).await;
            cases.check(&format!("list page {pages} {endpoint}"), !leaked(&text) && text.contains("result"), &text);
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match v["result"]["nextPageToken"].as_str() {
                Some(next) if !next.is_empty() && pages < 10 => token_param = format!(r#","pageToken":"{next}""#),
                _ => break,
            }
            pages += 1;
        }
        let (_, alice_page) = send("POST", endpoint, a, v1, &rpc_body("ListTasks", r#"{"pageSize":1}"#)).await;
        let alice_token = serde_json::from_str::<Value>(&alice_page).unwrap_or(Value::Null)["result"]["nextPageToken"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        use base64::Engine as _;
        let agent_style = base64::engine::general_purpose::STANDARD.encode(&victim);
        for forged in [alice_token.as_str(), agent_style.as_str(), victim.as_str(), "00"] {
            let params = format!(r#"{{"pageSize":5,"pageToken":"{forged}"}}"#);
            let (_, text) = send("POST", endpoint, m, v1, &rpc_body("ListTasks", &params)).await;
            cases.check(&format!("list forged token {forged} {endpoint}"), !leaked(&text), &text);
        }
        let (_, text) = send("GET", &format!("{endpoint}tasks?pageSize=1&page_token={agent_style}"), m, v1, "").await;
        cases.check(&format!("list rest forged token {endpoint}"), !leaked(&text), &text);
        let (_, text) = send("GET", &format!("{endpoint}tasks?contextId={victim_context}"), m, v1, "").await;
        cases.check(&format!("list by alice's context {endpoint}"), !leaked(&text), &text);
    }

    // 3. Contexts: naming alice's context is refused and joins nothing (A2A §3.4.1: a client's
    //    contextId is kept or refused, never replaced); a fresh one becomes mallory's own.
    let fresh = uuid::Uuid::new_v4().to_string();
    for (label, context) in [("alice's", victim_context.as_str()), ("fresh", fresh.as_str())] {
        let adopted = label == "fresh";
        for (endpoint, named) in [(&root, skill), (&per_agent, ""), (&per_agent, skill)] {
            for field in ["contextId", "context_id"] {
                let extra = format!(r#","{field}":"{context}"{named}"#);
                let params = format!(r#"{{"message":{}}}"#, message(&extra, "mallory-in-context"));
                let (_, text) = send("POST", endpoint, m, v1, &rpc_body("SendMessage", &params)).await;
                let kept = contexts_in(&text).iter().any(|c| c == context);
                let refused = text.contains("\"error\"") && text.contains("contextId is not available");
                let expected = if adopted { kept && !refused } else { refused && !kept };
                cases.check(&format!("context {label} {field} {endpoint} {named}"), expected && !leaked(&text), &text);
            }
        }
        let params = format!(r#"{{"message":{}}}"#, message03(&format!(r#","contextId":"{context}""#), "m"));
        let (_, text) =
            send("POST", &format!("{}/agents/py03/", gw.url), m, None, &rpc_body("message/send", &params)).await;
        let kept = contexts_in(&text).iter().any(|c| c == context);
        cases.check(&format!("context 0.3 {label}"), kept == adopted && !leaked(&text), &text);
    }

    // 4. Tenants belong to their issuer: issuer B's "acme" is not issuer A's.
    for (method, params) in [
        ("GetTask", format!(r#"{{"id":"{victim}"}}"#)),
        ("CancelTask", format!(r#"{{"id":"{victim}"}}"#)),
        ("ListTasks", "{}".to_owned()),
        ("SendMessage", format!(r#"{{"message":{}}}"#, message(&format!(r#","taskId":"{victim}""#), "b"))),
    ] {
        let (_, text) = send("POST", &root, mb, v1, &rpc_body(method, &params)).await;
        cases.check(&format!("other issuer's acme {method}"), !leaked(&text), &text);
    }
    let rec_b = format!(r#"{{"message":{}}}"#, message(r#","metadata":{"skillId":"rec-b"}"#, "b"));
    let (_, text) = send("POST", &root, mb, v1, &rpc_body("SendMessage", &rec_b)).await;
    cases.check(
        "other issuer's acme may not use acme's skill",
        text.contains("-32") && !text.contains("\"result\""),
        &text,
    );
    let (_, text) = send("POST", &root, a, v1, &rpc_body("SendMessage", &rec_b)).await;
    cases.check("issuer A's acme may use it", text.contains("\"result\""), &text);

    // 5. Skills: mallory may use rec-a, not rec-b, on an agent that hosts both.
    let lab_path = format!("{}/agents/lab/", gw.url);
    let skill_cases: Vec<(&str, &String, String)> = vec![
        ("no skill on the agent's path", &lab_path, String::new()),
        ("names rec-b on the agent's path", &lab_path, r#","metadata":{"skillId":"rec-b"}"#.into()),
        ("names a skill the agent lacks", &lab_path, r#","metadata":{"skillId":"py-clarify"}"#.into()),
        ("rec-a and rec-b spelled twice", &root, r#","metadata":{"skillId":"rec-a","skill_id":"rec-b"}"#.into()),
        ("rec-a and rec-b repeated", &root, r#","metadata":{"skillId":"rec-a","skillId":"rec-b"}"#.into()),
    ];
    for (label, endpoint, extra) in &skill_cases {
        let params = format!(r#"{{"message":{}}}"#, message(extra, "mallory-skill"));
        let (_, text) = send("POST", endpoint, m, v1, &rpc_body("SendMessage", &params)).await;
        cases.check(&format!("skill jsonrpc {label}"), text.contains("\"error\""), &text);
        let body = format!(r#"{{"message":{}}}"#, message(extra, "mallory-skill"));
        let (status, text) = send("POST", &format!("{endpoint}message:send"), m, v1, &body).await;
        cases.check(&format!("skill rest {label}"), status >= 400, &text);
    }
    for endpoint in [&root, &lab_path] {
        let params = format!(
            r#"{{"message":{},"metadata":{{"skillId":"rec-b"}}}}"#,
            message(r#","metadata":{"skillId":"rec-a"}"#, "mallory-skill")
        );
        let (_, text) = send("POST", endpoint, m, v1, &rpc_body("SendMessage", &params)).await;
        cases.check(&format!("skill on message and another on request {endpoint}"), text.contains("\"error\""), &text);
    }
    // mallory's rec-a task and context on the lab: a follow-up or a context call must not reach rec-b.
    let params = format!(r#"{{"message":{}}}"#, message(r#","metadata":{"skillId":"rec-a"}"#, "mallory-rec-a"));
    let (_, text) = send("POST", &root, m, v1, &rpc_body("SendMessage", &params)).await;
    let (lab_task, lab_context) = task_ids(&text);
    cases.check("mallory may use rec-a", !lab_task.is_empty(), &text);
    let follow = format!(r#","taskId":"{lab_task}","metadata":{{"skillId":"rec-b"}}"#);
    let (_, text) =
        send("POST", &root, m, v1, &rpc_body("SendMessage", &format!(r#"{{"message":{}}}"#, message(&follow, "f"))))
            .await;
    cases.check("follow-up naming rec-b", text.contains("\"error\""), &text);
    let by_context = format!(r#","contextId":"{lab_context}""#);
    let (_, text) = send(
        "POST",
        &root,
        m,
        v1,
        &rpc_body("SendMessage", &format!(r#"{{"message":{}}}"#, message(&by_context, "mallory-in-own-context"))),
    )
    .await;
    // Her context keeps to its skill (rec-a), named to the agent so it cannot pick rec-b itself.
    let named = lab
        .seen
        .lock()
        .unwrap()
        .last()
        .is_some_and(|b| b.contains("mallory-in-own-context") && b.contains(r#""skillId":"rec-a""#));
    cases.check("own context keeps its skill, named to the agent", named && text.contains("\"result\""), &text);
    let recorded = lab.seen.lock().unwrap().clone();
    let reached_b = recorded.iter().any(|body| body.contains("rec-b") && body.contains("mallory"));
    cases.check("the lab never received mallory's rec-b call", !reached_b, &format!("{recorded:?}"));
    let canonical = recorded.iter().all(|body| !body.contains("skill_id") && !body.contains("task_id"));
    cases.check("the lab only ever received canonical bodies", canonical, &format!("{recorded:?}"));

    // 7. Nothing before authentication tells whether a task id exists: early ids are per caller.
    let early_id = uuid::Uuid::new_v4().to_string();
    let early = |id: &str| {
        format!(
            r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"text","text":"{ALICE_SECRET}"}}]}},"metadata":{{"skillId":"rec-a"}}}}"#
        )
    };
    let (status, _) = send("POST", &format!("{}/tasks/send", gw.url), a, None, &early(&early_id)).await;
    cases.check("alice's early task", status == 200, &status.to_string());
    let taken = send("POST", &format!("{}/tasks/send", gw.url), None, None, &early(&early_id)).await;
    let free =
        send("POST", &format!("{}/tasks/send", gw.url), None, None, &early(&uuid::Uuid::new_v4().to_string())).await;
    cases.check(
        "unauthenticated: a taken id answers like a free one",
        taken == free,
        &format!("{taken:?} vs {free:?}"),
    );
    let (status, text) =
        send("POST", &format!("{}/tasks/send", gw.url), m, None, &early(&early_id).replace(ALICE_SECRET, "m")).await;
    cases.check("mallory may use the same early id for her own task", status == 200 && !leaked(&text), &text);
    let (status, text) = send("GET", &format!("{}/tasks/{early_id}?historyLength=5", gw.url), m, None, "").await;
    cases.check("mallory's early id is her task", status == 200 && !text.contains(ALICE_SECRET), &text);
    let (_, text) = send("GET", &format!("{}/tasks/{early_id}?historyLength=5", gw.url), a, None, "").await;
    cases.check("alice's early id is still hers", text.contains(ALICE_SECRET), &text);

    // Finally, alice's tasks are as she left them: nobody else's message in their history.
    for (endpoint, method, params) in [(&root, "GetTask", format!(r#"{{"id":"{victim}","historyLength":50}}"#))] {
        let (_, text) = send("POST", endpoint, a, v1, &rpc_body(method, &params)).await;
        cases.check("alice's task untouched", text.contains(ALICE_SECRET) && !text.contains("mallory"), &text);
        cases.check("alice's task still waits for her", text.contains("TASK_STATE_INPUT_REQUIRED"), &text);
    }
    let (_, text) = send(
        "POST",
        &format!("{}/agents/py03/", gw.url),
        a,
        None,
        &rpc_body("tasks/get", &format!(r#"{{"id":"{victim03}"}}"#)),
    )
    .await;
    cases.check("alice's 0.3 task untouched", !text.contains("mallory"), &text);

    // alice's own pages: every task once, in order, whatever the page size.
    let mut listed: Vec<String> = Vec::new();
    let mut token_param = String::new();
    for _ in 0..20 {
        let params = format!(r#"{{"pageSize":1{token_param}}}"#);
        let (_, text) = send("POST", &root, a, v1, &rpc_body("ListTasks", &params)).await;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        listed.extend(
            v["result"]["tasks"].as_array().into_iter().flatten().filter_map(|t| t["id"].as_str().map(str::to_owned)),
        );
        match v["result"]["nextPageToken"].as_str() {
            Some(next) if !next.is_empty() => token_param = format!(r#","pageToken":"{next}""#),
            _ => break,
        }
    }
    let (_, text) = send("POST", &root, a, v1, &rpc_body("ListTasks", r#"{"pageSize":100}"#)).await;
    let all: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let total = all["result"]["totalSize"].as_u64().unwrap_or(0) as usize;
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    cases.check(
        "alice pages through all her tasks once",
        listed.contains(&victim) && listed.contains(&victim03) && unique.len() == listed.len() && listed.len() == total,
        &format!("{listed:?} total {total}"),
    );

    eprintln!("attack matrix: {} cases", cases.run);
    assert!(cases.run >= 100, "only {} cases ran", cases.run);
    assert!(
        cases.failed.is_empty(),
        "{} of {} cases failed:\n{}",
        cases.failed.len(),
        cases.run,
        cases.failed.join("\n")
    );
    drop((clarify, clarify03));
}

/// 6. A blocking send the caller abandons keeps its live-task slot while the task runs.
#[tokio::test]
async fn abandoned_blocking_sends_keep_their_live_task_slots() {
    let slow = python_agent("slow", &["--duration", "20"]).await;
    let extra = "concurrency:\n  default_max_live_tasks: 2\n  lease_ttl: 60s\n";
    let yaml = config(&[("slow", &slow.url)], &policy(extra));
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["py-slow"]).await;
    let alice = token(ISSUER_A, SECRET_A, "alice", "acme", "all");
    let impatient = reqwest::Client::builder().no_proxy().timeout(Duration::from_millis(700)).build().unwrap();
    for _ in 0..4 {
        let params = format!(r#"{{"message":{}}}"#, message(r#","metadata":{"skillId":"py-slow"}"#, "work"));
        let sent = impatient
            .post(format!("{}/", gw.url))
            .bearer_auth(&alice)
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json")
            .body(rpc_body("SendMessage", &params))
            .send()
            .await;
        // Either the caller gave up, or (the limit reached) it was refused at once.
        if let Ok(response) = sent {
            let text = response.text().await.unwrap_or_default();
            assert!(text.contains("error"), "no blocking send can finish in time: {text}");
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let params = format!(
        r#"{{"message":{},"configuration":{{"returnImmediately":true}}}}"#,
        message(r#","metadata":{"skillId":"py-slow"}"#, "one more")
    );
    let (status, text) =
        send("POST", &format!("{}/", gw.url), Some(&alice), Some("1.0"), &rpc_body("SendMessage", &params)).await;
    assert!(
        status == 429 || text.contains("-32"),
        "two abandoned tasks still run: a third is refused ({status} {text})"
    );
}

/// The config preamble of [`config`] without its backends.
fn a2a_e2e_preamble() -> String {
    config(&[], "").replace("backends:\n", "")
}

/// The same bodies, read by the a2a-sdk's own parser (`tests/python/sdk_parse.py`).
async fn sdk_reads(bodies: &[String]) -> Vec<Value> {
    use tokio::io::AsyncWriteExt;
    let script = a2a_e2e::repo_root().join("tests/python/sdk_parse.py");
    let mut child = tokio::process::Command::new(a2a_e2e::python())
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sdk parser");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = bodies.iter().map(|b| format!("{}\n", Value::String(b.clone()))).collect();
    stdin.write_all(input.as_bytes()).await.expect("write");
    drop(stdin);
    let output =
        tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.expect("in time").expect("runs");
    let lines: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), bodies.len(), "one reading per body");
    lines
}

/// Ambiguous SendMessage params: aliases, repeated keys, both spellings, skills in several places,
/// escaped key names, nulls and empty strings. Each is sent through the gateway to a recording
/// agent; the SDK's parser then reads the original and what the agent received. Either the gateway
/// refused, or the agent reads exactly the ids and skill the gateway judged: no task (the gateway
/// knows none of these ids, so a task it had seen would have been refused as not found), the same
/// message, context and skill as the original says.
#[tokio::test]
async fn differential_the_agent_reads_what_the_gateway_judged() {
    let lab = start_lab().await;
    let gw = gateway(BIN, &config(&[("lab", &lab.url)], "")).await;
    wait_for_skills(&gw.url, &["rec-a", "rec-b"]).await;
    let parts = r#""parts":[{"text":"hi"}]"#;
    let corpus: Vec<String> = [
        r#"{"message":{"messageId":"m1","task_id":"t-x",PARTS}}"#,
        r#"{"message":{"messageId":"m1","taskId":"","task_id":"t-x",PARTS}}"#,
        r#"{"message":{"messageId":"m1","task_id":"t-x","taskId":null,PARTS}}"#,
        r#"{"message":{"messageId":"m1","taskId":"t-x","taskId":"",PARTS}}"#,
        r#"{"message":{"messageId":"m1","taskId":"","taskId":"t-x",PARTS}}"#,
        r#"{"message":{"messageId":"m1","task\u005fid":"t-x",PARTS}}"#,
        r#"{"message":{"messageId":"m1","contextId":"c-1","context_id":"c-2",PARTS}}"#,
        r#"{"message":{"messageId":"m1","context_id":"c-2",PARTS}}"#,
        r#"{"message":{"messageId":"m1","message_id":"m2",PARTS}}"#,
        r#"{"message":{"message_id":"m2",PARTS}}"#,
        r#"{"message":{"messageId":"m1","messageId":"m2",PARTS}}"#,
        r#"{"message":{"messageId":"m1","reference_task_ids":["t-x"],PARTS}}"#,
        r#"{"message":{"messageId":"m1","referenceTaskIds":["t-y"],"reference_task_ids":["t-x"],PARTS}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a","skill_id":"rec-b"}}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a","skillId":"rec-b"}}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"metadata":{"skillId":"rec-b"}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"metadata":{"skill_id":"rec-b"}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"metadata":{"skillId":"rec-a"}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skill_id":"rec-b"}}}"#,
        r#"{"message":{"messageId":"m1",PARTS},"message":{"messageId":"m2","taskId":"t-x",PARTS}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"configuration":{"historyLength":1,"history_length":5}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"configuration":{"return_immediately":true}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"tenant":"lab"}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"}},"tenant":"other"}"#,
        r#"{"message":{"messageId":"m1","parts":[{"text":"a","text":"b"}],"metadata":{"skillId":"rec-a"}}}"#,
        r#"{"message":{"messageId":"m1","parts":[{"text":"a","media_type":"x","mediaType":"y"}]}}"#,
        r#"{"message":{"messageId":"m1","parts":[{"data":{"k":1,"k":2}}],"metadata":{"skillId":"rec-a"}}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a","nested":{"a":1,"a":2}}}}"#,
        r#"{"message":{"messageId":"m1",PARTS,"metadata":{"skillId":"rec-a"},"extensions":["e"],"task_id":null}}"#,
        r#"{"message":{"messageId":"m1","TaskId":"t-x",PARTS,"metadata":{"skillId":"rec-a"}}}"#,
    ]
    .iter()
    .map(|b| b.replace("PARTS", parts))
    .collect();
    let mut sent: Vec<(String, Option<String>)> = Vec::new();
    for params in &corpus {
        let before = lab.seen.lock().unwrap().len();
        let body = rpc_body("SendMessage", params);
        let (_, text) = send("POST", &format!("{}/agents/lab/", gw.url), None, Some("1.0"), &body).await;
        let seen = lab.seen.lock().unwrap();
        let forwarded = (seen.len() > before).then(|| seen.last().cloned()).flatten();
        assert!(forwarded.is_some() || text.contains("\"error\""), "neither forwarded nor refused: {params} → {text}");
        let forwarded = forwarded.map(|f| {
            let envelope: Value = serde_json::from_str(&f).expect("the agent got JSON");
            envelope["params"].to_string()
        });
        sent.push((params.clone(), forwarded));
    }
    let originals = sdk_reads(&corpus).await;
    let forwarded_bodies: Vec<String> = sent.iter().filter_map(|(_, f)| f.clone()).collect();
    let mut agent_reads = sdk_reads(&forwarded_bodies).await.into_iter();
    let mut forwarded_count = 0;
    for ((params, forwarded), original) in sent.iter().zip(&originals) {
        let Some(_) = forwarded else { continue };
        forwarded_count += 1;
        let agent = agent_reads.next().expect("a reading");
        assert_eq!(agent["ok"], true, "the agent cannot read what the gateway sent: {params}");
        assert_eq!(agent["task_id"], "", "the gateway judged a new task; the agent reads a task id: {params}");
        let skills = agent["skills"].as_array().map_or(0, Vec::len);
        assert!(skills <= 1, "the agent reads two skills: {params}: {agent}");
        if original["ok"] == true {
            for field in ["message_id", "context_id", "skills", "reference_task_ids"] {
                assert_eq!(agent[field], original[field], "{field} differs: {params}");
            }
        }
    }
    assert!(forwarded_count >= 5 && forwarded_count < corpus.len(), "{forwarded_count} of {} forwarded", corpus.len());
}
