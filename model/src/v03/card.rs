//! The A2A 0.3 Agent Card and its translation to and from the 1.0 card.
//!
//! 0.3 names one primary interface (`url` + `preferredTransport` + `protocolVersion`) and lists the
//! others in `additionalInterfaces`; 1.0 lists them all in `supportedInterfaces`. Security schemes are
//! `type`-tagged in 0.3 and a oneof in 1.0; security requirements are plain maps in 0.3.
//!
//! Not carried 0.3 → 1.0: `capabilities.stateTransitionHistory`; all but the first OAuth flow of a
//! scheme (1.0 holds one). Not carried 1.0 → 0.3: interface `tenant`; the 1.0 protocol version of
//! interfaces (a 0.3 card only lists 0.x interfaces; when a card has none, every interface is listed,
//! because a bridging gateway answers 0.3 wherever it publishes); the `deviceCode` OAuth flow and
//! `pkceRequired`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate as model;
use crate::{
    AgentCardSignature, AgentExtension, AgentProvider, BINDING_JSONRPC, SecurityRequirement, StringList, Struct,
    empty_as_none, null_as_default, null_as_empty,
};

/// The version written for 0.3 interfaces that do not say (the SDK's default).
pub const DEFAULT_VERSION: &str = "0.3.0";

/// Top-level fields only one of the two card shapes has; stray copies in `extra` are dropped so a
/// translated card never names a field twice.
const V03_ONLY: &[&str] = &[
    "url",
    "preferredTransport",
    "additionalInterfaces",
    "protocolVersion",
    "supportsAuthenticatedExtendedCard",
    "security",
];
const V1_ONLY: &[&str] = &["supportedInterfaces", "securityRequirements"];

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub additional_interfaces: Vec<AgentInterface>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_authenticated_extended_card: Option<bool>,
    /// Scheme name → a `type`-tagged 0.3 security scheme.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_output_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub skills: Vec<AgentSkill>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(flatten)]
    pub extra: Struct,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub transport: String,
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
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
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
    pub security: Vec<BTreeMap<String, Vec<String>>>,
    #[serde(flatten)]
    pub extra: Struct,
}

fn without(mut extra: Struct, keys: &[&str]) -> Struct {
    for key in keys {
        extra.remove(*key);
    }
    extra
}

fn requirements_to_v1(security: Vec<BTreeMap<String, Vec<String>>>) -> Vec<SecurityRequirement> {
    security
        .into_iter()
        .map(|schemes| SecurityRequirement {
            schemes: schemes.into_iter().map(|(name, list)| (name, StringList { list })).collect(),
        })
        .collect()
}

fn requirements_from_v1(requirements: Vec<SecurityRequirement>) -> Vec<BTreeMap<String, Vec<String>>> {
    requirements
        .into_iter()
        .map(|r| r.schemes.into_iter().map(|(name, scopes)| (name, scopes.list)).collect())
        .collect()
}

/// `(0.3 type, 1.0 oneof member)` of each scheme kind.
const SCHEME_KINDS: &[(&str, &str)] = &[
    ("apiKey", "apiKeySecurityScheme"),
    ("http", "httpAuthSecurityScheme"),
    ("oauth2", "oauth2SecurityScheme"),
    ("openIdConnect", "openIdConnectSecurityScheme"),
    ("mutualTLS", "mtlsSecurityScheme"),
];

const OAUTH_FLOWS: &[&str] = &["authorizationCode", "clientCredentials", "implicit", "password"];

/// A 0.3 security scheme as the 1.0 oneof. Unknown types are kept as they are.
pub fn security_scheme_to_v1(scheme: Value) -> Value {
    let Value::Object(mut fields) = scheme else { return scheme };
    let Some(member) = fields
        .get("type")
        .and_then(Value::as_str)
        .and_then(|kind| SCHEME_KINDS.iter().find(|(v03, _)| *v03 == kind))
        .map(|(_, v1)| *v1)
    else {
        return Value::Object(fields);
    };
    fields.remove("type");
    if let Some(location) = fields.remove("in") {
        fields.insert("location".into(), location);
    }
    if let Some(Value::Object(flows)) = fields.get_mut("flows") {
        // 1.0 holds one flow; keep the first 0.3 lists, in the 0.3 schema's order.
        let first = OAUTH_FLOWS.iter().find_map(|name| flows.remove(*name).map(|flow| (*name, flow)));
        flows.clear();
        if let Some((name, flow)) = first {
            flows.insert(name.into(), flow);
        }
    }
    let mut oneof = Map::new();
    oneof.insert(member.into(), Value::Object(fields));
    Value::Object(oneof)
}

/// A 1.0 security scheme (oneof) as the `type`-tagged 0.3 one. Unknown members are kept as they are.
pub fn security_scheme_from_v1(scheme: Value) -> Value {
    let Value::Object(oneof) = scheme else { return scheme };
    let known = oneof.len() == 1
        && oneof
            .iter()
            .next()
            .is_some_and(|(member, fields)| fields.is_object() && SCHEME_KINDS.iter().any(|(_, v1)| v1 == member));
    if !known {
        return Value::Object(oneof);
    }
    let Some((member, Value::Object(mut fields))) = oneof.into_iter().next() else {
        return Value::Null;
    };
    let kind = SCHEME_KINDS.iter().find(|(_, v1)| *v1 == member).map_or("", |(v03, _)| *v03);
    if let Some(location) = fields.remove("location") {
        fields.insert("in".into(), location);
    }
    if let Some(Value::Object(flows)) = fields.get_mut("flows") {
        flows.retain(|name, _| OAUTH_FLOWS.contains(&name.as_str()));
        for flow in flows.values_mut() {
            if let Value::Object(flow) = flow {
                flow.remove("pkceRequired");
            }
        }
    }
    fields.insert("type".into(), Value::String(kind.into()));
    Value::Object(fields)
}

/// A 0.3 card as the 1.0 card.
pub fn card_to_v1(card: AgentCard) -> model::AgentCard {
    let version = card.protocol_version.unwrap_or_else(|| DEFAULT_VERSION.to_owned());
    let mut interfaces = vec![model::AgentInterface {
        url: card.url,
        protocol_binding: card.preferred_transport.unwrap_or_else(|| BINDING_JSONRPC.to_owned()),
        tenant: None,
        protocol_version: Some(version.clone()),
    }];
    for extra in card.additional_interfaces {
        // 0.3 cards are asked to repeat the primary interface in `additionalInterfaces`.
        if interfaces.iter().any(|i| i.url == extra.url && i.protocol_binding == extra.transport) {
            continue;
        }
        interfaces.push(model::AgentInterface {
            url: extra.url,
            protocol_binding: extra.transport,
            tenant: None,
            protocol_version: Some(version.clone()),
        });
    }
    model::AgentCard {
        name: card.name,
        description: card.description,
        supported_interfaces: interfaces,
        provider: card.provider,
        version: card.version,
        documentation_url: card.documentation_url,
        capabilities: model::AgentCapabilities {
            streaming: card.capabilities.streaming,
            push_notifications: card.capabilities.push_notifications,
            extensions: card.capabilities.extensions,
            extended_agent_card: card.supports_authenticated_extended_card,
        },
        security_schemes: card.security_schemes.into_iter().map(|(k, v)| (k, security_scheme_to_v1(v))).collect(),
        security_requirements: requirements_to_v1(card.security),
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| model::AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description,
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                security_requirements: requirements_to_v1(s.security),
                extra: without(s.extra, &["securityRequirements"]),
            })
            .collect(),
        signatures: card.signatures,
        icon_url: card.icon_url,
        extra: without(card.extra, V1_ONLY),
    }
}

/// The interfaces a 0.3 card lists: the 0.x ones, or all of them when there is none.
fn legacy_interfaces(interfaces: &[model::AgentInterface]) -> Vec<&model::AgentInterface> {
    let legacy: Vec<_> = interfaces.iter().filter(|i| i.is_legacy()).collect();
    if legacy.is_empty() { interfaces.iter().collect() } else { legacy }
}

/// The 0.3 top-level interface fields for `interfaces`: (url, preferredTransport, protocolVersion,
/// additionalInterfaces).
fn legacy_fields(interfaces: &[model::AgentInterface]) -> (String, Option<String>, String, Vec<AgentInterface>) {
    let listed = legacy_interfaces(interfaces);
    let Some((primary, others)) = listed.split_first() else {
        return (String::new(), None, DEFAULT_VERSION.to_owned(), Vec::new());
    };
    let version = primary.protocol_version.clone().filter(|_| primary.is_legacy());
    let additional =
        others.iter().map(|i| AgentInterface { url: i.url.clone(), transport: i.protocol_binding.clone() }).collect();
    (
        primary.url.clone(),
        Some(primary.protocol_binding.clone()),
        version.unwrap_or_else(|| DEFAULT_VERSION.to_owned()),
        additional,
    )
}

/// A 1.0 card as the 0.3 card.
pub fn card_from_v1(card: model::AgentCard) -> AgentCard {
    let (url, preferred_transport, protocol_version, additional_interfaces) = legacy_fields(&card.supported_interfaces);
    AgentCard {
        name: card.name,
        description: card.description,
        url,
        preferred_transport,
        additional_interfaces,
        protocol_version: Some(protocol_version),
        version: card.version,
        provider: card.provider,
        documentation_url: card.documentation_url,
        icon_url: card.icon_url,
        capabilities: AgentCapabilities {
            streaming: card.capabilities.streaming,
            push_notifications: card.capabilities.push_notifications,
            state_transition_history: None,
            extensions: card.capabilities.extensions,
        },
        supports_authenticated_extended_card: card.capabilities.extended_agent_card,
        security_schemes: card.security_schemes.into_iter().map(|(k, v)| (k, security_scheme_from_v1(v))).collect(),
        security: requirements_from_v1(card.security_requirements),
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description,
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                security: requirements_from_v1(s.security_requirements),
                extra: without(s.extra, &["security"]),
            })
            .collect(),
        signatures: card.signatures,
        extra: without(card.extra, V03_ONLY),
    }
}

/// Adds the 0.3 form of a 1.0 card's authentication to the card served to clients that may be 0.3
/// (as the reference SDK merges its 0.3 card into the 1.0 one): every security scheme also carries
/// its `type`-tagged 0.3 fields beside the 1.0 member (`{"httpAuthSecurityScheme": {…}, "type":
/// "http", "scheme": "bearer"}`), the requirements are listed again as `security`, and an extended
/// card is announced as `supportsAuthenticatedExtendedCard`. Without them a 0.3 client reads "no
/// authentication required". The strict 1.0 card never carries them (its schema allows neither).
pub fn add_v03_security(card: &mut Value) {
    let Value::Object(map) = card else { return };
    if let Some(Value::Object(schemes)) = map.get_mut("securitySchemes") {
        for scheme in schemes.values_mut() {
            let Value::Object(v03) = security_scheme_from_v1(scheme.clone()) else { continue };
            let Value::Object(entry) = scheme else { continue };
            if v03.contains_key("type") {
                for (key, value) in v03 {
                    entry.entry(key).or_insert(value);
                }
            }
        }
    }
    let requirements = map.get("securityRequirements").cloned().map(serde_json::from_value::<Vec<SecurityRequirement>>);
    if let Some(Ok(requirements)) = requirements
        && !requirements.is_empty()
    {
        let security = requirements_from_v1(requirements);
        map.insert("security".into(), serde_json::to_value(security).unwrap_or(Value::Null));
    }
    if map.get("capabilities").and_then(|c| c.get("extendedAgentCard")) == Some(&Value::Bool(true)) {
        map.insert("supportsAuthenticatedExtendedCard".into(), Value::Bool(true));
    }
}

/// The card the reference SDK serves to both generations: the 1.0 card plus the 0.3 top-level
/// interface fields (`url`, `preferredTransport`, `protocolVersion`, `additionalInterfaces`), taken
/// from its 0.x interfaces (or from all of them when it has none).
pub fn hybrid_card(card: &model::AgentCard) -> Value {
    let (url, preferred_transport, protocol_version, additional) = legacy_fields(&card.supported_interfaces);
    let mut json = serde_json::to_value(card).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut json {
        fields.insert("url".into(), Value::String(url));
        if let Some(transport) = preferred_transport {
            fields.insert("preferredTransport".into(), Value::String(transport));
        }
        fields.insert("protocolVersion".into(), Value::String(protocol_version));
        if !additional.is_empty() {
            fields.insert("additionalInterfaces".into(), serde_json::to_value(additional).unwrap_or(Value::Null));
        }
    }
    json
}

#[cfg(test)]
mod tests;
