//! A2A 0.3 over HTTP+JSON (the SDK's REST transport): routes under `/v1/` and bodies in the
//! ProtoJSON of the 0.3 `a2a.proto` (`content` for a message's parts, `ROLE_USER`, `TASK_STATE_*`,
//! parts as `{text}` / `{file: {fileWithUri | fileWithBytes}}` / `{data: {data}}`, push configs named
//! `tasks/{id}/pushNotificationConfigs/{configId}`); errors are an HTTP status and `{"message"}`.
//!
//! Every body is translated to and from the 0.3 JSON-RPC form (`kind`-tagged, kebab-case states), so
//! the one 0.3 ↔ 1.0 translation of this module's siblings serves both 0.3 bindings. Pure JSON values
//! in, JSON values out; keys this binding does not define are left behind. A field may be spelled
//! `taskId` or `task_id` (ProtoJSON parsers read both); both at once is refused.

use a2a_policies::Operation;
use http::Method;
use serde_json::{Map, Value, json};

use crate::protocol::translate::TranslateError;

/// One 0.3 HTTP+JSON operation, by method and path below `/v1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Send,
    Stream,
    Get(String),
    Cancel(String),
    Subscribe(String),
    SetConfig(String),
    GetConfig(String, String),
    ListConfigs(String),
    DeleteConfig(String, String),
}

impl Route {
    /// The route of `method` and `path` (below `/v1`, ids percent-decoded by `decode`); `None` for
    /// paths this binding does not define.
    pub fn of(method: &Method, path: &str, decode: impl Fn(&str) -> Option<String>) -> Option<Route> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let id = |s: &str| decode(s).filter(|s| !s.is_empty());
        let is = |m: Method| *method == m;
        Some(match segments.as_slice() {
            ["message:send"] if is(Method::POST) => Route::Send,
            ["message:stream"] if is(Method::POST) => Route::Stream,
            ["tasks", task] => {
                if let Some(task) = task.strip_suffix(":cancel") {
                    if !is(Method::POST) {
                        return None;
                    }
                    Route::Cancel(id(task)?)
                } else if let Some(task) = task.strip_suffix(":subscribe") {
                    if !is(Method::GET) && !is(Method::POST) {
                        return None;
                    }
                    Route::Subscribe(id(task)?)
                } else if is(Method::GET) && !task.contains(':') {
                    Route::Get(id(task)?)
                } else {
                    return None;
                }
            }
            ["tasks", task, "pushNotificationConfigs"] if is(Method::POST) => Route::SetConfig(id(task)?),
            ["tasks", task, "pushNotificationConfigs"] if is(Method::GET) => Route::ListConfigs(id(task)?),
            ["tasks", task, "pushNotificationConfigs", config] if is(Method::GET) => {
                Route::GetConfig(id(task)?, id(config)?)
            }
            ["tasks", task, "pushNotificationConfigs", config] if is(Method::DELETE) => {
                Route::DeleteConfig(id(task)?, id(config)?)
            }
            _ => return None,
        })
    }

    pub fn operation(&self) -> Operation {
        match self {
            Route::Send => Operation::SendMessage,
            Route::Stream => Operation::SendStreamingMessage,
            Route::Get(_) => Operation::GetTask,
            Route::Cancel(_) => Operation::CancelTask,
            Route::Subscribe(_) => Operation::SubscribeToTask,
            Route::SetConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Route::GetConfig(..) => Operation::GetTaskPushNotificationConfig,
            Route::ListConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Route::DeleteConfig(..) => Operation::DeleteTaskPushNotificationConfig,
        }
    }
}

/// A caller's 0.3 HTTP+JSON request as the 0.3 JSON-RPC params of the same method. `body` is the
/// parsed body (an empty object when there was none), `history_length` the query's. The ids the path
/// names are the request's: a body naming another task or config is refused, not merged.
pub fn params_of(
    route: &Route,
    mut body: Map<String, Value>,
    history_length: Option<i64>,
) -> Result<Value, TranslateError> {
    let params = match route {
        Route::Send | Route::Stream => {
            let message = take(&mut body, "message")?.or(take(&mut body, "request")?);
            let message = message.ok_or_else(|| TranslateError::invalid("/message", "'message' is required"))?;
            let mut params = Map::new();
            params.insert("message".into(), message_to_rpc(message, "/message")?);
            if let Some(configuration) = take(&mut body, "configuration")? {
                params.insert("configuration".into(), configuration_to_rpc(configuration)?);
            }
            if let Some(metadata) = take(&mut body, "metadata")? {
                params.insert("metadata".into(), metadata);
            }
            Value::Object(params)
        }
        Route::Get(id) => {
            check_name(&mut body, &format!("tasks/{id}"))?;
            let history = match (take(&mut body, "historyLength")?, history_length) {
                (Some(_), Some(_)) => {
                    return Err(TranslateError::invalid("/historyLength", "'historyLength' is given more than once"));
                }
                (Some(n), None) => Some(n),
                (None, n) => n.map(Value::from),
            };
            let mut params = json!({"id": id});
            if let Some(n) = history {
                params["historyLength"] = n;
            }
            params
        }
        Route::Cancel(id) | Route::Subscribe(id) | Route::ListConfigs(id) => {
            check_name(&mut body, &format!("tasks/{id}"))?;
            check_name_as(&mut body, "parent", &format!("tasks/{id}"))?;
            json!({"id": id})
        }
        Route::GetConfig(id, config) | Route::DeleteConfig(id, config) => {
            check_name(&mut body, &format!("tasks/{id}/pushNotificationConfigs/{config}"))?;
            json!({"id": id, "pushNotificationConfigId": config})
        }
        Route::SetConfig(id) => set_config_params(id, body)?,
    };
    Ok(params)
}

/// `POST /v1/tasks/{id}/pushNotificationConfigs`: the SDK sends `{parent, configId, config: {name,
/// pushNotificationConfig}}`; a bare `{name, pushNotificationConfig}` is read too.
fn set_config_params(task: &str, mut body: Map<String, Value>) -> Result<Value, TranslateError> {
    check_name_as(&mut body, "parent", &format!("tasks/{task}"))?;
    let config_id = take(&mut body, "configId")?;
    let mut config = match take(&mut body, "config")? {
        Some(Value::Object(config)) => config,
        Some(_) => return Err(TranslateError::invalid("/config", "'config' must be an object")),
        None => body,
    };
    let name = take(&mut config, "name")?;
    let mut push = match take(&mut config, "pushNotificationConfig")? {
        Some(Value::Object(push)) => push,
        _ => {
            return Err(TranslateError::invalid(
                "/config/pushNotificationConfig",
                "'pushNotificationConfig' is required",
            ));
        }
    };
    // Every place that names the config's id must name the same one.
    let mut named: Option<String> = None;
    let mut agree = |value: Option<&str>, pointer: &str| -> Result<(), TranslateError> {
        match (value.filter(|v| !v.is_empty()), &named) {
            (None, _) => Ok(()),
            (Some(v), Some(other)) if v != other => {
                Err(TranslateError::invalid(pointer, "the request names two different push-config ids"))
            }
            (Some(v), _) => {
                named = Some(v.to_owned());
                Ok(())
            }
        }
    };
    agree(config_id.as_ref().and_then(Value::as_str), "/configId")?;
    agree(push.get("id").and_then(Value::as_str), "/config/pushNotificationConfig/id")?;
    if let Some(name) = name {
        let name = name.as_str().ok_or_else(|| TranslateError::invalid("/config/name", "'name' must be a string"))?;
        let prefix = format!("tasks/{task}/pushNotificationConfigs/");
        match name.strip_prefix(&prefix) {
            Some(config) => agree(Some(config), "/config/name")?,
            None if name.is_empty() || name == format!("tasks/{task}") => {}
            None => return Err(TranslateError::invalid("/config/name", "'name' names another task than the path")),
        }
    }
    if let Some(id) = named {
        push.insert("id".into(), Value::String(id));
    }
    Ok(json!({"taskId": task, "pushNotificationConfig": Value::Object(push)}))
}

/// Refuses a body whose `name` (`tasks/{id}`…) names another resource than the path.
fn check_name(body: &mut Map<String, Value>, expected: &str) -> Result<(), TranslateError> {
    check_name_as(body, "name", expected)
}

fn check_name_as(body: &mut Map<String, Value>, field: &str, expected: &str) -> Result<(), TranslateError> {
    match take(body, field)? {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s.is_empty() || s == expected => Ok(()),
        Some(_) => {
            Err(TranslateError::invalid(format!("/{field}"), format!("the body's '{field}' differs from the path")))
        }
    }
}

/// Removes a field by its camelCase name or its snake_case one; both at once is ambiguous.
fn take(map: &mut Map<String, Value>, camel: &str) -> Result<Option<Value>, TranslateError> {
    let snake = snake_case(camel);
    let a = map.remove(camel);
    let b = if snake != camel { map.remove(&snake) } else { None };
    match (a, b) {
        (Some(_), Some(_)) => Err(TranslateError::invalid(
            format!("/{camel}"),
            format!("ambiguous request: '{camel}' is given more than once"),
        )),
        (Some(v), None) | (None, Some(v)) => Ok(Some(v).filter(|v| !v.is_null())),
        (None, None) => Ok(None),
    }
}

fn snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn object(value: Value, pointer: &str) -> Result<Map<String, Value>, TranslateError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(TranslateError::invalid(pointer, "expected a JSON object")),
    }
}

/// Copies the fields named (camelCase, or their snake_case spelling) from `from` to `to` unchanged.
fn copy(from: &mut Map<String, Value>, to: &mut Map<String, Value>, fields: &[&str]) -> Result<(), TranslateError> {
    for field in fields {
        if let Some(value) = take(from, field)? {
            to.insert((*field).to_owned(), value);
        }
    }
    Ok(())
}

fn list(
    value: Option<Value>,
    pointer: &str,
    each: impl Fn(Value, &str) -> Result<Value, TranslateError>,
) -> Result<Option<Value>, TranslateError> {
    match value {
        None => Ok(None),
        Some(Value::Array(items)) => {
            let items: Result<Vec<Value>, _> =
                items.into_iter().enumerate().map(|(i, item)| each(item, &format!("{pointer}/{i}"))).collect();
            Ok(Some(Value::Array(items?)))
        }
        Some(_) => Err(TranslateError::invalid(pointer, "expected a JSON array")),
    }
}

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
fn config_to_rest(value: Value) -> Value {
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

fn configuration_to_rpc(value: Value) -> Result<Value, TranslateError> {
    let mut from = object(value, "/configuration")?;
    let mut out = Map::new();
    copy(&mut from, &mut out, &["acceptedOutputModes", "historyLength", "blocking"])?;
    if let Some(push) = take(&mut from, "pushNotification")?.or(take(&mut from, "pushNotificationConfig")?) {
        out.insert("pushNotificationConfig".into(), push);
    }
    Ok(Value::Object(out))
}

fn configuration_to_rest(value: Value) -> Value {
    let Value::Object(mut from) = value else { return value };
    if let Some(push) = from.remove("pushNotificationConfig") {
        from.insert("pushNotification".into(), push);
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

/// A 0.3 request (method name and JSON-RPC params, as `request_from_v1` writes them) as the HTTP
/// request to a 0.3 HTTP+JSON agent: method, path below the agent's base (with `/v1`), body.
pub fn request_to_rest(operation: Operation, params: Value) -> Result<(Method, String, Option<Value>), TranslateError> {
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or("").to_owned();
    let task = segment(&text(&params, "id"));
    Ok(match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => {
            let Value::Object(mut from) = params else {
                return Err(TranslateError::invalid("", "expected a JSON object"));
            };
            let mut body = Map::new();
            if let Some(message) = from.remove("message") {
                body.insert("message".into(), message_to_rest(message));
            }
            if let Some(configuration) = from.remove("configuration") {
                body.insert("configuration".into(), configuration_to_rest(configuration));
            }
            if let Some(metadata) = from.remove("metadata") {
                body.insert("metadata".into(), metadata);
            }
            let path = if operation == Operation::SendMessage { "/v1/message:send" } else { "/v1/message:stream" };
            (Method::POST, path.to_owned(), Some(Value::Object(body)))
        }
        Operation::GetTask => {
            let query = params.get("historyLength").and_then(Value::as_i64).map(|n| format!("?historyLength={n}"));
            (Method::GET, format!("/v1/tasks/{task}{}", query.unwrap_or_default()), None)
        }
        Operation::CancelTask => {
            let name = format!("tasks/{}", text(&params, "id"));
            (Method::POST, format!("/v1/tasks/{task}:cancel"), Some(json!({ "name": name })))
        }
        Operation::SubscribeToTask => (Method::GET, format!("/v1/tasks/{task}:subscribe"), None),
        Operation::CreateTaskPushNotificationConfig => {
            let task_id = text(&params, "taskId");
            let config = config_to_rest(params);
            let config_id = config.pointer("/pushNotificationConfig/id").cloned().unwrap_or(json!(""));
            let body = json!({"parent": format!("tasks/{task_id}"), "configId": config_id, "config": config});
            (Method::POST, format!("/v1/tasks/{}/pushNotificationConfigs", segment(&task_id)), Some(body))
        }
        Operation::GetTaskPushNotificationConfig | Operation::DeleteTaskPushNotificationConfig => {
            let config = segment(&text(&params, "pushNotificationConfigId"));
            let method =
                if operation == Operation::GetTaskPushNotificationConfig { Method::GET } else { Method::DELETE };
            (method, format!("/v1/tasks/{task}/pushNotificationConfigs/{config}"), None)
        }
        Operation::ListTaskPushNotificationConfigs => {
            (Method::GET, format!("/v1/tasks/{task}/pushNotificationConfigs"), None)
        }
        Operation::ListTasks | Operation::GetExtendedAgentCard => {
            return Err(TranslateError::Unsupported {
                operation: operation.method_name(),
                dialect: "A2A 0.3 HTTP+JSON",
            });
        }
    })
}

/// An id as one path segment: everything but unreserved characters percent-encoded.
fn segment(id: &str) -> String {
    crate::protocol::agent_side::segment(id)
}

/// The HTTP status of a 0.3 JSON-RPC error code in this binding (the SDK's table).
pub fn status_of(code: i64) -> u16 {
    match code {
        -32700 | -32600 => 400,
        -32601 | -32001 => 404,
        -32602 => 422,
        -32002 => 409,
        -32003 | -32004 => 501,
        -32005 => 415,
        -32006 => 502,
        _ => 500,
    }
}

/// The 0.3 JSON-RPC error code an HTTP status of this binding stands for (for an operation: a 404
/// of a task operation is an unknown task).
pub fn code_of(status: u16, operation: Operation) -> i64 {
    match status {
        400 => -32600,
        404 if operation == Operation::SendMessage || operation == Operation::SendStreamingMessage => -32601,
        404 => -32001,
        409 => -32002,
        422 => -32602,
        415 => -32005,
        501 if matches!(
            operation,
            Operation::CreateTaskPushNotificationConfig
                | Operation::GetTaskPushNotificationConfig
                | Operation::ListTaskPushNotificationConfigs
                | Operation::DeleteTaskPushNotificationConfig
        ) =>
        {
            -32003
        }
        501 => -32004,
        502 => -32006,
        _ => -32603,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn routes_follow_the_sdk() {
        let get = Route::of(&Method::GET, "/tasks/t1", decode);
        assert_eq!(get, Some(Route::Get("t1".into())));
        assert_eq!(Route::of(&Method::POST, "/tasks/t1:cancel", decode), Some(Route::Cancel("t1".into())));
        assert_eq!(Route::of(&Method::GET, "/tasks/t1:subscribe", decode), Some(Route::Subscribe("t1".into())));
        assert_eq!(
            Route::of(&Method::DELETE, "/tasks/t1/pushNotificationConfigs/c", decode),
            Some(Route::DeleteConfig("t1".into(), "c".into()))
        );
        assert_eq!(Route::of(&Method::GET, "/tasks/t1:cancel", decode), None);
        assert_eq!(Route::of(&Method::GET, "/tasks", decode), None);
        assert_eq!(Route::of(&Method::GET, "/tasks/", decode), None);
    }

    #[test]
    fn a_send_body_becomes_0_3_json_rpc_params_and_back() {
        let body = json!({"message": {"messageId": "m", "taskId": "t", "role": "ROLE_USER", "content": [
            {"text": "hi"}, {"file": {"fileWithUri": "http://f", "mimeType": "text/plain"}}, {"data": {"data": {"a": 1}}}]},
            "configuration": {"blocking": true, "pushNotification": {"url": "http://h"}}, "metadata": {"skillId": "s"}});
        let Value::Object(map) = body.clone() else { unreachable!() };
        let params = params_of(&Route::Send, map, None).expect("params");
        assert_eq!(params["message"]["kind"], "message");
        assert_eq!(params["message"]["role"], "user");
        assert_eq!(
            params["message"]["parts"][1],
            json!({"kind": "file", "file": {"uri": "http://f", "mimeType": "text/plain"}})
        );
        assert_eq!(params["message"]["parts"][2], json!({"kind": "data", "data": {"a": 1}}));
        assert_eq!(params["configuration"]["pushNotificationConfig"]["url"], "http://h");
        let (method, path, rest) = request_to_rest(Operation::SendMessage, params).expect("rest");
        assert_eq!((method, path.as_str()), (Method::POST, "/v1/message:send"));
        assert_eq!(rest, Some(body));
    }

    #[test]
    fn ids_in_the_body_must_match_the_path_and_both_spellings_at_once_are_refused() {
        let body = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let cancel = Route::Cancel("t1".into());
        assert!(params_of(&cancel, body(json!({"name": "tasks/t1"})), None).is_ok());
        assert!(params_of(&cancel, body(json!({"name": "tasks/t2"})), None).is_err());
        let set = Route::SetConfig("t1".into());
        let ok = params_of(&set, body(json!({"parent": "tasks/t1", "configId": "c", "config": {"name": "tasks/t1/pushNotificationConfigs/c", "pushNotificationConfig": {"url": "http://h"}}})), None).expect("set");
        assert_eq!(ok, json!({"taskId": "t1", "pushNotificationConfig": {"id": "c", "url": "http://h"}}));
        assert!(
            params_of(
                &set,
                body(json!({"parent": "tasks/t2", "config": {"pushNotificationConfig": {"url": "u"}}})),
                None
            )
            .is_err()
        );
        assert!(params_of(&set, body(json!({"config": {"name": "tasks/t2/pushNotificationConfigs/c", "pushNotificationConfig": {"url": "u"}}})), None).is_err());
        assert!(
            params_of(
                &set,
                body(json!({"configId": "a", "config": {"pushNotificationConfig": {"id": "b", "url": "u"}}})),
                None
            )
            .is_err()
        );
        let twice =
            json!({"message": {"messageId": "m", "taskId": "a", "task_id": "b", "role": "ROLE_USER", "content": []}});
        assert!(params_of(&Route::Send, body(twice), None).is_err());
    }

    #[test]
    fn answers_travel_both_ways() {
        let rest = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_CANCELLED",
            "message": {"messageId": "m", "role": "ROLE_AGENT", "content": [{"text": "bye"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}]}});
        let rpc = result_to_rpc(Operation::SendMessage, rest.clone()).expect("rpc");
        assert_eq!((&rpc["kind"], &rpc["status"]["state"]), (&json!("task"), &json!("canceled")));
        assert_eq!(rpc["status"]["message"]["parts"][0], json!({"kind": "text", "text": "bye"}));
        assert_eq!(result_to_rest(Operation::SendMessage, rpc), rest);
        let update =
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}});
        let rpc = event_to_rpc(update).expect("event");
        assert_eq!((&rpc["kind"], &rpc["final"]), (&json!("status-update"), &json!(false)));
        assert_eq!(event_to_rest(rpc)["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
        let config = json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "http://h"}});
        let rest = result_to_rest(Operation::GetTaskPushNotificationConfig, config.clone());
        assert_eq!(rest["name"], "tasks/t/pushNotificationConfigs/c");
        assert_eq!(result_to_rpc(Operation::GetTaskPushNotificationConfig, rest).expect("rpc"), config);
        assert_eq!((status_of(-32001), code_of(404, Operation::GetTask)), (404, -32001));
    }
}
