//! Config for outbound credentials: each backend's `auth` and `forward_caller_token`, and the
//! gateway's own signing identity (`gateway_identity`).

use std::time::Duration;

use serde::Deserialize;

pub use crate::secret::Secret;

/// `backends[i].auth`: the credential the gateway presents to that backend.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackendAuthConfig {
    /// A static bearer token (`{bearer: "${ECHO_TOKEN}"}`).
    Bearer(Secret),
    /// A token from an OAuth2 client-credentials grant (RFC 6749 §4.4).
    Oauth2(OAuth2Config),
    /// A short-lived JWT the gateway mints per caller, signed with `gateway_identity`.
    MintJwt(MintJwtConfig),
}

/// How the client authenticates at the token endpoint (RFC 6749 §2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the url-encoded id and secret (every server must support it).
    #[default]
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Form,
}

/// `backends[i].auth.oauth2`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Config {
    pub token_url: String,
    pub client_id: String,
    pub client_secret: Secret,
    /// Space-separated scopes to ask for.
    #[serde(default)]
    pub scope: Option<String>,
    /// Sent as the `audience` parameter (Auth0, Okta and others use it to pick the API).
    #[serde(default)]
    pub audience: Option<String>,
    #[serde(default)]
    pub client_auth: ClientAuth,
    /// How long a token request may take.
    #[serde(default = "default_token_timeout", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub timeout: Duration,
    /// Fetch a new token this long before the current one expires (at most half its lifetime).
    #[serde(default = "default_refresh_before", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub refresh_before: Duration,
}

fn default_token_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_refresh_before() -> Duration {
    Duration::from_secs(30)
}

/// `backends[i].auth.mint_jwt`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MintJwtConfig {
    /// The token's `aud`; the backend's name unless given.
    #[serde(default)]
    pub audience: Option<String>,
    /// The token's lifetime.
    #[serde(default = "default_ttl", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub ttl: Duration,
}

fn default_ttl() -> Duration {
    Duration::from_secs(60)
}

/// `gateway_identity`: the key the gateway signs minted tokens with; its public half is served as
/// a JWKS document.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayIdentityConfig {
    /// The minted tokens' `iss`.
    pub issuer: String,
    /// A PEM private key (RSA → RS256, P-256 → ES256): a file path, or the PEM text itself (e.g.
    /// from `${GATEWAY_KEY}`).
    pub signing_key: Secret,
    /// The key's `kid` in token headers and the JWKS document.
    pub key_id: String,
}

/// One backend's outbound credential settings, as the gateway hands them to
/// [`BackendCredentials::new`](super::BackendCredentials::new). Not deserialised itself: the
/// gateway's backend entry carries `auth` and `forward_caller_token` beside its other keys.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendAuth {
    pub name: String,
    pub auth: Option<BackendAuthConfig>,
    /// Forward the caller's own `Authorization` header to this backend. Off unless said.
    pub forward_caller_token: bool,
}

/// Credential config that cannot be used, with the key path at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct CredentialConfigError {
    pub path: String,
    pub message: String,
}

pub(super) fn invalid(path: impl Into<String>, message: impl Into<String>) -> CredentialConfigError {
    CredentialConfigError { path: path.into(), message: message.into() }
}

impl BackendAuthConfig {
    /// Checks what types alone cannot; `path` names this `auth` key (`backends[0].auth`).
    pub fn validate(&self, path: &str) -> Result<(), CredentialConfigError> {
        match self {
            BackendAuthConfig::Bearer(token) => check_token(&format!("{path}.bearer"), token.expose()),
            BackendAuthConfig::Oauth2(oauth2) => oauth2.validate(&format!("{path}.oauth2")),
            BackendAuthConfig::MintJwt(mint) => mint.validate(&format!("{path}.mint_jwt")),
        }
    }
}

impl OAuth2Config {
    fn validate(&self, path: &str) -> Result<(), CredentialConfigError> {
        let at = |key: &str| format!("{path}.{key}");
        let url =
            reqwest::Url::parse(&self.token_url).map_err(|e| invalid(at("token_url"), format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(invalid(at("token_url"), "must be an http:// or https:// URL with a host"));
        }
        if self.client_id.is_empty() || self.client_id.chars().any(char::is_control) {
            return Err(invalid(at("client_id"), "must not be empty"));
        }
        if self.client_secret.expose().is_empty() {
            return Err(invalid(at("client_secret"), "must not be empty"));
        }
        for (key, value) in [("scope", &self.scope), ("audience", &self.audience)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(invalid(at(key), "must not be blank (leave the key out instead)"));
            }
        }
        if self.timeout.is_zero() {
            return Err(invalid(at("timeout"), "must be greater than zero"));
        }
        Ok(())
    }
}

impl MintJwtConfig {
    fn validate(&self, path: &str) -> Result<(), CredentialConfigError> {
        if self.audience.as_deref().is_some_and(|a| a.trim().is_empty()) {
            return Err(invalid(
                format!("{path}.audience"),
                "must not be blank (leave it out to use the backend name)",
            ));
        }
        if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&self.ttl) {
            return Err(invalid(format!("{path}.ttl"), "must be between 1s and 1h"));
        }
        Ok(())
    }
}

impl GatewayIdentityConfig {
    /// Checks the plain fields; the key itself is checked when it is loaded.
    pub fn validate(&self) -> Result<(), CredentialConfigError> {
        if self.issuer.trim().is_empty() {
            return Err(invalid("gateway_identity.issuer", "must not be empty"));
        }
        if self.key_id.is_empty() || !self.key_id.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid("gateway_identity.key_id", "must be non-empty visible ASCII without spaces"));
        }
        Ok(())
    }
}

/// A bearer token goes into a header as is, so it must be one visible-ASCII word.
fn check_token(path: &str, token: &str) -> Result<(), CredentialConfigError> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(path, "must be a non-empty token of visible ASCII characters without spaces"));
    }
    Ok(())
}
