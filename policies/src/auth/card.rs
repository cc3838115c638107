//! What the gateway's public card advertises about authentication: `securitySchemes` and
//! `securityRequirements` in the A2A 1.0 JSON shapes (`SecurityScheme` is a oneof, a requirement
//! maps scheme names to `StringList`s), built from the `auth` configuration.

use serde_json::{Map, Value, json};

use super::config::AuthConfig;
use super::mtls::MtlsMode;

/// The scheme name of `Authorization: Bearer …` in the card.
pub const BEARER_SCHEME: &str = "bearer";
/// The scheme name of the API key header in the card.
pub const API_KEY_SCHEME: &str = "apiKey";
/// The scheme name of client certificates (mutual TLS) in the card.
pub const MTLS_SCHEME: &str = "mtls";

impl AuthConfig {
    /// The card's `securitySchemes`: `bearer` always (JWTs, opaque tokens and API keys all travel
    /// as bearer tokens), `apiKey` when API keys are configured.
    pub fn security_schemes(&self) -> Value {
        let mut accepted = Vec::new();
        if self.jwt.is_some() {
            accepted.push("a JWT from a trusted issuer");
        }
        if self.introspection.is_some() {
            accepted.push("an OAuth2 access token");
        }
        if self.api_keys.is_some() {
            accepted.push("an API key");
        }
        let mut bearer = Map::new();
        bearer.insert("scheme".into(), json!("Bearer"));
        if accepted == ["a JWT from a trusted issuer"] {
            bearer.insert("bearerFormat".into(), json!("JWT"));
        }
        bearer.insert("description".into(), json!(format!("Authorization: Bearer with {}.", accepted.join(", or "))));
        let mut schemes = Map::new();
        if let Some(mtls) = &self.mtls {
            schemes.insert(
                MTLS_SCHEME.into(),
                json!({ "mtlsSecurityScheme": {
                    "description": "A client certificate issued by a CA the gateway trusts.",
                }}),
            );
            if mtls.mode == MtlsMode::Required {
                return Value::Object(schemes);
            }
        }
        schemes.insert(BEARER_SCHEME.into(), json!({ "httpAuthSecurityScheme": bearer }));
        if let Some(keys) = &self.api_keys {
            schemes.insert(
                API_KEY_SCHEME.into(),
                json!({ "apiKeySecurityScheme": {
                    "location": "header",
                    "name": keys.header,
                    "description": "An API key issued by the gateway operator.",
                }}),
            );
        }
        Value::Object(schemes)
    }

    /// The card's `securityRequirements`: any one of the schemes suffices.
    /// With mutual TLS: the certificate alone (`required`), as one more way (`optional`), or beside
    /// each token scheme (`with_token`).
    pub fn security_requirements(&self) -> Value {
        let mode = self.mtls.as_ref().map(|m| m.mode);
        if mode == Some(MtlsMode::Required) {
            return json!([{ "schemes": { MTLS_SCHEME: { "list": [] } } }]);
        }
        let mut tokens = vec![BEARER_SCHEME];
        if self.api_keys.is_some() {
            tokens.push(API_KEY_SCHEME);
        }
        let mut requirements: Vec<Value> = tokens
            .iter()
            .map(|scheme| {
                let mut schemes = Map::new();
                schemes.insert((*scheme).into(), json!({ "list": [] }));
                if mode == Some(MtlsMode::WithToken) {
                    schemes.insert(MTLS_SCHEME.into(), json!({ "list": [] }));
                }
                json!({ "schemes": schemes })
            })
            .collect();
        if mode == Some(MtlsMode::Optional) {
            requirements.push(json!({ "schemes": { MTLS_SCHEME: { "list": [] } } }));
        }
        Value::Array(requirements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(value: Value) -> AuthConfig {
        serde_json::from_value(value).expect("config")
    }

    #[test]
    fn jwt_only_advertises_a_jwt_bearer() {
        let config = config(json!({"jwt": {"issuers": []}}));
        let schemes = config.security_schemes();
        assert_eq!(schemes["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
        assert_eq!(schemes["bearer"]["httpAuthSecurityScheme"]["bearerFormat"], "JWT");
        assert!(schemes.get("apiKey").is_none());
        assert_eq!(config.security_requirements(), json!([{"schemes": {"bearer": {"list": []}}}]));
    }

    #[test]
    fn api_keys_add_a_header_scheme_and_an_alternative_requirement() {
        let config = config(json!({"jwt": {"issuers": []}, "api_keys": {"header": "X-Gateway-Key"}}));
        let schemes = config.security_schemes();
        assert_eq!(
            schemes["apiKey"],
            json!({"apiKeySecurityScheme": {
            "location": "header", "name": "X-Gateway-Key",
            "description": "An API key issued by the gateway operator."}})
        );
        assert!(schemes["bearer"]["httpAuthSecurityScheme"].get("bearerFormat").is_none());
        assert_eq!(
            config.security_requirements(),
            json!([{"schemes": {"bearer": {"list": []}}}, {"schemes": {"apiKey": {"list": []}}}])
        );
    }
}
