//! JWKS lifecycle: key rotation without a restart, removed keys refused after the refresh, and
//! the rate limit on refreshes caused by unknown `kid`s.

mod support;

use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde_json::json;
use support::*;

fn config(idp: &TestIdp, refresh: &str, min_refresh: &str) -> serde_json::Value {
    json!({"jwt": {
        "jwks_refresh_interval": refresh,
        "jwks_min_refresh_interval": min_refresh,
        "issuers": [{"issuer": RSA_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/rsa/jwks.json")}],
    }})
}

fn token(key: &TestKey, kid: &str) -> String {
    key.sign(Some(kid), &claims(RSA_ISSUER))
}

#[tokio::test]
async fn rotated_in_key_is_accepted_and_removed_key_refused_without_restart() {
    let idp = TestIdp::start().await;
    let (old, new) = (TestKey::rsa(1, Algorithm::RS256), TestKey::rsa(2, Algorithm::RS256));
    idp.set_jwks("/rsa/jwks.json", vec![old.jwk("2026-01")]);
    let gw = Harness::new(config(&idp, "5m", "0s")).await;
    assert!(gw.authenticator.refresh_jwks().await);
    gw.bearer(&token(&old, "2026-01")).await.accepted();
    gw.bearer(&token(&new, "2026-02")).await.invalid("no key with kid \"2026-02\"");

    // The IdP rotates: the new key is published, the old one withdrawn.
    idp.set_jwks("/rsa/jwks.json", vec![new.jwk("2026-02")]);
    let caller = gw.bearer(&token(&new, "2026-02")).await.accepted();
    assert_eq!(&*caller.id, "jwt:https://rsa.idp.test/|alice");
    gw.bearer(&token(&old, "2026-01")).await.invalid("no key with kid \"2026-01\"");
}

#[tokio::test]
async fn periodic_refresh_replaces_a_key_kept_under_the_same_kid() {
    let idp = TestIdp::start().await;
    let (old, new) = (TestKey::rsa(1, Algorithm::RS256), TestKey::rsa(2, Algorithm::RS256));
    idp.set_jwks("/rsa/jwks.json", vec![old.jwk("main")]);
    let gw = Harness::new(config(&idp, "1s", "1s")).await;
    assert!(gw.authenticator.refresh_jwks().await);
    gw.bearer(&token(&old, "main")).await.accepted();

    // Same kid, new material: nothing on the request path notices (the kid is known), so only the
    // periodic refresh can pick it up.
    idp.set_jwks("/rsa/jwks.json", vec![new.jwk("main")]);
    let hits = idp.jwks_hits();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while gw.bearer(&token(&old, "main")).await.result.is_ok() {
        assert!(tokio::time::Instant::now() < deadline, "the periodic refresh never replaced the key");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(idp.jwks_hits() > hits, "a background fetch happened");
    gw.bearer(&token(&old, "main")).await.invalid("bad signature");
    gw.bearer(&token(&new, "main")).await.accepted();
}

#[tokio::test]
async fn unknown_kids_cause_at_most_one_fetch_per_min_interval() {
    let idp = TestIdp::start().await;
    let key = TestKey::rsa(1, Algorithm::RS256);
    idp.set_jwks("/rsa/jwks.json", vec![key.jwk("k1")]);
    // Tokens are signed before the clock matters: RSA signing in a debug build on a loaded machine
    // can take longer than the interval under test.
    let tokens: Vec<Vec<String>> =
        (0..3).map(|round| (0..25).map(|i| token(&key, &format!("nope-{round}-{i}"))).collect()).collect();
    let gw = Harness::new(config(&idp, "5m", "3s")).await;
    assert!(gw.authenticator.refresh_jwks().await);
    assert_eq!(idp.jwks_hits(), 1);

    let flood = |round: usize| {
        let gw = &gw;
        let tokens = &tokens;
        async move {
            let calls = tokens[round].iter().map(|token| async move { gw.bearer(token).await });
            for outcome in futures::future::join_all(calls).await {
                outcome.invalid("no key with kid");
            }
        }
    };
    // Within the min interval of the warm-up fetch: no fetch at all.
    flood(0).await;
    assert_eq!(idp.jwks_hits(), 1, "rate limited right after a fetch");

    tokio::time::sleep(Duration::from_millis(3300)).await;
    flood(1).await;
    assert_eq!(idp.jwks_hits(), 2, "25 concurrent unknown kids after the interval: exactly one fetch");
    flood(2).await;
    assert_eq!(idp.jwks_hits(), 2, "and none again until the interval has passed");
    gw.bearer(&token(&key, "k1")).await.accepted();
}

#[tokio::test]
async fn first_token_fetches_the_keys_without_warm_up() {
    let idp = TestIdp::start().await;
    let key = TestKey::ec();
    idp.set_jwks("/ec/jwks.json", vec![key.jwk("ec-1")]);
    let gw = Harness::new(json!({"jwt": {"issuers": [{"issuer": EC_ISSUER, "audiences": [AUDIENCE],
        "jwks_url": idp.url("/ec/jwks.json"), "algorithms": ["ES256"]}]}}))
    .await;
    assert_eq!(idp.jwks_hits(), 0, "nothing fetched at construction");
    gw.bearer(&key.sign(Some("ec-1"), &claims(EC_ISSUER))).await.accepted();
    assert_eq!(idp.jwks_hits(), 1);
}

#[tokio::test]
async fn cached_keys_survive_a_jwks_outage() {
    let idp = TestIdp::start().await;
    let key = TestKey::rsa(1, Algorithm::RS256);
    idp.set_jwks("/rsa/jwks.json", vec![key.jwk("k1")]);
    let gw = Harness::new(config(&idp, "1s", "0s")).await;
    assert!(gw.authenticator.refresh_jwks().await);
    idp.set_raw("/rsa/jwks.json", "upstream error");
    assert!(!gw.authenticator.refresh_jwks().await, "the refresh fails");
    gw.bearer(&token(&key, "k1")).await.accepted();
}

#[tokio::test]
async fn dropping_the_authenticator_stops_its_refresher() {
    let idp = TestIdp::start().await;
    idp.set_jwks("/rsa/jwks.json", vec![TestKey::rsa(1, Algorithm::RS256).jwk("k1")]);
    let gw = Harness::new(config(&idp, "1s", "1s")).await;
    assert!(eventually(Duration::from_secs(5), || idp.jwks_hits() >= 1).await, "the refresher runs");
    drop(gw);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let hits = idp.jwks_hits();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(idp.jwks_hits(), hits, "no fetches after the authenticator is gone");
}

#[tokio::test]
async fn a_verified_token_is_remembered_only_until_it_expires_and_only_for_its_key() {
    let idp = TestIdp::start().await;
    let key = TestKey::rsa(1, Algorithm::RS256);
    idp.set_jwks("/rsa/jwks.json", vec![key.jwk("k1")]);
    let config = json!({"jwt": {"jwks_min_refresh_interval": "0s", "issuers": [{
        "issuer": RSA_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/rsa/jwks.json"), "leeway": "0s"}]}});
    let gw = Harness::new(config).await;
    assert!(gw.authenticator.refresh_jwks().await);
    let mut short = claims(RSA_ISSUER);
    short["exp"] = json!(now() + 2);
    let token = key.sign(Some("k1"), &short);
    // Verified, then served from the shared cache, then from this thread's copy: the same caller.
    let verified = gw.bearer(&token).await.accepted();
    assert_eq!(gw.bearer(&token).await.accepted(), verified);
    assert_eq!(gw.bearer(&token).await.accepted(), verified);
    // The cache does not outlive the token.
    tokio::time::sleep(Duration::from_millis(3100)).await;
    gw.bearer(&token).await.invalid("expired");
    // Nor the key: a fresh token is cached, then its key leaves the JWKS and so does the token.
    let fresh = token_for(&key);
    for _ in 0..3 {
        gw.bearer(&fresh).await.accepted();
    }
    idp.set_jwks("/rsa/jwks.json", vec![TestKey::rsa(2, Algorithm::RS256).jwk("k2")]);
    assert!(gw.authenticator.refresh_jwks().await);
    gw.bearer(&fresh).await.invalid("no key with kid \"k1\"");
}

fn token_for(key: &TestKey) -> String {
    key.sign(Some("k1"), &claims(RSA_ISSUER))
}
