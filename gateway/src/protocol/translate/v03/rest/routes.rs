//! The 0.3 HTTP+JSON routes: which operation a method and path name, a caller's request as the
//! 0.3 JSON-RPC params of that operation, and a 0.3 request as the HTTP request to a REST agent.

use a2a_core::Operation;
use http::Method;
use serde_json::{Map, Value, json};

use crate::protocol::translate::TranslateError;

use super::bodies::{config_to_rest, configuration_to_rest, configuration_to_rpc, message_to_rest, message_to_rpc};
use super::fields::take;

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
    /// `GET /v1/card`: the caller's authenticated extended card.
    Card,
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
            ["card"] if is(Method::GET) => Route::Card,
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
            Route::Card => Operation::GetExtendedAgentCard,
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
            // A send's absent `blocking` is proto3's false here (the SDK's 0.3 server answers at
            // once), and true in JSON-RPC: it is always written out.
            let configuration = take(&mut body, "configuration")?;
            let configuration = match route {
                Route::Send => Some(configuration.unwrap_or_else(|| json!({}))),
                _ => configuration,
            };
            if let Some(configuration) = configuration {
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
        Route::Card => json!({}),
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
            // A send's absent `blocking` means true in JSON-RPC, false here: it is written out.
            let configuration = from.remove("configuration");
            let configuration = match operation {
                Operation::SendMessage => Some(configuration.unwrap_or_else(|| json!({}))),
                _ => configuration,
            };
            if let Some(configuration) = configuration {
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
