//! The HTTP+JSON binding: an operation read from the method and path, its ids from the path and its
//! fields from the query, merged into the body (a field given twice is refused).

use super::*;

/// A field of a request that an HTTP+JSON path or query may carry, by both its names.
pub(super) struct Field {
    json: &'static str,
    proto: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
}

const fn field(json: &'static str, proto: &'static str, kind: Kind) -> Field {
    Field { json, proto, kind }
}

pub(super) const GET_TASK_QUERY: &[Field] = &[field("historyLength", "history_length", Kind::Int)];
const LIST_TASKS_QUERY: &[Field] = &[
    field("contextId", "context_id", Kind::Text),
    field("status", "status", Kind::Text),
    field("pageSize", "page_size", Kind::Int),
    field("pageToken", "page_token", Kind::Text),
    field("historyLength", "history_length", Kind::Int),
    field("statusTimestampAfter", "status_timestamp_after", Kind::Text),
    field("includeArtifacts", "include_artifacts", Kind::Bool),
];
const LIST_CONFIGS_QUERY: &[Field] =
    &[field("pageSize", "page_size", Kind::Int), field("pageToken", "page_token", Kind::Text)];

pub(super) fn decode_rest(
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(A2aCall, Request), A2aError> {
    let (operation, task_id, config_id) = rest_operation(method, path)?;
    check_version(headers)?;
    let has_body = !body.iter().all(u8::is_ascii_whitespace);
    let mut object = if has_body {
        match strict::from_slice::<Value>(body).map_err(json_refusal)? {
            Value::Object(object) => object,
            _ => return Err(A2aError::invalid_params("the request body must be a JSON object")),
        }
    } else {
        Map::new()
    };
    let query_fields = match operation {
        Operation::GetTask => GET_TASK_QUERY,
        Operation::ListTasks => LIST_TASKS_QUERY,
        Operation::ListTaskPushNotificationConfigs => LIST_CONFIGS_QUERY,
        _ => &[],
    };
    for (name, value) in read_query(query, query_fields)? {
        put(&mut object, name, value)?;
    }
    // The ids in the path are the request's: a body that names others is refused, not merged.
    let task_field = match operation {
        Operation::GetTask | Operation::CancelTask | Operation::SubscribeToTask => ("id", "id"),
        _ => ("taskId", "task_id"),
    };
    if let Some(task_id) = task_id {
        put_path(&mut object, task_field, task_id)?;
    }
    if let Some(config_id) = config_id {
        put_path(&mut object, ("id", "id"), config_id)?;
    }
    a2a_model::passes::write();
    let params = serde_json::to_string(&object).map_err(|_| A2aError::Internal)?;
    let params = RawValue::from_string(params).map_err(|_| A2aError::Internal)?;
    let request = Request::parse(operation, Some(&params)).map_err(|e| TranslateError::from(e).into_request_error())?;
    Ok((A2aCall::new(Binding::Rest, operation), request))
}

/// Sets a field from the query; the same field twice (in either spelling) is ambiguous.
fn put(object: &mut Map<String, Value>, field: &Field, value: Value) -> Result<(), A2aError> {
    if object.contains_key(field.json) || object.contains_key(field.proto) {
        return Err(A2aError::invalid_params(format!("ambiguous request: '{}' is given more than once", field.json)));
    }
    object.insert(field.json.to_owned(), value);
    Ok(())
}

/// Sets an id the path names; the body may repeat it only with the same value.
fn put_path(object: &mut Map<String, Value>, (json, proto): (&str, &str), value: String) -> Result<(), A2aError> {
    for name in [json, proto] {
        match object.remove(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == value || s.is_empty() => {}
            Some(_) => {
                return Err(A2aError::invalid_params(format!("the body's '{json}' differs from the one in the path")));
            }
        }
    }
    object.insert(json.to_owned(), Value::String(value));
    Ok(())
}

/// The query's known fields (by either name), typed; unknown parameters are left out.
pub(super) fn read_query<'f>(query: Option<&str>, fields: &'f [Field]) -> Result<Vec<(&'f Field, Value)>, A2aError> {
    let mut out: Vec<(&Field, Value)> = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || A2aError::invalid_params(format!("the query parameter '{}' is malformed", clip(key)));
        let key = form_decode(key).ok_or_else(bad)?;
        let Some(field) = fields.iter().find(|f| f.json == key || f.proto == key) else { continue };
        if out.iter().any(|(f, _)| f.json == field.json) {
            return Err(A2aError::invalid_params(format!(
                "ambiguous request: '{}' is given more than once",
                field.json
            )));
        }
        let value = form_decode(value).ok_or_else(bad)?;
        let typed = match field.kind {
            Kind::Text => Value::String(value),
            Kind::Int => Value::from(value.parse::<i32>().map_err(|_| {
                A2aError::invalid_params(format!("the query parameter '{}' must be a whole number", field.json))
            })?),
            Kind::Bool => Value::Bool(match value.as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(A2aError::invalid_params(format!("'{}' must be true or false", field.json))),
            }),
        };
        out.push((field, typed));
    }
    Ok(out)
}

/// A query component as form decoding reads it (`+` is a space), or `None` when malformed.
fn form_decode(component: &str) -> Option<String> {
    percent_decode(&component.replace('+', " "))
}

pub(super) fn clip(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Maps an HTTP+JSON method and path (below the binding's base) to an operation, its task id and
/// its push-config id.
fn rest_operation(method: &Method, path: &str) -> Result<(Operation, Option<String>, Option<String>), A2aError> {
    let not_found = || A2aError::MethodNotFound(format!("no A2A operation at {method} {}", clip(path)));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let is = |m: Method| *method == m;
    let (operation, task, config) = match segments.as_slice() {
        ["message:send"] if is(Method::POST) => (Operation::SendMessage, None, None),
        ["message:stream"] if is(Method::POST) => (Operation::SendStreamingMessage, None, None),
        ["tasks"] if is(Method::GET) => (Operation::ListTasks, None, None),
        ["extendedAgentCard"] if is(Method::GET) => (Operation::GetExtendedAgentCard, None, None),
        ["tasks", task] => {
            if let Some(id) = task.strip_suffix(":cancel") {
                if !is(Method::POST) {
                    return Err(not_found());
                }
                (Operation::CancelTask, Some(id), None)
            } else if let Some(id) = task.strip_suffix(":subscribe") {
                if !is(Method::GET) && !is(Method::POST) {
                    return Err(not_found());
                }
                (Operation::SubscribeToTask, Some(id), None)
            } else if is(Method::GET) && !task.contains(':') {
                (Operation::GetTask, Some(*task), None)
            } else {
                return Err(not_found());
            }
        }
        ["tasks", task, "pushNotificationConfigs"] if is(Method::POST) => {
            (Operation::CreateTaskPushNotificationConfig, Some(*task), None)
        }
        ["tasks", task, "pushNotificationConfigs"] if is(Method::GET) => {
            (Operation::ListTaskPushNotificationConfigs, Some(*task), None)
        }
        ["tasks", task, "pushNotificationConfigs", config] if !config.is_empty() && is(Method::GET) => {
            (Operation::GetTaskPushNotificationConfig, Some(*task), Some(*config))
        }
        ["tasks", task, "pushNotificationConfigs", config] if !config.is_empty() && is(Method::DELETE) => {
            (Operation::DeleteTaskPushNotificationConfig, Some(*task), Some(*config))
        }
        _ => return Err(not_found()),
    };
    let decoded = |raw: Option<&str>| match raw {
        None => Ok(None),
        Some(raw) => percent_decode(raw).filter(|id| !id.is_empty()).map(Some).ok_or_else(not_found),
    };
    Ok((operation, decoded(task)?, decoded(config)?))
}

/// Decodes `%XX` escapes of a path segment; `None` when the escapes are malformed or not UTF-8.
pub(super) fn percent_decode(segment: &str) -> Option<String> {
    if !segment.contains('%') {
        return Some(segment.to_string());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
