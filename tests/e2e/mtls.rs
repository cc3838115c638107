//! Mutual TLS: a verified client certificate is the caller (`mtls:<SPIFFE ID or DN>`), held to the
//! permissions like any other; certificates from a wrong CA, expired ones, and a gateway whose name
//! does not match are refused in the handshake, before any task exists.

use std::time::Duration;

use a2a_e2e::{Proc, example_agent, gateway, python_client, text_message};
use serde_json::{Value, json};

use crate::BIN;
use crate::tls::{Issued, Pki, error_chain, get_tls, tls_client, tls_config, tls_section, wait_for_skills_tls};

const BILLING: &str = "spiffe://example.org/ns/prod/sa/billing";

/// JSON-RPC over `client`: (HTTP status, body), or the transport error.
async fn rpc_tls(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Result<(u16, Value), String> {
    rpc_tls_as(client, None, url, method, params).await
}

async fn rpc_tls_as(
    client: &reqwest::Client,
    bearer: Option<&str>,
    url: &str,
    method: &str,
    params: Value,
) -> Result<(u16, Value), String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = client.post(url).header("A2A-Version", "1.0").json(&body);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|e| error_chain(&e))?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

/// Tasks the gateway's directory holds, from the admin listener's metrics.
async fn tasks_known(client: &reqwest::Client, gw: &Proc) -> f64 {
    let admin = gw.admin.as_deref().expect("admin listener");
    let text = client.get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find(|l| l.starts_with("a2a_task_directory_entries{kind=\"task\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

struct Setup {
    pki: Pki,
    callers: Issued,
    servers: Issued,
    gw: Proc,
    _agents: Vec<Proc>,
}

/// A gateway on TLS whose callers are known by certificates from the `callers` CA: the billing
/// workload may use `echo` only.
async fn setup(mode: &str, extra_auth: &str) -> Setup {
    let pki = Pki::new();
    let servers = pki.ca("servers");
    let callers = pki.ca("callers");
    let server = pki.server(&servers, "gateway");
    let agents = vec![example_agent(BIN, "echo", &[]).await, example_agent(BIN, "slow", &["--slow-secs", "30"]).await];
    let tls = tls_section(&server, &format!("    client_ca: [{}]\n", callers.cert.display()));
    let extra = format!(
        "auth:\n  mtls:\n    mode: {mode}\n{extra_auth}permissions:\n  default: deny\n  rules:\n    - skills: [echo]\n      callers: ['mtls:{BILLING}']\n"
    );
    let gw = gateway(BIN, &tls_config(&[("echo", &agents[0].url), ("slow", &agents[1].url)], &tls, &extra)).await;
    Setup { pki, callers, servers, gw, _agents: agents }
}

#[tokio::test]
async fn a_client_certificate_is_a_caller_allowed_one_skill_and_refused_another() {
    let s = setup("required", "").await;
    let billing = s.pki.leaf(&s.callers, "billing", "/O=Example/CN=billing", &format!("URI:{BILLING}"), 2);
    let client = tls_client(&s.servers.cert, Some(&billing), false);
    wait_for_skills_tls(&client, &s.gw.url, &["echo", "slow"]).await;
    let root = format!("{}/", s.gw.url);

    let (status, sent) =
        rpc_tls(&client, &root, "SendMessage", json!({"message": text_message("hi", Some("echo"))})).await.unwrap();
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let (_, refused) =
        rpc_tls(&client, &root, "SendMessage", json!({"message": text_message("hi", Some("slow"))})).await.unwrap();
    assert!(refused["error"]["message"].as_str().unwrap_or("").contains("may not use the skill"), "{refused}");

    // The official SDK client with the same certificate, over JSON-RPC, HTTP+JSON and gRPC.
    let (ca, cert, key) =
        (s.servers.cert.display().to_string(), billing.cert.display().to_string(), billing.key.display().to_string());
    for binding in ["jsonrpc", "rest", "grpc"] {
        let tls = ["--ca", ca.as_str(), "--cert", cert.as_str(), "--key", key.as_str()];
        let mut allowed = vec!["--base", s.gw.url.as_str(), "--binding", binding, "--flow", "send"];
        allowed.extend(tls);
        let (ok, _, report) = python_client(&allowed).await;
        assert!(ok, "{binding}: {report}");
        let mut denied =
            vec!["--base", s.gw.url.as_str(), "--binding", binding, "--flow", "send", "--skill-id", "slow"];
        denied.extend(tls);
        let (ok, lines, report) = python_client(&denied).await;
        assert!(!ok, "{binding}: {report}");
        // HTTP bindings: the SDK reports the 403; gRPC: PERMISSION_DENIED with the message.
        let error = lines[0]["detail"]["error"].as_str().unwrap_or("").to_lowercase();
        assert!(error.contains("403") || error.contains("may not use the skill"), "{binding}: {report}");
    }
    // Four sends reached the echo agent; none of the refused ones made a task.
    assert_eq!(tasks_known(&client, &s.gw).await, 4.0);
}

#[tokio::test]
async fn a_wrong_ca_an_expired_certificate_and_a_wrong_host_name_are_refused_before_any_task() {
    let s = setup("required", "").await;
    let good = s.pki.leaf(&s.callers, "billing", "/CN=billing", &format!("URI:{BILLING}"), 2);
    let trusted = tls_client(&s.servers.cert, Some(&good), false);
    wait_for_skills_tls(&trusted, &s.gw.url, &["echo"]).await;
    let root = format!("{}/", s.gw.url);
    let send = json!({"message": text_message("hi", Some("echo"))});

    let rogue_ca = s.pki.ca("rogue");
    let rogue = s.pki.leaf(&rogue_ca, "rogue-client", "/CN=billing", &format!("URI:{BILLING}"), 2);
    let expired = s.pki.leaf(&s.callers, "expired", "/CN=billing", &format!("URI:{BILLING}"), -1);
    // The caller reads the gateway's alert (TLS 1.3 delivers it after the client's first write, so
    // a client may see only the closed connection); the gateway logs the precise reason.
    for (name, identity, alert, logged) in [
        ("wrong CA", Some(&rogue), "UnknownCA", "invalid peer certificate: UnknownIssuer"),
        ("expired", Some(&expired), "CertificateExpired", "invalid peer certificate: Expired"),
        ("no certificate", None, "CertificateRequired", "peer sent no certificates"),
    ] {
        let client = tls_client(&s.servers.cert, identity, false);
        let error = rpc_tls(&client, &root, "SendMessage", send.clone()).await.unwrap_err();
        let cut = ["connection closed", "broken pipe", "connection reset"].iter().any(|c| error.contains(c));
        assert!(error.contains(alert) || cut, "{name}: {error}");
        let log = s.gw.log_with(&[logged]).await;
        assert!(log.contains(logged), "{name}: the gateway's log does not say '{logged}'");
    }
    // The official SDK client sees the handshake refusal too.
    let (ca, cert, key) =
        (s.servers.cert.display().to_string(), rogue.cert.display().to_string(), rogue.key.display().to_string());
    let (ok, lines, report) = python_client(&[
        "--base",
        &s.gw.url,
        "--binding",
        "jsonrpc",
        "--flow",
        "send",
        "--ca",
        &ca,
        "--cert",
        &cert,
        "--key",
        &key,
    ])
    .await;
    assert!(!ok, "{report}");
    assert!(lines[0]["detail"].to_string().to_lowercase().contains("unknown ca"), "{report}");

    // A gateway answering under another name than the one called is refused by the caller.
    let elsewhere = s.pki.leaf(&s.servers, "elsewhere", "/CN=elsewhere", "DNS:elsewhere.example", 2);
    let impostor = gateway(
        BIN,
        &tls_config(
            &[("echo", "http://127.0.0.1:9")],
            &tls_section(&elsewhere, &format!("    client_ca: [{}]\n", s.callers.cert.display())),
            "auth:\n  mtls:\n    mode: required\n",
        ),
    )
    .await;
    let error = get_tls(&trusted, &format!("{}/.well-known/agent-card.json", impostor.url)).await.unwrap_err();
    assert!(error.contains("NotValidForName") || error.contains("not valid for name"), "{error}");
    let (ok, lines, report) =
        python_client(&["--base", &impostor.url, "--binding", "jsonrpc", "--flow", "card", "--ca", &ca]).await;
    assert!(!ok && lines[0]["detail"].to_string().to_lowercase().contains("mismatch"), "{report}");

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(tasks_known(&trusted, &s.gw).await, 0.0, "no refused call made a task");
}

#[tokio::test]
async fn with_optional_certificates_token_callers_still_get_in() {
    const KEY: &str = "ops-secret-token-0123456789abcdef";
    let keys = format!(
        "  api_keys:\n    keys:\n      - {{id: ops, hash: '{}', caller: ops, free_form: true}}\n",
        a2a_policies::auth::hash_key(KEY)
    );
    let s = setup("optional", &keys).await;
    let anonymous = tls_client(&s.servers.cert, None, false);
    wait_for_skills_tls(&anonymous, &s.gw.url, &["echo"]).await;
    let root = format!("{}/", s.gw.url);
    let send = json!({"message": text_message("hi", Some("echo"))});
    // No certificate, no token: missing credentials.
    let (status, _) = rpc_tls(&anonymous, &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!(status, 401);
    // No certificate, the API key: the key's caller, who has no rule for echo.
    let (status, denied) = rpc_tls_as(&anonymous, Some(KEY), &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!(status, 403, "{denied}");
    assert!(denied["error"]["message"].as_str().unwrap_or("").contains("may not use the skill"), "{denied}");
    // The certificate: the billing workload, allowed echo.
    let billing = s.pki.leaf(&s.callers, "billing", "/CN=billing", &format!("URI:{BILLING}"), 2);
    let with_cert = tls_client(&s.servers.cert, Some(&billing), false);
    let (status, sent) = rpc_tls(&with_cert, &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!((status, &sent["result"]["task"]["status"]["state"]), (200, &json!("TASK_STATE_COMPLETED")), "{sent}");
    // Both at once is ambiguous.
    let (status, _) = rpc_tls_as(&with_cert, Some(KEY), &root, "SendMessage", send).await.unwrap();
    assert_eq!(status, 401);
}

/// RFC 8705: with `with_token` and `bind_token`, a JWT is accepted only over a connection whose
/// client certificate its `cnf.x5t#S256` names; the caller is the token's.
#[tokio::test]
async fn a_bound_token_works_only_with_its_certificate() {
    const SECRET: &str = "0123456789abcdef0123456789abcdef-mtls";
    const ISSUER: &str = "https://idp.test/";
    let jwt = format!(
        "    bind_token: true\n  jwt:\n    issuers:\n      - {{issuer: '{ISSUER}', audiences: [a2a-gateway], hs256_secret: '{SECRET}'}}\n"
    );
    let s = setup("with_token", &jwt).await;
    let billing = s.pki.leaf(&s.callers, "billing", "/CN=billing", &format!("URI:{BILLING}"), 2);
    let other = s.pki.leaf(&s.callers, "other", "/CN=other", "URI:spiffe://example.org/other", 2);
    let with_billing = tls_client(&s.servers.cert, Some(&billing), false);
    wait_for_skills_tls(&with_billing, &s.gw.url, &["echo"]).await;
    let root = format!("{}/", s.gw.url);
    let thumbprint = |issued: &Issued| {
        use base64::Engine;
        use rustls::pki_types::pem::PemObject;
        use sha2::Digest;
        let der = rustls::pki_types::CertificateDer::from_pem_file(&issued.cert).unwrap();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(der.as_ref()))
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |cnf: Option<String>| {
        let mut claims = json!({"iss": ISSUER, "aud": "a2a-gateway", "sub": "alice", "iat": now, "exp": now + 600});
        if let Some(thumbprint) = cnf {
            claims["cnf"] = json!({"x5t#S256": thumbprint});
        }
        a2a_e2e::hs256_token(SECRET, &claims)
    };
    // The token's caller is alice, who has no rule for echo: known (403), not refused (401).
    let send = json!({"message": text_message("hi", Some("echo"))});
    let bound = token(Some(thumbprint(&billing)));
    let (status, body) = rpc_tls_as(&with_billing, Some(&bound), &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!(status, 403, "{body}");
    // The same token over another certificate, and a token bound to nothing: 401.
    let with_other = tls_client(&s.servers.cert, Some(&other), false);
    let (status, body) = rpc_tls_as(&with_other, Some(&bound), &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!(status, 401, "{body}");
    let (status, body) =
        rpc_tls_as(&with_billing, Some(&token(None)), &root, "SendMessage", send.clone()).await.unwrap();
    assert_eq!(status, 401, "{body}");
    // The certificate alone is not enough in this mode.
    let (status, body) = rpc_tls(&with_billing, &root, "SendMessage", send).await.unwrap();
    assert_eq!(status, 401, "{body}");
    let log = s.gw.log_with(&["is another certificate's", "the token has no cnf.x5t#S256"]).await;
    assert!(log.contains("is another certificate's") && log.contains("the token has no cnf.x5t#S256"), "log");
}
