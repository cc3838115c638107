//! Outbound credentials: what the gateway presents to each backend in `Authorization`.
//!
//! Owns each backend's `auth` / `forward_caller_token` settings and the `gateway_identity` section,
//! and [`BackendCredentials`], which the proxy asks for the header of every forwarded request. Per
//! backend it is one of: nothing, a static bearer token, an OAuth2 client-credentials token (cached,
//! one fetch at a time), or a short-lived JWT the gateway mints for the caller and signs with its own
//! key (public half served as a JWKS document). The caller's own `Authorization` is forwarded only to
//! a backend whose config says `forward_caller_token: true`. Not a layer: the proxy calls it.
//!
//! ```yaml
//! backends:
//!   - name: echo
//!     url: http://127.0.0.1:9001
//!     auth: {oauth2: {token_url: https://idp/token, client_id: gw, client_secret: "${GW_SECRET}", scope: a2a}}
//!   - name: review
//!     url: http://127.0.0.1:9002
//!     auth: {mint_jwt: {ttl: 60s}}
//! gateway_identity:
//!   issuer: https://gateway.example/
//!   signing_key: /etc/a2a-gateway/key.pem
//!   key_id: gw-1
//! ```

mod config;
mod mint;
mod oauth2;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderValue;

use a2a_core::{A2aError, Caller};

pub use config::{
    BackendAuth, BackendAuthConfig, ClientAuth, CredentialConfigError, GatewayIdentityConfig, MintJwtConfig,
    OAuth2Config, Secret,
};

use config::invalid;
use mint::{GatewayKey, Minter};
use oauth2::ClientCredentials;

/// Why no credential could be had for a backend. The message is for logs; the caller is told only
/// that the backend is unavailable (see the `From` conversion to [`A2aError`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CredentialError {
    #[error("backend '{backend}': the token endpoint could not be reached: {reason}")]
    TokenRequest { backend: Arc<str>, reason: String },
    #[error("backend '{backend}': the token endpoint answered HTTP {status}{}", error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    TokenRefused { backend: Arc<str>, status: u16, error: Option<String> },
    #[error("backend '{backend}': unusable token endpoint answer: {reason}")]
    BadTokenResponse { backend: Arc<str>, reason: String },
    #[error("backend '{backend}': minting a token needs an authenticated caller")]
    NoCaller { backend: Arc<str> },
    #[error("backend '{backend}': signing a token failed: {reason}")]
    Signing { backend: Arc<str>, reason: String },
}

impl CredentialError {
    pub fn backend(&self) -> &str {
        match self {
            CredentialError::TokenRequest { backend, .. }
            | CredentialError::TokenRefused { backend, .. }
            | CredentialError::BadTokenResponse { backend, .. }
            | CredentialError::NoCaller { backend }
            | CredentialError::Signing { backend, .. } => backend,
        }
    }
}

impl From<CredentialError> for A2aError {
    fn from(error: CredentialError) -> A2aError {
        A2aError::BackendUnavailable(format!("the agent '{}' could not be reached; try again later", error.backend()))
    }
}

enum Source {
    /// Nothing: the backend gets no `Authorization`.
    Nothing,
    ForwardCaller,
    Static(HeaderValue),
    OAuth2(Box<ClientCredentials>),
    Mint {
        backend: Arc<str>,
        audience: Arc<str>,
        ttl: Duration,
    },
}

/// The credential of every configured backend. Build once per configuration; share it (`Arc`).
pub struct BackendCredentials {
    sources: HashMap<Box<str>, Source>,
    minter: Option<Minter>,
    clock: Clock,
}

impl BackendCredentials {
    /// Validates and prepares every backend's credential. `backends` come in config order: errors
    /// name `backends[i]`. `identity` is needed when a backend mints tokens; its key file is read
    /// here, once. `client` makes the token requests (the gateway's outbound client).
    pub fn new(
        backends: impl IntoIterator<Item = BackendAuth>,
        identity: Option<&GatewayIdentityConfig>,
        client: reqwest::Client,
    ) -> Result<BackendCredentials, CredentialConfigError> {
        let minter = identity.map(GatewayKey::load).transpose()?.map(Minter::new);
        let mut sources = HashMap::new();
        for (i, backend) in backends.into_iter().enumerate() {
            let at = |key: &str| format!("backends[{i}].{key}");
            let name: Arc<str> = Arc::from(backend.name.as_str());
            let source = match &backend.auth {
                Some(_) if backend.forward_caller_token => {
                    return Err(invalid(
                        at("forward_caller_token"),
                        "cannot be true together with auth: both would set the Authorization header",
                    ));
                }
                None if backend.forward_caller_token => Source::ForwardCaller,
                None => Source::Nothing,
                Some(auth) => {
                    auth.validate(&at("auth"))?;
                    match auth {
                        BackendAuthConfig::Bearer(token) => {
                            let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
                                .map_err(|_| invalid(at("auth.bearer"), "not a valid header value"))?;
                            value.set_sensitive(true);
                            Source::Static(value)
                        }
                        BackendAuthConfig::Oauth2(config) => {
                            ClientCredentials::new(name.clone(), config, client.clone())
                                .map(|c| Source::OAuth2(Box::new(c)))
                                .ok_or_else(|| invalid(at("auth.oauth2"), "the client credentials cannot be sent"))?
                        }
                        BackendAuthConfig::MintJwt(config) => {
                            if minter.is_none() {
                                return Err(invalid(
                                    at("auth.mint_jwt"),
                                    "needs gateway_identity (the key minted tokens are signed with)",
                                ));
                            }
                            let audience = Arc::from(config.audience.as_deref().unwrap_or(&backend.name));
                            Source::Mint { backend: name.clone(), audience, ttl: config.ttl }
                        }
                    }
                }
            };
            if sources.insert(Box::from(backend.name.as_str()), source).is_some() {
                return Err(invalid(at("name"), format!("duplicate backend name '{}'", backend.name)));
            }
        }
        Ok(BackendCredentials { sources, minter, clock: Clock::default() })
    }

    /// The `Authorization` value to send to `backend` for this call, if any. The proxy sends it in
    /// place of whatever the caller sent. A backend this was not built with gets nothing.
    ///
    /// `caller` is needed for `mint_jwt` backends; `caller_authorization` (the caller's own header) is
    /// returned only for `forward_caller_token` backends.
    pub async fn authorization(
        &self,
        backend: &str,
        caller: Option<&Caller>,
        caller_authorization: Option<&HeaderValue>,
    ) -> Result<Option<HeaderValue>, CredentialError> {
        match self.sources.get(backend) {
            None | Some(Source::Nothing) => Ok(None),
            Some(Source::ForwardCaller) => Ok(caller_authorization.cloned()),
            Some(Source::Static(value)) => Ok(Some(value.clone())),
            Some(Source::OAuth2(credentials)) => credentials.token(&self.clock).await.map(Some),
            Some(Source::Mint { backend, audience, ttl }) => {
                let caller = caller.ok_or_else(|| CredentialError::NoCaller { backend: backend.clone() })?;
                // `new` refuses mint_jwt backends without a key, so the minter is there.
                let minter = self.minter.as_ref().ok_or_else(|| CredentialError::Signing {
                    backend: backend.clone(),
                    reason: "no gateway_identity".into(),
                })?;
                minter.token(backend, audience, *ttl, caller, &self.clock).await.map(Some)
            }
        }
    }

    /// Whether the gateway has a signing key (`gateway_identity`).
    pub fn can_sign(&self) -> bool {
        self.minter.is_some()
    }

    /// A compact JWT of `claims` (with `iss` set to the gateway's issuer) signed with the gateway's
    /// key — what push-notification receivers verify against `/.well-known/jwks.json`. `None`
    /// without `gateway_identity`.
    pub async fn sign(&self, claims: serde_json::Map<String, serde_json::Value>) -> Option<String> {
        self.minter.as_ref()?.sign(claims).await
    }

    /// A detached-payload JWS over `payload` with the gateway's key: (protected header, signature),
    /// both base64url; the header names `jku` when given. `None` without `gateway_identity`.
    pub fn sign_detached(&self, jku: Option<&str>, payload: &[u8]) -> Option<(String, String)> {
        self.minter.as_ref()?.sign_detached(jku, payload)
    }

    /// The JWKS document (RFC 7517) with the public half of the gateway's signing key, for the
    /// gateway to serve at `/.well-known/jwks.json`; an empty key set without `gateway_identity`.
    pub fn jwks_json(&self) -> serde_json::Value {
        match &self.minter {
            Some(minter) => minter.jwks().clone(),
            None => serde_json::json!({ "keys": [] }),
        }
    }
}

/// Time for token lifetimes: monotonic for cache expiry, wall clock for JWT claims. Tests move it.
#[derive(Debug, Clone, Default)]
struct Clock {
    #[cfg(test)]
    offset: Arc<std::sync::atomic::AtomicU64>,
}

impl Clock {
    fn offset(&self) -> Duration {
        #[cfg(test)]
        return Duration::from_millis(self.offset.load(std::sync::atomic::Ordering::Relaxed));
        #[cfg(not(test))]
        Duration::ZERO
    }

    fn now(&self) -> Instant {
        Instant::now() + self.offset()
    }

    fn unix_secs(&self) -> u64 {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (since_epoch + self.offset()).as_secs()
    }

    #[cfg(test)]
    fn advance(&self, by: Duration) {
        self.offset.fetch_add(by.as_millis() as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
