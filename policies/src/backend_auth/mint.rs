//! Gateway-minted JWTs: the signing key, its JWKS document, and the per (backend, caller) token cache.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use http::HeaderValue;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::config::{CredentialConfigError, GatewayIdentityConfig, invalid};
use super::{Clock, CredentialError};
use a2a_core::Caller;

/// Most minted tokens kept; past it expired ones are dropped, and if none are, new ones are not kept.
const MAX_CACHED: usize = 10_000;

/// The gateway's signing key, parsed once.
pub(super) struct GatewayKey {
    encoding: EncodingKey,
    header: Header,
    issuer: Arc<str>,
    jwks: serde_json::Value,
}

impl GatewayKey {
    /// Loads `gateway_identity`: reads the key file (once, at configuration time) or takes the PEM
    /// text, picks RS256 or ES256 from the key type, and derives the public JWK.
    pub(super) fn load(config: &GatewayIdentityConfig) -> Result<GatewayKey, CredentialConfigError> {
        config.validate()?;
        const AT: &str = "gateway_identity.signing_key";
        let value = config.signing_key.expose().trim();
        let pem = if value.starts_with("-----BEGIN") {
            value.as_bytes().to_vec()
        } else {
            std::fs::read(value).map_err(|e| invalid(AT, format!("cannot read the key file {value}: {e}")))?
        };
        let (encoding, algorithm) = match EncodingKey::from_rsa_pem(&pem) {
            Ok(key) => (key, Algorithm::RS256),
            Err(_) => match EncodingKey::from_ec_pem(&pem) {
                Ok(key) => (key, Algorithm::ES256),
                Err(_) => return Err(invalid(AT, "not a PEM RSA or PKCS#8 P-256 private key")),
            },
        };
        let mut jwk = Jwk::from_encoding_key(&encoding, algorithm)
            .map_err(|_| invalid(AT, "the key cannot be used for RS256 or ES256 (only RSA and P-256 keys can)"))?;
        jwk.common.key_id = Some(config.key_id.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        let jwk = serde_json::to_value(&jwk).map_err(|_| invalid(AT, "cannot describe the key as a JWK"))?;
        let mut header = Header::new(algorithm);
        header.kid = Some(config.key_id.clone());
        // Sign once now so that a key that parses but cannot sign fails at load, not per request.
        jsonwebtoken::encode(&header, &serde_json::json!({}), &encoding)
            .map_err(|_| invalid(AT, "the key cannot sign tokens"))?;
        Ok(GatewayKey {
            encoding,
            header,
            issuer: Arc::from(config.issuer.as_str()),
            jwks: serde_json::json!({ "keys": [jwk] }),
        })
    }

    pub(super) fn jwks(&self) -> &serde_json::Value {
        &self.jwks
    }

    /// A JWS with detached payload (RFC 7515 appendix F) over `payload`: the protected header
    /// (`alg`, `kid`, and `jku` when given) base64url-encoded, and the signature of
    /// `protected.base64url(payload)`. What Agent Card `signatures` entries hold.
    pub(super) fn sign_detached(&self, jku: Option<&str>, payload: &[u8]) -> Option<(String, String)> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut header = serde_json::json!({ "alg": self.header.alg, "kid": self.header.kid, "typ": "JOSE" });
        if let Some(jku) = jku {
            header["jku"] = serde_json::Value::from(jku);
        }
        let protected = b64.encode(serde_json::to_vec(&header).ok()?);
        let input = format!("{protected}.{}", b64.encode(payload));
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &self.encoding, self.header.alg).ok()?;
        Some((protected, signature))
    }
}

/// Owned, because signing runs on the blocking pool.
#[derive(Serialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: String,
    iat: u64,
    exp: u64,
    jti: String,
    /// Space-separated, as in RFC 8693 and OAuth2 access tokens.
    scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
}

struct Minted {
    value: HeaderValue,
    refresh_at: Instant,
    /// The caller facts the token states: a caller id seen with other scopes gets a new token.
    tenant: Option<Arc<str>>,
    scopes: Arc<[String]>,
}

impl Minted {
    fn fits(&self, caller: &Caller, now: Instant) -> bool {
        now < self.refresh_at
            && self.tenant == caller.tenant
            && (Arc::ptr_eq(&self.scopes, &caller.scopes) || self.scopes == caller.scopes)
    }
}

/// Mints and caches tokens for every `mint_jwt` backend.
pub(super) struct Minter {
    key: Arc<GatewayKey>,
    cache: DashMap<(Arc<str>, Arc<str>), Minted>,
}

impl Minter {
    pub(super) fn new(key: GatewayKey) -> Minter {
        Minter { key: Arc::new(key), cache: DashMap::new() }
    }

    pub(super) fn jwks(&self) -> &serde_json::Value {
        self.key.jwks()
    }

    /// A token for `caller` at `backend`, reused until near its expiry.
    pub(super) async fn token(
        &self,
        backend: &Arc<str>,
        audience: &str,
        ttl: Duration,
        caller: &Caller,
        clock: &Clock,
    ) -> Result<HeaderValue, CredentialError> {
        let now = clock.now();
        let key = (backend.clone(), caller.id.clone());
        if let Some(minted) = self.cache.get(&key)
            && minted.fits(caller, now)
        {
            return Ok(minted.value.clone());
        }
        let value = self.mint(backend, audience, ttl, caller, clock.unix_secs()).await?;
        // Reuse for three quarters of the lifetime, less a second for `iat` rounding down, so the
        // backend always gets a token with time left.
        let reuse = (ttl - ttl / 4).saturating_sub(Duration::from_secs(1));
        let minted = Minted {
            value: value.clone(),
            refresh_at: now + reuse,
            tenant: caller.tenant.clone(),
            scopes: caller.scopes.clone(),
        };
        if self.cache.len() >= MAX_CACHED {
            self.cache.retain(|_, minted| minted.refresh_at > now);
        }
        if self.cache.len() < MAX_CACHED || self.cache.contains_key(&key) {
            self.cache.insert(key, minted);
        }
        Ok(value)
    }

    pub(super) fn sign_detached(&self, jku: Option<&str>, payload: &[u8]) -> Option<(String, String)> {
        self.key.sign_detached(jku, payload)
    }

    /// Signs arbitrary claims (the issuer set to the gateway's), off the async workers.
    pub(super) async fn sign(&self, mut claims: serde_json::Map<String, serde_json::Value>) -> Option<String> {
        claims.insert("iss".into(), serde_json::Value::from(&*self.key.issuer));
        let key = self.key.clone();
        tokio::task::spawn_blocking(move || jsonwebtoken::encode(&key.header, &claims, &key.encoding).ok())
            .await
            .ok()?
    }

    async fn mint(
        &self,
        backend: &Arc<str>,
        audience: &str,
        ttl: Duration,
        caller: &Caller,
        iat: u64,
    ) -> Result<HeaderValue, CredentialError> {
        let claims = Claims {
            iss: self.key.issuer.to_string(),
            sub: caller.id.to_string(),
            aud: audience.to_string(),
            iat,
            exp: iat + ttl.as_secs().max(1),
            jti: uuid::Uuid::new_v4().to_string(),
            scope: caller.scopes.join(" "),
            tenant: caller.tenant.as_deref().map(String::from),
        };
        let signing = |reason: String| CredentialError::Signing { backend: backend.clone(), reason };
        // A signature costs about a millisecond of CPU (RS256 more, ES256 less): keep it off the
        // async workers. The request awaiting it owns the job; it runs to completion either way.
        let key = self.key.clone();
        let token = tokio::task::spawn_blocking(move || jsonwebtoken::encode(&key.header, &claims, &key.encoding))
            .await
            .map_err(|e| signing(e.to_string()))?
            .map_err(|e| signing(e.to_string()))?;
        let mut value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|e| signing(e.to_string()))?;
        value.set_sensitive(true);
        Ok(value)
    }
}
