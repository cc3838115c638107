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
use crate::protocol::translate::v03;
use crate::redact::Redactor;

pub mod sign;
pub mod verify;

pub use sign::CardSigner;

/// A card serialised once, with its ETag, ready to serve many times, in two forms: as built (with
/// the 0.3 top-level interface fields and the 0.3 form of its authentication, for clients that name
/// no 1.x version) and `strict` (without them, for 1.x clients, valid against the 1.0 card schema).
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
        CardDoc::signed(card, None)
    }

    /// The card in both forms, each signed on its own by `signer` when there is one (a signature
    /// covers exactly the form it is served in).
    pub fn signed(card: &Value, signer: Option<&CardSigner>) -> CardDoc {
        let mut hybrid = card.clone();
        if card.get("url").is_some() && card.get("supportedInterfaces").is_some() {
            // The form for clients that may be 0.3: their authentication fields too.
            v03::add_v03_security(&mut hybrid);
        }
        let mut strict = card.clone();
        if let Value::Object(map) = &mut strict {
            for legacy in V03_TOP_LEVEL {
                map.remove(legacy);
            }
        }
        let (hybrid, strict) = match signer {
            Some(signer) => (signer.sign(&hybrid), signer.sign(&strict)),
            None => (hybrid, strict),
        };
        let body = Bytes::from(serde_json::to_vec(&hybrid).unwrap_or_default());
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

/// A weak ETag for a served document, from its bytes.
pub(crate) fn etag_of(body: &[u8]) -> String {
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
    /// Signs every card served (with `gateway_identity`).
    pub signer: Option<CardSigner>,
}

impl CardSettings {
    /// Whether cards carry the 0.3 top-level fields for clients that name no version.
    fn serves_v03_fields(&self) -> bool {
        self.info.unversioned_fetch == crate::config::UnversionedFetch::V03
    }

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
fn interfaces(jsonrpc_url: Option<String>, rest_url: Option<String>, grpc: Option<(String, Option<&str>)>) -> Value {
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

/// The gateway's gRPC interface URL: `HOST:PORT`, a gRPC target, as the reference SDK's own server
/// publishes it. SDK clients hand the interface URL to their channel factory unchanged (the SDK
/// documents `grpc.aio.insecure_channel(url)`), and gRPC resolves `http://HOST:PORT` as a host name
/// and fails. The port is explicit, the scheme's default when the public URL names none. Over TLS
/// it keeps its `https://`: no insecure channel can reach it, and a client must know to bring TLS
/// credentials (its channel factory dials the host and port behind the scheme).
pub fn grpc_target(public_base: &str) -> String {
    let Ok(url) = url::Url::parse(public_base) else { return public_base.to_string() };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return public_base.to_string();
    };
    match url.scheme() {
        "https" => format!("https://{host}:{port}"),
        _ => format!("{host}:{port}"),
    }
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
            settings.grpc.then(|| (grpc_target(public_base), None)),
        ),
        "capabilities": {"streaming": true, "pushNotifications": settings.push},
        "defaultInputModes": input_modes,
        "defaultOutputModes": output_modes,
        "skills": skills,
    });
    if let Some(provider) = &info.provider {
        card["provider"] = json!(provider);
    }
    if settings.serves_v03_fields() {
        add_v03_fields(&mut card, Some(&format!("{public_base}/")), Some(public_base));
    }
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
            (settings.grpc && backend.has_jsonrpc).then(|| (grpc_target(&settings.public_base), Some(backend.name))),
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
    if settings.serves_v03_fields() {
        add_v03_fields(&mut out, jsonrpc.as_deref(), rest.as_deref());
    }
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
mod tests;
