//! The `auth:` section of the gateway configuration: serde types with defaults in code. The
//! checks serde cannot make are in `validate.rs` ([`AuthConfig::validate`]).

use std::time::Duration;

use serde::Deserialize;

/// How callers prove who they are. Any combination of the three methods may be configured; a
/// request passes with the first credential that one of them accepts.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The realm named in `WWW-Authenticate` challenges.
    #[serde(default = "default_realm")]
    pub realm: String,
    /// Bearer tokens longer than this are refused before any parsing.
    #[serde(default = "default_max_token_bytes")]
    pub max_token_bytes: usize,
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    #[serde(default)]
    pub api_keys: Option<ApiKeysConfig>,
    #[serde(default)]
    pub introspection: Option<IntrospectionConfig>,
    /// Callers known by a client certificate (mutual TLS; the CAs are `listeners.tls.client_ca`).
    #[serde(default)]
    pub mtls: Option<super::mtls::MtlsConfig>,
    /// Limits per source address applied before any credential is checked (failed attempts, and
    /// optionally all requests).
    #[serde(default)]
    pub per_address: super::per_address::PerAddressConfig,
}

impl AuthConfig {
    /// The authorities that can name a caller's tenant (see `Caller::tenant_authority`).
    pub fn tenant_sources(&self) -> Vec<String> {
        let mut sources: Vec<String> = Vec::new();
        if let Some(jwt) = &self.jwt {
            sources.extend(jwt.issuers.iter().filter(|i| i.tenant_claim.is_some()).map(|i| i.issuer.clone()));
        }
        if self.api_keys.as_ref().is_some_and(|k| k.keys.iter().any(|key| key.tenant.is_some())) {
            sources.push("api-key".into());
        }
        if self.introspection.as_ref().is_some_and(|i| i.tenant_claim.is_some()) {
            sources.push("introspection".into());
        }
        // A certificate names a tenant (SPIFFE trust domain or organisation) unless only tokens count.
        if self.mtls.as_ref().is_some_and(|m| m.mode != super::mtls::MtlsMode::WithToken) {
            sources.push("mtls".into());
        }
        sources
    }
}

fn default_realm() -> String {
    "a2a-gateway".into()
}
fn default_max_token_bytes() -> usize {
    8 * 1024
}

/// Bearer JWTs from one or more issuers.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    pub issuers: Vec<IssuerConfig>,
    /// How often every JWKS is fetched again, so that rotated keys are picked up and removed keys
    /// stop being accepted.
    #[serde(default = "default_jwks_refresh_interval", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub jwks_refresh_interval: Duration,
    /// The least time between two fetches of one JWKS; tokens with an unknown `kid` within this
    /// interval are refused without a fetch.
    #[serde(default = "default_jwks_min_refresh_interval", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub jwks_min_refresh_interval: Duration,
    #[serde(default = "default_jwks_fetch_timeout", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub jwks_fetch_timeout: Duration,
    /// Cached keys older than this (no successful fetch since) are no longer used: fail closed.
    #[serde(default = "default_jwks_max_age", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub jwks_max_age: Duration,
}

fn default_jwks_refresh_interval() -> Duration {
    Duration::from_secs(300)
}
fn default_jwks_min_refresh_interval() -> Duration {
    Duration::from_secs(10)
}
fn default_jwks_fetch_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_jwks_max_age() -> Duration {
    Duration::from_secs(24 * 3600)
}

/// One trusted token issuer. Its keys come from exactly one of `jwks_url` and `hs256_secret`.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The exact `iss` value of its tokens.
    pub issuer: String,
    /// Accepted `aud` values; a token must name at least one.
    pub audiences: Vec<String>,
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// A shared secret for development setups (HS256 only; at least 32 bytes).
    #[serde(default)]
    pub hs256_secret: Option<Secret>,
    /// Accepted `alg` values. Defaults to `[RS256]` with a JWKS and `[HS256]` with a secret.
    #[serde(default)]
    pub algorithms: Option<Vec<String>>,
    /// Allowed clock skew for `exp` and `nbf`.
    #[serde(default = "default_leeway", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub leeway: Duration,
    /// The claim naming the caller (`sub`, `client_id`, `azp`, …).
    #[serde(default = "default_identity_claim")]
    pub identity_claim: String,
    /// The claim naming the caller's tenant or organisation, if any.
    #[serde(default)]
    pub tenant_claim: Option<String>,
    /// Claims holding scopes, tried in order: a space-separated string or an array of strings.
    #[serde(default = "default_scope_claims")]
    pub scope_claims: Vec<String>,
}

fn default_leeway() -> Duration {
    Duration::from_secs(30)
}
pub(crate) fn default_identity_claim() -> String {
    "sub".into()
}
pub(crate) fn default_scope_claims() -> Vec<String> {
    vec!["scope".into(), "scp".into()]
}

/// Static API keys, stored as salted hashes (see [`hash_key`](super::hash_key)).
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeysConfig {
    /// A header that carries the key, besides `Authorization: Bearer <key>`.
    #[serde(default = "default_api_key_header")]
    pub header: String,
    #[serde(default)]
    pub keys: Vec<ApiKeyConfig>,
}

fn default_api_key_header() -> String {
    "X-API-Key".into()
}

#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key's id: the `<id>` in `a2a_<id>_<secret>`, used to find it. Not secret.
    pub id: String,
    /// `sha256$<salt-hex>$<hash-hex>`, as printed by `a2a-gateway hash-key`.
    pub hash: Secret,
    /// The caller this key identifies; several keys may name one caller (rotation).
    pub caller: String,
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// A revoked key is refused.
    #[serde(default)]
    pub revoked: bool,
    /// The key does not have the `a2a_<id>_<secret>` shape (e.g. the demo's `demo-token`). Such
    /// keys cannot be found by id and are compared one by one: keep them few.
    #[serde(default)]
    pub free_form: bool,
}

/// OAuth2 token introspection (RFC 7662) for opaque bearer tokens.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionConfig {
    pub endpoint: String,
    pub client_id: String,
    pub client_secret: Secret,
    #[serde(default = "default_identity_claim")]
    pub identity_claim: String,
    #[serde(default)]
    pub tenant_claim: Option<String>,
    #[serde(default = "default_scope_claims")]
    pub scope_claims: Vec<String>,
    /// When set, the answer's `iss` must be this value.
    #[serde(default)]
    pub issuer: Option<String>,
    /// When not empty, the answer's `aud` must name one of these.
    #[serde(default)]
    pub audiences: Vec<String>,
    #[serde(default = "default_introspection_timeout", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub timeout: Duration,
    /// Active answers are cached until the token's `exp`, but at most this long.
    #[serde(default = "default_cache_max_ttl", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub cache_max_ttl: Duration,
    /// Inactive answers are cached this long.
    #[serde(default = "default_negative_cache_ttl", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub negative_cache_ttl: Duration,
    #[serde(default = "default_cache_max_entries")]
    pub cache_max_entries: usize,
    /// Calls to the endpoint the gateway makes at most, across all callers (answers from the cache
    /// are free). Over it, a caller with a token not yet known gets 429 with Retry-After.
    #[serde(default = "default_introspection_calls")]
    pub max_calls: crate::rate_limit::QuotaConfig,
}

fn default_introspection_calls() -> crate::rate_limit::QuotaConfig {
    crate::rate_limit::QuotaConfig::per_second(20, 40)
}

fn default_introspection_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_cache_max_ttl() -> Duration {
    Duration::from_secs(300)
}
fn default_negative_cache_ttl() -> Duration {
    Duration::from_secs(10)
}
fn default_cache_max_entries() -> usize {
    10_000
}

pub use crate::secret::Secret;

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::auth) fn parse(yaml_json: serde_json::Value) -> AuthConfig {
        serde_json::from_value(yaml_json).expect("config parses")
    }

    /// An issuer entry with `extra` fields over a valid base.
    pub(in crate::auth) fn issuer(extra: serde_json::Value) -> serde_json::Value {
        let mut base = serde_json::json!({
            "issuer": "https://idp.example.com/",
            "audiences": ["a2a-gateway"],
            "jwks_url": "https://idp.example.com/jwks.json",
        });
        if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
            base.extend(extra.clone());
        }
        base
    }

    #[test]
    fn defaults_fill_in() {
        let config = parse(serde_json::json!({"jwt": {"issuers": [issuer(serde_json::json!({}))]}}));
        assert_eq!(config.realm, "a2a-gateway");
        assert_eq!(config.max_token_bytes, 8192);
        let jwt = config.jwt.as_ref().unwrap();
        assert_eq!(jwt.jwks_refresh_interval, Duration::from_secs(300));
        assert_eq!(jwt.jwks_min_refresh_interval, Duration::from_secs(10));
        assert_eq!(jwt.issuers[0].leeway, Duration::from_secs(30));
        assert_eq!(jwt.issuers[0].identity_claim, "sub");
        assert_eq!(jwt.issuers[0].algorithms_checked("p").unwrap(), vec![jsonwebtoken::Algorithm::RS256]);
        config.validate().unwrap();
    }

    #[test]
    fn durations_are_text() {
        let config = parse(serde_json::json!({"jwt": {
            "issuers": [issuer(serde_json::json!({"leeway": "1m 30s"}))],
            "jwks_refresh_interval": "2m",
        }}));
        let jwt = config.jwt.unwrap();
        assert_eq!(jwt.issuers[0].leeway, Duration::from_secs(90));
        assert_eq!(jwt.jwks_refresh_interval, Duration::from_secs(120));
        let bad = serde_json::from_value::<AuthConfig>(serde_json::json!({"jwt": {
            "issuers": [], "jwks_refresh_interval": "soon"}}));
        assert!(bad.unwrap_err().to_string().contains("'soon' is not a duration"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        let bad = serde_json::from_value::<AuthConfig>(serde_json::json!({"realm": "x", "jwks": {}}));
        assert!(bad.unwrap_err().to_string().contains("unknown field `jwks`"));
    }

    #[test]
    fn secrets_are_not_printed() {
        let config = parse(serde_json::json!({"introspection": {
            "endpoint": "https://idp/introspect", "client_id": "gw", "client_secret": "hunter2"}}));
        assert!(!format!("{config:?}").contains("hunter2"));
        config.validate().unwrap();
    }
}
