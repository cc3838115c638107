//! Shared pieces of the authentication tests: the committed test keys, token signing, an
//! in-process JWKS + introspection server on 127.0.0.1:0, and a harness that runs requests through
//! the real `AuthLayer`.

#![allow(dead_code)] // each test crate uses a different part

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_core::{A2aCall, A2aError, Binding, CallContext, CallRequest, Caller, Operation, RequestInfo};
use a2a_policies::auth::{AuthConfig, AuthLayer, Authenticator};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::{Layer, ServiceExt};

pub const RSA_ISSUER: &str = "https://rsa.idp.test/";
pub const EC_ISSUER: &str = "https://ec.idp.test/";
pub const ED_ISSUER: &str = "https://ed.idp.test/";
pub const DEV_ISSUER: &str = "https://dev.idp.test/";
pub const AUDIENCE: &str = "a2a-gateway";
pub const DEV_SECRET: &str = "dev-secret-0123456789abcdef0123456789";

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/keys/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A signing key from the fixtures, with the algorithm used to sign with it.
pub struct TestKey {
    pub encoding: EncodingKey,
    pub alg: Algorithm,
}

impl TestKey {
    pub fn rsa(n: u8, alg: Algorithm) -> TestKey {
        let pem = fixture(&format!("rsa-{n}.key.pem"));
        TestKey { encoding: EncodingKey::from_rsa_pem(&pem).expect("rsa key"), alg }
    }

    pub fn ec() -> TestKey {
        TestKey {
            encoding: EncodingKey::from_ec_pem(&fixture("ec-p256.key.pem")).expect("ec key"),
            alg: Algorithm::ES256,
        }
    }

    pub fn ed() -> TestKey {
        TestKey {
            encoding: EncodingKey::from_ed_pem(&fixture("ed25519.key.pem")).expect("ed key"),
            alg: Algorithm::EdDSA,
        }
    }

    pub fn hs(secret: &[u8]) -> TestKey {
        TestKey { encoding: EncodingKey::from_secret(secret).expect("hmac key"), alg: Algorithm::HS256 }
    }

    /// The public JWK of this key, as a JWKS entry with `kid`.
    pub fn jwk(&self, kid: &str) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.alg).expect("jwk");
        jwk.common.key_id = Some(kid.to_owned());
        // A JWK's `alg` would pin RS256 keys to RS256; leave it out so one key serves RS and PS.
        jwk.common.key_algorithm = None;
        serde_json::to_value(jwk).expect("jwk json")
    }

    pub fn sign(&self, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs()
}

/// Claims that every issuer of the test configuration accepts.
pub fn claims(iss: &str) -> Value {
    json!({
        "iss": iss,
        "aud": AUDIENCE,
        "sub": "alice",
        "client_id": "ed-client",
        "azp": "dev-client",
        "org": "acme",
        "scope": "echo review",
        "iat": now(),
        "exp": now() + 300,
    })
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What the test server answers, changeable while it runs.
#[derive(Default)]
pub struct ServerState {
    /// JWKS documents by path (`/rsa/jwks.json`); a `Value::String` is served as raw text.
    pub jwks: Mutex<HashMap<String, Value>>,
    /// Introspection answers by token; unknown tokens are inactive.
    pub introspection: Mutex<HashMap<String, Value>>,
    /// Every path requested, in order.
    pub paths: Mutex<Vec<String>>,
    /// The Authorization header of each introspection request.
    pub introspection_auth: Mutex<Vec<String>>,
    pub jwks_hits: AtomicUsize,
    pub introspection_hits: AtomicUsize,
}

/// The in-process identity provider; stops when dropped.
pub struct TestIdp {
    pub addr: SocketAddr,
    pub state: Arc<ServerState>,
    stop: CancellationToken,
}

impl TestIdp {
    pub async fn start() -> TestIdp {
        let state = Arc::new(ServerState::default());
        let app = Router::new().fallback(idp_handler).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = CancellationToken::new();
        let shutdown = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        });
        TestIdp { addr, state, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn set_jwks(&self, path: &str, keys: Vec<Value>) {
        self.state.jwks.lock().unwrap().insert(path.to_owned(), json!({ "keys": keys }));
    }

    pub fn set_raw(&self, path: &str, body: &str) {
        self.state.jwks.lock().unwrap().insert(path.to_owned(), Value::String(body.to_owned()));
    }

    pub fn set_introspection(&self, token: &str, answer: Value) {
        self.state.introspection.lock().unwrap().insert(token.to_owned(), answer);
    }

    pub fn jwks_hits(&self) -> usize {
        self.state.jwks_hits.load(Ordering::SeqCst)
    }

    pub fn introspection_hits(&self) -> usize {
        self.state.introspection_hits.load(Ordering::SeqCst)
    }

    pub fn paths(&self) -> Vec<String> {
        self.state.paths.lock().unwrap().clone()
    }
}

impl Drop for TestIdp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn idp_handler(State(state): State<Arc<ServerState>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_owned();
    state.paths.lock().unwrap().push(uri.to_string());
    if path == "/introspect" {
        state.introspection_hits.fetch_add(1, Ordering::SeqCst);
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        state.introspection_auth.lock().unwrap().push(auth);
        let body = String::from_utf8_lossy(&body);
        let token = body.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or_default();
        let answer = state.introspection.lock().unwrap().get(token).cloned().unwrap_or(json!({"active": false}));
        return axum::Json(answer).into_response();
    }
    state.jwks_hits.fetch_add(1, Ordering::SeqCst);
    match state.jwks.lock().unwrap().get(&path).cloned() {
        Some(Value::String(raw)) => raw.into_response(),
        Some(doc) => axum::Json(doc).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A port nobody listens on (bound, then released).
pub async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The real layer in front of a service that answers with the `Caller` it was given.
pub struct Harness {
    pub authenticator: Arc<Authenticator>,
    stop: CancellationToken,
}

pub struct Outcome {
    pub result: Result<Caller, A2aError>,
    pub info: RequestInfo,
}

impl Harness {
    pub async fn new(config: Value) -> Harness {
        // reqwest is built without a TLS provider; it wants one chosen even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config: AuthConfig = serde_json::from_value(config).expect("auth config parses");
        let stop = CancellationToken::new();
        let http = reqwest::Client::builder().no_proxy().build().expect("client");
        let authenticator = Arc::new(Authenticator::new(&config, http, &stop).expect("auth config is valid"));
        Harness { authenticator, stop }
    }

    pub async fn call(&self, headers: &[(&str, &str)]) -> Outcome {
        let mut request = axum::http::Request::builder().method("POST").uri("/");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let context = CallContext::for_test(A2aCall::new(Binding::JsonRpc, Operation::SendMessage), "req-1");
        let info = context.info.clone();
        let request = request.body(Box::new(context)).expect("request");
        let inner =
            tower::service_fn(|request: CallRequest| async move { Ok::<_, A2aError>(request.into_body().caller) });
        let service = AuthLayer::new(self.authenticator.clone()).layer(inner);
        let result = service.oneshot(request).await;
        Outcome { result, info }
    }

    pub async fn bearer(&self, token: &str) -> Outcome {
        self.call(&[("authorization", &format!("Bearer {token}"))]).await
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Outcome {
    /// The request passed; the caller is in the extensions and in the `RequestInfo`.
    pub fn accepted(self) -> Caller {
        let caller = match self.result {
            Ok(caller) => caller,
            Err(error) => panic!("refused: {error:?}; detail: {:?}", self.info.denial_detail()),
        };
        assert_eq!(self.info.caller(), Some(&caller), "RequestInfo carries the caller");
        assert_eq!(self.info.denial_detail(), None);
        caller
    }

    /// Refused with a credential presented: generic message, `invalid_token` challenge, and a
    /// denial detail containing `detail`.
    pub fn invalid(self, detail: &str) {
        self.refused("invalid credentials", "Bearer realm=\"a2a-gateway\", error=\"invalid_token\"", detail);
    }

    /// Refused without a credential: generic message and a plain challenge.
    pub fn missing(self, detail: &str) {
        self.refused("missing credentials", "Bearer realm=\"a2a-gateway\"", detail);
    }

    fn refused(self, expected_message: &str, expected_challenge: &str, detail: &str) {
        match &self.result {
            Err(A2aError::Unauthenticated { message, challenge }) => {
                assert_eq!(message, expected_message);
                assert_eq!(challenge, expected_challenge);
            }
            other => panic!("expected Unauthenticated, got {other:?}"),
        }
        assert_eq!(self.info.caller(), None, "no caller recorded for a refusal");
        let recorded = self.info.denial_detail().expect("a denial detail is recorded");
        assert!(recorded.contains(detail), "denial detail {recorded:?} should contain {detail:?}");
    }
}

/// Polls `check` every 50 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}
