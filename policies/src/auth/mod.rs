//! Authentication: who is calling. Owns reading the caller's credential, checking it with the
//! configured methods (bearer JWTs from JWKS or shared-secret issuers, static API keys, OAuth2
//! token introspection), the [`Caller`] that results, and the refusal when there is none.
//!
//! A request carries one credential: `Authorization: Bearer <token>` or the API key header
//! (default `X-API-Key`); both at once is refused as ambiguous. A bearer token is tried as an API
//! key when it has the key shape (`a2a_<id>_<secret>`) or matches a free-form key, then as a JWT
//! when its unverified `iss` names a configured issuer, then by introspection when configured.
//! Once a method claims a token (key shape or known key; JWT of a known issuer) its verdict is
//! final: no fallback to another method after, say, a failed signature.
//!
//! The caller learns only "missing credentials" or "invalid credentials" and an RFC 6750
//! challenge; the precise reason goes to
//! [`RequestInfo::set_denial_detail`](a2a_core::RequestInfo::set_denial_detail) and the log.
//!
//! ```no_run
//! # async fn wire(config: a2a_policies::auth::AuthConfig) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use a2a_policies::auth::{AuthLayer, Authenticator};
//! let stop = tokio_util::sync::CancellationToken::new();
//! let authenticator = Arc::new(Authenticator::new(&config, reqwest::Client::new(), &stop)?);
//! authenticator.refresh_jwks().await; // optional warm-up
//! let layer = AuthLayer::new(authenticator); // between decode and route resolution
//! # Ok(()) }
//! ```

mod api_key;
mod card;
mod claims;
mod config;
mod failure;
mod introspection;
mod jwks;
mod jwt;
mod layer;
mod mtls;
mod per_address;
mod validate;

use http::{HeaderMap, HeaderName};
use tokio_util::sync::CancellationToken;

pub use api_key::{generate_key, hash_key, is_valid_key_id, key_id};
pub use card::{API_KEY_SCHEME, BEARER_SCHEME};
pub use config::{ApiKeyConfig, ApiKeysConfig, AuthConfig, IntrospectionConfig, IssuerConfig, JwtConfig, Secret};
pub use failure::AuthFailure;
pub use layer::{AuthLayer, AuthService, Authentication};
pub use mtls::{MtlsConfig, MtlsMode};
pub use per_address::PerAddressConfig;
pub use validate::AuthConfigError;

use a2a_core::A2aError;
use a2a_core::{Caller, ClientCertificate};
use api_key::ApiKeyStore;
use failure::{Challenges, clip};
use introspection::Introspector;
use jwt::JwtVerifier;
use per_address::PerAddress;

/// The credential a request presented.
enum Credential<'a> {
    Bearer(&'a str),
    ApiKeyHeader(&'a str),
}

/// Checks credentials with every configured method. Built once per configuration; owns the JWKS
/// refresh tasks, which stop when `stop` is cancelled or the authenticator is dropped.
pub struct Authenticator {
    challenges: Challenges,
    max_token_bytes: usize,
    api_key_header: Option<HeaderName>,
    api_keys: Option<ApiKeyStore>,
    jwt: Option<JwtVerifier>,
    introspection: Option<Introspector>,
    per_address: PerAddress,
    mtls: Option<mtls::MtlsConfig>,
    stop: CancellationToken,
}

impl Authenticator {
    /// Validates `config` and builds the methods; each JWKS issuer gets a background task that
    /// fetches its keys every `jwks_refresh_interval`. The first fetch happens on
    /// [`refresh_jwks`](Self::refresh_jwks) (call it at startup) or for the first token. Must be
    /// called inside a Tokio runtime. `http` is used for JWKS and introspection requests.
    pub fn new(config: &AuthConfig, http: reqwest::Client, stop: &CancellationToken) -> Result<Self, AuthConfigError> {
        config.validate()?;
        let stop = stop.child_token();
        let api_key_header = match &config.api_keys {
            Some(keys) => Some(HeaderName::from_bytes(keys.header.as_bytes()).map_err(|_| AuthConfigError {
                path: "auth.api_keys.header".into(),
                message: "not a valid header name".into(),
            })?),
            None => None,
        };
        let per_address =
            PerAddress::new(&config.per_address).map_err(|(path, message)| AuthConfigError { path, message })?;
        let jwt = config.jwt.as_ref().map(|jwt| JwtVerifier::new(jwt, &http, &stop)).transpose()?;
        Ok(Authenticator {
            challenges: Challenges::new(&config.realm),
            max_token_bytes: config.max_token_bytes,
            api_key_header,
            api_keys: config.api_keys.as_ref().map(ApiKeyStore::new),
            jwt,
            introspection: config.introspection.as_ref().map(|c| Introspector::new(c, http.clone())),
            per_address,
            mtls: config.mtls.clone(),
            stop,
        })
    }

    /// Establishes who sent a request with these headers, over a connection that presented
    /// `certificate` (verified by the listener) or none.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&ClientCertificate>,
    ) -> Result<Caller, AuthFailure> {
        if let Some(mtls) = &self.mtls {
            let has_header = !matches!(self.credential(headers), Err(AuthFailure::Missing));
            if let Some(verdict) = mtls.certificate_caller(certificate, has_header) {
                return verdict;
            }
            let caller = self.token_caller(headers).await?;
            if let Ok(Credential::Bearer(token)) = self.credential(headers) {
                mtls.check_binding(token, certificate)?;
            } else if mtls.bind_token && certificate.is_some() {
                return Err(AuthFailure::UnboundToken("an API key cannot be bound to a certificate"));
            }
            return Ok(caller);
        }
        self.token_caller(headers).await
    }

    /// The caller a bearer token or API key header names.
    async fn token_caller(&self, headers: &HeaderMap) -> Result<Caller, AuthFailure> {
        let credential = self.credential(headers)?;
        let token = match credential {
            Credential::Bearer(token) | Credential::ApiKeyHeader(token) => token,
        };
        // Checked before any parsing or lookup, so oversize input costs nothing.
        if token.len() > self.max_token_bytes {
            return Err(AuthFailure::TooLarge { len: token.len(), max: self.max_token_bytes });
        }
        match credential {
            Credential::ApiKeyHeader(key) => match &self.api_keys {
                Some(store) => store.verify_only(key),
                None => Err(AuthFailure::Missing),
            },
            Credential::Bearer(token) => self.bearer(token).await,
        }
    }

    async fn bearer(&self, token: &str) -> Result<Caller, AuthFailure> {
        if let Some(store) = &self.api_keys
            && let Some(caller) = store.verify(token)?
        {
            return Ok(caller);
        }
        let mut not_ours = AuthFailure::Unrecognised;
        if let Some(jwt) = &self.jwt {
            if let Some(caller) = jwt.already_verified(token) {
                return Ok(caller);
            }
            match jwt.issuer_of(token) {
                Ok((issuer, header)) => return issuer.verify(token, &header).await,
                Err(reason) => not_ours = reason,
            }
        }
        match &self.introspection {
            Some(introspection) => introspection.introspect(token).await,
            None => Err(not_ours),
        }
    }

    fn credential<'a>(&self, headers: &'a HeaderMap) -> Result<Credential<'a>, AuthFailure> {
        let authorization = single(headers, &http::header::AUTHORIZATION)?;
        let api_key = match &self.api_key_header {
            Some(name) => single(headers, name)?,
            None => None,
        };
        let bearer = match authorization {
            None => None,
            Some(value) => {
                let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
                if scheme.eq_ignore_ascii_case("bearer") {
                    let token = rest.trim_matches(' ');
                    if token.is_empty() {
                        return Err(AuthFailure::EmptyBearer);
                    }
                    Some(token)
                } else if api_key.is_none() {
                    return Err(AuthFailure::UnsupportedScheme(clip(scheme)));
                } else {
                    // Another scheme beside an API key header is not ours to judge.
                    None
                }
            }
        };
        match (bearer, api_key.map(str::trim)) {
            (Some(_), Some(_)) => Err(AuthFailure::Ambiguous("a bearer token and an API key header")),
            (Some(token), None) => Ok(Credential::Bearer(token)),
            (None, Some("")) => Err(AuthFailure::Missing),
            (None, Some(key)) => Ok(Credential::ApiKeyHeader(key)),
            (None, None) => Err(AuthFailure::Missing),
        }
    }

    /// Whether a request from `address` (a [`ClientAddress::limit_key`](a2a_core::ClientAddress::limit_key))
    /// may be authenticated now: refused with 429 when the address is over its request quota or
    /// its quota of failed authentications.
    pub fn admit(&self, address: std::net::IpAddr) -> Result<(), A2aError> {
        self.per_address.admit(address)
    }

    /// Counts `failure` against `address` when it is the caller's doing.
    pub fn failed(&self, address: std::net::IpAddr, failure: &AuthFailure) {
        if failure.counts_against_address() {
            self.per_address.failed(address);
        }
    }

    /// The refusal the caller sees for `failure`: generic, with the `WWW-Authenticate` challenge.
    pub fn refusal(&self, failure: &AuthFailure) -> A2aError {
        self.challenges.refusal(failure)
    }

    /// Fetches every JWKS now (e.g. at startup, with a timeout around it); `true` when all
    /// fetches succeeded. Requests do not need this: an unknown key triggers a fetch.
    pub async fn refresh_jwks(&self) -> bool {
        match &self.jwt {
            Some(jwt) => jwt.refresh_all().await,
            None => true,
        }
    }

    /// The request headers that carry credentials: the forwarder must not pass them to backends
    /// unless a backend is configured to receive the caller's credential.
    pub fn credential_headers(&self) -> Vec<HeaderName> {
        let mut headers = vec![http::header::AUTHORIZATION];
        headers.extend(self.api_key_header.clone());
        headers
    }
}

impl Drop for Authenticator {
    /// A replaced configuration's refresh tasks end with it.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The one value of header `name` as text; several values are ambiguous.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, AuthFailure> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(AuthFailure::Ambiguous("a credential header appears more than once"));
    }
    first.to_str().map(Some).map_err(|_| AuthFailure::NotText)
}
