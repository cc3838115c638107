//! The early dialect's Agent Card, at `/.well-known/agent.json`: one `url`, `capabilities`,
//! `authentication: {schemes, credentials}`, skills.
//!
//! In 1.0 terms an early agent has one interface: binding `HTTP+JSON`, protocol version
//! [`PROTOCOL_VERSION`] (a gateway convention: the seed names no version) at the card's `url`.
//! Each authentication scheme becomes a 1.0 security scheme of its own and an alternative security
//! requirement. Not carried early → 1.0: `capabilities.stateTransitionHistory`,
//! `authentication.credentials`. Not carried 1.0 → early: every interface but one, `iconUrl`,
//! `signatures`, capability `extensions` and `extendedAgentCard`, skill security requirements and
//! requirement scopes; security schemes shrink to their names (`Bearer`, `Basic`, `ApiKey`, …).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate as model;
use crate::{
    AgentProvider, BINDING_HTTP_JSON, SecurityRequirement, StringList, Struct, empty_as_none, null_as_default,
    null_as_empty,
};

/// The `protocolVersion` the gateway gives an early agent's interface.
pub const PROTOCOL_VERSION: &str = "0.1";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default)]
    pub version: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_output_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub skills: Vec<AgentSkill>,
    #[serde(flatten)]
    pub extra: Struct,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_transition_history: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Authentication {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub schemes: Vec<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Every other field (the seed's `inputSchema`), as sent.
    #[serde(flatten)]
    pub extra: Struct,
}

/// A scheme name as a 1.0 security scheme: HTTP auth schemes by name, the others by kind.
fn scheme_to_v1(name: &str) -> Value {
    match name.to_ascii_lowercase().as_str() {
        "apikey" => json!({"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}),
        "oauth2" => json!({"oauth2SecurityScheme": {"flows": {}}}),
        "openidconnect" => json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": ""}}),
        "mtls" | "mutualtls" => json!({"mtlsSecurityScheme": {}}),
        _ => json!({"httpAuthSecurityScheme": {"scheme": name}}),
    }
}

/// The early name of a 1.0 security scheme.
fn scheme_from_v1(scheme: &Value) -> Option<String> {
    let (member, fields) = scheme.as_object()?.iter().next()?;
    Some(match member.as_str() {
        "httpAuthSecurityScheme" => {
            let scheme = fields.get("scheme").and_then(Value::as_str)?;
            // HTTP scheme names are case-insensitive; the seed writes them capitalised.
            let mut chars = scheme.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars.flat_map(char::to_lowercase)).collect())?
        }
        "apiKeySecurityScheme" => "ApiKey".into(),
        "oauth2SecurityScheme" => "OAuth2".into(),
        "openIdConnectSecurityScheme" => "OpenIdConnect".into(),
        "mtlsSecurityScheme" => "mTLS".into(),
        _ => return None,
    })
}

/// An early card as the 1.0 card.
pub fn card_to_v1(card: AgentCard) -> model::AgentCard {
    let mut security_schemes = BTreeMap::new();
    let mut security_requirements = Vec::new();
    for name in card.authentication.into_iter().flat_map(|a| a.schemes) {
        let key = name.to_ascii_lowercase();
        security_requirements
            .push(SecurityRequirement { schemes: BTreeMap::from([(key.clone(), StringList::default())]) });
        security_schemes.insert(key, scheme_to_v1(&name));
    }
    model::AgentCard {
        name: card.name,
        description: card.description.unwrap_or_default(),
        supported_interfaces: vec![model::AgentInterface {
            url: card.url,
            protocol_binding: BINDING_HTTP_JSON.to_owned(),
            tenant: None,
            protocol_version: Some(PROTOCOL_VERSION.to_owned()),
        }],
        provider: card.provider,
        version: card.version,
        documentation_url: card.documentation_url,
        capabilities: model::AgentCapabilities {
            streaming: card.capabilities.streaming,
            push_notifications: card.capabilities.push_notifications,
            extensions: Vec::new(),
            extended_agent_card: None,
        },
        security_schemes,
        security_requirements,
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| model::AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description.unwrap_or_default(),
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                security_requirements: Vec::new(),
                extra: s.extra,
            })
            .collect(),
        signatures: Vec::new(),
        icon_url: None,
        extra: card.extra,
    }
}

/// The interface an early card points at: an early one if listed, else the first HTTP+JSON one,
/// else the first.
fn early_url(interfaces: &[model::AgentInterface]) -> String {
    let early = interfaces.iter().find(|i| i.protocol_version.as_deref() == Some(PROTOCOL_VERSION));
    let rest = || interfaces.iter().find(|i| i.protocol_binding == BINDING_HTTP_JSON);
    early.or_else(rest).or(interfaces.first()).map(|i| i.url.clone()).unwrap_or_default()
}

/// A 1.0 card as the early card (the caller publishing it sets `url` to where it answers early calls).
pub fn card_from_v1(card: model::AgentCard) -> AgentCard {
    let schemes: Vec<String> = card.security_schemes.values().filter_map(scheme_from_v1).collect();
    AgentCard {
        name: card.name,
        description: Some(card.description).filter(|d| !d.is_empty()),
        url: early_url(&card.supported_interfaces),
        provider: card.provider,
        version: card.version,
        documentation_url: card.documentation_url,
        capabilities: AgentCapabilities {
            streaming: card.capabilities.streaming,
            push_notifications: card.capabilities.push_notifications,
            state_transition_history: None,
        },
        authentication: (!schemes.is_empty()).then_some(Authentication { schemes, credentials: None }),
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| AgentSkill {
                id: s.id,
                name: s.name,
                description: Some(s.description).filter(|d| !d.is_empty()),
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                extra: s.extra,
            })
            .collect(),
        // The 1.0 card's own extras may be the 0.3 fields of a hybrid card; none belong here.
        extra: Struct::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_card() -> AgentCard {
        serde_json::from_value(json!({
            "name": "Early Echo", "description": "echoes", "url": "http://127.0.0.1:9/",
            "version": "0.1.0", "capabilities": {"streaming": true, "pushNotifications": false,
                "stateTransitionHistory": false},
            "authentication": {"schemes": ["Bearer"]},
            "defaultInputModes": ["text"], "defaultOutputModes": ["text"],
            "skills": [{"id": "early-echo", "name": "Echo", "inputSchema": {"type": "object"}}]}))
        .expect("card")
    }

    #[test]
    fn an_early_agent_has_one_http_json_interface() {
        let v1 = card_to_v1(seed_card());
        let interface = &v1.supported_interfaces[0];
        assert_eq!((interface.url.as_str(), interface.protocol_binding.as_str()), ("http://127.0.0.1:9/", "HTTP+JSON"));
        assert_eq!(interface.protocol_version.as_deref(), Some(PROTOCOL_VERSION));
        assert_eq!(v1.security_schemes["bearer"], json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}));
        assert_eq!(v1.security_requirements[0].schemes.keys().collect::<Vec<_>>(), ["bearer"]);
        assert_eq!(v1.skills[0].extra["inputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn back_to_the_early_shape() {
        let back = card_from_v1(card_to_v1(seed_card()));
        let mut want = seed_card();
        want.capabilities.state_transition_history = None;
        assert_eq!(back, want);
        let v1 = model::AgentCard {
            security_schemes: BTreeMap::from([
                ("k".into(), json!({"apiKeySecurityScheme": {"location": "header", "name": "X"}})),
                ("b".into(), json!({"httpAuthSecurityScheme": {"scheme": "bearer"}})),
            ]),
            ..Default::default()
        };
        assert_eq!(card_from_v1(v1).authentication.map(|a| a.schemes), Some(vec!["Bearer".into(), "ApiKey".into()]));
    }
}
