//! The authentication attack matrix: every way a credential can be missing, malformed, forged,
//! stale or misdirected, each refused with a generic 401 and a precise denial detail; and the
//! valid credentials of every method accepted with the right `Caller`.

mod support;

use std::sync::Arc;

use a2a_core::{A2aError, AuthMethod};
use a2a_policies::auth::{generate_key, hash_key};
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};
use support::*;

/// The identity provider and the gateway's authentication, as most tests use them.
struct World {
    idp: TestIdp,
    gw: Harness,
    demo_key: String,
    revoked_key: String,
}

async fn world() -> World {
    let idp = TestIdp::start().await;
    idp.set_jwks("/rsa/jwks.json", vec![TestKey::rsa(1, Algorithm::RS256).jwk("rsa-1")]);
    idp.set_jwks("/ec/jwks.json", vec![TestKey::ec().jwk("ec-1"), TestKey::rsa(2, Algorithm::RS256).jwk("rsa-2")]);
    idp.set_jwks("/ed/jwks.json", vec![TestKey::ed().jwk("ed-1")]);
    idp.set_raw("/garbage/jwks.json", "<html>maintenance</html>");
    let demo_key = generate_key("demo");
    let revoked_key = generate_key("old");
    let unreachable = format!("http://127.0.0.1:{}/jwks.json", closed_port().await);
    let config = json!({
        "jwt": {
            "jwks_min_refresh_interval": "0s",
            "jwks_fetch_timeout": "2s",
            "issuers": [
                {"issuer": RSA_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/rsa/jwks.json"),
                 "algorithms": ["RS256", "PS256"], "tenant_claim": "org"},
                {"issuer": EC_ISSUER, "audiences": [AUDIENCE, "other"], "jwks_url": idp.url("/ec/jwks.json"),
                 "algorithms": ["ES256"], "tenant_claim": "org"},
                {"issuer": ED_ISSUER, "audiences": [AUDIENCE], "jwks_url": idp.url("/ed/jwks.json"),
                 "algorithms": ["EdDSA"], "identity_claim": "client_id"},
                {"issuer": DEV_ISSUER, "audiences": [AUDIENCE], "hs256_secret": DEV_SECRET,
                 "identity_claim": "azp", "scope_claims": ["scp"]},
                {"issuer": "https://down.idp.test/", "audiences": [AUDIENCE], "jwks_url": unreachable},
                {"issuer": "https://garbage.idp.test/", "audiences": [AUDIENCE],
                 "jwks_url": idp.url("/garbage/jwks.json")},
            ],
        },
        "api_keys": {
            "keys": [
                {"id": "demo", "hash": hash_key(&demo_key), "caller": "demo-client", "tenant": "demo",
                 "scopes": ["echo"]},
                {"id": "old", "hash": hash_key(&revoked_key), "caller": "old-client", "revoked": true},
                {"id": "freeform", "hash": hash_key("demo-token"), "caller": "demo-app", "free_form": true},
            ],
        },
    });
    let gw = Harness::new(config).await;
    World { idp, gw, demo_key, revoked_key }
}

fn rs256() -> TestKey {
    TestKey::rsa(1, Algorithm::RS256)
}

fn with(mut claims: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().expect("object") {
        if v.is_null() {
            claims.as_object_mut().expect("object").remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    claims
}

// ---- no usable credential ----

#[tokio::test]
async fn missing_header_is_refused() {
    world().await.gw.call(&[]).await.missing("no credentials presented");
}

#[tokio::test]
async fn basic_scheme_is_refused() {
    let w = world().await;
    w.gw.call(&[("authorization", "Basic YWxpY2U6c2VjcmV0")]).await.missing("unsupported Authorization scheme");
}

#[tokio::test]
async fn empty_bearer_is_refused() {
    let w = world().await;
    w.gw.call(&[("authorization", "Bearer")]).await.missing("empty bearer token");
    w.gw.call(&[("authorization", "Bearer    ")]).await.missing("empty bearer token");
}

#[tokio::test]
async fn two_authorization_headers_are_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER));
    let bearer = format!("Bearer {token}");
    w.gw.call(&[("authorization", &bearer), ("authorization", &bearer)]).await.invalid("more than once");
}

#[tokio::test]
async fn bearer_and_api_key_header_together_are_refused() {
    let w = world().await;
    let bearer = format!("Bearer {}", w.demo_key);
    w.gw.call(&[("authorization", &bearer), ("x-api-key", &w.demo_key)]).await.invalid("bearer token and an API key");
}

// ---- malformed tokens ----

#[tokio::test]
async fn garbage_token_is_refused() {
    world().await.gw.bearer("not-a-token-at-all").await.invalid("malformed JWT");
}

#[tokio::test]
async fn token_with_two_parts_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER));
    let (two_parts, _) = token.rsplit_once('.').expect("three parts");
    w.gw.bearer(two_parts).await.invalid("malformed JWT");
}

#[tokio::test]
async fn oversize_token_is_refused_before_parsing() {
    let w = world().await;
    let huge = format!("{}.{}.{}", b64(b"{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}"), "A".repeat(9000), "sig");
    w.gw.bearer(&huge).await.invalid("more than the limit of 8192");
    assert_eq!(w.idp.jwks_hits(), 0, "nothing fetched for an oversize token");
}

#[tokio::test]
async fn alg_none_is_refused() {
    let w = world().await;
    let header = b64(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = b64(claims(RSA_ISSUER).to_string().as_bytes());
    w.gw.bearer(&format!("{header}.{payload}."))
        .await
        .invalid("malformed JWT: header: bad JSON: unknown variant `none`");
    w.gw.bearer(&format!("{header}.{payload}")).await.invalid("malformed JWT: header: not three dot-separated parts");
}

// ---- forged or confused signatures ----

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    let w = world().await;
    // The classic confusion attack: the public key's PEM as an HMAC secret.
    let forged = TestKey::hs(&fixture("rsa-1.pub.pem")).sign(Some("rsa-1"), &claims(RSA_ISSUER));
    w.gw.bearer(&forged).await.invalid("algorithm HS256 is not allowed for issuer https://rsa.idp.test/");
}

#[tokio::test]
async fn rs256_for_an_issuer_that_only_allows_es256_is_refused() {
    let w = world().await;
    // rsa-2 is even in that issuer's JWKS: the allowed list still decides.
    let token = TestKey::rsa(2, Algorithm::RS256).sign(Some("rsa-2"), &claims(EC_ISSUER));
    w.gw.bearer(&token).await.invalid("algorithm RS256 is not allowed for issuer https://ec.idp.test/");
}

#[tokio::test]
async fn kid_naming_a_key_of_another_type_is_refused() {
    let w = world().await;
    // ES256 is allowed for the EC issuer, whose JWKS also holds an RSA key: a kid naming the RSA
    // key never makes it verify an ES256 signature.
    let token = TestKey::ec().sign(Some("rsa-2"), &claims(EC_ISSUER));
    w.gw.bearer(&token).await.invalid("key \"rsa-2\" of https://ec.idp.test/ is not for ES256");
}

#[tokio::test]
async fn tampered_payload_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER));
    let parts: Vec<&str> = token.split('.').collect();
    let evil = b64(with(claims(RSA_ISSUER), json!({"sub": "admin"})).to_string().as_bytes());
    w.gw.bearer(&format!("{}.{evil}.{}", parts[0], parts[2])).await.invalid("bad signature");
}

#[tokio::test]
async fn tampered_signature_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER));
    let (message, signature) = token.rsplit_once('.').expect("three parts");
    let mut bytes = signature.as_bytes().to_vec();
    bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{message}.{}", String::from_utf8(bytes).expect("ascii"));
    w.gw.bearer(&tampered).await.invalid("bad signature");
}

#[tokio::test]
async fn hs256_with_the_wrong_secret_is_refused() {
    let w = world().await;
    let token = TestKey::hs(b"not-the-dev-secret-not-the-dev-secret").sign(None, &claims(DEV_ISSUER));
    w.gw.bearer(&token).await.invalid("bad signature");
}

// ---- claims ----

#[tokio::test]
async fn expired_token_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"exp": now() - 120})));
    w.gw.bearer(&token).await.invalid("expired (exp)");
}

#[tokio::test]
async fn expired_within_leeway_is_accepted() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"exp": now() - 10})));
    assert_eq!(&*w.gw.bearer(&token).await.accepted().id, "jwt:https://rsa.idp.test/|alice");
}

#[tokio::test]
async fn not_yet_valid_token_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"nbf": now() + 120})));
    w.gw.bearer(&token).await.invalid("not yet valid (nbf)");
}

#[tokio::test]
async fn missing_exp_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"exp": null})));
    w.gw.bearer(&token).await.invalid("missing required claim 'exp'");
}

#[tokio::test]
async fn wrong_audience_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"aud": "someone-else"})));
    w.gw.bearer(&token).await.invalid("wrong audience (aud)");
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"aud": null})));
    w.gw.bearer(&token).await.invalid("missing required claim 'aud'");
}

#[tokio::test]
async fn unknown_issuer_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims("https://evil.example/"));
    w.gw.bearer(&token).await.invalid("no configured issuer \"https://evil.example/\"");
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"iss": null})));
    w.gw.bearer(&token).await.invalid("no iss claim");
}

#[tokio::test]
async fn control_characters_cannot_forge_log_lines() {
    let w = world().await;
    let forged = "\nlevel=INFO msg=\"authenticated\" caller=admin";
    let header = b64(json!({"alg": format!("RS256{forged}")}).to_string().as_bytes());
    let payload = b64(claims(RSA_ISSUER).to_string().as_bytes());
    let by_alg = w.gw.bearer(&format!("{header}.{payload}.c2ln")).await;
    let by_iss = w.gw.bearer(&rs256().sign(Some("rsa-1"), &claims(&format!("https://evil.example/{forged}")))).await;
    for outcome in [by_alg, by_iss] {
        let detail = outcome.info.denial_detail().expect("detail").to_owned();
        assert!(!detail.chars().any(char::is_control), "{detail:?}");
        outcome.invalid("");
    }
}

#[tokio::test]
async fn wrong_issuer_is_refused() {
    let w = world().await;
    // Signed by the EC issuer's key but claiming the RSA issuer: verified with the RSA issuer's
    // rules only, so the algorithm is not even allowed there.
    let token = TestKey::ec().sign(Some("ec-1"), &claims(RSA_ISSUER));
    w.gw.bearer(&token).await.invalid("not allowed for issuer https://rsa.idp.test/");
    // A dev-secret token claiming the EC issuer.
    let token = TestKey::hs(DEV_SECRET.as_bytes()).sign(None, &claims(EC_ISSUER));
    w.gw.bearer(&token).await.invalid("algorithm HS256 is not allowed for issuer https://ec.idp.test/");
}

#[tokio::test]
async fn missing_identity_claim_is_refused() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"sub": null})));
    w.gw.bearer(&token).await.invalid("claim \"sub\" is missing");
}

// ---- keys ----

#[tokio::test]
async fn unknown_kid_is_refused_after_a_refresh() {
    let w = world().await;
    assert!(!w.gw.authenticator.refresh_jwks().await, "two issuers are down or broken");
    let before = w.idp.jwks_hits();
    let token = rs256().sign(Some("rsa-404"), &claims(RSA_ISSUER));
    w.gw.bearer(&token).await.invalid("no key with kid \"rsa-404\" in the JWKS of https://rsa.idp.test/");
    assert_eq!(w.idp.jwks_hits(), before + 1, "the unknown kid caused one refresh");
}

#[tokio::test]
async fn kid_path_traversal_is_only_a_lookup_key() {
    let w = world().await;
    let token = rs256().sign(Some("../../../../etc/passwd"), &claims(RSA_ISSUER));
    w.gw.bearer(&token).await.invalid("no key with kid \"../../../../etc/passwd\"");
    assert!(w.idp.paths().iter().all(|p| p == "/rsa/jwks.json"), "only the configured URL: {:?}", w.idp.paths());
}

#[tokio::test]
async fn kid_sql_injection_is_only_a_lookup_key() {
    let w = world().await;
    let kid = "rsa-1' OR '1'='1'; DROP TABLE keys; --";
    let token = rs256().sign(Some(kid), &claims(RSA_ISSUER));
    w.gw.bearer(&token).await.invalid("no key with kid");
    assert!(w.idp.paths().iter().all(|p| p == "/rsa/jwks.json"), "only the configured URL: {:?}", w.idp.paths());
}

#[tokio::test]
async fn embedded_jku_and_jwk_headers_are_ignored() {
    let w = world().await;
    let attacker = TestKey::rsa(2, Algorithm::RS256);
    w.idp.set_jwks("/attacker/jwks.json", vec![attacker.jwk("attacker")]);
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some("attacker".into());
    header.jku = Some(w.idp.url("/attacker/jwks.json"));
    header.jwk = serde_json::from_value(attacker.jwk("attacker")).ok();
    let token = jsonwebtoken::encode(&header, &claims(RSA_ISSUER), &attacker.encoding).expect("sign");
    w.gw.bearer(&token).await.invalid("no key with kid \"attacker\"");
    assert!(w.idp.paths().iter().all(|p| p == "/rsa/jwks.json"), "jku never fetched: {:?}", w.idp.paths());
}

#[tokio::test]
async fn jwks_unreachable_fails_closed() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims("https://down.idp.test/"));
    w.gw.bearer(&token).await.invalid("no keys of https://down.idp.test/ are available");
}

#[tokio::test]
async fn jwks_garbage_fails_closed() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &claims("https://garbage.idp.test/"));
    w.gw.bearer(&token).await.invalid("no keys of https://garbage.idp.test/ are available");
    assert!(w.idp.paths().contains(&"/garbage/jwks.json".to_owned()), "it was fetched");
}

// ---- valid JWTs ----

#[tokio::test]
async fn valid_rs256_is_accepted() {
    let w = world().await;
    let caller = w.gw.bearer(&rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER))).await.accepted();
    assert_eq!(&*caller.id, "jwt:https://rsa.idp.test/|alice");
    assert_eq!(caller.tenant.as_deref(), Some("acme"));
    assert_eq!(&*caller.scopes, ["echo".to_owned(), "review".to_owned()]);
    assert_eq!(caller.auth, AuthMethod::Jwt { issuer: Arc::from(RSA_ISSUER) });
}

#[tokio::test]
async fn valid_ps256_is_accepted() {
    let w = world().await;
    let token = TestKey::rsa(1, Algorithm::PS256).sign(Some("rsa-1"), &claims(RSA_ISSUER));
    assert_eq!(&*w.gw.bearer(&token).await.accepted().id, "jwt:https://rsa.idp.test/|alice");
}

#[tokio::test]
async fn valid_es256_is_accepted() {
    let w = world().await;
    let token = TestKey::ec().sign(Some("ec-1"), &with(claims(EC_ISSUER), json!({"aud": ["x", "other"]})));
    let caller = w.gw.bearer(&token).await.accepted();
    assert_eq!(&*caller.id, "jwt:https://ec.idp.test/|alice");
    assert_eq!(caller.tenant.as_deref(), Some("acme"));
}

#[tokio::test]
async fn valid_eddsa_is_accepted() {
    let w = world().await;
    let token = TestKey::ed().sign(Some("ed-1"), &claims(ED_ISSUER));
    let caller = w.gw.bearer(&token).await.accepted();
    assert_eq!(&*caller.id, "jwt:https://ed.idp.test/|ed-client", "identity from client_id");
    assert_eq!(caller.tenant, None, "no tenant claim configured");
}

#[tokio::test]
async fn valid_eddsa_without_kid_uses_the_only_key() {
    let w = world().await;
    let token = TestKey::ed().sign(None, &claims(ED_ISSUER));
    assert_eq!(&*w.gw.bearer(&token).await.accepted().id, "jwt:https://ed.idp.test/|ed-client");
}

#[tokio::test]
async fn valid_hs256_is_accepted() {
    let w = world().await;
    let token = TestKey::hs(DEV_SECRET.as_bytes())
        .sign(None, &with(claims(DEV_ISSUER), json!({"scp": ["echo", "admin"], "scope": "ignored"})));
    let caller = w.gw.bearer(&token).await.accepted();
    assert_eq!(&*caller.id, "jwt:https://dev.idp.test/|dev-client", "identity from azp");
    assert_eq!(&*caller.scopes, ["echo".to_owned(), "admin".to_owned()], "scopes from scp only");
}

#[tokio::test]
async fn same_subject_from_two_issuers_are_two_callers() {
    let w = world().await;
    let a = w.gw.bearer(&rs256().sign(Some("rsa-1"), &claims(RSA_ISSUER))).await.accepted();
    let b = w.gw.bearer(&TestKey::ec().sign(Some("ec-1"), &claims(EC_ISSUER))).await.accepted();
    assert_ne!(a.id, b.id);
}

// ---- API keys ----

#[tokio::test]
async fn api_key_as_bearer_is_accepted() {
    let w = world().await;
    let caller = w.gw.bearer(&w.demo_key).await.accepted();
    assert_eq!(&*caller.id, "key:demo-client");
    assert_eq!(caller.tenant.as_deref(), Some("demo"));
    assert_eq!(&*caller.scopes, ["echo".to_owned()]);
    assert_eq!(caller.auth, AuthMethod::ApiKey { key_id: Arc::from("demo") });
}

#[tokio::test]
async fn api_key_in_x_api_key_header_is_accepted() {
    let w = world().await;
    assert_eq!(&*w.gw.call(&[("x-api-key", &w.demo_key)]).await.accepted().id, "key:demo-client");
}

#[tokio::test]
async fn free_form_api_key_is_accepted() {
    let w = world().await;
    assert_eq!(&*w.gw.bearer("demo-token").await.accepted().id, "key:demo-app");
}

#[tokio::test]
async fn api_key_with_wrong_secret_is_refused() {
    let w = world().await;
    let mut wrong = w.demo_key.clone();
    let last = if wrong.ends_with('0') { '1' } else { '0' };
    wrong.pop();
    wrong.push(last);
    w.gw.bearer(&wrong).await.invalid("API key \"demo\": the secret does not match");
    w.gw.call(&[("x-api-key", &wrong)]).await.invalid("the secret does not match");
}

#[tokio::test]
async fn api_key_with_unknown_id_is_refused() {
    let w = world().await;
    w.gw.bearer(&generate_key("nobody")).await.invalid("unknown API key id \"nobody\"");
    w.gw.call(&[("x-api-key", "just-some-text")]).await.invalid("does not hold a configured key");
}

#[tokio::test]
async fn revoked_api_key_is_refused() {
    let w = world().await;
    w.gw.bearer(&w.revoked_key).await.invalid("API key \"old\" is revoked");
}

// ---- the refusal never explains itself to the caller ----

#[tokio::test]
async fn refusals_do_not_leak_the_reason() {
    let w = world().await;
    let token = rs256().sign(Some("rsa-1"), &with(claims(RSA_ISSUER), json!({"exp": now() - 120})));
    let outcome = w.gw.bearer(&token).await;
    let Err(A2aError::Unauthenticated { message, challenge }) = &outcome.result else { panic!("not refused") };
    for secret_reason in ["exp", "expired", "signature", "rsa", "issuer"] {
        assert!(!message.contains(secret_reason) && !challenge.contains(secret_reason), "{message} / {challenge}");
    }
    assert!(outcome.info.denial_detail().is_some_and(|d| d.contains("expired")));
}

// ---- OAuth2 token introspection ----

async fn introspection_world() -> (TestIdp, Harness) {
    let idp = TestIdp::start().await;
    let config = json!({
        "introspection": {
            "endpoint": idp.url("/introspect"),
            "client_id": "gateway",
            "client_secret": "s3cret&more",
            "tenant_claim": "org",
            "audiences": [AUDIENCE],
            "negative_cache_ttl": "1m",
        },
    });
    (idp, Harness::new(config).await)
}

#[tokio::test]
async fn introspection_active_token_is_accepted() {
    let (idp, gw) = introspection_world().await;
    idp.set_introspection(
        "opaque-1",
        json!({"active": true, "sub": "svc-7", "org": "acme", "scope": "echo", "aud": AUDIENCE, "exp": now() + 60}),
    );
    let caller = gw.bearer("opaque-1").await.accepted();
    assert_eq!(&*caller.id, "introspection:svc-7");
    assert_eq!(caller.tenant.as_deref(), Some("acme"));
    assert_eq!(&*caller.scopes, ["echo".to_owned()]);
    assert_eq!(caller.auth, AuthMethod::Introspection);
    let auth = idp.state.introspection_auth.lock().unwrap().clone();
    // RFC 6749 2.3.1: id and secret form-encoded, then Basic.
    assert_eq!(auth, vec![format!("Basic {}", base64_std("gateway:s3cret%26more"))]);
}

#[tokio::test]
async fn introspection_inactive_token_is_refused() {
    let (idp, gw) = introspection_world().await;
    idp.set_introspection("opaque-2", json!({"active": false}));
    gw.bearer("opaque-2").await.invalid("the token is not active");
    idp.set_introspection("opaque-3", json!({"active": true, "sub": "svc", "aud": "elsewhere"}));
    gw.bearer("opaque-3").await.invalid("wrong audience");
}

#[tokio::test]
async fn introspection_results_are_cached() {
    let (idp, gw) = introspection_world().await;
    idp.set_introspection("opaque-4", json!({"active": true, "sub": "svc", "aud": AUDIENCE, "exp": now() + 60}));
    gw.bearer("opaque-4").await.accepted();
    gw.bearer("opaque-4").await.accepted();
    assert_eq!(idp.introspection_hits(), 1, "the second request was answered from the cache");
    gw.bearer("unknown-opaque").await.invalid("not active");
    gw.bearer("unknown-opaque").await.invalid("not active");
    assert_eq!(idp.introspection_hits(), 2, "refusals are cached too");
}

#[tokio::test]
async fn introspection_unreachable_fails_closed() {
    let port = closed_port().await;
    let gw = Harness::new(json!({"introspection": {
        "endpoint": format!("http://127.0.0.1:{port}/introspect"), "client_id": "gw", "client_secret": "x"}}))
    .await;
    gw.bearer("opaque-5").await.invalid("introspection failed");
}

fn base64_std(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
