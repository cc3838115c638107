//! The A2A 1.0 Agent Card. Fields the model does not name (a skill's `inputSchema` from the seed
//! document, a vendor's extension) are kept in `extra` and written back unchanged, so the gateway can
//! read them and a translated card loses nothing it could carry. Security schemes stay JSON: the
//! gateway only rewrites their shape between dialects, never interprets them here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::protojson::{Struct, empty_as_none, is_false, null_as_default, null_as_empty};

/// Binding names of `protocolBinding`.
pub const BINDING_JSONRPC: &str = "JSONRPC";
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";
pub const BINDING_GRPC: &str = "GRPC";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default)]
    pub version: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: AgentCapabilities,
    /// Scheme name → a 1.0 `SecurityScheme` (`{"httpAuthSecurityScheme": {…}}`, …).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_output_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub skills: Vec<AgentSkill>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Every other top-level field, as sent.
    #[serde(flatten)]
    pub extra: Struct,
}

/// Where and how an agent is reached.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub protocol_binding: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

impl AgentInterface {
    /// Whether this interface speaks A2A 0.x (an absent version counts as 0.3, as the SDK reads it).
    pub fn is_legacy(&self) -> bool {
        self.protocol_version.as_deref().is_none_or(|v| v.starts_with("0."))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentProvider {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub organization: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentExtension {
    #[serde(default)]
    pub uri: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub tags: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Every other field (e.g. the seed's `inputSchema`), as sent.
    #[serde(flatten)]
    pub extra: Struct,
}

/// Scheme name → the scopes it needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    #[serde(default, deserialize_with = "null_as_default")]
    pub schemes: BTreeMap<String, StringList>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub list: Vec<String>,
}

/// A JWS over the canonical card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentCardSignature {
    #[serde(default)]
    pub protected: String,
    #[serde(default)]
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Struct>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_fields_it_does_not_name() {
        let card = json!({"name": "a", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "http://x/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": [],
            "skills": [{"id": "s", "name": "S", "description": "", "tags": [], "inputSchema": {"type": "object"}}],
            "x-vendor": 1});
        let parsed: AgentCard = serde_json::from_value(card.clone()).expect("card");
        assert_eq!(parsed.skills[0].extra.get("inputSchema"), Some(&json!({"type": "object"})));
        assert_eq!(parsed.extra.get("x-vendor"), Some(&json!(1)));
        assert_eq!(serde_json::to_value(&parsed).ok(), Some(card));
    }

    #[test]
    fn legacy_interfaces() {
        let interface =
            |v: Option<&str>| AgentInterface { protocol_version: v.map(str::to_owned), ..Default::default() };
        assert!(interface(None).is_legacy());
        assert!(interface(Some("0.3")).is_legacy());
        assert!(!interface(Some("1.0")).is_legacy());
    }
}
