//! The A2A 1.0 agent card served at `/.well-known/agent-card.json`, with a weak ETag and
//! `If-None-Match` answered by 304, like the reference SDK.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use serde::Serialize;
use serde_json::Value;

use crate::recorder::{Binding, Recording};
use crate::{AgentKind, App, behaviour};

pub const PATH: &str = "/.well-known/agent-card.json";
pub const JSONRPC_PATH: &str = "/a2a/jsonrpc";
pub const REST_PREFIX: &str = "/a2a/rest";

/// The serialised card and its entity tag, computed once.
pub struct Card {
    body: Bytes,
    etag: HeaderValue,
}

impl Card {
    pub fn new(kind: AgentKind, base_url: &str, name: Option<&str>) -> Self {
        let card = describe(kind, base_url.trim_end_matches('/'), name);
        let body = Bytes::from(serde_json::to_vec(&card).unwrap_or_default());
        let etag = HeaderValue::from_str(&format!("W/\"{:016x}\"", fnv1a(&body)))
            .unwrap_or_else(|_| HeaderValue::from_static("W/\"0\""));
        Self { body, etag }
    }

    /// Whether an `If-None-Match` header names this card's tag (weak comparison, or `*`).
    fn matches(&self, if_none_match: &HeaderValue) -> bool {
        let ours = strip_weak(self.etag.to_str().unwrap_or_default());
        String::from_utf8_lossy(if_none_match.as_bytes())
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || strip_weak(tag) == ours)
    }
}

fn strip_weak(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// 64-bit FNV-1a: enough to tell card versions apart, and stable across builds.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

/// `GET /.well-known/agent-card.json`
pub async fn get(State(app): State<Arc<App>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let recording = Recording { operation: Some("GetAgentCard".into()), ..Recording::new(Binding::Card) };
    app.recorder.record(&method, &uri, &headers, recording);
    let card = &app.card;
    if headers.get(header::IF_NONE_MATCH).is_some_and(|tag| card.matches(tag)) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, card.etag.clone())]).into_response();
    }
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json")), (header::ETAG, card.etag.clone())],
        card.body.clone(),
    )
        .into_response()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentCard {
    name: String,
    description: &'static str,
    supported_interfaces: [Interface; 2],
    provider: Provider,
    version: &'static str,
    capabilities: Capabilities,
    default_input_modes: Vec<&'static str>,
    default_output_modes: Vec<&'static str>,
    skills: Vec<Skill>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Interface {
    url: String,
    protocol_binding: &'static str,
    protocol_version: &'static str,
}

#[derive(Serialize)]
struct Provider {
    organization: &'static str,
    url: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Capabilities {
    streaming: bool,
    push_notifications: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Skill {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    tags: Vec<&'static str>,
    examples: Vec<&'static str>,
    input_modes: Vec<&'static str>,
    output_modes: Vec<&'static str>,
    /// Not part of the 1.0 card: an extension field the gateway reads to validate input.
    #[serde(skip_serializing_if = "Option::is_none")]
    input_schema: Option<Value>,
}

const TEXT: &str = "text/plain";
const JSON: &str = "application/json";

fn describe(kind: AgentKind, base: &str, name: Option<&str>) -> AgentCard {
    let (default_name, description, skill) = match kind {
        AgentKind::Echo => (
            "Echo Agent",
            "Returns the input text as an artifact.",
            Skill {
                id: "echo",
                name: "Echo",
                description: "Echo the input text back.",
                tags: vec!["test", "echo"],
                examples: vec!["hello"],
                input_modes: vec![TEXT],
                output_modes: vec![TEXT],
                input_schema: None,
            },
        ),
        AgentKind::Review => (
            "Review Agent",
            "Reviews a pull request diff and reports findings, streaming its progress.",
            Skill {
                id: "review-pr",
                name: "Review pull request",
                description: "Review a unified diff (first data part, see inputSchema) or a PR named in text; returns findings as a data artifact.",
                tags: vec!["code-review", "pull-request"],
                examples: vec!["PR #123"],
                input_modes: vec![TEXT, JSON],
                output_modes: vec![JSON],
                input_schema: Some(behaviour::review_input_schema()),
            },
        ),
        AgentKind::Clarify => (
            "Clarify Agent",
            "Asks one clarifying question, then completes with the request and the answer.",
            Skill {
                id: "clarify",
                name: "Clarify",
                description: "Two turns: asks a question (input-required), then answers with both replies.",
                tags: vec!["test", "multi-turn"],
                examples: vec!["deploy my service"],
                input_modes: vec![TEXT],
                output_modes: vec![TEXT, JSON],
                input_schema: None,
            },
        ),
        AgentKind::Slow => (
            "Slow Agent",
            "Works for a while, reporting progress every second; can be canceled.",
            Skill {
                id: "slow",
                name: "Slow",
                description: "Long-running task with a progress update each second; honours CancelTask.",
                tags: vec!["test", "long-running"],
                examples: vec!["take your time"],
                input_modes: vec![TEXT],
                output_modes: vec![TEXT],
                input_schema: None,
            },
        ),
    };
    let default_input_modes = if kind == AgentKind::Review { vec![TEXT, JSON] } else { vec![TEXT] };
    AgentCard {
        name: name.unwrap_or(default_name).to_owned(),
        description,
        supported_interfaces: [
            Interface { url: format!("{base}{JSONRPC_PATH}"), protocol_binding: "JSONRPC", protocol_version: "1.0" },
            Interface { url: format!("{base}{REST_PREFIX}"), protocol_binding: "HTTP+JSON", protocol_version: "1.0" },
        ],
        provider: Provider { organization: "a2a-gateway example agents", url: format!("{base}/") },
        version: env!("CARGO_PKG_VERSION"),
        capabilities: Capabilities { streaming: true, push_notifications: false },
        default_input_modes,
        default_output_modes: vec![TEXT, JSON],
        skills: vec![skill],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_is_weak_and_matches_lists_and_star() {
        let card = Card::new(AgentKind::Echo, "http://127.0.0.1:1", None);
        let tag = card.etag.to_str().unwrap_or_default().to_owned();
        assert!(tag.starts_with("W/\""), "{tag}");
        let header = |text: &str| HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static(""));
        assert!(card.matches(&header(&tag)));
        assert!(card.matches(&header(strip_weak(&tag))));
        assert!(card.matches(&header(&format!("\"other\", {tag}"))));
        assert!(card.matches(&header("*")));
        assert!(!card.matches(&header("W/\"other\"")));
    }

    #[test]
    fn cards_differ_per_agent_and_base() {
        let a = Card::new(AgentKind::Echo, "http://127.0.0.1:1", None);
        let b = Card::new(AgentKind::Echo, "http://127.0.0.1:2", None);
        let c = Card::new(AgentKind::Slow, "http://127.0.0.1:1", None);
        assert_ne!(a.etag, b.etag);
        assert_ne!(a.etag, c.etag);
    }

    #[test]
    fn interfaces_derive_from_the_base_url() {
        let card = describe(AgentKind::Review, "http://127.0.0.1:4321", Some("Reviewer"));
        let json = serde_json::to_value(&card).unwrap_or_default();
        assert_eq!(json["name"], "Reviewer");
        assert_eq!(json["supportedInterfaces"][0]["url"], "http://127.0.0.1:4321/a2a/jsonrpc");
        assert_eq!(json["supportedInterfaces"][1]["url"], "http://127.0.0.1:4321/a2a/rest");
        assert_eq!(json["skills"][0]["id"], "review-pr");
        assert_eq!(json["skills"][0]["inputSchema"]["required"][0], "diff");
    }
}
