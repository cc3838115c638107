//! Checks of the `auth:` section that serde cannot make, each naming the offending key path.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use jsonwebtoken::{Algorithm, AlgorithmFamily};

use super::api_key;
use super::config::{ApiKeysConfig, AuthConfig, IntrospectionConfig, IssuerConfig, JwtConfig};

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
        let tokens = self.jwt.is_some() || self.api_keys.is_some() || self.introspection.is_some();
        if !tokens && self.mtls.is_none() {
            return Err(invalid("auth", "configure at least one of jwt, api_keys, introspection, mtls"));
        }
        if let Some(mtls) = &self.mtls {
            use super::mtls::MtlsMode;
            if mtls.mode != MtlsMode::Required && !tokens {
                return Err(invalid(
                    "auth.mtls.mode",
                    "optional and with_token need a token method too (jwt, api_keys or introspection); use required",
                ));
            }
            if mtls.bind_token && (mtls.mode != MtlsMode::WithToken || self.jwt.is_none()) {
                return Err(invalid(
                    "auth.mtls.bind_token",
                    "binds JWTs to certificates: needs mode with_token and auth.jwt",
                ));
            }
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
        super::per_address::PerAddress::new(&self.per_address)
            .map_err(|(path, message)| AuthConfigError { path, message })?;
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
        if a2a_core::RESERVED_AUTHORITIES.contains(&self.issuer.as_str()) {
            return Err(invalid(
                format!("{path}.issuer"),
                format!(
                    "'{}' is reserved: it names a non-JWT authority (reserved: {})",
                    self.issuer,
                    a2a_core::RESERVED_AUTHORITIES.join(", ")
                ),
            ));
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
            if api_key::StoredHash::parse(key.hash.expose()).is_none() {
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
        let calls = format!("{path}.max_calls");
        self.max_calls.quota(&calls).map_err(|e| invalid(e.path, e.reason))?;
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

#[cfg(test)]
mod tests {
    use super::super::config::tests::{issuer, parse};
    use super::*;

    fn validate_issuer(extra: serde_json::Value) -> Result<(), AuthConfigError> {
        parse(serde_json::json!({"jwt": {"issuers": [issuer(extra)]}})).validate()
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
}
