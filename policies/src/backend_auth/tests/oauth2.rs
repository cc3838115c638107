//! OAuth2 client credentials against an in-process token server on 127.0.0.1.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use serde_json::{Value, json};

use super::*;

/// What the token server answers: the status, and a body in which `{n}` in `access_token` becomes
/// the number of the request.
struct Reply {
    status: StatusCode,
    body: Value,
    delay: Duration,
}

struct Seen {
    authorization: Option<String>,
    form: Vec<(String, String)>,
}

struct TokenState {
    hits: AtomicUsize,
    reply: Mutex<Reply>,
    seen: Mutex<Vec<Seen>>,
}

/// A token endpoint on an ephemeral loopback port; stops when dropped.
struct TokenServer {
    url: String,
    state: Arc<TokenState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenServer {
    async fn start(expires_in: Value) -> TokenServer {
        let body = json!({"access_token": "tok-{n}", "token_type": "Bearer", "expires_in": expires_in});
        let reply = Reply { status: StatusCode::OK, body, delay: Duration::ZERO };
        let state =
            Arc::new(TokenState { hits: AtomicUsize::new(0), reply: Mutex::new(reply), seen: Mutex::new(Vec::new()) });
        let app = axum::Router::new().route("/token", axum::routing::post(token)).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TokenServer { url, state, task }
    }

    fn answer(&self, status: StatusCode, body: Value, delay: Duration) {
        *self.state.reply.lock().unwrap() = Reply { status, body, delay };
    }

    fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    fn last_seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(self.state.seen.lock().unwrap().last().expect("a request was seen"))
    }

    fn backend(&self, extra: Value) -> BackendAuth {
        let mut config = json!({"token_url": self.url, "client_id": "gateway", "client_secret": "s3cret"});
        config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        backend("echo", Some(json!({"oauth2": config})), false)
    }
}

async fn token(
    State(state): State<Arc<TokenState>>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, axum::Json<Value>) {
    let n = state.hits.fetch_add(1, Ordering::SeqCst) + 1;
    let form = reqwest::Url::parse(&format!("http://x/?{body}")).unwrap().query_pairs().into_owned().collect();
    let authorization = headers.get("authorization").map(|v| v.to_str().unwrap().to_string());
    state.seen.lock().unwrap().push(Seen { authorization, form });
    let (status, mut body, delay) = {
        let reply = state.reply.lock().unwrap();
        (reply.status, reply.body.clone(), reply.delay)
    };
    tokio::time::sleep(delay).await;
    if let Some(Value::String(token)) = body.get_mut("access_token") {
        *token = token.replace("{n}", &n.to_string());
    }
    (status, axum::Json(body))
}

async fn get(creds: &BackendCredentials) -> Result<Option<HeaderValue>, CredentialError> {
    creds
        .authorization("echo", Some(&caller("alice", None, &[])), Some(&HeaderValue::from_static("Bearer callers")))
        .await
}

#[tokio::test]
async fn the_token_is_cached_until_shortly_before_it_expires_then_refreshed() {
    let server = TokenServer::start(json!(120)).await;
    let creds = credentials(vec![server.backend(json!({"refresh_before": "30s"}))]);
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-1");
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-1");
    creds.clock.advance(Duration::from_secs(85));
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-1", "85 s into 120: still fresh");
    assert_eq!(server.hits(), 1);
    creds.clock.advance(Duration::from_secs(10));
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-2", "within 30 s of expiry: refreshed");
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-2");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn a_short_lived_token_is_refreshed_halfway() {
    let server = TokenServer::start(json!("20")).await;
    let creds = credentials(vec![server.backend(json!({}))]);
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-1");
    creds.clock.advance(Duration::from_secs(9));
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-1");
    creds.clock.advance(Duration::from_secs(2));
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-2", "expires_in as a string is understood");
}

#[tokio::test]
async fn concurrent_calls_share_one_fetch() {
    let server = TokenServer::start(json!(3600)).await;
    server.answer(
        StatusCode::OK,
        json!({"access_token": "tok-{n}", "token_type": "bearer", "expires_in": 3600}),
        Duration::from_millis(200),
    );
    let creds = credentials(vec![server.backend(json!({}))]);
    let results = futures::future::join_all((0..20).map(|_| get(&creds))).await;
    for result in results {
        assert_eq!(result.unwrap().unwrap(), "Bearer tok-1");
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_refusal_by_the_token_server_is_an_error_and_is_retried_later() {
    let server = TokenServer::start(json!(3600)).await;
    server.answer(
        StatusCode::UNAUTHORIZED,
        json!({"error": "invalid_client", "error_description": "bad secret s3cret"}),
        Duration::ZERO,
    );
    let creds = credentials(vec![server.backend(json!({}))]);
    let error = get(&creds).await.unwrap_err();
    assert_eq!(
        error,
        CredentialError::TokenRefused { backend: Arc::from("echo"), status: 401, error: Some("invalid_client".into()) }
    );
    assert!(!error.to_string().contains("s3cret"), "the description is not repeated: {error}");
    assert!(matches!(A2aError::from(error), A2aError::BackendUnavailable(_)));
    server.answer(
        StatusCode::OK,
        json!({"access_token": "tok-{n}", "token_type": "Bearer", "expires_in": 60}),
        Duration::ZERO,
    );
    assert_eq!(get(&creds).await.unwrap().unwrap(), "Bearer tok-2", "a failure is not cached");
}

#[tokio::test]
async fn calls_waiting_on_a_failed_fetch_share_its_error() {
    let server = TokenServer::start(json!(3600)).await;
    server.answer(StatusCode::UNAUTHORIZED, json!({"error": "invalid_client"}), Duration::from_millis(200));
    let creds = credentials(vec![server.backend(json!({}))]);
    let results = futures::future::join_all((0..10).map(|_| get(&creds))).await;
    assert!(results.iter().all(|r| matches!(r, Err(CredentialError::TokenRefused { status: 401, .. }))), "{results:?}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn basic_client_auth_sends_encoded_credentials_in_the_header() {
    let server = TokenServer::start(json!(60)).await;
    let mut backend = server.backend(json!({"scope": "a2a read", "audience": "https://echo.example"}));
    if let Some(BackendAuthConfig::Oauth2(config)) = &mut backend.auth {
        config.client_secret = Secret::new("p@ss:w rd");
    }
    let creds = credentials(vec![backend]);
    get(&creds).await.unwrap();
    let (authorization, form) = server.last_seen(|seen| (seen.authorization.clone(), seen.form.clone()));
    let encoded = authorization.unwrap().strip_prefix("Basic ").unwrap().to_string();
    let decoded = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded).unwrap()).unwrap();
    assert_eq!(decoded, "gateway:p%40ss%3Aw+rd", "RFC 6749 2.3.1: form-urlencoded before base64");
    let pairs = |list: &[(&str, &str)]| list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    assert_eq!(
        form,
        pairs(&[("grant_type", "client_credentials"), ("scope", "a2a read"), ("audience", "https://echo.example")])
    );
}

#[tokio::test]
async fn form_client_auth_sends_the_credentials_in_the_body() {
    let server = TokenServer::start(json!(60)).await;
    let creds = credentials(vec![server.backend(json!({"client_auth": "form"}))]);
    get(&creds).await.unwrap();
    let (authorization, form) = server.last_seen(|seen| (seen.authorization.clone(), seen.form.clone()));
    assert_eq!(authorization, None);
    assert!(form.contains(&("client_id".into(), "gateway".into())), "{form:?}");
    assert!(form.contains(&("client_secret".into(), "s3cret".into())), "{form:?}");
    assert!(form.contains(&("grant_type".into(), "client_credentials".into())), "{form:?}");
}

#[tokio::test]
async fn unusable_token_answers_are_errors() {
    let server = TokenServer::start(json!(60)).await;
    let creds = credentials(vec![server.backend(json!({}))]);
    for body in [
        json!({"token_type": "Bearer"}),
        json!({"access_token": "t", "token_type": "mac"}),
        json!({"access_token": "bad\nvalue", "token_type": "Bearer"}),
        json!("not an object"),
    ] {
        server.answer(StatusCode::OK, body.clone(), Duration::ZERO);
        let error = get(&creds).await.unwrap_err();
        assert!(matches!(error, CredentialError::BadTokenResponse { .. }), "{body}: {error}");
    }
}

#[tokio::test]
async fn an_unreachable_or_slow_token_endpoint_is_an_error() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let auth =
        json!({"oauth2": {"token_url": format!("http://{closed}/token"), "client_id": "gw", "client_secret": "x"}});
    let creds = credentials(vec![backend("echo", Some(auth), false)]);
    assert!(matches!(get(&creds).await, Err(CredentialError::TokenRequest { .. })));

    let server = TokenServer::start(json!(60)).await;
    server.answer(StatusCode::OK, json!({"access_token": "t"}), Duration::from_secs(5));
    let creds = credentials(vec![server.backend(json!({"timeout": "100ms"}))]);
    let error = get(&creds).await.unwrap_err();
    assert_eq!(error, CredentialError::TokenRequest { backend: Arc::from("echo"), reason: "timed out".into() });
}
