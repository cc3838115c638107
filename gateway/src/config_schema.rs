//! The configuration file's JSON Schema (`a2a-gateway config schema`, committed as
//! `docs/config.schema.json` for editors).
//!
//! Written by hand rather than derived: the config types span two crates and use serde adapters
//! (`humantime` durations, `${VAR}` expansion, secrets) that a derive would need annotated one by
//! one. It describes every top-level section and the common ones (listeners, health, shutdown,
//! backends) in full; deeper sections are objects whose keys the parser checks strictly
//! (`deny_unknown_fields` everywhere), so `check` runs the schema and the strict parse together.

use serde_json::{Value, json};

const DURATION: &str = "a duration such as 200ms, 5s, 1m";

fn duration(description: &str) -> Value {
    json!({"type": "string", "description": format!("{description} ({DURATION})")})
}

fn section(description: &str) -> Value {
    json!({"type": ["object", "null"], "description": description})
}

/// The schema document.
pub fn schema() -> Value {
    let listeners = json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Where the gateway listens.",
        "properties": {
            "public": {"type": "string", "description": "The public A2A listener, host:port."},
            "admin": {"type": ["string", "null"], "description": "The admin listener (/healthz, /readyz, /metrics, /admin/), host:port; null turns it off."},
            "protection": section("Listener protection: per-address connection and request limits, header and body timeouts."),
            "trusted_proxies": {"type": "array", "items": {"type": "string"}, "description": "Proxies (addresses or CIDRs) whose X-Forwarded-For is believed."},
            "grpc": {"type": "boolean", "description": "Serve the A2A gRPC binding on the public listener and list it on the cards (default true)."}
        }
    });
    let health = json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Backend health checks (card fetches).",
        "properties": {
            "interval": duration("Time between checks"),
            "timeout": duration("One check's timeout"),
            "unhealthy_after": {"type": "integer", "minimum": 1, "description": "Consecutive failures before a backend is unhealthy."},
            "ejection_time": duration("How long a backend ejected by failed requests stays out before real requests probe it (doubling per failed probe, at most 5m); default 10s")
        }
    });
    let backend = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["name", "url"],
        "properties": {
            "name": {"type": "string", "description": "The backend's name (per-agent endpoint /agents/<name>/)."},
            "url": {"type": "string", "description": "The agent's base URL."},
            "card_path": {"type": "string", "description": "Where its card is, relative to url."},
            "health_interval": duration("This backend's health-check interval"),
            "auth": section("How the gateway authenticates to this backend."),
            "forward_caller_token": {"type": "boolean", "description": "Forward the caller's bearer token."},
            "dialect": {"enum": ["1.0", "0.3", "early", null], "description": "Force a dialect instead of reading it from the card."}
        }
    });
    let shutdown = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "unready_delay": duration("How long the gateway keeps accepting after SIGTERM while /readyz fails"),
            "drain_timeout": duration("How long open calls may finish on SIGTERM")
        }
    });
    let deadlines = json!({
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": format!("Per-skill task deadlines, skill → {DURATION}.")
    });
    let redis = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "description": "redis://host:port/db, or rediss:// for TLS."},
            "username": {"type": ["string", "null"], "description": "ACL user."},
            "password": {"type": ["string", "null"], "description": "Password (use ${VAR})."},
            "tls": {"type": "boolean", "description": "Require TLS (a redis:// URL is upgraded)."},
            "key_prefix": {"type": "string", "description": "Prepended to every key; hash-tag it ({a2a}:) for Redis Cluster."},
            "timeout": duration("The longest any Redis call may take"),
            "on_unavailable": {"enum": ["fail_closed", "local"], "description": "While Redis is unreachable: refuse with a retryable error, or use this replica's state."},
            "page_token_secret": {"type": ["string", "null"], "description": "The secret of ListTasks page tokens shared by every replica."}
        }
    });
    let state = json!({
        "description": "Where state shared by replicas is kept: memory (default, one replica) or redis.",
        "oneOf": [
            {"const": "memory"},
            {"type": "object", "additionalProperties": false, "required": ["redis"], "properties": {"redis": redis}}
        ]
    });
    let stream_limits = |extra: Option<Value>| {
        let mut props = json!({
            "idle_timeout": duration("A stream with no event bytes this long is ended (comments do not count); default 5m"),
            "max_lifetime": duration("A stream open this long is ended; default 1h"),
            "max_event_bytes": {"type": "integer", "minimum": 1024, "description": "Largest single event relayed; default 16 MiB"},
        });
        if let Some(extra) = extra {
            props["skills"] = extra;
        }
        json!({"type": "object", "additionalProperties": false, "properties": props})
    };
    let streams = stream_limits(Some(json!({
        "type": "object",
        "description": "Per-skill overrides, skill → limits.",
        "additionalProperties": stream_limits(None),
    })));
    let mut properties = serde_json::Map::new();
    let mut add = |key: &str, value: Value| {
        properties.insert(key.to_string(), value);
    };
    add(
        "public_url",
        json!({"type": ["string", "null"], "description": "The URL callers use to reach the gateway; its cards point there."}),
    );
    add("listeners", listeners);
    add("health", health);
    add("routing", section("How calls pick a skill and a backend (default_skill, resolve, …)."));
    add("card", section("The gateway's own agent card (name, description, …)."));
    add("limits", section("Size and time limits on requests."));
    add("streams", streams);
    add("shutdown", shutdown);
    add(
        "auth",
        section("How callers authenticate: bearer JWTs, API keys, token introspection. Absent: callers are anonymous."),
    );
    add("permissions", section("Which callers may use which skills."));
    add("gateway_identity", section("The key the gateway signs the tokens it mints for backends with."));
    add("deadlines", deadlines);
    add("rate_limit", section("Per-caller, per-skill and global request rate quotas."));
    add("concurrency", section("Per-caller limits on live tasks."));
    add("validation", section("Input validation against skills' schemas, sizes, part kinds and ids."));
    add("audit", section("The tamper-evident audit log."));
    add("telemetry", section("Trace export (OTLP/HTTP)."));
    add("state", state);
    add("admin", section("The admin API: operators' credentials and agent self-registration."));
    add("backends", json!({"type": "array", "description": "The agents behind the gateway.", "items": backend}));
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "a2a-gateway configuration",
        "description": "The gateway's YAML configuration file. String values may reference ${VAR} environment variables.",
        "type": "object",
        "additionalProperties": false,
        "required": ["backends"],
        "properties": properties
    })
}

/// The schema as written to `docs/config.schema.json`.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// Checks a parsed configuration document against the schema; the messages name the offending
/// path.
pub fn validate(document: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(&schema()).map_err(|e| vec![format!("the schema: {e}")])?;
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{}: {}", e.instance_path(), e)).collect();
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let committed = include_str!("../../docs/config.schema.json");
        assert_eq!(committed, schema_text(), "run `a2a-gateway config schema > docs/config.schema.json`");
    }

    #[test]
    fn the_schema_is_valid_and_accepts_the_shipped_configs() {
        jsonschema::meta::validate(&schema()).expect("a valid JSON Schema");
        for file in [
            "../deploy/gateway.example.yaml",
            "../deploy/compose-replicas-gateway.yaml",
            "../tests/bench/configs/full-stack.yaml",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let document: Value = yaml_serde::from_str(&text).unwrap();
            assert_eq!(validate(&document), Ok(()), "{file}");
        }
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_named() {
        let document = json!({"backends": [{"name": "a", "url": "http://x", "colour": 1}], "listener": {}});
        let errors = validate(&document).unwrap_err();
        assert!(errors.iter().any(|e| e.contains("listener")), "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("/backends/0") && e.contains("colour")), "{errors:?}");
    }
}
