//! The operator's surface under attack (issue 27): a self-registered agent cannot take over another
//! backend's skill, `card_path` cannot steer the registration probe, a web page cannot drive a
//! loopback admin API, secrets stay out of `/admin/v1/config`, issuer names cannot alias the
//! non-JWT authorities, and refusals under a failing audit sink leave evidence.

use a2a_e2e::{client, config, example_agent, python_agent, rpc, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;
use crate::admin::{admin_call, new_key};

/// A registration credential's YAML (under `admin.registration.credentials`).
fn credential(id: &str, hash: &str, skills: &str, shared: &str) -> String {
    format!(
        "      - id: {id}\n        hash: '{hash}'\n        names: ['team-a-*']\n        skills: {skills}\n        shared_skills: {shared}\n        origins: ['http://127.0.0.1:*']\n        allow_addresses: ['127.0.0.0/8']\n"
    )
}

/// The backend each of the admin API's tasks went to.
async fn task_backends(admin: &str) -> Vec<String> {
    let (_, tasks) = admin_call("GET", &format!("{admin}/admin/v1/tasks?all=true"), None, None).await;
    let callers = tasks["callers"].as_array().cloned().unwrap_or_default();
    callers
        .iter()
        .flat_map(|c| c["tasks"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["backend"].as_str().map(str::to_string))
        .collect()
}

/// Finding 1: an a2a-sdk agent whose card also claims `echo` (served by a file-configured backend)
/// is refused unless its credential grants `echo` and shares it explicitly; other callers' `echo`
/// messages never reach it.
#[tokio::test]
async fn a_registered_agent_cannot_take_over_a_skill_it_was_not_granted() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let agent = python_agent("echo", &["--extra-skill", "echo"]).await;
    let (narrow, narrow_hash) = new_key("narrow");
    let (unshared, unshared_hash) = new_key("unshared");
    let (shared, shared_hash) = new_key("shared");
    let extra = format!(
        "admin:\n  registration:\n    credentials:\n{}{}{}",
        credential("narrow", &narrow_hash, "['py-*']", "[]"),
        credential("unshared", &unshared_hash, "['py-*', 'echo']", "[]"),
        credential("shared", &shared_hash, "['py-*', 'echo']", "['echo']"),
    );
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let admin = gw.admin.clone().unwrap();
    let url = format!("{admin}/admin/v1/registrations");
    wait_for_skills(&gw.url, &["echo"]).await;
    let body = json!({"name": "team-a-py", "url": agent.url});

    // Not granted at all: refused, with the skill named.
    let (status, answer) = admin_call("POST", &url, Some(&narrow), Some(body.clone())).await;
    assert_eq!(status, 403, "a card claiming an ungranted skill: {answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("'echo'"), "{answer}");
    // Granted but served by a file backend, and not shared: refused, naming the backend.
    let (status, answer) = admin_call("POST", &url, Some(&unshared), Some(body.clone())).await;
    assert_eq!(status, 403, "a skill a file backend serves: {answer}");
    assert!(answer["error"]["message"].as_str().unwrap_or_default().contains("shared_skills"), "{answer}");

    // Other callers' echo messages all reach the file backend.
    for i in 0..6 {
        let answer = rpc(
            &format!("{}/", gw.url),
            "SendMessage",
            json!({"message": text_message(&format!("m{i}"), Some("echo"))}),
        )
        .await;
        assert!(answer["result"]["task"]["id"].is_string(), "{answer}");
    }
    let backends = task_backends(&admin).await;
    assert_eq!(backends.len(), 6, "{backends:?}");
    assert!(backends.iter().all(|b| b == "echo"), "another caller's message reached the agent: {backends:?}");

    // Shared explicitly: admitted, and the admin API says by whom and with which grant.
    let (status, answer) = admin_call("POST", &url, Some(&shared), Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    wait_for_skills(&gw.url, &["echo", "py-echo"]).await;
    let (_, list) = admin_call("GET", &format!("{admin}/admin/v1/backends/team-a-py"), None, None).await;
    assert_eq!(list["source"], "agent", "{list}");
    assert_eq!(list["skill_grant"]["credential"], "shared", "{list}");
    assert_eq!(list["skill_grant"]["skills"], json!(["py-*", "echo"]), "{list}");
    assert_eq!(list["skill_grant"]["shared_skills"], json!(["echo"]), "{list}");
    let (_, file_backend) = admin_call("GET", &format!("{admin}/admin/v1/backends/echo"), None, None).await;
    assert!(file_backend.get("skill_grant").is_none(), "{file_backend}");
}

/// Finding 2: `card_path` cannot send the registration probe to another host or port: a path
/// that would change the URL's authority is refused before anything is fetched, and the error
/// says nothing of the other port.
#[tokio::test]
async fn card_path_cannot_steer_the_registration_probe() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let agent = python_agent("echo", &[]).await;
    let (key, hash) = new_key("team-a");
    let extra = format!("admin:\n  registration:\n    credentials:\n{}", credential("team-a", &hash, "['py-*']", "[]"));
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let url = format!("{}/admin/v1/registrations", gw.admin.clone().unwrap());
    let other = echo.url.trim_start_matches("http://");
    for card_path in [
        format!("@{other}/.well-known/agent-card.json"),
        format!("//{other}/.well-known/agent-card.json"),
        "/../../.well-known/agent-card.json".to_string(),
        "/x?y=1".to_string(),
        "x".to_string(),
    ] {
        let body = json!({"name": "team-a-py", "url": agent.url, "card_path": card_path});
        let (status, answer) = admin_call("POST", &url, Some(&key), Some(body)).await;
        assert_eq!(status, 400, "{card_path}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("card_path:") && !message.contains(other), "{card_path}: {answer}");
    }
    let (_, list) = admin_call("GET", &format!("{}/admin/v1/backends", gw.admin.clone().unwrap()), None, None).await;
    assert_eq!(list["backends"].as_array().map(Vec::len), Some(1), "nothing registered: {list}");
    // The agent's own card path is accepted.
    let body = json!({"name": "team-a-py", "url": agent.url, "card_path": "/.well-known/agent-card.json"});
    let (status, answer) = admin_call("POST", &url, Some(&key), Some(body)).await;
    assert_eq!(status, 201, "{answer}");
}

/// A raw admin request: (status, body).
async fn admin_raw(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, Value) {
    let mut request = client().request(method.parse().unwrap(), url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.expect("admin call");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Finding 3: a web page cannot drive a loopback admin API without credentials — not with a
/// simple cross-site POST, not through a rebound DNS name — and the same rules hold with
/// `admin.auth`.
#[tokio::test]
async fn a_web_page_cannot_drive_the_admin_api() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let review = example_agent(BIN, "review", &[]).await;
    let (key, hash) = new_key("ops");
    let open = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    let with_auth =
        format!("admin:\n  auth:\n    api_keys:\n      keys:\n        - {{id: ops, hash: '{hash}', caller: ops}}\n");
    let guarded = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &with_auth)).await;
    let register = json!({"name": "review", "url": review.url}).to_string();
    let bearer = format!("Bearer {key}");
    for (gw, auth) in [(&open, None), (&guarded, Some(bearer.as_str()))] {
        let admin = gw.admin.clone().unwrap();
        let port = admin.rsplit(':').next().unwrap().to_string();
        let with = |extra: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
            let mut all: Vec<(&'static str, String)> = extra.to_vec();
            if let Some(auth) = auth {
                all.push(("authorization", auth.to_string()));
            }
            all
        };
        let call =
            |method: &'static str, path: &'static str, headers: Vec<(&'static str, String)>, body: Option<String>| {
                let url = format!("{admin}{path}");
                async move {
                    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
                    admin_raw(method, &url, &headers, body.as_deref()).await
                }
            };
        // A form-like cross-site POST (a simple request: no preflight).
        let (status, body) = call(
            "POST",
            "/admin/v1/backends",
            with(&[("origin", "http://evil.example".into()), ("content-type", "text/plain".into())]),
            Some(register.clone()),
        )
        .await;
        assert_eq!(status, 403, "cross-site POST (auth: {}): {body}", auth.is_some());
        // A simple POST without an Origin (a same-site page, a form) is refused too.
        if auth.is_none() {
            let (status, body) = call(
                "POST",
                "/admin/v1/backends",
                with(&[("content-type", "text/plain".into())]),
                Some(register.clone()),
            )
            .await;
            assert_eq!(status, 403, "text/plain POST: {body}");
        }
        // DNS rebinding: the right address under another name.
        let (status, body) =
            call("GET", "/admin/v1/tasks?all=true", with(&[("host", format!("evil.example:{port}"))]), None).await;
        assert_eq!(status, 403, "rebound Host (auth: {}): {body}", auth.is_some());
        let (status, _) = call("GET", "/admin/", with(&[("host", format!("evil.example:{port}"))]), None).await;
        assert_eq!(status, 403, "the status page too");
        // The operator's own calls still work: the listener's address or localhost, JSON bodies.
        let (status, body) =
            call("GET", "/admin/v1/tasks?all=true", with(&[("host", format!("localhost:{port}"))]), None).await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = call(
            "POST",
            "/admin/v1/backends",
            with(&[("origin", admin.clone()), ("content-type", "application/json".into())]),
            Some(register.clone()),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
}

/// Finding 5: an issuer named like a non-JWT tenant authority (`api-key`, `introspection`) is
/// refused by `check` and at start, so its tokens cannot share the API-key callers' tenants.
#[tokio::test]
async fn an_issuer_cannot_take_a_reserved_authority_name() {
    for reserved in ["api-key", "introspection", "anonymous"] {
        let yaml = format!(
            "auth:\n  jwt:\n    issuers:\n      - issuer: {reserved}\n        audiences: [gw]\n        hs256_secret: '0123456789abcdef0123456789abcdef'\n        tenant_claim: org\nbackends:\n  - {{name: echo, url: 'http://127.0.0.1:9'}}\n"
        );
        let (ok, text) = crate::cli::check(&yaml);
        assert!(!ok, "check accepted issuer '{reserved}': {text}");
        assert!(text.contains("auth.jwt.issuers[0].issuer") && text.contains("reserved"), "{text}");
        // At load: the gateway refuses to start with it.
        let path = std::env::temp_dir().join(format!("a2a-reserved-{}.yaml", uuid::Uuid::new_v4().simple()));
        let _cleanup = a2a_e2e::TempFile(path.clone());
        std::fs::write(&path, &yaml).unwrap();
        let mut child = std::process::Command::new(BIN)
            .args(["serve", "--config", &path.display().to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        assert!(status.is_some_and(|s| !s.success()), "the gateway started with issuer '{reserved}'");
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(stderr.contains("reserved"), "{stderr}");
    }
}

/// Finding 4: `/admin/v1/config` shows no secret, whatever its field is called: the audit chain
/// key, an issuer's shared secret, a backend's bearer token, key hashes — all `[redacted]`.
#[tokio::test]
async fn the_effective_config_shows_no_secret() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let audit = std::env::temp_dir().join(format!("a2a-redact-audit-{}.jsonl", uuid::Uuid::new_v4().simple()));
    let _audit = a2a_e2e::TempFile(audit.clone());
    let (_, hash) = new_key("team-a");
    let chain_key = "chain-key-0123456789abcdef0123456789abcdef";
    let hs256 = "hs256-secret-0123456789abcdef0123456789";
    let extra = format!(
        "audit:\n  chain_key: '{chain_key}'\n  file: {{path: '{}'}}\nauth:\n  jwt:\n    issuers:\n      - issuer: https://idp.example\n        audiences: [gw]\n        hs256_secret: '{hs256}'\nadmin:\n  registration:\n    credentials:\n{}",
        audit.display(),
        credential("team-a", &hash, "['py-*']", "[]"),
    );
    let yaml = config(&[("echo", &echo.url)], &extra).replace(
        &format!("    url: {}\n", echo.url),
        &format!("    url: {}\n    auth: {{bearer: backend-token-xyz}}\n", echo.url),
    );
    let gw = a2a_e2e::gateway(BIN, &yaml).await;
    let (status, effective) =
        admin_call("GET", &format!("{}/admin/v1/config", gw.admin.clone().unwrap()), None, None).await;
    assert_eq!(status, 200, "{effective}");
    let text = effective.to_string();
    for secret in [chain_key, hs256, "backend-token-xyz", &hash] {
        assert!(!text.contains(secret), "{secret} is shown: {text}");
    }
    assert_eq!(effective["file"]["audit"]["chain_key"], "[redacted]", "{text}");
    assert_eq!(effective["file"]["auth"]["jwt"]["issuers"][0]["issuer"], "https://idp.example", "{text}");
}

/// Admission probes: an a2a-sdk agent whose card offers HTTP+JSON that it does not serve is
/// refused before it takes any traffic, with the reason in the answer and in the admin API; an
/// agent whose every binding answers is admitted, and its refusal is forgotten.
#[tokio::test]
async fn an_agent_failing_its_admission_probe_stays_out_of_routing() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let liar = python_agent("echo", &["--unserved-rest"]).await;
    let honest = python_agent("echo", &[]).await;
    let (key, hash) = new_key("team-a");
    let extra = format!("admin:\n  registration:\n    credentials:\n{}", credential("team-a", &hash, "['py-*']", "[]"));
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let admin = gw.admin.clone().unwrap();
    let url = format!("{admin}/admin/v1/registrations");
    wait_for_skills(&gw.url, &["echo"]).await;

    let (status, answer) =
        admin_call("POST", &url, Some(&key), Some(json!({"name": "team-a-py", "url": liar.url}))).await;
    assert_eq!(status, 422, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("admission probe") && message.contains("HTTP+JSON"), "{answer}");
    let (_, list) = admin_call("GET", &format!("{admin}/admin/v1/backends"), None, None).await;
    assert_eq!(list["backends"].as_array().map(Vec::len), Some(1), "never in routing: {list}");
    let refused = &list["refused_agents"][0];
    assert_eq!(
        (refused["name"].as_str(), refused["credential"].as_str()),
        (Some("team-a-py"), Some("team-a")),
        "{list}"
    );
    assert!(refused["reason"].as_str().unwrap_or_default().contains("HTTP+JSON"), "{list}");
    let card = a2a_e2e::get_json(&format!("{}/.well-known/agent-card.json", gw.url)).await.1;
    assert!(!card.to_string().contains("py-echo"), "the refused agent's skill is not offered: {card}");

    let (status, answer) =
        admin_call("POST", &url, Some(&key), Some(json!({"name": "team-a-py", "url": honest.url}))).await;
    assert_eq!(status, 201, "{answer}");
    wait_for_skills(&gw.url, &["echo", "py-echo"]).await;
    let (_, list) = admin_call("GET", &format!("{admin}/admin/v1/backends"), None, None).await;
    assert_eq!(list["refused_agents"], json!([]), "{list}");
}

/// A self-registered agent named by a host name (not an IP literal) is fetched, probed and
/// refreshed through the address screen, which judges the name at each connection: with its
/// addresses allow-listed it is admitted and stays healthy.
#[tokio::test]
async fn an_agent_named_by_host_name_is_refreshed_through_the_screen() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let agent = python_agent("echo", &[]).await;
    let (key, hash) = new_key("team-a");
    let extra = format!(
        "admin:\n  registration:\n    credentials:\n{}",
        credential("team-a", &hash, "['py-*']", "[]")
            .replace("['http://127.0.0.1:*']", "['http://localhost:*']")
            .replace("['127.0.0.0/8']", "['127.0.0.0/8', '::1']")
    );
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    let admin = gw.admin.clone().unwrap();
    let url = agent.url.replace("127.0.0.1", "localhost");
    let (status, answer) = admin_call(
        "POST",
        &format!("{admin}/admin/v1/registrations"),
        Some(&key),
        Some(json!({"name": "team-a-py", "url": url})),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    wait_for_skills(&gw.url, &["echo", "py-echo"]).await;
    // Several health rounds (200 ms) later its card still refreshes.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let (_, backend) = admin_call("GET", &format!("{admin}/admin/v1/backends/team-a-py"), None, None).await;
    assert_eq!((backend["healthy"].as_bool(), backend["last_card_error"].is_null()), (Some(true), true), "{backend}");
}
