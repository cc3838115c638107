//! Tests of outbound credentials: config, static and forwarded headers here; OAuth2 against an
//! in-process token server and minted JWTs in their own files.

mod mint;
mod oauth2;

use std::sync::Arc;

use http::HeaderValue;
use serde_json::json;

use super::*;
use a2a_core::AuthMethod;

pub(super) fn caller(id: &str, tenant: Option<&str>, scopes: &[&str]) -> Caller {
    Caller {
        id: Arc::from(id),
        tenant: tenant.map(Arc::from),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        auth: AuthMethod::Jwt { issuer: Arc::from("https://idp.example/") },
    }
}

pub(super) fn backend(name: &str, auth: Option<serde_json::Value>, forward_caller_token: bool) -> BackendAuth {
    BackendAuth {
        name: name.into(),
        auth: auth.map(|auth| serde_json::from_value(auth).expect("auth parses")),
        forward_caller_token,
    }
}

/// An outbound client like the gateway's (reqwest here is built without a TLS provider of its own).
pub(super) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

pub(super) fn credentials(backends: Vec<BackendAuth>) -> BackendCredentials {
    BackendCredentials::new(backends, None, client()).expect("valid config")
}

fn config_error(backends: Vec<BackendAuth>) -> String {
    BackendCredentials::new(backends, None, client()).err().expect("config is refused").to_string()
}

fn callers_header() -> HeaderValue {
    HeaderValue::from_static("Bearer the-callers-own-token")
}

#[tokio::test]
async fn a_static_bearer_token_is_presented_instead_of_the_callers() {
    let creds = credentials(vec![backend("echo", Some(json!({"bearer": "s3cret-echo"})), false)]);
    let caller = caller("alice", None, &[]);
    let value = creds.authorization("echo", Some(&caller), Some(&callers_header())).await.unwrap().unwrap();
    assert_eq!(value, "Bearer s3cret-echo");
    assert!(value.is_sensitive(), "kept out of logs");
}

#[tokio::test]
async fn the_callers_token_is_not_forwarded_by_default() {
    let creds = credentials(vec![backend("echo", None, false)]);
    let got = creds.authorization("echo", Some(&caller("alice", None, &[])), Some(&callers_header())).await;
    assert_eq!(got, Ok(None));
    let got = creds.authorization("not-configured", None, Some(&callers_header())).await;
    assert_eq!(got, Ok(None), "an unknown backend gets nothing either");
}

#[tokio::test]
async fn the_callers_token_is_forwarded_when_the_backend_says_so() {
    let creds = credentials(vec![backend("echo", None, true), backend("other", None, false)]);
    let got = creds.authorization("echo", Some(&caller("alice", None, &[])), Some(&callers_header())).await;
    assert_eq!(got, Ok(Some(callers_header())));
    assert_eq!(creds.authorization("echo", None, None).await, Ok(None), "nothing to forward");
    assert_eq!(creds.authorization("other", None, Some(&callers_header())).await, Ok(None));
}

#[test]
fn forwarding_and_own_credentials_exclude_each_other() {
    let err = config_error(vec![backend("a", None, false), backend("b", Some(json!({"bearer": "t"})), true)]);
    assert!(err.starts_with("backends[1].forward_caller_token: "), "{err}");
}

#[test]
fn auth_config_parses_each_kind_and_refuses_unknown_keys() {
    let parse = |v: serde_json::Value| serde_json::from_value::<BackendAuthConfig>(v);
    assert_eq!(parse(json!({"bearer": "t"})).unwrap(), BackendAuthConfig::Bearer(Secret::new("t")));
    let BackendAuthConfig::Oauth2(oauth2) =
        parse(json!({"oauth2": {"token_url": "https://idp/token", "client_id": "gw", "client_secret": "x"}})).unwrap()
    else {
        panic!("oauth2 expected")
    };
    assert_eq!((oauth2.client_auth, oauth2.timeout, oauth2.scope), (ClientAuth::Basic, Duration::from_secs(10), None));
    let BackendAuthConfig::MintJwt(mint) = parse(json!({"mint_jwt": {}})).unwrap() else { panic!("mint_jwt expected") };
    assert_eq!((mint.ttl, mint.audience), (Duration::from_secs(60), None));
    let BackendAuthConfig::MintJwt(mint) = parse(json!({"mint_jwt": {"ttl": "5m", "audience": "x"}})).unwrap() else {
        panic!("mint_jwt expected")
    };
    assert_eq!(mint.ttl, Duration::from_secs(300));
    assert!(parse(json!({"mint_jwt": {"ttl": "soon"}})).is_err());
    assert!(parse(json!({"mint_jwt": {"lifetime": "60s"}})).is_err(), "unknown key");
    assert!(parse(json!({"basic": "x"})).is_err(), "unknown kind");
    assert!(parse(json!({"bearer": "t", "mint_jwt": {}})).is_err(), "two kinds at once");
}

#[test]
fn validation_names_the_key_path() {
    let oauth2 = |extra: serde_json::Value| {
        let mut config = json!({"token_url": "https://idp.example/token", "client_id": "gw", "client_secret": "x"});
        config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        Some(json!({"oauth2": config}))
    };
    let cases = [
        (Some(json!({"bearer": "two words"})), "backends[1].auth.bearer: "),
        (Some(json!({"bearer": ""})), "backends[1].auth.bearer: "),
        (oauth2(json!({"token_url": "idp/token"})), "backends[1].auth.oauth2.token_url: "),
        (oauth2(json!({"token_url": "ftp://idp/token"})), "backends[1].auth.oauth2.token_url: "),
        (oauth2(json!({"client_id": ""})), "backends[1].auth.oauth2.client_id: "),
        (oauth2(json!({"client_secret": ""})), "backends[1].auth.oauth2.client_secret: "),
        (oauth2(json!({"scope": " "})), "backends[1].auth.oauth2.scope: "),
        (oauth2(json!({"timeout": "0s"})), "backends[1].auth.oauth2.timeout: "),
        (Some(json!({"mint_jwt": {"ttl": "0s"}})), "backends[1].auth.mint_jwt.ttl: "),
        (Some(json!({"mint_jwt": {"ttl": "2h"}})), "backends[1].auth.mint_jwt.ttl: "),
    ];
    for (auth, path) in cases {
        let err = config_error(vec![backend("ok", None, false), backend("bad", auth.clone(), false)]);
        assert!(err.starts_with(path), "{auth:?}: {err}");
    }
    let err = config_error(vec![backend("ok", None, false), backend("ok", None, false)]);
    assert!(err.starts_with("backends[1].name: "), "{err}");
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let auth: BackendAuthConfig = serde_json::from_value(
        json!({"oauth2": {"token_url": "https://idp/token", "client_id": "gw", "client_secret": "hunter2"}}),
    )
    .unwrap();
    let text = format!("{auth:?} {:?}", BackendAuthConfig::Bearer(Secret::new("hunter3")));
    assert!(!text.contains("hunter2") && !text.contains("hunter3"), "{text}");
}

#[test]
fn credential_errors_reach_the_caller_only_as_an_unavailable_backend() {
    let error =
        CredentialError::TokenRefused { backend: Arc::from("echo"), status: 401, error: Some("invalid_client".into()) };
    assert_eq!(error.to_string(), "backend 'echo': the token endpoint answered HTTP 401 (invalid_client)");
    let refusal = A2aError::from(error);
    assert_eq!(refusal, A2aError::BackendUnavailable("the agent 'echo' could not be reached; try again later".into()));
}

#[test]
fn the_credential_future_can_run_on_any_worker() {
    fn assert_send<T: Send>(_: &T) {}
    let creds = credentials(vec![]);
    let caller = caller("alice", None, &[]);
    assert_send(&creds.authorization("echo", Some(&caller), None));
    fn assert_shared<T: Send + Sync>() {}
    assert_shared::<BackendCredentials>();
}
