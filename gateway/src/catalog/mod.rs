//! Discovery by caller: the catalog of the agents behind the gateway (`/.well-known/ai-catalog.json`,
//! in the shape of the AI Catalog specification) and the extended cards ([`extended`]), both showing
//! a caller exactly the agents and skills it may use.
//!
//! What a caller may use is decided by [`Permissions::may_use`], the evaluation the authorization
//! layer refuses calls with, so discovery and enforcement cannot disagree. A request without
//! credentials (or any request to a gateway without authentication) sees what the public cards show.
//!
//! The catalog follows the AI Catalog specification's Level 2 ("Discoverable") shape:
//! `specVersion`, `host` and one entry per agent of type `application/a2a-agent-card+json` whose `url`
//! is the agent's card behind the gateway. What the specification leaves to extensions (the skills
//! with their input schemas, the bindings) is in the entry's `a2a-gateway` extension, whose shape is
//! versioned by `catalogVersion` in the catalog's own `a2a-gateway` extension.

pub mod conditional;
pub mod extended;

use a2a_core::{AuthMethod, Caller};
use a2a_policies::authorize::Permissions;
use serde_json::{Value, json};

use crate::registry::Snapshot;

/// Where the catalog is served (the specification's well-known URI).
pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";
/// The catalog's media type.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";
/// The AI Catalog specification version the document follows.
pub const SPEC_VERSION: &str = "1.0";
/// The version of the gateway's own fields (the `a2a-gateway` extensions); raised when they change
/// incompatibly.
pub const CATALOG_VERSION: u32 = 1;
/// The key of the gateway's extension objects.
pub const EXTENSION: &str = "a2a-gateway";
/// An entry's artifact type: an A2A agent card.
const AGENT_CARD_TYPE: &str = "application/a2a-agent-card+json";

/// Whose view of the fleet is asked for.
#[derive(Debug, Clone, Copy)]
pub enum Viewer<'a> {
    /// No credentials: what the public cards show.
    Public,
    /// An authenticated caller: what its permissions allow.
    Caller(&'a Caller),
}

impl<'a> Viewer<'a> {
    /// The view of `caller`: an anonymous caller (a gateway without authentication) sees the public view.
    pub fn of(caller: Option<&'a Caller>) -> Viewer<'a> {
        match caller {
            Some(caller) if caller.auth != AuthMethod::Anonymous => Viewer::Caller(caller),
            _ => Viewer::Public,
        }
    }
}

/// Trims `card` (an agent card, 1.0 JSON) to `viewer`'s view. `None` when the viewer may use none
/// of the agent: every skill it lists is refused, or it lists none and a call to it would be refused
/// because nothing can be authorized by skill.
pub fn view_card(permissions: &Permissions, viewer: Viewer<'_>, mut card: Value) -> Option<Value> {
    let Viewer::Caller(caller) = viewer else { return Some(card) };
    let declared = card.get("skills").and_then(Value::as_array).map_or(0, Vec::len);
    permissions.retain_card_skills(caller, &mut card);
    let kept = card.get("skills").and_then(Value::as_array).map_or(0, Vec::len);
    let visible = match declared {
        0 => permissions.allows_everything(),
        _ => kept > 0,
    };
    visible.then_some(card)
}

/// The catalog `viewer` sees. `base` is the gateway's public URL (no trailing slash).
pub fn catalog(snapshot: &Snapshot, permissions: &Permissions, viewer: Viewer<'_>, base: &str) -> Value {
    let fleet: Value = serde_json::from_slice(&snapshot.gateway_card.strict).unwrap_or(Value::Null);
    let mut host =
        json!({"displayName": fleet.get("name").cloned().unwrap_or_else(|| json!("a2a-gateway")), "identifier": base});
    if let Some(docs) = fleet.get("documentationUrl") {
        host["documentationUrl"] = docs.clone();
    }
    let entries: Vec<Value> = snapshot
        .backends
        .iter()
        .filter_map(|backend| {
            let card = serde_json::from_slice(&snapshot.agent_card(&backend.name)?.strict).ok()?;
            let card = view_card(permissions, viewer, card)?;
            Some(entry(&backend.name, &card, base))
        })
        .collect();
    let caller = match viewer {
        Viewer::Public => "public",
        Viewer::Caller(_) => "authenticated",
    };
    json!({
        "specVersion": SPEC_VERSION,
        "host": host,
        "entries": entries,
        "extensions": {EXTENSION: {"catalogVersion": CATALOG_VERSION, "view": caller}},
    })
}

/// One agent's entry: its card's URL behind the gateway, name and description, and in the
/// extension its skills (with input schemas) and bindings as the card lists them.
fn entry(name: &str, card: &Value, base: &str) -> Value {
    let agent = format!("{base}/agents/{name}");
    let mut entry = json!({
        "identifier": agent,
        "type": AGENT_CARD_TYPE,
        "url": format!("{agent}/.well-known/agent-card.json"),
    });
    for (from, to) in [("name", "displayName"), ("description", "description")] {
        if let Some(text) = card.get(from).filter(|v| v.is_string()) {
            entry[to] = text.clone();
        }
    }
    let skills: Vec<Value> = card.get("skills").and_then(Value::as_array).into_iter().flatten().map(skill).collect();
    let bindings = card.get("supportedInterfaces").cloned().unwrap_or_else(|| json!([]));
    entry["extensions"] = json!({EXTENSION: {"agent": name, "skills": skills, "bindings": bindings}});
    entry
}

/// A skill as the catalog lists it: the card's fields a client chooses by, with the input schema.
fn skill(skill: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["id", "name", "description", "tags", "inputModes", "outputModes", "inputSchema"] {
        if let Some(value) = skill.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests;
