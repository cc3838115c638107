//! One issuer's JSON Web Key Set: fetched from its URL, cached, refreshed periodically by a
//! background task and on demand when a token names an unknown `kid` (at most once per
//! `jwks_min_refresh_interval`).
//!
//! A `kid` is only ever a map key here: the fetch always goes to the configured URL. A fetch that
//! fails keeps the keys of the last good one (an IdP hiccup must not lock everyone out) until they
//! are older than `jwks_max_age`; a good fetch replaces the set, so removed keys stop verifying.
//! Only signature keys usable with an asymmetric algorithm are kept: a symmetric (`oct`) key from
//! a JWKS would let the public document verify HMAC tokens.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind};
use tokio_util::sync::CancellationToken;

use super::failure::{AuthFailure, clip};

/// A JWKS larger than this is refused (real ones are a few KiB).
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// RSA keys shorter than 2048 bits are not trusted.
const MIN_RSA_MODULUS_BYTES: usize = 256;

#[derive(Debug, Clone, Copy)]
pub(crate) struct JwksSettings {
    pub(crate) refresh_interval: Duration,
    pub(crate) min_refresh_interval: Duration,
    pub(crate) fetch_timeout: Duration,
    pub(crate) max_age: Duration,
}

/// A verification key from a JWKS and the algorithms it may verify.
pub(crate) struct JwksKey {
    pub(crate) key: DecodingKey,
    pub(crate) algorithms: Vec<Algorithm>,
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Arc<JwksKey>>,
    /// Every key, for tokens without a `kid`.
    all: Vec<Arc<JwksKey>>,
    /// When the set was fetched; `None` before the first good fetch.
    fetched_at: Option<Instant>,
}

enum Lookup<K> {
    Found(K),
    NotFound,
    NoKeys,
    Ambiguous,
}

pub(crate) struct Jwks {
    issuer: Arc<str>,
    url: String,
    http: reqwest::Client,
    settings: JwksSettings,
    keys: ArcSwap<KeySet>,
    /// Held while fetching; holds the time of the last fetch attempt.
    fetch: tokio::sync::Mutex<Option<Instant>>,
    /// Finished fetch attempts: lets a request that queued behind a fetch see that it happened.
    attempts: AtomicU64,
}

impl Jwks {
    pub(crate) fn new(issuer: Arc<str>, url: String, http: reqwest::Client, settings: JwksSettings) -> Jwks {
        Jwks {
            issuer,
            url,
            http,
            settings,
            keys: ArcSwap::from_pointee(KeySet::default()),
            fetch: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
        }
    }

    /// The key for a token's `kid` (or the only key for `alg` when the token has none),
    /// refreshing the set once if it is not cached.
    pub(crate) async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<JwksKey>, AuthFailure> {
        if let Lookup::Found(key) = self.lookup(kid, alg) {
            return Ok(key);
        }
        self.refresh_on_miss().await;
        match self.lookup(kid, alg) {
            Lookup::Found(key) => Ok(key),
            Lookup::NoKeys => Err(AuthFailure::KeysUnavailable { issuer: self.issuer.to_string() }),
            Lookup::NotFound => Err(AuthFailure::UnknownKid {
                kid: kid.map(clip).unwrap_or_else(|| "<none>".into()),
                issuer: self.issuer.to_string(),
            }),
            Lookup::Ambiguous => {
                Err(AuthFailure::NoKidAmbiguous { alg: format!("{alg:?}"), issuer: self.issuer.to_string() })
            }
        }
    }

    /// Whether `key` is still the key for `kid` and `alg` in the set held now, and that set is fresh
    /// (no fetch; no reference count written, so every worker may ask at once).
    pub(crate) fn is_current(&self, kid: Option<&str>, alg: Algorithm, key: &Arc<JwksKey>) -> bool {
        let set = self.keys.load();
        matches!(self.lookup_in(&set, kid, alg), Lookup::Found(found) if Arc::ptr_eq(found, key))
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Lookup<Arc<JwksKey>> {
        match self.lookup_in(&self.keys.load(), kid, alg) {
            Lookup::Found(key) => Lookup::Found(key.clone()),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::NoKeys => Lookup::NoKeys,
            Lookup::Ambiguous => Lookup::Ambiguous,
        }
    }

    fn lookup_in<'s>(&self, set: &'s KeySet, kid: Option<&str>, alg: Algorithm) -> Lookup<&'s Arc<JwksKey>> {
        let fresh = set.fetched_at.is_some_and(|at| at.elapsed() <= self.settings.max_age);
        if !fresh || set.all.is_empty() {
            return Lookup::NoKeys;
        }
        match kid {
            Some(kid) => set.by_kid.get(kid).map_or(Lookup::NotFound, Lookup::Found),
            None => {
                let mut usable = set.all.iter().filter(|k| k.algorithms.contains(&alg));
                match (usable.next(), usable.next()) {
                    (Some(key), None) => Lookup::Found(key),
                    (None, _) => Lookup::NotFound,
                    (Some(_), Some(_)) => Lookup::Ambiguous,
                }
            }
        }
    }

    /// Fetches again unless a fetch finished while this request waited, or the last one was less
    /// than `min_refresh_interval` ago (so a flood of unknown `kid`s costs one fetch at most).
    async fn refresh_on_miss(&self) {
        let seen = self.attempts.load(Ordering::Acquire);
        let wait = self.settings.fetch_timeout + Duration::from_secs(1);
        let Ok(mut last) = tokio::time::timeout(wait, self.fetch.lock()).await else { return };
        if self.attempts.load(Ordering::Acquire) != seen {
            return;
        }
        if last.is_some_and(|at| at.elapsed() < self.settings.min_refresh_interval) {
            tracing::debug!(issuer = %self.issuer, "JWKS refresh skipped: the last one was too recent");
            return;
        }
        self.fetch_locked(&mut last).await;
    }

    /// Fetches now; `true` when a good set was stored.
    pub(crate) async fn refresh(&self) -> bool {
        let mut last = self.fetch.lock().await;
        self.fetch_locked(&mut last).await
    }

    async fn fetch_locked(&self, last: &mut Option<Instant>) -> bool {
        *last = Some(Instant::now());
        let stored = match self.fetch_set().await {
            Ok(set) => {
                tracing::info!(issuer = %self.issuer, keys = set.all.len(), "JWKS fetched");
                self.keys.store(Arc::new(set));
                true
            }
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, url = %self.url, %error, "JWKS fetch failed; keeping cached keys");
                false
            }
        };
        self.attempts.fetch_add(1, Ordering::Release);
        stored
    }

    async fn fetch_set(&self) -> Result<KeySet, String> {
        let mut response = self
            .http
            .get(&self.url)
            .header(http::header::ACCEPT, "application/jwk-set+json, application/json")
            .timeout(self.settings.fetch_timeout)
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        if response.content_length().is_some_and(|n| n > MAX_JWKS_BYTES as u64) {
            return Err("the JWKS is too large".into());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the body failed: {e}"))? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err("the JWKS is too large".into());
            }
            body.extend_from_slice(&chunk);
        }
        parse_set(&body)
    }

    /// Refreshes every `refresh_interval` until `stop` is cancelled; a failed fetch is retried
    /// sooner. The first fetch is left to [`refresh`](Self::refresh) at startup or to the first
    /// request, so that nothing races it.
    pub(crate) fn spawn_refresher(self: &Arc<Self>, stop: CancellationToken) {
        let jwks = self.clone();
        tokio::spawn(async move {
            let mut wait = jwks.settings.refresh_interval;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
                let stored = tokio::select! {
                    _ = stop.cancelled() => break,
                    stored = jwks.refresh() => stored,
                };
                wait = if stored {
                    jwks.settings.refresh_interval
                } else {
                    jwks.settings.min_refresh_interval.max(Duration::from_secs(1))
                };
            }
        });
    }
}

#[derive(serde::Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}

/// Parses a JWKS document, keeping the keys this gateway can use and skipping the others.
fn parse_set(body: &[u8]) -> Result<KeySet, String> {
    let raw: RawSet = serde_json::from_slice(body).map_err(|e| format!("not a JWKS: {e}"))?;
    let mut set = KeySet { fetched_at: Some(Instant::now()), ..KeySet::default() };
    for (i, value) in raw.keys.into_iter().enumerate() {
        let jwk: Jwk = match serde_json::from_value(value) {
            Ok(jwk) => jwk,
            Err(error) => {
                tracing::debug!(index = i, %error, "JWKS entry skipped: not a JWK");
                continue;
            }
        };
        let kid = jwk.common.key_id.clone();
        match usable_key(&jwk) {
            Ok(key) => {
                let key = Arc::new(key);
                if let Some(kid) = kid {
                    set.by_kid.entry(kid).or_insert_with(|| key.clone());
                }
                set.all.push(key);
            }
            Err(reason) => tracing::debug!(index = i, kid = ?kid, reason, "JWKS entry skipped"),
        }
    }
    Ok(set)
}

fn usable_key(jwk: &Jwk) -> Result<JwksKey, &'static str> {
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return Err("not a signature key");
    }
    if jwk.common.key_operations.as_ref().is_some_and(|ops| !ops.contains(&KeyOperations::Verify)) {
        return Err("key_ops does not allow verify");
    }
    let mut algorithms: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa.algorithms().to_vec(),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("unsupported curve"),
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
        AlgorithmParameters::OctetKeyPair(_) => return Err("unsupported curve"),
        AlgorithmParameters::OctetKey(_) => return Err("symmetric keys from a JWKS are never used"),
        _ => return Err("unsupported key type"),
    };
    if let Some(declared) = jwk.common.key_algorithm {
        let declared = Algorithm::try_from(declared).map_err(|_| "not a signature algorithm")?;
        if !algorithms.contains(&declared) {
            return Err("alg does not fit the key type");
        }
        algorithms = vec![declared];
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|_| "invalid key material")?;
    if let DecodingKeyKind::RsaModulusExponent { n, .. } = key.kind() {
        let significant = n.iter().skip_while(|b| **b == 0).count();
        if significant < MIN_RSA_MODULUS_BYTES {
            return Err("RSA key shorter than 2048 bits");
        }
    }
    Ok(JwksKey { key, algorithms })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // A P-256 public key (any valid point will do for parsing).
    const EC_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const EC_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";

    fn parse(value: serde_json::Value) -> KeySet {
        parse_set(value.to_string().as_bytes()).expect("parses")
    }

    #[test]
    fn symmetric_and_encryption_keys_are_dropped() {
        let set = parse(json!({"keys": [
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"},
            {"kty": "EC", "kid": "enc", "use": "enc", "crv": "P-256", "x": EC_X, "y": EC_Y},
            {"kty": "EC", "kid": "sig", "use": "sig", "crv": "P-256", "x": EC_X, "y": EC_Y},
        ]}));
        assert_eq!(set.by_kid.keys().collect::<Vec<_>>(), vec!["sig"]);
        assert_eq!(set.by_kid["sig"].algorithms, vec![Algorithm::ES256]);
    }

    #[test]
    fn declared_alg_narrows_and_must_fit() {
        let set = parse(json!({"keys": [
            {"kty": "EC", "kid": "a", "alg": "ES256", "crv": "P-256", "x": EC_X, "y": EC_Y},
            {"kty": "EC", "kid": "b", "alg": "RS256", "crv": "P-256", "x": EC_X, "y": EC_Y},
            {"kty": "EC", "kid": "c", "alg": "HS256", "crv": "P-256", "x": EC_X, "y": EC_Y},
        ]}));
        assert_eq!(set.all.len(), 1);
        assert!(set.by_kid.contains_key("a"));
    }

    #[test]
    fn short_rsa_keys_are_dropped() {
        let set = parse(json!({"keys": [{"kty": "RSA", "kid": "tiny", "n": "AQAB", "e": "AQAB"}]}));
        assert!(set.all.is_empty());
    }

    #[test]
    fn unknown_entries_are_skipped_but_garbage_is_an_error() {
        let set = parse(json!({"keys": [{"kty": "XYZ", "kid": "x"}, 42]}));
        assert!(set.all.is_empty());
        assert!(parse_set(b"<html>oops</html>").is_err());
        assert!(parse_set(b"{\"nokeys\": []}").is_err());
    }
}
