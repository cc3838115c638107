//! The `auth:` section of the gateway configuration: serde types with defaults in code, and
//! [`AuthConfig::validate`], which names the offending key path.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use jsonwebtoken::{Algorithm, AlgorithmFamily};
use serde::Deserialize;

use super::api_key;

/// How callers prove who they are. Any combination of the three methods may be configured; a
/// request passes with the first credential that one of them accepts.
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
}

fn default_realm() -> String {
    "a2a-gateway".into()
}
fn default_max_token_bytes() -> usize {
    8 * 1024
}

/// Bearer JWTs from one or more issuers.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    pub issuers: Vec<IssuerConfig>,
    /// How often every JWKS is fetched again, so that rotated keys are picked up and removed keys
    /// stop being accepted.
    #[serde(default = "default_jwks_refresh_interval", with = "duration")]
    pub jwks_refresh_interval: Duration,
    /// The least time between two fetches of one JWKS; tokens with an unknown `kid` within this
    /// interval are refused without a fetch.
    #[serde(default = "default_jwks_min_refresh_interval", with = "duration")]
    pub jwks_min_refresh_interval: Duration,
    #[serde(default = "default_jwks_fetch_timeout", with = "duration")]
    pub jwks_fetch_timeout: Duration,
    /// Cached keys older than this (no successful fetch since) are no longer used: fail closed.
    #[serde(default = "default_jwks_max_age", with = "duration")]
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
    #[serde(default = "default_leeway", with = "duration")]
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
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

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key's id: the `<id>` in `a2a_<id>_<secret>`, used to find it. Not secret.
    pub id: String,
    /// `sha256$<salt-hex>$<hash-hex>`, as printed by `a2a-gateway hash-key`.
    pub hash: String,
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
    #[serde(default = "default_introspection_timeout", with = "duration")]
    pub timeout: Duration,
    /// Active answers are cached until the token's `exp`, but at most this long.
    #[serde(default = "default_cache_max_ttl", with = "duration")]
    pub cache_max_ttl: Duration,
    /// Inactive answers are cached this long.
    #[serde(default = "default_negative_cache_ttl", with = "duration")]
    pub negative_cache_ttl: Duration,
    #[serde(default = "default_cache_max_entries")]
    pub cache_max_entries: usize,
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

/// A secret from the configuration: never printed by `Debug`.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// An invalid `auth` section, located by its key path (`auth.jwt.issuers[0].algorithms[1]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct AuthConfigError {
    pub path: String,
    pub message: String,
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> AuthConfigError {
    AuthConfigError { path: path.into(), message: message.into() }
}

/// The longest realm, claim name or key id accepted; they end up in headers and logs.
const MAX_NAME_LEN: usize = 128;

impl AuthConfig {
    /// Checks what serde cannot: consistent key sources, known algorithms, parseable URLs and
    /// hashes, unique ids. The first problem found is returned with its key path.
    pub fn validate(&self) -> Result<(), AuthConfigError> {
        if self.jwt.is_none() && self.api_keys.is_none() && self.introspection.is_none() {
            return Err(invalid("auth", "configure at least one of jwt, api_keys, introspection"));
        }
        if self.realm.is_empty() || self.realm.len() > MAX_NAME_LEN || !self.realm.chars().all(is_quotable) {
            return Err(invalid("auth.realm", "must be 1 to 128 printable characters without '\"' or '\\'"));
        }
        if !(64..=65536).contains(&self.max_token_bytes) {
            return Err(invalid("auth.max_token_bytes", "must be between 64 and 65536"));
        }
        if let Some(jwt) = &self.jwt {
            jwt.validate("auth.jwt")?;
        }
        if let Some(keys) = &self.api_keys {
            keys.validate("auth.api_keys")?;
        }
        if let Some(introspection) = &self.introspection {
            introspection.validate("auth.introspection")?;
        }
        Ok(())
    }
}

impl JwtConfig {
    fn validate(&self, path: &str) -> Result<(), AuthConfigError> {
        if self.issuers.is_empty() {
            return Err(invalid(format!("{path}.issuers"), "list at least one issuer"));
        }
        if self.jwks_refresh_interval < Duration::from_secs(1) {
            return Err(invalid(format!("{path}.jwks_refresh_interval"), "must be at least 1s"));
        }
        if self.jwks_min_refresh_interval > self.jwks_refresh_interval {
            return Err(invalid(
                format!("{path}.jwks_min_refresh_interval"),
                "must not be longer than jwks_refresh_interval",
            ));
        }
        if self.jwks_fetch_timeout.is_zero() {
            return Err(invalid(format!("{path}.jwks_fetch_timeout"), "must be more than 0s"));
        }
        if self.jwks_max_age < self.jwks_refresh_interval {
            return Err(invalid(format!("{path}.jwks_max_age"), "must not be shorter than jwks_refresh_interval"));
        }
        let mut seen = HashSet::new();
        for (i, issuer) in self.issuers.iter().enumerate() {
            let path = format!("{path}.issuers[{i}]");
            issuer.validate(&path)?;
            if !seen.insert(issuer.issuer.as_str()) {
                return Err(invalid(format!("{path}.issuer"), format!("issuer '{}' is listed twice", issuer.issuer)));
            }
        }
        Ok(())
    }
}

impl IssuerConfig {
    fn validate(&self, path: &str) -> Result<(), AuthConfigError> {
        // '|' separates issuer and subject in caller ids; allowing it would let ids collide.
        if self.issuer.is_empty() || self.issuer.contains('|') {
            return Err(invalid(format!("{path}.issuer"), "must be a non-empty string without '|'"));
        }
        if self.audiences.is_empty() {
            return Err(invalid(format!("{path}.audiences"), "list at least one accepted audience"));
        }
        if let Some(i) = self.audiences.iter().position(String::is_empty) {
            return Err(invalid(format!("{path}.audiences[{i}]"), "must not be empty"));
        }
        match (&self.jwks_url, &self.hs256_secret) {
            (Some(url), None) => check_url(&format!("{path}.jwks_url"), url)?,
            (None, Some(secret)) if secret.expose().len() < 32 => {
                return Err(invalid(format!("{path}.hs256_secret"), "must be at least 32 bytes"));
            }
            (None, Some(_)) => {}
            _ => return Err(invalid(path, "set exactly one of jwks_url and hs256_secret")),
        }
        self.algorithms_checked(path)?;
        check_claims(path, &self.identity_claim, self.tenant_claim.as_deref(), &self.scope_claims)
    }

    /// The accepted algorithms, parsed and checked against the key source: a JWKS never
    /// verifies HMAC tokens and a shared secret never verifies anything else (algorithm confusion).
    pub(crate) fn algorithms_checked(&self, path: &str) -> Result<Vec<Algorithm>, AuthConfigError> {
        let with_secret = self.hs256_secret.is_some();
        let Some(names) = &self.algorithms else {
            return Ok(vec![if with_secret { Algorithm::HS256 } else { Algorithm::RS256 }]);
        };
        if names.is_empty() {
            return Err(invalid(format!("{path}.algorithms"), "list at least one algorithm"));
        }
        let mut algorithms = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let at = format!("{path}.algorithms[{i}]");
            if name.eq_ignore_ascii_case("none") {
                return Err(invalid(at, "the 'none' algorithm is never accepted"));
            }
            let alg = Algorithm::from_str(name).map_err(|_| invalid(&at, format!("unknown algorithm '{name}'")))?;
            let hmac = alg.family() == AlgorithmFamily::Hmac;
            if with_secret && alg != Algorithm::HS256 {
                return Err(invalid(at, format!("'{name}' cannot be used with hs256_secret; only HS256 can")));
            }
            if !with_secret && hmac {
                return Err(invalid(
                    at,
                    format!("'{name}' needs a shared secret; keys from a JWKS are never used for it"),
                ));
            }
            if algorithms.contains(&alg) {
                return Err(invalid(at, format!("'{name}' is listed twice")));
            }
            algorithms.push(alg);
        }
        Ok(algorithms)
    }
}

impl ApiKeysConfig {
    fn validate(&self, path: &str) -> Result<(), AuthConfigError> {
        let header = http::HeaderName::from_str(&self.header)
            .map_err(|_| invalid(format!("{path}.header"), format!("'{}' is not a valid header name", self.header)))?;
        if header == http::header::AUTHORIZATION {
            return Err(invalid(
                format!("{path}.header"),
                "must not be Authorization (keys are accepted there anyway)",
            ));
        }
        let mut ids = HashSet::new();
        for (i, key) in self.keys.iter().enumerate() {
            let at = format!("{path}.keys[{i}]");
            if !api_key::is_valid_key_id(&key.id) {
                return Err(invalid(format!("{at}.id"), "must be 1 to 64 characters from A-Z, a-z, 0-9 and '-'"));
            }
            if !ids.insert(key.id.as_str()) {
                return Err(invalid(format!("{at}.id"), format!("key id '{}' is used twice", key.id)));
            }
            if api_key::StoredHash::parse(&key.hash).is_none() {
                return Err(invalid(
                    format!("{at}.hash"),
                    "expected sha256$<salt-hex>$<hash-hex> as printed by `a2a-gateway hash-key`",
                ));
            }
            if key.caller.is_empty() || key.caller.len() > MAX_NAME_LEN {
                return Err(invalid(format!("{at}.caller"), "must be 1 to 128 characters"));
            }
            if key.tenant.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(format!("{at}.tenant"), "must not be empty"));
            }
        }
        Ok(())
    }
}

impl IntrospectionConfig {
    fn validate(&self, path: &str) -> Result<(), AuthConfigError> {
        check_url(&format!("{path}.endpoint"), &self.endpoint)?;
        if self.client_id.is_empty() {
            return Err(invalid(format!("{path}.client_id"), "must not be empty"));
        }
        if self.timeout.is_zero() {
            return Err(invalid(format!("{path}.timeout"), "must be more than 0s"));
        }
        if self.cache_max_entries == 0 {
            return Err(invalid(format!("{path}.cache_max_entries"), "must be at least 1"));
        }
        check_claims(path, &self.identity_claim, self.tenant_claim.as_deref(), &self.scope_claims)
    }
}

fn check_url(path: &str, url: &str) -> Result<(), AuthConfigError> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err(invalid(path, format!("'{url}' is not an http(s) URL"))),
    }
}

fn check_claims(path: &str, identity: &str, tenant: Option<&str>, scopes: &[String]) -> Result<(), AuthConfigError> {
    let name_ok = |name: &str| !name.is_empty() && name.len() <= MAX_NAME_LEN;
    if !name_ok(identity) {
        return Err(invalid(format!("{path}.identity_claim"), "must be a claim name"));
    }
    if tenant.is_some_and(|t| !name_ok(t)) {
        return Err(invalid(format!("{path}.tenant_claim"), "must be a claim name"));
    }
    if let Some(i) = scopes.iter().position(|s| !name_ok(s)) {
        return Err(invalid(format!("{path}.scope_claims[{i}]"), "must be a claim name"));
    }
    Ok(())
}

/// Characters allowed inside an RFC 9110 quoted-string without escaping.
fn is_quotable(c: char) -> bool {
    (c == ' ' || c.is_ascii_graphic()) && c != '"' && c != '\\'
}

/// Durations written as text: `500ms`, `30s`, `5m`, `1h`.
mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text)
            .map_err(|e| serde::de::Error::custom(format!("'{text}' is not a duration like 500ms, 30s, 5m: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml_json: serde_json::Value) -> AuthConfig {
        serde_json::from_value(yaml_json).expect("config parses")
    }

    fn issuer(extra: serde_json::Value) -> serde_json::Value {
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

    fn validate_issuer(extra: serde_json::Value) -> Result<(), AuthConfigError> {
        parse(serde_json::json!({"jwt": {"issuers": [issuer(extra)]}})).validate()
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
        assert_eq!(jwt.issuers[0].algorithms_checked("p").unwrap(), vec![Algorithm::RS256]);
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
    fn unknown_algorithm_is_named_with_its_path() {
        let err = validate_issuer(serde_json::json!({"algorithms": ["RS256", "HS999"]})).unwrap_err();
        assert_eq!(err.to_string(), "auth.jwt.issuers[0].algorithms[1]: unknown algorithm 'HS999'");
    }

    #[test]
    fn none_algorithm_is_refused() {
        let err = validate_issuer(serde_json::json!({"algorithms": ["none"]})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0].algorithms[0]");
    }

    #[test]
    fn hmac_with_a_jwks_is_refused() {
        let err = validate_issuer(serde_json::json!({"algorithms": ["RS256", "HS256"]})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0].algorithms[1]");
        assert!(err.message.contains("never used"), "{err}");
    }

    #[test]
    fn secret_allows_only_hs256_and_must_be_long() {
        let with_secret = |algs: serde_json::Value, secret: &str| {
            let mut i = issuer(serde_json::json!({"hs256_secret": secret, "algorithms": algs}));
            i.as_object_mut().unwrap().remove("jwks_url");
            parse(serde_json::json!({"jwt": {"issuers": [i]}})).validate()
        };
        let long = "0123456789abcdef0123456789abcdef";
        with_secret(serde_json::json!(["HS256"]), long).unwrap();
        assert_eq!(
            with_secret(serde_json::json!(["RS256"]), long).unwrap_err().path,
            "auth.jwt.issuers[0].algorithms[0]"
        );
        assert_eq!(
            with_secret(serde_json::json!(["HS256"]), "short").unwrap_err().path,
            "auth.jwt.issuers[0].hs256_secret"
        );
    }

    #[test]
    fn exactly_one_key_source() {
        let err = validate_issuer(serde_json::json!({"hs256_secret": "0123456789abcdef0123456789abcdef"})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0]");
    }

    #[test]
    fn bad_jwks_url_and_issuer_are_named() {
        let err = validate_issuer(serde_json::json!({"jwks_url": "file:///etc/passwd"})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0].jwks_url");
        let err = validate_issuer(serde_json::json!({"issuer": "a|b"})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0].issuer");
        let err = validate_issuer(serde_json::json!({"audiences": []})).unwrap_err();
        assert_eq!(err.path, "auth.jwt.issuers[0].audiences");
    }

    #[test]
    fn api_key_entries_are_checked() {
        let hash = api_key::hash_key("a2a_demo_0011");
        let keys = |entries: serde_json::Value| {
            parse(serde_json::json!({"api_keys": {"keys": entries}})).validate().map_err(|e| e.path)
        };
        keys(serde_json::json!([{"id": "demo", "hash": hash, "caller": "demo"}])).unwrap();
        assert_eq!(
            keys(serde_json::json!([{"id": "de_mo", "hash": hash, "caller": "d"}])).unwrap_err(),
            "auth.api_keys.keys[0].id"
        );
        assert_eq!(
            keys(serde_json::json!([{"id": "demo", "hash": "plain", "caller": "d"}])).unwrap_err(),
            "auth.api_keys.keys[0].hash"
        );
        assert_eq!(
            keys(
                serde_json::json!([{"id": "a", "hash": hash, "caller": "d"}, {"id": "a", "hash": hash, "caller": "e"}])
            )
            .unwrap_err(),
            "auth.api_keys.keys[1].id"
        );
        let header = parse(serde_json::json!({"api_keys": {"header": "Authorization"}})).validate().unwrap_err();
        assert_eq!(header.path, "auth.api_keys.header");
    }

    #[test]
    fn nothing_configured_is_an_error() {
        assert_eq!(parse(serde_json::json!({})).validate().unwrap_err().path, "auth");
    }

    #[test]
    fn realm_must_be_quotable() {
        let err = parse(serde_json::json!({"realm": "a\"b", "api_keys": {}})).validate().unwrap_err();
        assert_eq!(err.path, "auth.realm");
    }

    #[test]
    fn secrets_are_not_printed() {
        let config = parse(serde_json::json!({"introspection": {
            "endpoint": "https://idp/introspect", "client_id": "gw", "client_secret": "hunter2"}}));
        assert!(!format!("{config:?}").contains("hunter2"));
        config.validate().unwrap();
    }
}
