//! The edge under attack: slow and greedy clients at the listener, floods before authentication,
//! identity-provider calls kept bounded, and every answered request metered by the rate limit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2a_e2e::{Proc, config, example_agent, gateway, rpc, text_message, wait_for_skills};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::BIN;

/// A raw connection to the gateway from `source` (any 127.x address on loopback).
async fn connect_from(gw: &Proc, source: [u8; 4]) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((source, 0))).unwrap();
    socket.connect(SocketAddr::from(([127, 0, 0, 1], gw.port()))).await.unwrap()
}

/// Reads until the peer closes the connection; what it sent, or `None` if it is still open after
/// `limit` (a generous liveness bound, not a timing assertion).
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + limit;
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline.into(), stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(seen),
            Ok(Ok(n)) => seen.extend_from_slice(&buffer[..n]),
        }
    }
}

/// The echo agent behind a gateway whose listener has these `protection` settings (YAML flow
/// map entries, e.g. `header_read_timeout: 300ms`); both are kept alive by the caller.
async fn protected_gateway(protection: &str) -> (Proc, Proc) {
    let echo = example_agent(BIN, "echo", &[]).await;
    // `config` writes its own `listeners:` block; the protection goes inside it.
    let yaml = config(&[("echo", &echo.url)], "").replacen(
        "listeners:\n",
        &format!("listeners:\n  protection: {{{protection}}}\n"),
        1,
    );
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    (echo, gw)
}

async fn metrics(gw: &Proc) -> String {
    let admin = gw.admin.clone().expect("admin listener");
    a2a_e2e::client().get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn slow_header_and_silent_connections_are_closed_after_the_header_timeout() {
    let (_echo, gw) = protected_gateway("header_read_timeout: 300ms").await;

    let mut silent = connect_from(&gw, [127, 0, 0, 1]).await;
    let mut trickle = connect_from(&gw, [127, 0, 0, 1]).await;
    let writer = tokio::spawn(async move {
        // Headers one byte every 50 ms: never complete within the timeout.
        for byte in b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n" {
            if trickle.write_all(&[*byte]).await.is_err() {
                return trickle;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        trickle
    });
    assert!(read_to_close(&mut silent, Duration::from_secs(10)).await.is_some(), "the silent connection is closed");
    let mut trickle = writer.await.unwrap();
    assert!(read_to_close(&mut trickle, Duration::from_secs(10)).await.is_some(), "the trickling one too");

    // A normal caller is unaffected, and the closes are counted.
    let answer = rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("x", Some("echo"))})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let text = metrics(&gw).await;
    assert!(text.contains("a2a_listener_refused_total{reason=\"header_timeout\"}"), "{text}");
}

#[tokio::test]
async fn a_next_request_that_stops_after_its_first_bytes_is_closed_after_the_header_timeout() {
    // An idle timeout far beyond the read bound below: only the header timeout can close it in time.
    let (_echo, gw) = protected_gateway("header_read_timeout: 300ms, idle_timeout: 120s").await;

    let mut stream = connect_from(&gw, [127, 0, 0, 1]).await;
    stream.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    // Read the first answer whole (its head, then content-length bytes), keeping the connection.
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await.unwrap().unwrap();
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        let Some(end) = text.find("\r\n\r\n") else { continue };
        let length = text
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map(|v| v.trim().parse::<usize>().unwrap());
        if answer.len() >= end + 4 + length.expect("a content-length") {
            break;
        }
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    // The next request starts, then stops: its headers never complete.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stream.write_all(b"POST / HTT").await.unwrap();
    assert!(
        read_to_close(&mut stream, Duration::from_secs(20)).await.is_some(),
        "a started request whose headers stop is closed by the header timeout, not left to the idle one"
    );
}

#[tokio::test]
async fn a_slow_body_ends_with_408_in_the_callers_dialect() {
    let (_echo, gw) = protected_gateway("body_read_timeout: 300ms").await;
    for (path, needle) in [("/", "\"code\":-32600"), ("/message:send", "\"status\":\"DEADLINE_EXCEEDED\"")] {
        let mut stream = connect_from(&gw, [127, 0, 0, 1]).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\na2a-version: 1.0\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"jsonrpc\":"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut stream, Duration::from_secs(10)).await.expect("answered, not left hanging");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("REQUEST_TIMEOUT") && answer.contains(needle), "{answer}");
    }
}

#[tokio::test]
async fn connections_over_the_per_address_cap_are_refused_and_other_addresses_served() {
    let (_echo, gw) = protected_gateway("max_connections_per_address: 3").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from(&gw, [127, 0, 0, 9]).await);
    }
    let mut over = connect_from(&gw, [127, 0, 0, 9]).await;
    let answer = read_to_close(&mut over, Duration::from_secs(10)).await.expect("the fourth is closed at once");
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 503"), "{}", String::from_utf8_lossy(&answer));
    // Another address has its own allowance.
    let client = a2a_e2e::client_from("127.0.0.10".parse().unwrap());
    let response = client.get(format!("{}/.well-known/agent-card.json", gw.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // A slot is free again once a connection closes.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = connect_from(&gw, [127, 0, 0, 9]).await;
    again
        .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_to_close(&mut again, Duration::from_secs(10)).await.unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    let text = metrics(&gw).await;
    assert!(text.contains("a2a_listener_refused_total{reason=\"max_connections_per_address\"} 1"), "{text}");
}

#[test]
fn check_warns_about_auth_without_listener_protection() {
    let path = std::env::temp_dir().join(format!("a2a-check-{}.yaml", uuid::Uuid::new_v4().simple()));
    let yaml = "listeners:\n  protection: {header_read_timeout: null, max_connections_per_address: null}\nauth:\n  api_keys:\n    keys: []\nbackends:\n  - {name: a, url: 'http://127.0.0.1:1'}\n";
    std::fs::write(&path, yaml).unwrap();
    let _cleanup = a2a_e2e::TempFile(path.clone());
    let output = std::process::Command::new(BIN).arg("check").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "a warning, not an error: {stderr}");
    assert!(stderr.contains("warning: listeners.protection.header_read_timeout"), "{stderr}");
    assert!(stderr.contains("listeners.protection.max_connections_per_address"), "{stderr}");
}

#[tokio::test]
async fn not_found_probes_and_permission_denials_use_up_the_callers_quota() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    let secret = "0123456789abcdef0123456789abcdef-edge";
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: https://idp.edge/\n        audiences: [a2a-gateway]\n        hs256_secret: {secret}\npermissions:\n  default: deny\n  rules:\n    - skills: [echo]\n      any_scope: [echo]\nrate_limit:\n  default: {{per_minute: 5, burst: 5}}\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url), ("clarify", &clarify.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo", "clarify"]).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |sub: &str| {
        let claims =
            json!({"iss": "https://idp.edge/", "aud": "a2a-gateway", "sub": sub, "scope": "echo", "exp": now + 600});
        a2a_e2e::hs256_token(secret, &claims)
    };
    let root = format!("{}/", gw.url);
    // Probing for tasks that do not exist.
    let prober = token("prober");
    let mut reasons = Vec::new();
    for i in 0..30 {
        let (status, answer) =
            a2a_e2e::rpc_as(Some(&prober), &root, "GetTask", json!({"id": format!("guess-{i}")})).await;
        reasons.push((status, answer["error"]["data"][0]["reason"].as_str().unwrap_or("").to_string()));
    }
    assert_eq!(reasons.iter().filter(|(_, r)| r == "TASK_NOT_FOUND").count(), 5, "{reasons:?}");
    assert!(reasons[5..].iter().all(|(s, r)| *s == 429 && r == "RATE_LIMITED"), "{reasons:?}");
    // Asking for a skill the caller may not use.
    let denied = token("denied");
    let mut statuses = Vec::new();
    for _ in 0..20 {
        let message = json!({"message": text_message("x", Some("clarify"))});
        statuses.push(a2a_e2e::rpc_as(Some(&denied), &root, "SendMessage", message).await.0);
    }
    assert_eq!(statuses.iter().filter(|s| **s == 403).count(), 5, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 15, "{statuses:?}");
}

/// A loopback identity provider: JWKS (one EC key), a slow introspection endpoint that says every
/// token is inactive, and a redirect to elsewhere; it counts what it is asked.
#[derive(Clone, Default)]
struct IdpCounts {
    jwks: Arc<AtomicUsize>,
    introspections: Arc<AtomicUsize>,
    moved: Arc<AtomicUsize>,
}

async fn idp_stub(bind: [u8; 4], redirect_to: Option<String>) -> (String, IdpCounts) {
    use axum::routing::{get, post};
    let counts = IdpCounts::default();
    let jwks = counts.jwks.clone();
    let introspections = counts.introspections.clone();
    let moved = counts.moved.clone();
    let app = axum::Router::new()
        .route(
            "/jwks.json",
            get(move || {
                jwks.fetch_add(1, Ordering::SeqCst);
                async {
                    axum::Json(json!({"keys": [{"kty": "EC", "kid": "real", "crv": "P-256",
                        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}))
                }
            }),
        )
        .route(
            "/introspect",
            post(move || {
                introspections.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    axum::Json(json!({"active": false}))
                }
            }),
        )
        .route(
            "/moved",
            get(move || {
                moved.fetch_add(1, Ordering::SeqCst);
                let to = redirect_to.clone().unwrap_or_default();
                async move { (http::StatusCode::FOUND, [(http::header::LOCATION, to)]) }
            }),
        );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((bind, 0))).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, counts)
}

/// Sends a SendMessage with `token` from `source`; the HTTP status.
async fn send_with_token(url: &str, source: [u8; 4], token: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": text_message("x", Some("echo"))}});
    let client = a2a_e2e::client_from(std::net::IpAddr::from(source));
    let response = client.post(url).header("A2A-Version", "1.0").bearer_auth(token).json(&body).send().await.unwrap();
    response.status().as_u16()
}

fn random_token() -> String {
    format!("opaque-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn random_opaque_tokens_cause_bounded_introspection_calls_and_429s() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let (idp, counts) = idp_stub([127, 0, 0, 1], None).await;
    let extra = format!(
        "auth:\n  introspection:\n    endpoint: {idp}/introspect\n    client_id: gw\n    client_secret: s3cret\n    max_calls: {{per_second: 5, burst: 5}}\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let root = format!("{}/", gw.url);

    // One address, 60 made-up tokens in three bursts: its failure quota (burst 10) runs out.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let burst: Vec<_> = (0..20)
            .map(|_| {
                let root = root.clone();
                tokio::spawn(async move { send_with_token(&root, [127, 0, 0, 1], &random_token()).await })
            })
            .collect();
        for task in burst {
            statuses.push(task.await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    let calls = counts.introspections.load(Ordering::SeqCst);
    assert!(calls <= 15, "{calls} introspection calls for one address's 60 tokens");
    assert!(statuses.iter().filter(|s| **s == 429).count() >= 40, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429), "{statuses:?}");

    // Many addresses at once: the call quota (5/s) holds the total, and the rest are told to retry.
    let before = counts.introspections.load(Ordering::SeqCst);
    let many: Vec<_> = (0..40u8)
        .map(|i| {
            let root = root.clone();
            tokio::spawn(async move { send_with_token(&root, [127, 0, 1, i + 1], &random_token()).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in many {
        statuses.push(task.await.unwrap());
    }
    let calls = counts.introspections.load(Ordering::SeqCst) - before;
    assert!(calls <= 10, "{calls} calls for 40 tokens from 40 addresses");
    assert!(statuses.iter().filter(|s| **s == 429).count() >= 30, "{statuses:?}");

    // The same unknown token from 20 addresses at once: one call between them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = counts.introspections.load(Ordering::SeqCst);
    let token = random_token();
    let same: Vec<_> = (0..20u8)
        .map(|i| {
            let (root, token) = (root.clone(), token.clone());
            tokio::spawn(async move { send_with_token(&root, [127, 0, 2, i + 1], &token).await })
        })
        .collect();
    for task in same {
        assert_eq!(task.await.unwrap(), 401);
    }
    assert_eq!(counts.introspections.load(Ordering::SeqCst) - before, 1, "single flight per token");
}

#[tokio::test]
async fn unknown_kids_cause_at_most_a_couple_of_jwks_fetches() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let (idp, counts) = idp_stub([127, 0, 0, 1], None).await;
    let extra = format!(
        "auth:\n  jwt:\n    issuers:\n      - issuer: https://idp.edge/\n        audiences: [a2a-gateway]\n        jwks_url: {idp}/jwks.json\n        algorithms: [ES256]\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let root = format!("{}/", gw.url);
    let tasks: Vec<_> = (0..60u8)
        .map(|i| {
            let root = root.clone();
            let token = a2a_e2e::unsigned_jwt("https://idp.edge/", &uuid::Uuid::new_v4().to_string());
            tokio::spawn(async move { send_with_token(&root, [127, 0, 3, i % 6 + 1], &token).await })
        })
        .collect();
    for task in tasks {
        let status = task.await.unwrap();
        assert!(status == 401 || status == 429, "{status}");
    }
    let fetches = counts.jwks.load(Ordering::SeqCst);
    assert!((1..=2).contains(&fetches), "{fetches} JWKS fetches (start-up included) for 60 unknown kids");
}

#[tokio::test]
async fn a_jwks_redirect_to_another_origin_is_not_followed() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let (elsewhere, elsewhere_counts) = idp_stub([127, 0, 0, 2], None).await;
    let (idp, idp_counts) = idp_stub([127, 0, 0, 1], Some(format!("{elsewhere}/jwks.json"))).await;
    let extra = format!(
        "auth:\n  jwt:\n    jwks_min_refresh_interval: 100ms\n    issuers:\n      - issuer: https://idp.edge/\n        audiences: [a2a-gateway]\n        jwks_url: {idp}/moved\n        algorithms: [ES256]\n"
    );
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let status =
        send_with_token(&format!("{}/", gw.url), [127, 0, 0, 1], &a2a_e2e::unsigned_jwt("https://idp.edge/", "real"))
            .await;
    assert_eq!(status, 401);
    assert!(idp_counts.moved.load(Ordering::SeqCst) >= 1, "the configured URL was asked");
    assert_eq!(elsewhere_counts.jwks.load(Ordering::SeqCst), 0, "the other origin was never contacted");
}
