//! What authenticating one request costs, per method (keys cached, no network). Ignored by
//! default; run with `cargo test --release -p a2a-policies --test auth_cost -- --ignored --nocapture`.

mod support;

use std::time::{Duration, Instant};

use a2a_policies::auth::{generate_key, hash_key};
use jsonwebtoken::Algorithm;
use serde_json::json;
use support::*;

async fn per_call(gw: &Harness, token: &str, rounds: u32) -> Duration {
    gw.bearer(token).await.accepted();
    let start = Instant::now();
    for _ in 0..rounds {
        assert!(gw.bearer(token).await.result.is_ok());
    }
    start.elapsed() / rounds
}

#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn measure_authentication_cost() {
    let idp = TestIdp::start().await;
    idp.set_jwks("/rsa/jwks.json", vec![TestKey::rsa(1, Algorithm::RS256).jwk("rsa-1")]);
    idp.set_jwks("/ec/jwks.json", vec![TestKey::ec().jwk("ec-1")]);
    idp.set_jwks("/ed/jwks.json", vec![TestKey::ed().jwk("ed-1")]);
    let key = generate_key("bench");
    let gw = Harness::new(json!({
        "jwt": {"issuers": [
            {"issuer": RSA_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/rsa/jwks.json")},
            {"issuer": EC_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/ec/jwks.json"), "algorithms": ["ES256"]},
            {"issuer": ED_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/ed/jwks.json"), "algorithms": ["EdDSA"]},
            {"issuer": DEV_ISSUER, "audiences": [AUDIENCE], "hs256_secret": DEV_SECRET},
        ]},
        "api_keys": {"keys": [{"id": "bench", "hash": hash_key(&key), "caller": "bench"}]},
    }))
    .await;
    assert!(gw.authenticator.refresh_jwks().await);
    let rounds = 2000;
    let cases = [
        ("RS256", TestKey::rsa(1, Algorithm::RS256).sign(Some("rsa-1"), &claims(RSA_ISSUER))),
        ("ES256", TestKey::ec().sign(Some("ec-1"), &claims(EC_ISSUER))),
        ("EdDSA", TestKey::ed().sign(Some("ed-1"), &claims(ED_ISSUER))),
        ("HS256", TestKey::hs(DEV_SECRET.as_bytes()).sign(None, &claims(DEV_ISSUER))),
        ("API key", key.clone()),
    ];
    for (name, token) in cases {
        println!("{name:8} {:?} per request", per_call(&gw, &token, rounds).await);
    }
}
