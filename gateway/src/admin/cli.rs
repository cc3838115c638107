//! The operator's command line over the admin API: `a2a-gateway backends …` and
//! `a2a-gateway tasks …`. Human tables by default, the API's JSON with `--json`; a refusal or an
//! error prints the API's message and makes the command exit non-zero.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// Where the admin API is and how to authenticate to it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The admin listener's base URL, e.g. `http://127.0.0.1:9090`.
    pub admin: String,
    /// Sent as `Authorization: Bearer`; none for a loopback admin listener without admin auth.
    pub token: Option<String>,
    /// Print the API's JSON instead of a table.
    pub json: bool,
}

/// One CLI verb.
#[derive(Debug, Clone)]
pub enum Verb {
    BackendsList,
    BackendsAdd { name: String, url: String },
    BackendsRemove { name: String },
    BackendsDrain { name: String, undo: bool },
    TasksList { all: bool },
}

/// Why a command failed; printed as is.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot reach the admin API at {url}: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("the admin API answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("the admin API answered {status} with a body that is not JSON")]
    NotJson { status: u16 },
}

/// Runs `verb` against the API and returns what to print.
pub async fn run(target: &Target, verb: &Verb) -> Result<String, CliError> {
    let base = format!("{}/admin/v1", target.admin.trim_end_matches('/'));
    let (method, path, body) = match verb {
        Verb::BackendsList => (http::Method::GET, "/backends".to_string(), None),
        Verb::BackendsAdd { name, url } => {
            (http::Method::POST, "/backends".to_string(), Some(json!({"name": name, "url": url})))
        }
        Verb::BackendsRemove { name } => (http::Method::DELETE, format!("/backends/{}", segment(name)), None),
        Verb::BackendsDrain { name, undo } => {
            let method = if *undo { http::Method::DELETE } else { http::Method::POST };
            (method, format!("/backends/{}/drain", segment(name)), None)
        }
        Verb::TasksList { all } => (http::Method::GET, format!("/tasks{}", if *all { "?all=true" } else { "" }), None),
    };
    let value = call(target, method, &format!("{base}{path}"), body).await?;
    if target.json {
        return Ok(serde_json::to_string_pretty(&value).unwrap_or_default());
    }
    Ok(match verb {
        Verb::BackendsList => backends_table(value["backends"].as_array().map(Vec::as_slice).unwrap_or_default()),
        Verb::BackendsAdd { .. } | Verb::BackendsDrain { .. } => backends_table(std::slice::from_ref(&value)),
        Verb::BackendsRemove { name } => format!("removed {name}"),
        Verb::TasksList { .. } => tasks_table(&value),
    })
}

/// A backend name as one path segment (names are config identifiers; escape anything else).
fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

async fn call(target: &Target, method: http::Method, url: &str, body: Option<Value>) -> Result<Value, CliError> {
    crate::install_crypto_provider();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|source| CliError::Unreachable { url: url.to_string(), source })?;
    // Marks the call as deliberate: the admin API changes state only on requests a web page
    // could not send cross-site.
    let mut request = client.request(method, url).header(super::origin::ADMIN_HEADER, "cli");
    if let Some(token) = &target.token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.map_err(|source| CliError::Unreachable { url: url.to_string(), source })?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|source| CliError::Unreachable { url: url.to_string(), source })?;
    let value: Option<Value> = serde_json::from_slice(&bytes).ok();
    if !(200..300).contains(&status) {
        let message = value
            .as_ref()
            .and_then(|v| v["error"]["message"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect());
        return Err(CliError::Refused { status, message });
    }
    value.ok_or(CliError::NotJson { status })
}

/// Left-aligned columns, two spaces apart.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out.trim_end().to_string()
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn backends_table(backends: &[Value]) -> String {
    let rows: Vec<Vec<String>> = backends
        .iter()
        .map(|b| {
            let health = if b["healthy"] == true { "healthy" } else { "unhealthy" };
            let skills: Vec<&str> = b["skills"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            vec![
                text(&b["name"]),
                health.to_string(),
                if b["draining"] == true { "yes" } else { "no" }.to_string(),
                text(&b["dialect"]),
                text(&b["source"]),
                if skills.is_empty() { "-".to_string() } else { skills.join(",") },
                text(&b["url"]),
            ]
        })
        .collect();
    table(&["NAME", "HEALTH", "DRAINING", "DIALECT", "SOURCE", "SKILLS", "URL"], &rows)
}

fn tasks_table(value: &Value) -> String {
    let mut rows = Vec::new();
    for caller in value["callers"].as_array().into_iter().flatten() {
        for task in caller["tasks"].as_array().into_iter().flatten() {
            rows.push(vec![text(&caller["caller"]), text(&task["id"]), text(&task["state"]), text(&task["backend"])]);
        }
    }
    let mut out = table(&["CALLER", "TASK", "STATE", "BACKEND"], &rows);
    if value["truncated"] == true {
        out.push_str("\n(truncated)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns_and_mark_missing_values() {
        let out = backends_table(&[
            json!({"name": "echo", "healthy": true, "draining": false, "dialect": "1.0", "source": "file", "skills": ["echo"], "url": "http://a"}),
            json!({"name": "review-agent", "healthy": false, "draining": true, "dialect": null, "source": "admin", "skills": [], "url": "http://b"}),
        ]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "NAME          HEALTH     DRAINING  DIALECT  SOURCE  SKILLS  URL");
        assert_eq!(lines[1], "echo          healthy    no        1.0      file    echo    http://a");
        assert_eq!(lines[2], "review-agent  unhealthy  yes       -        admin   -       http://b");
    }

    #[test]
    fn names_are_escaped_as_one_path_segment() {
        assert_eq!(segment("team-a_x.1"), "team-a_x.1");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
