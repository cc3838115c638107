//! Admission probes: before a self-registered agent enters routing, every binding the gateway would
//! call it on (the JSON-RPC and HTTP+JSON endpoints its card offers, in the dialect the gateway
//! would speak) must answer a `GetTask` for an id nobody has with `TaskNotFound`. That proves the
//! endpoint is there, speaks the dialect the card claims, and negotiates its version — without
//! making the agent do any work. An agent that fails stays out; the reason is in the refusal and
//! in `GET /admin/v1/backends` (`refused_agents`).

use std::time::Duration;

use a2a_core::Dialect;
use reqwest::Url;
use serde_json::{Value, json};

/// The most of a probe's answer that is read.
const MAX_ANSWER: usize = 64 * 1024;

/// Probes each endpoint of the agent at `base` whose card is `card`; the bindings that answered,
/// or why one did not.
pub async fn probe(
    client: &reqwest::Client,
    base: &Url,
    card: &Value,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let (dialect, jsonrpc, rest) = crate::registry::endpoints(card, base);
    let unknown = format!("a2a-gateway-admission-{}", uuid::Uuid::new_v4().simple());
    let mut probed = Vec::new();
    if let Some(url) = jsonrpc {
        probe_jsonrpc(client, url, dialect, &unknown, timeout).await.map_err(|e| format!("JSONRPC: {e}"))?;
        probed.push("JSONRPC".to_string());
    }
    if let Some(url) = rest.filter(|_| dialect != Dialect::Early) {
        probe_rest(client, url, dialect, &unknown, timeout).await.map_err(|e| format!("HTTP+JSON: {e}"))?;
        probed.push("HTTP+JSON".to_string());
    }
    Ok(probed)
}

async fn probe_jsonrpc(
    client: &reqwest::Client,
    url: Url,
    dialect: Dialect,
    unknown: &str,
    timeout: Duration,
) -> Result<(), String> {
    let method = if dialect == Dialect::V1 { "GetTask" } else { "tasks/get" };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": unknown}});
    let request = client.post(url).json(&body);
    let (_, answer) = send(request, dialect, timeout).await?;
    let answer: Value = serde_json::from_slice(&answer).map_err(|_| "the answer to GetTask is not JSON".to_string())?;
    match answer.pointer("/error/code").and_then(Value::as_i64) {
        Some(-32001) => Ok(()),
        Some(code) => Err(format!("GetTask of an unknown task answered error {code}, not TaskNotFound (-32001)")),
        None => Err("GetTask of an unknown task did not answer TaskNotFound".into()),
    }
}

async fn probe_rest(
    client: &reqwest::Client,
    base: Url,
    dialect: Dialect,
    unknown: &str,
    timeout: Duration,
) -> Result<(), String> {
    let prefix = if dialect == Dialect::V1 { "" } else { "/v1" };
    let mut url = base;
    url.set_path(&format!("{}{prefix}/tasks/{unknown}", url.path().trim_end_matches('/')));
    let (status, body) = send(client.get(url), dialect, timeout).await?;
    if status != 404 {
        return Err(format!("GetTask of an unknown task answered HTTP {status}, not 404"));
    }
    // A bare 404 is also what a missing route answers: the error must say the task is unknown
    // (1.0: a google.rpc.Status with ErrorInfo reason TASK_NOT_FOUND).
    let text = String::from_utf8_lossy(&body);
    if dialect == Dialect::V1 && !text.contains("TASK_NOT_FOUND") {
        return Err("GetTask of an unknown task answered 404 without TASK_NOT_FOUND: no A2A endpoint there".into());
    }
    Ok(())
}

/// Sends a probe with the dialect's version header; its status and (capped) body.
async fn send(request: reqwest::RequestBuilder, dialect: Dialect, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    let version = if dialect == Dialect::V1 { crate::protocol::PROTOCOL_VERSION } else { "0.3" };
    let mut response = request
        .header("a2a-version", version)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| if e.is_timeout() { "no answer in time".to_string() } else { "not reachable".to_string() })?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| "the answer broke off".to_string())? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err("the answer is too large".into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}
