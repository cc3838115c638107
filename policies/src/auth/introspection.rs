//! OAuth2 token introspection (RFC 7662) for opaque bearer tokens, with a bounded cache.
//!
//! The gateway POSTs the token to the endpoint with its client credentials (HTTP Basic, RFC 6749
//! §2.3.1). Only `"active": true` answers pass; they are cached until the token's `exp` but at most
//! `cache_max_ttl`, refusals for `negative_cache_ttl`. The cache is keyed by the SHA-256 of the
//! token (tokens themselves are not kept) and holds at most `cache_max_entries`. An endpoint that
//! cannot be reached fails closed and is not cached.
//!
//! Calls to the endpoint are bounded: concurrent requests with the same token share one call
//! (single flight), and the calls of all callers together stay within `max_calls` (over it, a
//! caller whose token is not cached gets 429 rather than an IdP call).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use dashmap::DashMap;
use http::HeaderValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::claims::ClaimMapping;
use super::config::IntrospectionConfig;
use super::failure::AuthFailure;
use a2a_core::{AuthMethod, Caller};

/// An introspection answer larger than this is refused.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// A full cache is swept of expired entries at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct Cached {
    outcome: Result<Caller, AuthFailure>,
    until: Instant,
}

pub(crate) struct Introspector {
    endpoint: String,
    http: reqwest::Client,
    authorization: HeaderValue,
    timeout: Duration,
    claims: ClaimMapping,
    issuer: Option<String>,
    audiences: Vec<String>,
    cache: DashMap<[u8; 32], Cached>,
    max_entries: usize,
    max_ttl: Duration,
    negative_ttl: Duration,
    last_sweep: Mutex<Instant>,
    /// Calls in flight, by token hash: later requests with the same token wait for this one.
    in_flight: DashMap<[u8; 32], Arc<tokio::sync::OnceCell<Result<Caller, AuthFailure>>>>,
    calls: crate::rate_limit::Direct,
}

impl Introspector {
    /// `config` must have been validated (its call quota is valid).
    pub(crate) fn new(config: &IntrospectionConfig, http: reqwest::Client) -> Introspector {
        let calls = config
            .max_calls
            .quota("auth.introspection.max_calls")
            .unwrap_or_else(|_| governor::Quota::per_second(std::num::NonZeroU32::MIN));
        let credentials = format!("{}:{}", form_encode(&config.client_id), form_encode(config.client_secret.expose()));
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        // Base64 output is always a valid header value.
        let mut authorization = HeaderValue::from_str(&basic).unwrap_or_else(|_| HeaderValue::from_static("Basic"));
        authorization.set_sensitive(true);
        Introspector {
            endpoint: config.endpoint.clone(),
            http,
            authorization,
            timeout: config.timeout,
            claims: ClaimMapping {
                id_prefix: "introspection:".into(),
                identity: config.identity_claim.clone(),
                tenant: config.tenant_claim.clone(),
                scopes: config.scope_claims.clone(),
            },
            issuer: config.issuer.clone(),
            audiences: config.audiences.clone(),
            cache: DashMap::new(),
            max_entries: config.cache_max_entries,
            max_ttl: config.cache_max_ttl,
            negative_ttl: config.negative_cache_ttl,
            last_sweep: Mutex::new(Instant::now()),
            in_flight: DashMap::new(),
            calls: governor::RateLimiter::direct_with_clock(calls, crate::rate_limit::TokioClock),
        }
    }

    pub(crate) async fn introspect(&self, token: &str) -> Result<Caller, AuthFailure> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = self.cache.get(&key).filter(|hit| hit.until > Instant::now()).map(|hit| hit.outcome.clone())
        {
            return hit;
        }
        let call = self.in_flight.entry(key).or_default().clone();
        let outcome = call.get_or_init(|| self.call(token, key)).await.clone();
        self.in_flight.remove_if(&key, |_, other| Arc::ptr_eq(other, &call));
        outcome
    }

    /// One call to the endpoint (within the call quota), its outcome cached.
    async fn call(&self, token: &str, key: [u8; 32]) -> Result<Caller, AuthFailure> {
        use governor::clock::Clock;
        if let Err(until) = self.calls.check() {
            let retry_after = until.wait_time_from(crate::rate_limit::TokioClock.now()).max(Duration::from_millis(1));
            return Err(AuthFailure::Throttled { retry_after });
        }
        let answer = self.ask(token).await.map_err(AuthFailure::IntrospectionFailed)?;
        let (outcome, ttl) = self.judge(&answer);
        self.remember(key, outcome.clone(), ttl);
        outcome
    }

    async fn ask(&self, token: &str) -> Result<Map<String, Value>, String> {
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let mut response = self
            .http
            .post(&self.endpoint)
            .header(http::header::AUTHORIZATION, self.authorization.clone())
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .timeout(self.timeout)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("the endpoint answered {}", response.status()));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the answer failed: {e}"))? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err("the answer is too large".into());
            }
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not a JSON object: {e}"))
    }

    /// The outcome of an answer and how long to cache it.
    fn judge(&self, answer: &Map<String, Value>) -> (Result<Caller, AuthFailure>, Duration) {
        let refuse = |failure| (Err(failure), self.negative_ttl);
        if answer.get("active") != Some(&Value::Bool(true)) {
            return refuse(AuthFailure::Inactive);
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let exp = answer.get("exp").and_then(Value::as_u64);
        if exp.is_some_and(|exp| exp <= now) {
            return refuse(AuthFailure::IntrospectionRejected("expired (exp)".into()));
        }
        if answer.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now) {
            return refuse(AuthFailure::IntrospectionRejected("not yet valid (nbf)".into()));
        }
        let iss = answer.get("iss").and_then(Value::as_str);
        if self.issuer.as_deref().is_some_and(|issuer| iss != Some(issuer)) {
            return refuse(AuthFailure::IntrospectionRejected("wrong issuer (iss)".into()));
        }
        if !self.audiences.is_empty() && !audience_matches(answer.get("aud"), &self.audiences) {
            return refuse(AuthFailure::IntrospectionRejected("wrong audience (aud)".into()));
        }
        match self.claims.caller(answer, AuthMethod::Introspection) {
            Ok(caller) => {
                let ttl = exp.map_or(self.max_ttl, |exp| self.max_ttl.min(Duration::from_secs(exp - now)));
                (Ok(caller), ttl)
            }
            Err(failure) => refuse(failure),
        }
    }

    fn remember(&self, key: [u8; 32], outcome: Result<Caller, AuthFailure>, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        if self.cache.len() >= self.max_entries {
            self.sweep();
            if self.cache.len() >= self.max_entries {
                // Full of live entries: refusals are not worth evicting for; a success takes the
                // place of an arbitrary entry.
                if outcome.is_err() {
                    return;
                }
                let victim = self.cache.iter().next().map(|entry| *entry.key());
                if let Some(victim) = victim {
                    self.cache.remove(&victim);
                }
            }
        }
        self.cache.insert(key, Cached { outcome, until: Instant::now() + ttl });
    }

    fn sweep(&self) {
        let now = Instant::now();
        {
            let Ok(mut last) = self.last_sweep.lock() else { return };
            if now.duration_since(*last) < SWEEP_EVERY {
                return;
            }
            *last = now;
        }
        self.cache.retain(|_, cached| cached.until > now);
    }

    #[cfg(test)]
    fn cached(&self) -> usize {
        self.cache.len()
    }
}

fn audience_matches(aud: Option<&Value>, accepted: &[String]) -> bool {
    match aud {
        Some(Value::String(one)) => accepted.iter().any(|a| a == one),
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).any(|one| accepted.iter().any(|a| a == one)),
        _ => false,
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn introspector(max_entries: usize) -> Introspector {
        let config: IntrospectionConfig = serde_json::from_value(json!({
            "endpoint": "http://127.0.0.1:9/introspect",
            "client_id": "gw",
            "client_secret": "s3cret",
            "audiences": ["a2a-gateway"],
            "cache_max_entries": max_entries,
        }))
        .expect("config");
        // reqwest is built without a TLS provider; it wants one chosen even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Introspector::new(&config, reqwest::Client::new())
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    fn answer(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn active_answers_are_cached_until_exp_at_most() {
        let i = introspector(10);
        let (outcome, ttl) =
            i.judge(&answer(json!({"active": true, "sub": "svc", "aud": "a2a-gateway", "exp": now() + 60})));
        assert_eq!(&*outcome.unwrap().id, "introspection:svc");
        assert!(ttl <= Duration::from_secs(60) && ttl >= Duration::from_secs(58), "{ttl:?}");
        let (_, ttl) = i.judge(&answer(json!({"active": true, "sub": "svc", "aud": ["x", "a2a-gateway"]})));
        assert_eq!(ttl, Duration::from_secs(300), "no exp: the configured maximum");
    }

    #[test]
    fn inactive_expired_and_foreign_answers_are_refused_briefly() {
        let i = introspector(10);
        for bad in [
            json!({"active": false, "sub": "svc"}),
            json!({"active": "true", "sub": "svc"}),
            json!({"active": true, "sub": "svc", "aud": "a2a-gateway", "exp": now() - 1}),
            json!({"active": true, "sub": "svc", "aud": "someone-else"}),
            json!({"active": true, "aud": "a2a-gateway"}),
        ] {
            let (outcome, ttl) = i.judge(&answer(bad.clone()));
            assert!(outcome.is_err(), "{bad}");
            assert_eq!(ttl, Duration::from_secs(10));
        }
    }

    #[test]
    fn the_cache_is_bounded() {
        let i = introspector(2);
        let caller = || Caller::anonymous([127, 0, 0, 1].into());
        for n in 0..5u8 {
            i.remember([n; 32], Ok(caller()), Duration::from_secs(60));
        }
        assert_eq!(i.cached(), 2);
        i.remember([9; 32], Err(AuthFailure::Inactive), Duration::from_secs(60));
        assert_eq!(i.cached(), 2);
        assert!(!i.cache.contains_key(&[9; 32]), "a refusal does not evict a success");
    }

    #[test]
    fn form_encoding_escapes_reserved_bytes() {
        assert_eq!(form_encode("a b+c/d=é"), "a%20b%2Bc%2Fd%3D%C3%A9");
    }
}
