//! The bodies of the 0.3 HTTP+JSON binding (ProtoJSON: `content`, `ROLE_*`, `TASK_STATE_*`, parts
//! without `kind`) to and from the 0.3 JSON-RPC objects (`kind`-tagged, kebab-case states).

use a2a_core::Operation;
use serde_json::{Map, Value, json};

use crate::protocol::translate::TranslateError;

use super::fields::{copy, list, object, take};

/// ProtoJSON `ROLE_*` → 0.3 JSON-RPC role (either spelling read).
fn role_to_rpc(value: Value) -> Value {
    match value.as_str() {
        Some("ROLE_USER") => json!("user"),
        Some("ROLE_AGENT") => json!("agent"),
        _ => value,
    }
}

fn role_to_rest(value: Value) -> Value {
    match value.as_str() {
        Some("user") => json!("ROLE_USER"),
        Some("agent") => json!("ROLE_AGENT"),
        _ => value,
    }
}

const STATES: [(&str, &str); 9] = [
    ("TASK_STATE_SUBMITTED", "submitted"),
    ("TASK_STATE_WORKING", "working"),
    ("TASK_STATE_COMPLETED", "completed"),
    ("TASK_STATE_FAILED", "failed"),
    ("TASK_STATE_CANCELLED", "canceled"),
    ("TASK_STATE_INPUT_REQUIRED", "input-required"),
    ("TASK_STATE_REJECTED", "rejected"),
    ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
    ("TASK_STATE_UNSPECIFIED", "unknown"),
];

fn state_to_rpc(value: Value) -> Value {
    match STATES.iter().find(|(rest, _)| value.as_str() == Some(rest)) {
        Some((_, rpc)) => json!(rpc),
        None => value,
    }
}

fn state_to_rest(value: Value) -> Value {
    match STATES.iter().find(|(_, rpc)| value.as_str() == Some(rpc)) {
        Some((rest, _)) => json!(rest),
        None => value,
    }
}

pub fn message_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    copy(&mut from, &mut out, &["messageId", "contextId", "taskId", "metadata", "extensions", "referenceTaskIds"])?;
    if let Some(role) = take(&mut from, "role")? {
        out.insert("role".into(), role_to_rpc(role));
    }
    let parts = take(&mut from, "content")?.or(take(&mut from, "parts")?);
    let parts = list(parts, &format!("{pointer}/content"), part_to_rpc)?;
    out.insert("parts".into(), parts.unwrap_or_else(|| json!([])));
    Ok(Value::Object(out))
}

pub fn message_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    from.remove("kind");
    if let Some(role) = from.remove("role") {
        from.insert("role".into(), role_to_rest(role));
    }
    let parts = from.remove("parts").unwrap_or_else(|| json!([]));
    from.insert("content".into(), each_to_rest(parts, part_to_rest));
    Value::Object(from)
}

fn each_to_rest(value: Value, each: fn(Value) -> Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(each).collect()),
        other => other,
    }
}

fn part_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    if let Some(metadata) = take(&mut from, "metadata")? {
        out.insert("metadata".into(), metadata);
    }
    if let Some(text) = take(&mut from, "text")? {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text);
    } else if let Some(file) = take(&mut from, "file")? {
        let mut file = object(file, &format!("{pointer}/file"))?;
        let mut inner = Map::new();
        if let Some(uri) = take(&mut file, "fileWithUri")? {
            inner.insert("uri".into(), uri);
        }
        if let Some(bytes) = take(&mut file, "fileWithBytes")? {
            inner.insert("bytes".into(), bytes);
        }
        copy(&mut file, &mut inner, &["mimeType", "name"])?;
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(inner));
    } else if let Some(data) = take(&mut from, "data")? {
        let mut data = object(data, &format!("{pointer}/data"))?;
        let inner = take(&mut data, "data")?.unwrap_or_else(|| json!({}));
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), inner);
    } else {
        return Err(TranslateError::invalid(pointer, "a part must be one of 'text', 'file' or 'data'"));
    }
    Ok(Value::Object(out))
}

fn part_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    let mut out = Map::new();
    if let Some(metadata) = from.remove("metadata") {
        out.insert("metadata".into(), metadata);
    }
    match from.remove("kind").as_ref().and_then(Value::as_str) {
        Some("file") => {
            let mut file = match from.remove("file") {
                Some(Value::Object(file)) => file,
                _ => Map::new(),
            };
            let mut inner = Map::new();
            if let Some(uri) = file.remove("uri") {
                inner.insert("fileWithUri".into(), uri);
            }
            if let Some(bytes) = file.remove("bytes") {
                inner.insert("fileWithBytes".into(), bytes);
            }
            inner.extend(file);
            out.insert("file".into(), Value::Object(inner));
        }
        Some("data") => {
            out.insert("data".into(), json!({"data": from.remove("data").unwrap_or_else(|| json!({}))}));
        }
        _ => {
            out.insert("text".into(), from.remove("text").unwrap_or_else(|| json!("")));
        }
    }
    Value::Object(out)
}

fn status_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    if let Some(state) = take(&mut from, "state")? {
        out.insert("state".into(), state_to_rpc(state));
    }
    if let Some(message) = take(&mut from, "message")?.or(take(&mut from, "update")?) {
        out.insert("message".into(), message_to_rpc(message, &format!("{pointer}/message"))?);
    }
    copy(&mut from, &mut out, &["timestamp"])?;
    Ok(Value::Object(out))
}

fn status_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    if let Some(state) = from.remove("state") {
        from.insert("state".into(), state_to_rest(state));
    }
    if let Some(message) = from.remove("message") {
        from.insert("message".into(), message_to_rest(message));
    }
    Value::Object(from)
}

fn artifact_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    copy(&mut from, &mut out, &["artifactId", "name", "description", "metadata", "extensions"])?;
    let parts = list(take(&mut from, "parts")?, &format!("{pointer}/parts"), part_to_rpc)?;
    out.insert("parts".into(), parts.unwrap_or_else(|| json!([])));
    Ok(Value::Object(out))
}

fn artifact_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    if let Some(parts) = from.remove("parts") {
        from.insert("parts".into(), each_to_rest(parts, part_to_rest));
    }
    Value::Object(from)
}

fn task_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("task"));
    copy(&mut from, &mut out, &["id", "contextId", "metadata"])?;
    if let Some(status) = take(&mut from, "status")? {
        out.insert("status".into(), status_to_rpc(status, &format!("{pointer}/status"))?);
    }
    if let Some(artifacts) = list(take(&mut from, "artifacts")?, &format!("{pointer}/artifacts"), artifact_to_rpc)? {
        out.insert("artifacts".into(), artifacts);
    }
    if let Some(history) = list(take(&mut from, "history")?, &format!("{pointer}/history"), message_to_rpc)? {
        out.insert("history".into(), history);
    }
    Ok(Value::Object(out))
}

fn task_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    from.remove("kind");
    if let Some(status) = from.remove("status") {
        from.insert("status".into(), status_to_rest(status));
    }
    if let Some(artifacts) = from.remove("artifacts") {
        from.insert("artifacts".into(), each_to_rest(artifacts, artifact_to_rest));
    }
    if let Some(history) = from.remove("history") {
        from.insert("history".into(), each_to_rest(history, message_to_rest));
    }
    Value::Object(from)
}

fn status_update_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("status-update"));
    copy(&mut from, &mut out, &["taskId", "contextId", "metadata"])?;
    if let Some(status) = take(&mut from, "status")? {
        out.insert("status".into(), status_to_rpc(status, &format!("{pointer}/status"))?);
    }
    out.insert("final".into(), take(&mut from, "final")?.unwrap_or(Value::Bool(false)));
    Ok(Value::Object(out))
}

fn artifact_update_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("artifact-update"));
    copy(&mut from, &mut out, &["taskId", "contextId", "metadata", "append", "lastChunk"])?;
    if let Some(artifact) = take(&mut from, "artifact")? {
        out.insert("artifact".into(), artifact_to_rpc(artifact, &format!("{pointer}/artifact"))?);
    }
    Ok(Value::Object(out))
}

/// A 0.3 JSON-RPC object of any `kind` (task, message, status-update, artifact-update) in REST form,
/// bare (without the `StreamResponse` wrapper).
fn kind_to_rest(value: Value) -> (&'static str, Value) {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("task").to_owned();
    match kind.as_str() {
        "message" => ("message", message_to_rest(value)),
        "status-update" => {
            let Value::Object(mut from) = value else { return ("statusUpdate", Value::Null) };
            from.remove("kind");
            if let Some(status) = from.remove("status") {
                from.insert("status".into(), status_to_rest(status));
            }
            ("statusUpdate", Value::Object(from))
        }
        "artifact-update" => {
            let Value::Object(mut from) = value else { return ("artifactUpdate", Value::Null) };
            from.remove("kind");
            if let Some(artifact) = from.remove("artifact") {
                from.insert("artifact".into(), artifact_to_rest(artifact));
            }
            ("artifactUpdate", Value::Object(from))
        }
        _ => ("task", task_to_rest(value)),
    }
}

/// One object's conversion to the 0.3 JSON-RPC form (`pointer` names it in errors).
type ToRpc = fn(Value, &str) -> Result<Value, TranslateError>;

/// A `SendMessageResponse` / `StreamResponse` (`{task | message | statusUpdate | artifactUpdate}`)
/// as the 0.3 JSON-RPC object of its kind.
pub fn event_to_rpc(value: Value) -> Result<Value, TranslateError> {
    let mut from = object(value, "")?;
    let fields: [(&str, ToRpc); 4] = [
        ("task", task_to_rpc),
        ("message", message_to_rpc),
        ("statusUpdate", status_update_to_rpc),
        ("artifactUpdate", artifact_update_to_rpc),
    ];
    let mut found = None;
    for (field, convert) in fields {
        let value = if field == "message" {
            take(&mut from, "message")?.or(take(&mut from, "msg")?)
        } else {
            take(&mut from, field)?
        };
        if let Some(value) = value {
            if found.is_some() {
                return Err(TranslateError::invalid("", "a response names more than one result"));
            }
            found = Some(convert(value, &format!("/{field}"))?);
        }
    }
    found.ok_or_else(|| {
        TranslateError::invalid("", "a response must name a task, message, statusUpdate or artifactUpdate")
    })
}

/// A 0.3 JSON-RPC result or stream event as the `SendMessageResponse` / `StreamResponse` wrapping it.
pub fn event_to_rest(value: Value) -> Value {
    let (field, value) = kind_to_rest(value);
    json!({ field: value })
}

/// A 0.3 JSON-RPC `TaskPushNotificationConfig` (`{taskId, pushNotificationConfig}`) in REST form.
pub(super) fn config_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    let task = from.remove("taskId").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let push = from.remove("pushNotificationConfig").unwrap_or_else(|| json!({}));
    let id = push.get("id").and_then(Value::as_str).unwrap_or_default();
    json!({"name": format!("tasks/{task}/pushNotificationConfigs/{id}"), "pushNotificationConfig": push})
}

fn config_to_rpc(value: Value, pointer: &str) -> Result<Value, TranslateError> {
    let mut from = object(value, pointer)?;
    let name = take(&mut from, "name")?;
    let name = name.as_ref().and_then(Value::as_str).unwrap_or("");
    let task = name.strip_prefix("tasks/").map(|rest| rest.split('/').next().unwrap_or("")).unwrap_or("");
    let push = take(&mut from, "pushNotificationConfig")?.unwrap_or_else(|| json!({}));
    Ok(json!({"taskId": task, "pushNotificationConfig": push}))
}

pub(super) fn configuration_to_rpc(value: Value) -> Result<Value, TranslateError> {
    let mut from = object(value, "/configuration")?;
    let mut out = Map::new();
    copy(&mut from, &mut out, &["acceptedOutputModes", "historyLength", "blocking"])?;
    if let Some(push) = take(&mut from, "pushNotification")?.or(take(&mut from, "pushNotificationConfig")?) {
        out.insert("pushNotificationConfig".into(), push);
    }
    // ProtoJSON leaves out a false `blocking`: absent, the caller asked not to wait.
    out.entry("blocking").or_insert(Value::Bool(false));
    Ok(Value::Object(out))
}

pub(super) fn configuration_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    if let Some(push) = from.remove("pushNotificationConfig") {
        from.insert("pushNotification".into(), push);
    }
    // JSON-RPC's absent (or null) `blocking` waits; in this binding absent means not to.
    if !from.get("blocking").is_some_and(Value::is_boolean) {
        from.insert("blocking".into(), Value::Bool(true));
    }
    Value::Object(from)
}

/// A 0.3 JSON-RPC result of `operation` (what `result_from_v1` writes) as the REST answer body.
pub fn result_to_rest(operation: Operation, result: Value) -> Value {
    match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => event_to_rest(result),
        Operation::GetTask | Operation::CancelTask => task_to_rest(result),
        Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
            config_to_rest(result)
        }
        Operation::ListTaskPushNotificationConfigs => {
            let configs = match result {
                Value::Array(items) => items.into_iter().map(config_to_rest).collect(),
                _ => Vec::new(),
            };
            json!({"configs": configs})
        }
        Operation::DeleteTaskPushNotificationConfig => json!({}),
        _ => result,
    }
}

/// A REST answer body of `operation` as the 0.3 JSON-RPC result (for `result_to_v1`).
pub fn result_to_rpc(operation: Operation, body: Value) -> Result<Value, TranslateError> {
    match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => event_to_rpc(body),
        Operation::GetTask | Operation::CancelTask => task_to_rpc(body, ""),
        Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
            config_to_rpc(body, "")
        }
        Operation::ListTaskPushNotificationConfigs => {
            let mut from = object(body, "")?;
            let configs = list(take(&mut from, "configs")?, "/configs", config_to_rpc)?;
            Ok(configs.unwrap_or_else(|| json!([])))
        }
        Operation::DeleteTaskPushNotificationConfig => Ok(Value::Null),
        _ => Ok(body),
    }
}
