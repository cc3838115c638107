//! Agent Cards the gateway serves: its own (the union of its healthy backends' skills) and one per
//! backend, on the backend's path behind the gateway. Both are built from an allow-list of the
//! fields the gateway publishes, never by copying a backend's card: every interface points at the
//! gateway's public URL, security is the gateway's, and the free text that remains (names,
//! descriptions, tags, examples, input schemas) is cleared of every spelling of the backend's
//! address ([`Redactor`]).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::config::CardInfo;
use crate::protocol::PROTOCOL_VERSION;
use crate::redact::Redactor;

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
const V03_TOP_LEVEL: [&str; 4] = ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"];

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
    /// The gateway answers push-notification configs and delivers them (`push:` configured).
    pub push: bool,
    /// gRPC is served on the public listener (`listeners.grpc`).
    pub grpc: bool,
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
    /// The backend's address forms, for the free text the cards still carry.
    pub redactor: &'a Redactor,
    pub has_jsonrpc: bool,
    pub has_rest: bool,
}

/// The URL of a backend's own path behind the gateway, without a trailing slash.
pub fn agent_base(public_base: &str, name: &str) -> String {
    format!("{public_base}/agents/{name}")
}

/// The card's interfaces, 1.0 first (SDK clients take the first of a binding they support). The
/// JSON-RPC endpoint also takes A2A 0.3 calls (told apart by method name), so it is listed a second
/// time as 0.3, as the reference SDK lists the interfaces it serves in both versions; so is the
/// HTTP+JSON base, whose 0.3 paths (under `/v1/`) differ from 1.0's.
///
/// gRPC (`grpc`: the public base, and the agent's name as `tenant` on its own card) comes after the
/// JSON bindings: its address is the listener's, and a gRPC call names its agent by the protocol's own
/// `tenant` field, which unmodified gRPC clients set from the interface.
fn interfaces(jsonrpc_url: Option<String>, rest_url: Option<String>, grpc: Option<(&str, Option<&str>)>) -> Value {
    let mut list = Vec::new();
    if let Some(url) = &jsonrpc_url {
        list.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}));
    }
    if let Some(url) = &rest_url {
        list.push(json!({"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": PROTOCOL_VERSION}));
    }
    if let Some((url, tenant)) = grpc {
        let mut interface = json!({"url": url, "protocolBinding": "GRPC", "protocolVersion": PROTOCOL_VERSION});
        if let Some(tenant) = tenant {
            interface["tenant"] = json!(tenant);
        }
        list.push(interface);
    }
    if let Some(url) = jsonrpc_url {
        list.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": V03_VERSION}));
    }
    if let Some(url) = rest_url {
        list.push(json!({"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": V03_VERSION}));
    }
    Value::Array(list)
}

/// The protocol version the 0.3 interface and top-level fields name.
const V03_VERSION: &str = "0.3";

/// The 0.3 top-level interface fields (`url`, `preferredTransport`, `protocolVersion`,
/// `additionalInterfaces`) for 0.3 clients, which read no `supportedInterfaces`: the JSON-RPC
/// endpoint first, and every 0.3 interface in `additionalInterfaces` (a 0.3 client picks the first
/// transport it supports from these).
fn add_v03_fields(card: &mut Value, jsonrpc_url: Option<&str>, rest_url: Option<&str>) {
    let Value::Object(map) = card else { return };
    let mut additional = Vec::new();
    if let Some(url) = jsonrpc_url {
        additional.push(json!({"url": url, "transport": "JSONRPC"}));
    }
    if let Some(url) = rest_url {
        additional.push(json!({"url": url, "transport": "HTTP+JSON"}));
    }
    let Some(primary) = additional.first().cloned() else { return };
    map.insert("url".into(), primary["url"].clone());
    map.insert("preferredTransport".into(), primary["transport"].clone());
    map.insert("protocolVersion".into(), json!("0.3.0"));
    map.insert("additionalInterfaces".into(), Value::Array(additional));
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
        let defaults_in = modes(backend.card.get("defaultInputModes"), backend.redactor);
        let defaults_out = modes(backend.card.get("defaultOutputModes"), backend.redactor);
        push_unique(&mut input_modes, &defaults_in);
        push_unique(&mut output_modes, &defaults_out);
        let Some(Value::Array(list)) = backend.card.get("skills") else { continue };
        for skill in list {
            // The gateway's defaults are a union, so each skill states its backend's own.
            let Some(skill) = published_skill(skill, Some((&defaults_in, &defaults_out)), backend.redactor) else {
                continue;
            };
            if seen.insert(skill["id"].as_str().unwrap_or_default().to_string()) {
                skills.push(skill);
            }
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
        "supportedInterfaces": interfaces(
            Some(format!("{public_base}/")),
            Some(public_base.to_string()),
            settings.grpc.then_some((public_base, None)),
        ),
        "capabilities": {"streaming": true, "pushNotifications": settings.push},
        "defaultInputModes": input_modes,
        "defaultOutputModes": output_modes,
        "skills": skills,
    });
    if let Some(provider) = &info.provider {
        card["provider"] = json!(provider);
    }
    add_v03_fields(&mut card, Some(&format!("{public_base}/")), Some(public_base));
    settings.apply_security(&mut card);
    card
}

/// A backend's own card as served at `/agents/{name}/.well-known/agent-card.json`, built from an
/// allow-list of the backend's fields: its name, description, version, default modes, skills and
/// capabilities (streaming, push notifications, extensions), every string cleared of the backend's
/// address. Interfaces point at the gateway; security and provider are the gateway's. Everything else
/// (URLs such as `iconUrl`, `documentationUrl` and the provider's, signatures, unknown fields) is
/// left out: each could name an internal host, and none is the gateway's to vouch for.
pub fn agent_card(settings: &CardSettings, backend: &BackendCard<'_>) -> Value {
    let base = agent_base(&settings.public_base, backend.name);
    let (card, r) = (backend.card, backend.redactor);
    let text = |key: &str| json!(r.redact(card.get(key).and_then(Value::as_str).unwrap_or_default()));
    let skills: Vec<Value> = match card.get("skills") {
        Some(Value::Array(list)) => list.iter().filter_map(|s| published_skill(s, None, r)).collect(),
        _ => Vec::new(),
    };
    let jsonrpc = backend.has_jsonrpc.then(|| format!("{base}/"));
    let rest = backend.has_rest.then(|| base.clone());
    let mut out = json!({
        "name": text("name"),
        "description": text("description"),
        "version": text("version"),
        "supportedInterfaces": interfaces(
            jsonrpc.clone(),
            rest.clone(),
            (settings.grpc && backend.has_jsonrpc).then_some((settings.public_base.as_str(), Some(backend.name))),
        ),
        "capabilities": capabilities(card.get("capabilities"), r),
        "defaultInputModes": modes(card.get("defaultInputModes"), r),
        "defaultOutputModes": modes(card.get("defaultOutputModes"), r),
        "skills": skills,
    });
    if let Some(provider) = &settings.info.provider {
        out["provider"] = json!(provider);
    }
    // Push configs to an agent's path are the gateway's too: agents never get a caller's URL.
    out["capabilities"]["pushNotifications"] = json!(settings.push);
    add_v03_fields(&mut out, jsonrpc.as_deref(), rest.as_deref());
    settings.apply_security(&mut out);
    out
}

/// The capabilities of a backend the gateway relays: streaming as the backend states it, and its extensions (their `A2A-Extensions` header is forwarded) without any whose URI
/// names the backend.
fn capabilities(capabilities: Option<&Value>, r: &Redactor) -> Value {
    let mut out = Map::new();
    let Some(Value::Object(given)) = capabilities else { return Value::Object(out) };
    for key in ["streaming"] {
        if let Some(Value::Bool(b)) = given.get(key) {
            out.insert(key.into(), Value::Bool(*b));
        }
    }
    let extensions: Vec<Value> = given
        .get("extensions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let uri = e.get("uri")?.as_str()?;
            if r.mentions(uri) {
                return None;
            }
            let mut kept = json!({"uri": uri});
            if let Some(description) = e.get("description").and_then(Value::as_str) {
                kept["description"] = json!(r.redact(description));
            }
            if let Some(Value::Bool(required)) = e.get("required") {
                kept["required"] = json!(required);
            }
            if let Some(params @ Value::Object(_)) = e.get("params") {
                kept["params"] = cleaned(params, r);
            }
            Some(kept)
        })
        .collect();
    if !extensions.is_empty() {
        out.insert("extensions".into(), Value::Array(extensions));
    }
    Value::Object(out)
}

/// One skill as the gateway publishes it: the fields A2A defines for a skill (without its
/// `securityRequirements`: the gateway's own apply), and the `inputSchema` the gateway enforces.
/// A skill whose id names the backend is left out (the id cannot be rewritten: routing uses it).
/// `defaults` fills absent modes with the backend's defaults (for the gateway's union card).
fn published_skill(skill: &Value, defaults: Option<(&Vec<Value>, &Vec<Value>)>, r: &Redactor) -> Option<Value> {
    let id = skill.get("id")?.as_str()?;
    if r.mentions(id) {
        tracing::warn!(skill = id, "a skill id names its backend's address; the skill is left off the cards");
        return None;
    }
    let text = |key: &str| json!(r.redact(skill.get(key).and_then(Value::as_str).unwrap_or_default()));
    let list = |key: &str| -> Value {
        let items = skill.get(key).and_then(Value::as_array).into_iter().flatten();
        Value::Array(items.filter_map(Value::as_str).map(|s| json!(r.redact(s))).collect())
    };
    let mut out = json!({"id": id, "name": text("name"), "description": text("description"), "tags": list("tags")});
    let map = out.as_object_mut()?;
    if skill.get("examples").is_some_and(Value::is_array) {
        map.insert("examples".into(), list("examples"));
    }
    for (key, default) in [("inputModes", defaults.map(|d| d.0)), ("outputModes", defaults.map(|d| d.1))] {
        match skill.get(key) {
            Some(given @ Value::Array(_)) => {
                map.insert(key.into(), Value::Array(modes(Some(given), r)));
            }
            _ => {
                if let Some(default) = default {
                    map.insert(key.into(), Value::Array(default.clone()));
                }
            }
        }
    }
    if let Some(schema) = skill.get("inputSchema") {
        map.insert("inputSchema".into(), cleaned(schema, r));
    }
    Some(out)
}

/// Media types: strings only, none naming the backend.
fn modes(value: Option<&Value>, r: &Redactor) -> Vec<Value> {
    let items = value.and_then(Value::as_array).into_iter().flatten();
    items.filter_map(Value::as_str).filter(|m| !r.mentions(m)).map(|m| json!(m)).collect()
}

/// A JSON value (an input schema, extension params) with every string and key cleared of the
/// backend's address, and numbers equal to one of its ports removed. The registry keeps the original
/// for validation; this copy is documentation.
fn cleaned(value: &Value, r: &Redactor) -> Value {
    match value {
        Value::String(s) => json!(r.redact(s)),
        Value::Number(n) if n.as_u64().is_some_and(|n| r.is_port(n)) => Value::Null,
        Value::Array(items) => Value::Array(items.iter().map(|v| cleaned(v, r)).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, v) in map {
                let mut key = r.redact(key).into_owned();
                let base = key.clone();
                let mut n = 1;
                while out.contains_key(&key) {
                    n += 1;
                    key = format!("{base}-{n}");
                }
                out.insert(key, cleaned(v, r));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn push_unique(into: &mut Vec<Value>, modes: &[Value]) {
    for mode in modes {
        if !into.contains(mode) {
            into.push(mode.clone());
        }
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

    fn names() -> Redactor {
        Redactor::new(["http://10.0.0.5:8000", "http://10.0.0.5:8000/a2a/jsonrpc"])
    }

    fn settings(public_base: &str) -> CardSettings {
        CardSettings {
            info: CardInfo::default(),
            public_base: public_base.into(),
            security: None,
            push: false,
            grpc: false,
        }
    }

    fn backend<'a>(card: &'a Value, names: &'a Redactor) -> BackendCard<'a> {
        BackendCard { name: "echo", card, redactor: names, has_jsonrpc: true, has_rest: true }
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
    fn agent_card_points_at_the_agent_path_and_publishes_only_allowed_fields() {
        let card = backend_card();
        let names = names();
        let out = agent_card(&settings("https://gw.example"), &backend(&card, &names));
        assert_eq!(out["supportedInterfaces"][0]["url"], "https://gw.example/agents/echo/");
        assert_eq!(out["supportedInterfaces"][1]["url"], "https://gw.example/agents/echo");
        for dropped in ["iconUrl", "futureField", "signatures", "documentationUrl"] {
            assert!(out.get(dropped).is_none(), "{dropped}");
        }
        assert_eq!(out["provider"], Value::Null, "the backend's provider is not the gateway's to vouch for");
        assert_eq!(out["skills"][0]["description"], "runs on [redacted]");
        assert_eq!(out["description"], "Echoes; docs at [redacted]");
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

    mod leaks {
        //! Property: whatever field of a backend's card hides the backend's address, and in whatever
        //! spelling, no card the gateway serves carries it.
        use super::*;
        use proptest::prelude::*;

        const PORT: u16 = 47123;
        const PATH: &str = "/internal-rpc-x9";

        /// The backend's address in the spellings that leaked before.
        fn spellings() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                format!("http://127.0.0.1:{PORT}{PATH}"),
                format!("127.0.0.1:{PORT}"),
                format!("localhost:{PORT}"),
                format!("LocalHost:{PORT}"),
                format!("[::1]:{PORT}"),
                "::1".to_string(),
                "127.0.0.1".to_string(),
                "localhost".to_string(),
                "127.0.0.1:9".to_string(),
                format!("other-host:{PORT}"),
                format!("http%3A%2F%2F127.0.0.1%3A{PORT}"),
                format!("http%253A%252F%252Flocalhost%253A{PORT}"),
                "127%2E0%2E0%2E1".to_string(),
                format!("http:\\/\\/localhost:{PORT}"),
                format!("ws://[::1]:{PORT}/x"),
                PATH.to_string(),
                format!("http://127.0.0.1:{PORT}{PATH}?q=1#f"),
            ])
        }

        /// Text around the address: words without digits (so a port cannot appear by chance), joined
        /// to it by a space or punctuation (letters would make it another name).
        fn wrapped() -> impl Strategy<Value = String> {
            let joints = || prop::sample::select(vec![" ", "(", ")", ",", "=", "'", "\"", "<", ">", ";", "/", "\n"]);
            ("[a-z ]{0,8}", joints(), spellings(), joints(), "[a-z ]{0,8}")
                .prop_map(|(a, j1, leak, j2, b)| format!("{a}{j1}{leak}{j2}{b}"))
        }

        /// Every place a string goes in a card, the address in one (or, with `all`, every) of them.
        fn card(leak: String, at: usize, all: bool) -> Value {
            let mut n = 0;
            let mut s = |plain: &str| {
                n += 1;
                if all || n == at { leak.clone() } else { plain.to_string() }
            };
            json!({
                "name": s("Lab"), "description": s("a lab"), "version": s("1"),
                "supportedInterfaces": [{"url": format!("http://127.0.0.1:{PORT}{PATH}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "url": format!("http://localhost:{PORT}/"),
                "provider": {"organization": s("org"), "url": s("https://example.org")},
                "documentationUrl": s("https://docs"), "iconUrl": s("https://icon"),
                "capabilities": {"streaming": true, "extensions": [{"uri": s("https://ext.example/v1"), "description": s("ext"), "params": {s("key"): s("value")}}]},
                "securitySchemes": {s("scheme"): {"httpAuthSecurityScheme": {"scheme": s("Bearer")}}},
                "defaultInputModes": [s("text/plain")], "defaultOutputModes": [s("text/plain")],
                "skills": [{"id": s("skill"), "name": s("Skill"), "description": s("does things"), "tags": [s("tag")],
                    "examples": [s("an example")], "inputModes": [s("application/json")], "outputModes": [s("text/plain")],
                    "inputSchema": {"type": "object", "properties": {s("field"): {"type": "string", "description": s("a field"), "default": PORT}},
                        "$id": s("urn:schema")},
                    "securityRequirements": [{"schemes": {s("scheme"): {"list": [s("scope")]}}}],
                    s("x-extra"): s("extra")}],
                s("x-vendor"): {s("k"): s("v")},
            })
        }

        /// Whether `text` (a served card) still carries the address in any spelling.
        fn leaks(text: &str) -> Option<String> {
            let mut forms = vec![text.to_lowercase()];
            for _ in 0..3 {
                let last = forms.last().cloned().unwrap_or_default();
                let decoded = crate::redact::tests_support::percent_decode(&last).replace("\\/", "/");
                forms.push(decoded.to_lowercase());
            }
            let needles = ["127.0.0.1", "localhost", "::1", "127%2e", PATH];
            for form in &forms {
                for needle in needles {
                    if form.contains(needle) {
                        return Some(needle.to_string());
                    }
                }
                if form.contains(&format!(":{PORT}")) || form.contains(&PORT.to_string()) {
                    return Some(PORT.to_string());
                }
            }
            None
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
            #[test]
            fn no_served_card_carries_the_backends_address(leak in wrapped(), at in 1usize..40, all in prop::bool::weighted(0.1)) {
                let card = card(leak, at, all);
                let redactor = Redactor::new([format!("http://127.0.0.1:{PORT}").as_str(), &format!("http://127.0.0.1:{PORT}{PATH}")]);
                let view = BackendCard { name: "lab", card: &card, redactor: &redactor, has_jsonrpc: true, has_rest: true };
                let settings = CardSettings { info: CardInfo::default(), public_base: "https://gw.example".into(), security: None, push: false, grpc: false };
                for served in [agent_card(&settings, &view), gateway_card(&settings, std::slice::from_ref(&view))] {
                    let text = serde_json::to_string(&served).unwrap();
                    prop_assert!(leaks(&text).is_none(), "{:?} leaked: {}", leaks(&text), text);
                    // The 0.3 and early renderings are made from the same card.
                    let model: crate::protocol::translate::model::AgentCard = serde_json::from_value(served).unwrap();
                    for rendered in [
                        serde_json::to_string(&crate::protocol::translate::v03::card_from_v1(model.clone())).unwrap(),
                        serde_json::to_string(&crate::protocol::translate::early::card_from_v1(model)).unwrap(),
                    ] {
                        prop_assert!(leaks(&rendered).is_none(), "{}", rendered);
                    }
                }
            }
        }
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
