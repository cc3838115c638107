//! Gateway-minted JWTs, verified the way a backend would: with the gateway's JWKS document.

use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

use super::*;

fn key_path(name: &str) -> String {
    format!("{}/tests/fixtures/gateway-keys/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn identity(signing_key: &str) -> GatewayIdentityConfig {
    GatewayIdentityConfig {
        issuer: "https://gateway.example/".into(),
        signing_key: Secret::new(signing_key),
        key_id: "gw-1".into(),
    }
}

fn minting(signing_key: &str, backends: Vec<BackendAuth>) -> BackendCredentials {
    BackendCredentials::new(backends, Some(&identity(signing_key)), client()).expect("valid config")
}

fn identity_error(signing_key: &str) -> String {
    let backends = vec![backend("echo", Some(json!({"mint_jwt": {}})), false)];
    BackendCredentials::new(backends, Some(&identity(signing_key)), client()).err().unwrap().to_string()
}

/// Verifies `value` ("Bearer <jwt>") as a backend would and returns its header and claims.
fn verify(creds: &BackendCredentials, value: &HeaderValue, alg: Algorithm, audience: &str) -> (String, Value) {
    let token = value.to_str().unwrap().strip_prefix("Bearer ").expect("a bearer token");
    let header = jsonwebtoken::decode_header(token).unwrap();
    assert_eq!(header.alg, alg);
    let kid = header.kid.expect("the token names its key");
    let jwks: JwkSet = serde_json::from_value(creds.jwks_json()).unwrap();
    let jwk = jwks.find(&kid).expect("the JWKS document has the key");
    let mut validation = Validation::new(alg);
    validation.set_audience(&[audience]);
    validation.set_issuer(&["https://gateway.example/"]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<Value>(token, &DecodingKey::from_jwk(jwk).unwrap(), &validation).unwrap();
    (kid, data.claims)
}

async fn mint(creds: &BackendCredentials, backend: &str, caller: &Caller) -> HeaderValue {
    let callers = HeaderValue::from_static("Bearer callers-own");
    creds.authorization(backend, Some(caller), Some(&callers)).await.unwrap().expect("a minted token")
}

#[tokio::test]
async fn an_rs256_token_carries_the_callers_identity_and_verifies_with_the_jwks() {
    let creds = minting(&key_path("rsa-2048.pem"), vec![backend("echo", Some(json!({"mint_jwt": {}})), false)]);
    let alice = caller("jwt:https://idp/|alice", Some("acme"), &["review:write", "a2a"]);
    let value = mint(&creds, "echo", &alice).await;
    assert!(value.is_sensitive());
    let (kid, claims) = verify(&creds, &value, Algorithm::RS256, "echo");
    assert_eq!(kid, "gw-1");
    assert_eq!(claims["sub"], "jwt:https://idp/|alice");
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["scope"], "review:write a2a");
    assert_eq!(claims["iss"], "https://gateway.example/");
    assert_eq!(claims["aud"], "echo", "the backend name by default");
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 60, "default ttl");
    assert!(claims["jti"].as_str().is_some_and(|jti| jti.len() >= 16));
}

#[tokio::test]
async fn an_es256_key_given_as_pem_text_mints_tokens_for_the_configured_audience() {
    let pem = std::fs::read_to_string(key_path("ec-p256.pem")).unwrap();
    let auth = json!({"mint_jwt": {"audience": "https://review.example", "ttl": "5m"}});
    let creds = minting(&pem, vec![backend("review", Some(auth), false)]);
    let value = mint(&creds, "review", &caller("bob", None, &[])).await;
    let (_, claims) = verify(&creds, &value, Algorithm::ES256, "https://review.example");
    assert_eq!(claims["sub"], "bob");
    assert!(claims.get("tenant").is_none(), "no tenant claim for a caller without one");
    assert_eq!(claims["scope"], "");
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 300);
}

#[test]
fn the_jwks_document_describes_the_public_key_only() {
    let creds = minting(&key_path("rsa-2048.pem"), vec![]);
    let jwks = creds.jwks_json();
    let key = &jwks["keys"][0];
    assert_eq!(
        (&key["kty"], &key["kid"], &key["alg"], &key["use"]),
        (&json!("RSA"), &json!("gw-1"), &json!("RS256"), &json!("sig"))
    );
    assert!(key["n"].is_string() && key["e"].is_string());
    assert!(key.get("d").is_none() && key.get("p").is_none(), "no private parts: {key}");
    let ec = minting(&key_path("ec-p256.pem"), vec![]).jwks_json();
    assert_eq!(
        (&ec["keys"][0]["kty"], &ec["keys"][0]["crv"], &ec["keys"][0]["alg"]),
        (&json!("EC"), &json!("P-256"), &json!("ES256"))
    );
    assert!(ec["keys"][0].get("d").is_none());
    assert_eq!(credentials(vec![]).jwks_json(), json!({"keys": []}));
}

#[tokio::test]
async fn a_pkcs1_rsa_key_works_too() {
    let creds = minting(&key_path("rsa-pkcs1.pem"), vec![backend("echo", Some(json!({"mint_jwt": {}})), false)]);
    let value = mint(&creds, "echo", &caller("alice", None, &[])).await;
    verify(&creds, &value, Algorithm::RS256, "echo");
}

#[tokio::test]
async fn minted_tokens_are_reused_per_caller_and_backend_until_near_expiry() {
    let mint_jwt = Some(json!({"mint_jwt": {}}));
    let creds =
        minting(&key_path("ec-p256.pem"), vec![backend("a", mint_jwt.clone(), false), backend("b", mint_jwt, false)]);
    let alice = caller("alice", Some("acme"), &["x"]);
    let first = mint(&creds, "a", &alice).await;
    assert_eq!(mint(&creds, "a", &alice).await, first, "reused");
    assert_ne!(mint(&creds, "b", &alice).await, first, "per backend");
    assert_ne!(mint(&creds, "a", &caller("bob", Some("acme"), &["x"])).await, first, "per caller");
    let wider = mint(&creds, "a", &caller("alice", Some("acme"), &["x", "y"])).await;
    assert_ne!(wider, first, "the same caller with other scopes gets a token that says so");
    let (_, claims) = verify(&creds, &wider, Algorithm::ES256, "a");
    assert_eq!(claims["scope"], "x y");

    let current = mint(&creds, "a", &alice).await;
    creds.clock.advance(Duration::from_secs(40));
    assert_eq!(mint(&creds, "a", &alice).await, current, "40 s into 60: still reused");
    creds.clock.advance(Duration::from_secs(5));
    assert_ne!(mint(&creds, "a", &alice).await, current, "near expiry: minted anew");
}

#[tokio::test]
async fn minting_needs_a_caller() {
    let creds = minting(&key_path("ec-p256.pem"), vec![backend("echo", Some(json!({"mint_jwt": {}})), false)]);
    let got = creds.authorization("echo", None, None).await;
    assert_eq!(got, Err(CredentialError::NoCaller { backend: Arc::from("echo") }));
}

#[test]
fn minting_needs_a_gateway_identity() {
    let backends = vec![backend("ok", None, false), backend("echo", Some(json!({"mint_jwt": {}})), false)];
    let err = BackendCredentials::new(backends, None, client()).err().unwrap().to_string();
    assert!(err.starts_with("backends[1].auth.mint_jwt: needs gateway_identity"), "{err}");
}

#[test]
fn unusable_signing_keys_are_named_by_key_path() {
    let missing = identity_error("/nonexistent/key.pem");
    assert!(missing.starts_with("gateway_identity.signing_key: cannot read the key file"), "{missing}");
    let p384 = identity_error(&key_path("ec-p384.pem"));
    assert!(p384.starts_with("gateway_identity.signing_key: "), "{p384}");
    let garbage = identity_error("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    assert!(garbage.starts_with("gateway_identity.signing_key: "), "{garbage}");
    assert!(!garbage.contains("AAAA"), "the key text is never echoed: {garbage}");
    let mut bad_kid = identity(&key_path("ec-p256.pem"));
    bad_kid.key_id = "gw 1".into();
    let err = BackendCredentials::new(vec![], Some(&bad_kid), client()).err().unwrap().to_string();
    assert!(err.starts_with("gateway_identity.key_id: "), "{err}");
}
