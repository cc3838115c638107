//! Agent Cards the gateway serves: its own (the union of its healthy backends' skills) and one per
//! backend, rewritten to the backend's path behind the gateway. Neither carries a backend URL, host
//! or other infrastructure detail: every interface points at the gateway's public URL, and any
//! other string naming a backend's origin or authority is rewritten or redacted.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::config::CardInfo;
use crate::protocol::PROTOCOL_VERSION;

/// A card serialised once, with its ETag, ready to serve many times, in two forms: as built (with
/// the 0.3 top-level interface fields, for clients that name no 1.x version) and `strict` (without
/// them, for 1.x clients, valid against the 1.0 card schema).
#[derive(Debug, Clone)]
pub struct CardDoc {
    pub body: Bytes,
    pub etag: String,
    pub strict: Bytes,
    pub strict_etag: String,
    /// When this content was first served; kept across rebuilds that change nothing.
    pub modified: SystemTime,
    /// What the card promises in `capabilities.pushNotifications`.
    pub push: bool,
}

impl CardDoc {
    pub fn new(card: &Value) -> CardDoc {
        let body = Bytes::from(serde_json::to_vec(card).unwrap_or_default());
        let mut strict = card.clone();
        if let Value::Object(map) = &mut strict {
            for legacy in V03_TOP_LEVEL {
                map.remove(legacy);
            }
        }
        let strict = Bytes::from(serde_json::to_vec(&strict).unwrap_or_default());
        let push = card.pointer("/capabilities/pushNotifications").and_then(Value::as_bool).unwrap_or(false);
        // Whole seconds: `Last-Modified` has no finer resolution, and `If-Modified-Since` compares it.
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        CardDoc {
            etag: etag_of(&body),
            body,
            strict_etag: etag_of(&strict),
            strict,
            modified: UNIX_EPOCH + std::time::Duration::from_secs(now),
            push,
        }
    }

    /// This card, dated as `previous` when its content is the same.
    pub fn since(mut self, previous: Option<&CardDoc>) -> CardDoc {
        if let Some(previous) = previous.filter(|p| p.etag == self.etag) {
            self.modified = previous.modified;
        }
        self
    }
}

fn etag_of(body: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("W/\"{:016x}\"", hasher.finish())
}

/// The 0.3 top-level interface fields, which the 1.0 card schema does not allow.
const V03_TOP_LEVEL: [&str; 3] = ["url", "preferredTransport", "protocolVersion"];

/// How callers authenticate to the gateway, as cards advertise it.
#[derive(Debug, Clone, PartialEq)]
pub struct Security {
    pub schemes: Value,
    pub requirements: Value,
}

/// What every card the gateway serves says about the gateway itself.
#[derive(Debug, Clone)]
pub struct CardSettings {
    pub info: CardInfo,
    /// The gateway's public URL, without a trailing slash.
    pub public_base: String,
    /// `None` when callers need no credentials.
    pub security: Option<Security>,
}

impl CardSettings {
    /// The gateway's own security on a card (and the extended card it then serves); a backend's
    /// security fields say how to reach the backend, which is the gateway's business, not the
    /// caller's, so they are removed.
    fn apply_security(&self, card: &mut Value) {
        let Value::Object(map) = card else { return };
        map.remove("securitySchemes");
        map.remove("securityRequirements");
        if let Some(Value::Array(skills)) = map.get_mut("skills") {
            for skill in skills.iter_mut().filter_map(Value::as_object_mut) {
                skill.remove("securityRequirements");
            }
        }
        if let Some(security) = &self.security {
            map.insert("securitySchemes".into(), security.schemes.clone());
            map.insert("securityRequirements".into(), security.requirements.clone());
        }
        let extended = self.security.is_some();
        if let Some(Value::Object(capabilities)) = map.get_mut("capabilities") {
            capabilities.insert("extendedAgentCard".into(), Value::Bool(extended));
        }
    }
}

/// What the card builders need to know about one healthy backend.
pub struct BackendCard<'a> {
    pub name: &'a str,
    pub card: &'a Value,
    /// Origins and authorities (`http://10.0.0.5:8000`, `10.0.0.5:8000`) that identify the backend.
    pub private_names: &'a [String],
    pub has_jsonrpc: bool,
    pub has_rest: bool,
}

/// The URL of a backend's own path behind the gateway, without a trailing slash.
pub fn agent_base(public_base: &str, name: &str) -> String {
    format!("{public_base}/agents/{name}")
}

/// The card's interfaces, 1.0 first (SDK clients take the first of a binding they support). The
/// JSON-RPC endpoint also takes A2A 0.3 calls (told apart by method name), so it is listed a second
/// time as 0.3, as the reference SDK lists the interfaces it serves in both versions.
fn interfaces(jsonrpc_url: Option<String>, rest_url: Option<String>) -> Value {
    let mut list = Vec::new();
    if let Some(url) = &jsonrpc_url {
        list.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}));
    }
    if let Some(url) = rest_url {
        list.push(json!({"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": PROTOCOL_VERSION}));
    }
    if let Some(url) = jsonrpc_url {
        list.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": V03_VERSION}));
    }
    Value::Array(list)
}

/// The protocol version the 0.3 interface and top-level fields name.
const V03_VERSION: &str = "0.3";

/// The 0.3 top-level interface fields (`url`, `preferredTransport`, `protocolVersion`) for 0.3
/// clients, which read no `supportedInterfaces`: the JSON-RPC endpoint, when there is one.
fn add_v03_fields(card: &mut Value, jsonrpc_url: Option<&str>) {
    if let (Value::Object(map), Some(url)) = (card, jsonrpc_url) {
        map.insert("url".into(), json!(url));
        map.insert("preferredTransport".into(), json!("JSONRPC"));
        map.insert("protocolVersion".into(), json!("0.3.0"));
    }
}

/// The gateway's own card: its identity from config, its interfaces, and the union of the skills of
/// `backends` (the first backend to declare a skill id supplies its description).
pub fn gateway_card(settings: &CardSettings, backends: &[BackendCard<'_>]) -> Value {
    let (info, public_base) = (&settings.info, settings.public_base.as_str());
    let mut skills = Vec::new();
    let mut seen = HashSet::new();
    let mut input_modes = Vec::new();
    let mut output_modes = Vec::new();
    for backend in backends {
        let defaults_in = backend.card.get("defaultInputModes");
        let defaults_out = backend.card.get("defaultOutputModes");
        push_unique(&mut input_modes, defaults_in);
        push_unique(&mut output_modes, defaults_out);
        let Some(Value::Array(list)) = backend.card.get("skills") else { continue };
        for skill in list {
            let Some(id) = skill.get("id").and_then(Value::as_str) else { continue };
            if !seen.insert(id.to_string()) {
                continue;
            }
            let mut skill = skill.clone();
            // The gateway's defaults are a union, so each skill states its backend's own.
            if let Value::Object(map) = &mut skill {
                fill_default(map, "inputModes", defaults_in);
                fill_default(map, "outputModes", defaults_out);
            }
            scrub(&mut skill, backend.private_names, &agent_base(public_base, backend.name));
            skills.push(skill);
        }
    }
    if input_modes.is_empty() {
        input_modes.push(json!("text/plain"));
    }
    if output_modes.is_empty() {
        output_modes.push(json!("text/plain"));
    }
    let mut card = json!({
        "name": info.name,
        "description": info.description,
        "version": info.version,
        "supportedInterfaces": interfaces(Some(format!("{public_base}/")), Some(public_base.to_string())),
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": input_modes,
        "defaultOutputModes": output_modes,
        "skills": skills,
    });
    if let Some(provider) = &info.provider {
        card["provider"] = json!(provider);
    }
    add_v03_fields(&mut card, Some(&format!("{public_base}/")));
    settings.apply_security(&mut card);
    card
}

/// A backend's own card as served at `/agents/{name}/.well-known/agent-card.json`: interfaces
/// pointing at the gateway, the 0.3 top-level interface fields and signatures (no longer valid
/// after the rewrite) removed, and every other mention of the backend rewritten.
pub fn agent_card(settings: &CardSettings, backend: &BackendCard<'_>) -> Value {
    let base = agent_base(&settings.public_base, backend.name);
    let mut card = backend.card.clone();
    if let Value::Object(map) = &mut card {
        for legacy in ["url", "preferredTransport", "additionalInterfaces", "protocolVersion", "signatures"] {
            map.remove(legacy);
        }
    }
    scrub(&mut card, backend.private_names, &base);
    if let Value::Object(map) = &mut card {
        let jsonrpc = backend.has_jsonrpc.then(|| format!("{base}/"));
        let rest = backend.has_rest.then(|| base.clone());
        map.insert("supportedInterfaces".into(), interfaces(jsonrpc.clone(), rest));
        add_v03_fields(&mut card, jsonrpc.as_deref());
    }
    settings.apply_security(&mut card);
    card
}

fn push_unique(into: &mut Vec<Value>, modes: Option<&Value>) {
    if let Some(Value::Array(modes)) = modes {
        for mode in modes {
            if !into.contains(mode) {
                into.push(mode.clone());
            }
        }
    }
}

fn fill_default(skill: &mut Map<String, Value>, key: &str, default: Option<&Value>) {
    if let Some(default) = default
        && !skill.contains_key(key)
    {
        skill.insert(key.into(), default.clone());
    }
}

/// Rewrites every string that names the backend: an origin becomes the backend's public base, a bare
/// authority is redacted. `private_names` lists origins before authorities.
fn scrub(value: &mut Value, private_names: &[String], public: &str) {
    match value {
        Value::String(s) => {
            for name in private_names {
                if s.contains(name.as_str()) {
                    let replacement = if name.contains("://") { public } else { "[gateway]" };
                    *s = s.replace(name.as_str(), replacement);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, private_names, public)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub(v, private_names, public)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend_card() -> Value {
        json!({
            "name": "Echo Agent",
            "description": "Echoes; docs at http://10.0.0.5:8000/docs",
            "supportedInterfaces": [
                {"url": "http://10.0.0.5:8000/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://10.0.0.5:8000/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
            ],
            "url": "http://10.0.0.5:8000/a2a/jsonrpc",
            "preferredTransport": "JSONRPC",
            "iconUrl": "http://10.0.0.5:8000/icon.png",
            "provider": {"organization": "x", "url": "http://10.0.0.5:8000/"},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["application/json"],
            "capabilities": {"streaming": true},
            "signatures": [{"protected": "x", "signature": "y"}],
            "skills": [
                {"id": "echo", "name": "Echo", "description": "runs on 10.0.0.5:8000", "tags": []},
                {"id": "shout", "name": "Shout", "description": "d", "tags": [], "inputModes": ["application/json"]}
            ],
            "futureField": {"kept": true}
        })
    }

    fn names() -> Vec<String> {
        vec!["http://10.0.0.5:8000".into(), "10.0.0.5:8000".into()]
    }

    fn settings(public_base: &str) -> CardSettings {
        CardSettings { info: CardInfo::default(), public_base: public_base.into(), security: None }
    }

    fn backend<'a>(card: &'a Value, names: &'a [String]) -> BackendCard<'a> {
        BackendCard { name: "echo", card, private_names: names, has_jsonrpc: true, has_rest: true }
    }

    #[test]
    fn gateway_card_unions_skills_and_hides_backends() {
        let card = backend_card();
        let names = names();
        let other = json!({"skills": [{"id": "echo", "name": "dup"}, {"id": "review-pr", "name": "Review"}]});
        let backends = [backend(&card, &names), BackendCard { name: "rev", card: &other, ..backend(&card, &names) }];
        let out = gateway_card(&settings("https://gw.example"), &backends);
        let ids: Vec<&str> = out["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["echo", "shout", "review-pr"]);
        assert_eq!(out["skills"][0]["name"], "Echo", "first declaration wins");
        assert_eq!(out["skills"][0]["inputModes"], json!(["text/plain"]), "backend defaults made explicit");
        assert_eq!(out["skills"][1]["inputModes"], json!(["application/json"]));
        assert_eq!(out["supportedInterfaces"][0]["url"], "https://gw.example/");
        assert_eq!(out["supportedInterfaces"][1]["url"], "https://gw.example");
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("10.0.0.5"), "{text}");
    }

    #[test]
    fn agent_card_points_at_the_agent_path_and_keeps_unknown_fields() {
        let card = backend_card();
        let names = names();
        let out = agent_card(&settings("https://gw.example"), &backend(&card, &names));
        assert_eq!(out["supportedInterfaces"][0]["url"], "https://gw.example/agents/echo/");
        assert_eq!(out["supportedInterfaces"][1]["url"], "https://gw.example/agents/echo");
        assert_eq!(out["iconUrl"], "https://gw.example/agents/echo/icon.png");
        assert_eq!(out["futureField"], json!({"kept": true}));
        assert!(out.get("signatures").is_none());
        // The backend's own 0.3 fields are replaced by the gateway's 0.3 JSON-RPC endpoint.
        assert_eq!(out["url"], "https://gw.example/agents/echo/");
        assert_eq!((&out["preferredTransport"], &out["protocolVersion"]), (&json!("JSONRPC"), &json!("0.3.0")));
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("10.0.0.5"), "{text}");
    }

    #[test]
    fn agent_card_lists_only_the_bindings_the_backend_has() {
        let card = backend_card();
        let names = names();
        let only_rpc = BackendCard { has_rest: false, ..backend(&card, &names) };
        let out = agent_card(&settings("http://gw"), &only_rpc);
        // The JSON-RPC endpoint, in 1.0 and 0.3.
        assert_eq!(out["supportedInterfaces"].as_array().unwrap().len(), 2);
        assert_eq!(out["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
        assert_eq!(out["supportedInterfaces"][1]["protocolVersion"], "0.3");
        assert_eq!(out["url"], "http://gw/agents/echo/");
    }

    #[test]
    fn cards_advertise_the_gateways_security_not_the_backends() {
        let mut card = backend_card();
        card["securitySchemes"] = json!({"internal": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
        card["skills"][0]["securityRequirements"] = json!([{"schemes": {"internal": {"list": []}}}]);
        let names = names();
        let open = agent_card(&settings("http://gw"), &backend(&card, &names));
        assert!(open.get("securitySchemes").is_none());
        assert!(open["skills"][0].get("securityRequirements").is_none());
        assert_eq!(open["capabilities"]["extendedAgentCard"], false);
        let security =
            Security { schemes: json!({"bearer": {}}), requirements: json!([{"schemes": {"bearer": {"list": []}}}]) };
        let locked = CardSettings { security: Some(security.clone()), ..settings("http://gw") };
        for out in [agent_card(&locked, &backend(&card, &names)), gateway_card(&locked, &[backend(&card, &names)])] {
            assert_eq!(out["securitySchemes"], security.schemes);
            assert_eq!(out["securityRequirements"], security.requirements);
            assert_eq!(out["capabilities"]["extendedAgentCard"], true);
        }
    }

    #[test]
    fn etag_follows_content() {
        let a = CardDoc::new(&json!({"a": 1}));
        assert_eq!(a.etag, CardDoc::new(&json!({"a": 1})).etag);
        assert_ne!(a.etag, CardDoc::new(&json!({"a": 2})).etag);
        assert!(a.etag.starts_with("W/\""));
    }

    #[test]
    fn the_strict_form_drops_only_the_0_3_fields_and_dates_survive_unchanged_rebuilds() {
        let card = json!({"name": "n", "url": "u", "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0",
            "capabilities": {"pushNotifications": true}});
        let mut doc = CardDoc::new(&card);
        let strict: Value = serde_json::from_slice(&doc.strict).unwrap();
        assert_eq!(strict, json!({"name": "n", "capabilities": {"pushNotifications": true}}));
        assert_ne!(doc.etag, doc.strict_etag);
        assert!(doc.push);
        doc.modified = UNIX_EPOCH;
        assert_eq!(CardDoc::new(&card).since(Some(&doc)).modified, UNIX_EPOCH);
        assert_ne!(CardDoc::new(&json!({"name": "m"})).since(Some(&doc)).modified, UNIX_EPOCH);
    }
}
