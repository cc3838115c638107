//! Turns an HTTP request into an [`A2aCall`] and the checked request it stands for.
//!
//! Every request, in every dialect and binding, is parsed whole into the 1.0 model ([`Request`]):
//! a body that repeats a key anywhere is refused ([`strict`]), both spellings ProtoJSON accepts
//! (`taskId` and `task_id`) are read and one field given twice is refused, and the facts policies
//! decide on — task, context, skill, agent — are read from that model. What goes on to the backend is
//! the model written out again ([`encode`]), never the caller's bytes: the agent reads exactly what
//! the gateway judged. A 0.3 JSON-RPC request (a 0.3 method name, with no `A2A-Version` header or a
//! 0.x one) and an early-dialect request (`POST /tasks/send`, `/tasks/sendSubscribe`,
//! `/tasks/{id}/cancel`, `/tasks/{id}/send`, and `GET /tasks/{id}` without an `A2A-Version` header)
//! are read into the same model.

use a2a_policies::{A2aCall, A2aError, Binding, Dialect, Operation};
use http::{HeaderMap, Method};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::agent_side::segment;
use super::strict;
use super::translate::model::{self, Request};
use super::translate::{TranslateError, early, jsonrpc, v03};

/// A request that could not be decoded, with what is needed to answer it in the caller's binding.
#[derive(Debug)]
pub struct Refusal {
    pub dialect: Dialect,
    pub binding: Binding,
    pub rpc_id: Option<Value>,
    pub error: A2aError,
}

/// Splits `/agents/{name}/rest` into the agent name and the rest (`/` when nothing follows).
pub fn split_agent_path(path: &str) -> (Option<&str>, &str) {
    let Some(after) = path.strip_prefix("/agents/") else {
        return (None, path);
    };
    match after.find('/') {
        Some(i) => (Some(&after[..i]), &after[i..]),
        None => (Some(after), "/"),
    }
}

/// The checked request of a call, in its 1.0 form: a request extension that routing may amend
/// (then writing the body again with [`encode`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub request: Request,
    /// An early caller's own task id: routing maps it to the agent's task once it knows the caller.
    pub early: Option<EarlyCall>,
}

/// The task id an early caller names, and whether its call starts a task under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyCall {
    pub id: String,
    pub new_task: bool,
}

/// A decoded request.
#[derive(Debug)]
pub struct Decoded {
    pub call: A2aCall,
    pub request: Request,
    /// The canonical 1.0 body (see [`encode`]); for HTTP+JSON, `call.rest_path` is canonical too.
    pub body: Vec<u8>,
    /// An early caller's own task id (the answer is written under it).
    pub early_id: Option<String>,
    /// The early call starts a task under a new caller id.
    pub new_task: bool,
}

/// Decodes one request. `path` and `query` are the request URI's.
pub fn decode(
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<A2aCall, Refusal> {
    decode_any(method, path, query, headers, body).map(|decoded| decoded.call)
}

/// Decodes one request of any dialect into the checked 1.0 request and its canonical body.
pub fn decode_any(
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Decoded, Refusal> {
    let (agent, rest) = split_agent_path(path);
    if agent.is_some_and(str::is_empty) {
        return Err(rest_refusal(A2aError::MethodNotFound("no agent named in the path /agents/".into())));
    }
    let agent = agent.map(str::to_string);
    if is_early(method, rest, headers) {
        let (mut call, mut request, early_id, new_task) = decode_early(method, rest, query, body)?;
        call.agent = agent;
        read_facts(&mut call, &mut request).map_err(early_refusal)?;
        let body = encode(&mut call, &request);
        return Ok(Decoded { call, request, body, early_id: Some(early_id), new_task });
    }
    let (mut call, mut request) = if rest == "/" && method == Method::POST {
        decode_json_rpc(headers, body)?
    } else if let Some(below) = v03_rest_path(rest) {
        decode_v03_rest(method, below, query, body).map_err(v03_rest_refusal)?
    } else {
        decode_rest(method, rest, query, headers, body).map_err(rest_refusal)?
    };
    call.agent = agent;
    if let Err(error) = read_facts(&mut call, &mut request) {
        return Err(Refusal { dialect: call.dialect, binding: call.binding, rpc_id: call.rpc_id.clone(), error });
    }
    let body = encode(&mut call, &request);
    Ok(Decoded { call, request, body, early_id: None, new_task: false })
}

/// Decodes a gRPC call: `params` is its request message in ProtoJSON, the JSON-RPC params of the same
/// method, parsed by the same [`Request::parse`] into the same checked model. Inside, the call is a
/// 1.0 JSON-RPC call under a fresh id (one envelope for answers and errors, `POST` for every
/// operation); the gRPC front writes the answer back as gRPC. The package `lf.a2a.v1` says 1.0, so a
/// missing `a2a-version` is no 0.3 caller (another major version is refused).
pub fn decode_grpc(operation: Operation, params: &[u8], headers: &HeaderMap) -> Result<Decoded, A2aError> {
    if headers.contains_key("a2a-version") {
        check_version(headers)?;
    }
    let params: &RawValue = serde_json::from_slice(params).map_err(|_| A2aError::Internal)?;
    let mut request = Request::parse(operation, Some(params)).map_err(TranslateError::into_request_error)?;
    let mut call = A2aCall::new(Binding::JsonRpc, operation);
    call.rpc_id = Some(Value::String(uuid::Uuid::new_v4().to_string()));
    read_facts(&mut call, &mut request)?;
    let body = encode(&mut call, &request);
    Ok(Decoded { call, request, body, early_id: None, new_task: false })
}

/// Whether a request is in the early REST dialect: its paths, except that `GET /tasks/{id}` is 1.0's
/// too and is early only without an `A2A-Version` header.
fn is_early(method: &Method, rest: &str, headers: &HeaderMap) -> bool {
    match early::Route::of(method, rest) {
        None | Some(early::Route::Card) => false,
        Some(early::Route::Get(_)) => !headers.contains_key("a2a-version"),
        Some(_) => true,
    }
}

fn early_refusal(error: A2aError) -> Refusal {
    Refusal { dialect: Dialect::Early, binding: Binding::Rest, rpc_id: None, error }
}

/// An early call (task ids checked to be UUIDs), as the 1.0 HTTP+JSON request on the caller's own
/// task id: routing maps that id to the agent's task once it knows who is calling.
fn decode_early(
    method: &Method,
    rest: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<(A2aCall, Request, String, bool), Refusal> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        strict::check_unique_keys(body).map_err(|e| early_refusal(json_refusal(e)))?;
    }
    let parsed = early::Call::parse(method, rest, query, body).map_err(|e| early_refusal(e.into_request_error()))?;
    let early_id = parsed.task_id().unwrap_or_default().to_owned();
    let new_task = matches!(parsed, early::Call::Send(_) | early::Call::SendSubscribe(_));
    let request = parsed.into_v1(None).ok_or_else(|| early_refusal(A2aError::Internal))?;
    let mut call = A2aCall::new(Binding::Rest, request.operation());
    call.dialect = Dialect::Early;
    Ok((call, request, early_id, new_task))
}

/// The dialect a request is answered in when it cannot be decoded (or its body not even read):
/// JSON-RPC without an `A2A-Version` header, or with a 0.x one, is a 0.3 caller.
pub fn dialect_hint(method: &Method, path: &str, headers: &HeaderMap) -> Dialect {
    let rest = split_agent_path(path).1;
    if (*method == Method::POST && rest == "/" && legacy_version(headers)) || v03_rest_path(rest).is_some() {
        Dialect::V03
    } else if is_early(method, rest, headers) {
        Dialect::Early
    } else {
        Dialect::V1
    }
}

/// The path below `/v1` of an A2A 0.3 HTTP+JSON call (1.0 paths have no version segment).
pub fn v03_rest_path(rest: &str) -> Option<&str> {
    rest.strip_prefix("/v1").filter(|below| below.starts_with('/'))
}

fn v03_rest_refusal(error: A2aError) -> Refusal {
    Refusal { dialect: Dialect::V03, binding: Binding::Rest, rpc_id: None, error }
}

/// An A2A 0.3 HTTP+JSON call (`/v1/message:send`, `/v1/tasks/{id}`, …): its body and path read into
/// the 0.3 JSON-RPC params of the same method (ids in the path are the request's, see
/// [`v03::rest::params_of`]), then into the 1.0 model like a 0.3 JSON-RPC call. Inside, the call is
/// HTTP+JSON of the 0.3 dialect; its answer is written back in 0.3 HTTP+JSON by the bridge.
fn decode_v03_rest(
    method: &Method,
    below: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<(A2aCall, Request), A2aError> {
    let route = v03::rest::Route::of(method, below, percent_decode)
        .ok_or_else(|| A2aError::MethodNotFound(format!("no A2A 0.3 operation at {method} /v1{}", clip(below))))?;
    let object = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        strict::check_unique_keys(body).map_err(json_refusal)?;
        match serde_json::from_slice::<Value>(body).map_err(json_refusal)? {
            Value::Object(object) => object,
            _ => return Err(A2aError::invalid_params("the request body must be a JSON object")),
        }
    };
    let history = match route {
        v03::rest::Route::Get(_) => read_query(query, GET_TASK_QUERY)?.pop().and_then(|(_, v)| v.as_i64()),
        _ => None,
    };
    let params = v03::rest::params_of(&route, object, history).map_err(TranslateError::into_request_error)?;
    let params = serde_json::to_vec(&params).map_err(|_| A2aError::Internal)?;
    let method_name = v03::method_of(route.operation()).ok_or(A2aError::Internal)?;
    let request = v03::request_to_v1(method_name, Some(&params)).map_err(TranslateError::into_request_error)?;
    let mut call = A2aCall::new(Binding::Rest, request.operation());
    call.dialect = Dialect::V03;
    Ok((call, request))
}

/// No `A2A-Version` header, or a 0.x one: how 0.3 clients call.
fn legacy_version(headers: &HeaderMap) -> bool {
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
    version.is_empty() || version.starts_with("0.")
}

fn rest_refusal(error: A2aError) -> Refusal {
    Refusal { dialect: Dialect::V1, binding: Binding::Rest, rpc_id: None, error }
}

/// A body that is not strict JSON: not JSON at all, or a key repeated in one object.
fn json_refusal(error: serde_json::Error) -> A2aError {
    if error.is_syntax() || error.is_eof() {
        A2aError::Parse(format!("invalid JSON: {error}"))
    } else {
        A2aError::invalid_params(format!("ambiguous request: {error}"))
    }
}

/// Refuses a request whose `A2A-Version` is not 1.x. A missing header means 0.3 (as the reference
/// SDK reads it), and this gateway speaks 1.0.
fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).map(str::trim);
    let version = version.filter(|v| !v.is_empty()).unwrap_or("0.3");
    let major = version.split('.').next().unwrap_or("");
    if major == "1" {
        return Ok(());
    }
    Err(A2aError::VersionNotSupported(format!(
        "A2A version '{version}' is not supported; send the header 'A2A-Version: 1.0'"
    )))
}

#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

fn decode_json_rpc(headers: &HeaderMap, body: &[u8]) -> Result<(A2aCall, Request), Refusal> {
    // Until the method says otherwise, a caller without a 1.x version header is taken for 0.3.
    let legacy = legacy_version(headers);
    let guessed = if legacy { Dialect::V03 } else { Dialect::V1 };
    let refuse = |rpc_id: Option<Value>, error| Refusal { dialect: guessed, binding: Binding::JsonRpc, rpc_id, error };
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') && serde_json::from_slice::<&RawValue>(body).is_ok() {
        return Err(refuse(None, A2aError::InvalidRequest("batch requests are not supported".into())));
    }
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        let error = if e.is_data() {
            A2aError::InvalidRequest("the request must be a JSON-RPC 2.0 request object with each member once".into())
        } else {
            A2aError::Parse(format!("invalid JSON: {e}"))
        };
        refuse(None, error)
    })?;
    let rpc_id = match envelope.id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => return Err(refuse(None, A2aError::InvalidRequest("'id' must be a string or a number".into()))),
        None => return Err(refuse(None, A2aError::InvalidRequest("'id' is required".into()))),
    };
    if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(Some(rpc_id), A2aError::InvalidRequest("'jsonrpc' must be \"2.0\"".into())));
    }
    let Some(Value::String(method)) = envelope.method else {
        return Err(refuse(Some(rpc_id), A2aError::InvalidRequest("'method' must be a string".into())));
    };
    let v03_method = legacy && v03::operation_of(&method).is_some();
    let dialect = if v03_method { Dialect::V03 } else { Dialect::V1 };
    let refuse =
        |rpc_id: &Value, error| Refusal { dialect, binding: Binding::JsonRpc, rpc_id: Some(rpc_id.clone()), error };
    if let Err(error) = strict::check_unique_keys(body) {
        return Err(refuse(&rpc_id, json_refusal(error)));
    }
    let request = if v03_method {
        v03::request_to_v1(&method, envelope.params.map(|p| p.get().as_bytes()))
            .map_err(|e| refuse(&rpc_id, e.into_request_error()))?
    } else {
        let Some(operation) = Operation::from_method_name(&method) else {
            let error = A2aError::MethodNotFound("Method not found".into());
            return Err(Refusal { dialect: guessed, binding: Binding::JsonRpc, rpc_id: Some(rpc_id), error });
        };
        // A 1.0 method name: the caller speaks 1.0, with a missing or wrong version maybe.
        check_version(headers).map_err(|e| refuse(&rpc_id, e))?;
        if envelope.params.is_some_and(|p| !p.get().trim_start().starts_with('{')) {
            return Err(refuse(&rpc_id, A2aError::invalid_params("'params' must be an object")));
        }
        Request::parse(operation, envelope.params).map_err(|e| refuse(&rpc_id, e.into_request_error()))?
    };
    let mut call = A2aCall::new(Binding::JsonRpc, request.operation());
    call.dialect = dialect;
    call.rpc_id = Some(rpc_id);
    Ok((call, request))
}

/// A field of a request that an HTTP+JSON path or query may carry, by both its names.
struct Field {
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

const GET_TASK_QUERY: &[Field] = &[field("historyLength", "history_length", Kind::Int)];
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

fn decode_rest(
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
        strict::check_unique_keys(body).map_err(json_refusal)?;
        match serde_json::from_slice::<Value>(body).map_err(json_refusal)? {
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
    let params = serde_json::to_string(&object).map_err(|_| A2aError::Internal)?;
    let params = RawValue::from_string(params).map_err(|_| A2aError::Internal)?;
    let request = Request::parse(operation, Some(&params)).map_err(TranslateError::into_request_error)?;
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
fn read_query<'f>(query: Option<&str>, fields: &'f [Field]) -> Result<Vec<(&'f Field, Value)>, A2aError> {
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

fn clip(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Reads what policies and routing decide on from the checked request into `call`, and refuses a
/// request whose facts disagree with each other. The request's `tenant` names an agent of this
/// gateway (as `/agents/{name}/` does); it is not passed on.
fn read_facts(call: &mut A2aCall, request: &mut Request) -> Result<(), A2aError> {
    if let Some(tenant) = take_tenant(request) {
        match &call.agent {
            Some(agent) if *agent != tenant => {
                return Err(A2aError::invalid_params("'tenant' names another agent than the path"));
            }
            _ => call.agent = Some(tenant),
        }
    }
    match request {
        Request::SendMessage(send) | Request::SendStreamingMessage(send) => {
            call.task_id.clone_from(&send.message.task_id);
            call.context_id.clone_from(&send.message.context_id);
            call.skill_id = named_skill(send)?;
        }
        Request::GetTask(model::GetTaskRequest { id, .. })
        | Request::CancelTask(model::CancelTaskRequest { id, .. })
        | Request::SubscribeToTask(model::SubscribeToTaskRequest { id, .. }) => {
            call.task_id = Some(required(id, "id")?);
        }
        Request::CreateTaskPushNotificationConfig(config) => {
            call.task_id = Some(required(config.task_id.as_deref().unwrap_or(""), "taskId")?);
        }
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => {
            call.task_id = Some(required(&r.task_id, "taskId")?);
        }
        Request::ListTaskPushNotificationConfigs(r) => call.task_id = Some(required(&r.task_id, "taskId")?),
        Request::ListTasks(_) | Request::GetExtendedAgentCard(_) => {}
    }
    Ok(())
}

fn required(value: &str, name: &str) -> Result<String, A2aError> {
    if value.is_empty() {
        return Err(A2aError::invalid_params(format!("'{name}' is required and must be a non-empty string")));
    }
    Ok(value.to_owned())
}

/// Removes the request's `tenant`, returning it.
fn take_tenant(request: &mut Request) -> Option<String> {
    match request {
        Request::SendMessage(r) | Request::SendStreamingMessage(r) => r.tenant.take(),
        Request::GetTask(r) => r.tenant.take(),
        Request::ListTasks(r) => r.tenant.take(),
        Request::CancelTask(r) => r.tenant.take(),
        Request::SubscribeToTask(r) => r.tenant.take(),
        Request::CreateTaskPushNotificationConfig(r) => r.tenant.take(),
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => r.tenant.take(),
        Request::ListTaskPushNotificationConfigs(r) => r.tenant.take(),
        Request::GetExtendedAgentCard(r) => r.tenant.take(),
    }
}

/// Metadata keys that name a skill: the gateway's convention, and the snake spelling an agent
/// might read instead.
const SKILL_KEYS: [&str; 2] = ["skillId", "skill_id"];

/// The skill a send names in its message's or its request's metadata. Every place that names one
/// must name the same: an agent may read any of them.
fn named_skill(send: &model::SendMessageRequest) -> Result<Option<String>, A2aError> {
    let mut named: Option<&str> = None;
    for metadata in [send.message.metadata.as_ref(), send.metadata.as_ref()].into_iter().flatten() {
        for key in SKILL_KEYS {
            match metadata.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if !s.is_empty() => match named {
                    Some(other) if other != s => {
                        return Err(A2aError::invalid_params(
                            "the request names two different skills; name one skill in metadata.skillId",
                        ));
                    }
                    _ => named = Some(s),
                },
                Some(_) => return Err(A2aError::invalid_params("'metadata.skillId' must be a non-empty string")),
            }
        }
    }
    Ok(named.map(str::to_owned))
}

/// Writes the checked request as the body it goes on with, in the call's binding: a JSON-RPC
/// request under the caller's id, or an HTTP+JSON body (with `call.rest_path` made canonical too).
pub fn encode(call: &mut A2aCall, request: &Request) -> Vec<u8> {
    match call.binding {
        Binding::JsonRpc => {
            let id = call.rpc_id.clone().unwrap_or(Value::Null);
            jsonrpc::request(&id, request.operation().method_name(), Some(request))
        }
        Binding::Rest => {
            let (path, body) = rest_form(request);
            call.rest_path = Some(path);
            body
        }
    }
}

/// A 1.0 request in the HTTP+JSON binding: its path (below the binding's base, with the query) and
/// its body (empty for calls without one).
pub fn rest_form(request: &Request) -> (String, Vec<u8>) {
    let json = || serde_json::to_vec(request).unwrap_or_default();
    let configs = |task: &str| format!("/tasks/{}/pushNotificationConfigs", segment(task));
    match request {
        Request::SendMessage(_) => ("/message:send".to_owned(), json()),
        Request::SendStreamingMessage(_) => ("/message:stream".to_owned(), json()),
        Request::GetTask(r) => {
            let query = Query::default().int("historyLength", r.history_length);
            (format!("/tasks/{}{}", segment(&r.id), query.0), Vec::new())
        }
        Request::ListTasks(r) => {
            let query = Query::default()
                .text("contextId", r.context_id.as_deref())
                .text("status", r.status.map(|s| s.as_str()))
                .int("pageSize", r.page_size)
                .text("pageToken", r.page_token.as_deref())
                .int("historyLength", r.history_length)
                .text("statusTimestampAfter", r.status_timestamp_after.as_deref())
                .text("includeArtifacts", r.include_artifacts.map(|b| if b { "true" } else { "false" }));
            (format!("/tasks{}", query.0), Vec::new())
        }
        Request::CancelTask(r) => (format!("/tasks/{}:cancel", segment(&r.id)), json()),
        Request::SubscribeToTask(r) => (format!("/tasks/{}:subscribe", segment(&r.id)), Vec::new()),
        Request::CreateTaskPushNotificationConfig(r) => (configs(r.task_id.as_deref().unwrap_or("")), json()),
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => {
            (format!("{}/{}", configs(&r.task_id), segment(r.id.as_deref().unwrap_or(""))), Vec::new())
        }
        Request::ListTaskPushNotificationConfigs(r) => {
            let query = Query::default().int("pageSize", r.page_size).text("pageToken", r.page_token.as_deref());
            (format!("{}{}", configs(&r.task_id), query.0), Vec::new())
        }
        Request::GetExtendedAgentCard(_) => ("/extendedAgentCard".to_owned(), Vec::new()),
    }
}

/// A query string built from typed values, every value percent-encoded.
#[derive(Default)]
struct Query(String);

impl Query {
    fn text(mut self, name: &str, value: Option<&str>) -> Query {
        if let Some(value) = value {
            self.0.push(if self.0.is_empty() { '?' } else { '&' });
            self.0.push_str(name);
            self.0.push('=');
            self.0.push_str(&segment(value));
        }
        self
    }

    fn int(self, name: &str, value: Option<i32>) -> Query {
        let value = value.map(|n| n.to_string());
        self.text(name, value.as_deref())
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
fn percent_decode(segment: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("a2a-version", "1.0".parse().unwrap());
        h
    }

    fn rpc(body: &str) -> Result<A2aCall, Refusal> {
        decode(&Method::POST, "/", None, &v1(), body.as_bytes())
    }

    #[test]
    fn json_rpc_send_reads_skill_task_and_context() {
        let call = rpc(r#"{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"taskId":"t1","contextId":"c1","metadata":{"skillId":"echo"}}}}"#).unwrap();
        assert_eq!(call.binding, Binding::JsonRpc);
        assert_eq!(call.operation, Operation::SendMessage);
        assert_eq!(call.rpc_id, Some(Value::from("r1")));
        assert_eq!(call.task_id.as_deref(), Some("t1"));
        assert_eq!(call.context_id.as_deref(), Some("c1"));
        assert_eq!(call.skill_id.as_deref(), Some("echo"));
    }

    #[test]
    fn request_metadata_skill_is_used_when_the_message_has_none() {
        let call = rpc(r#"{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"parts":[]},"metadata":{"skillId":"review-pr"}}}"#).unwrap();
        assert_eq!(call.skill_id.as_deref(), Some("review-pr"));
        assert!(call.operation.is_streaming());
    }

    #[test]
    fn json_rpc_task_calls_read_the_task_id() {
        let call = rpc(r#"{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"abc"}}"#).unwrap();
        assert_eq!((call.operation, call.task_id.as_deref()), (Operation::CancelTask, Some("abc")));
        let call = rpc(
            r#"{"jsonrpc":"2.0","id":2,"method":"GetTaskPushNotificationConfig","params":{"taskId":"abc","id":"x"}}"#,
        )
        .unwrap();
        assert_eq!(call.task_id.as_deref(), Some("abc"));
    }

    #[test]
    fn json_rpc_errors_carry_the_request_id_when_known() {
        let e = rpc(r#"{"jsonrpc":"2.0","id":"r9","method":"tasks/list","params":{}}"#).unwrap_err();
        assert!(matches!(e.error, A2aError::MethodNotFound(_)));
        assert_eq!(e.rpc_id, Some(Value::from("r9")));
        let e = rpc(r#"{"jsonrpc":"2.0","id":"r9","method":"GetTask","params":{}}"#).unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidParams { .. }));
        let e = rpc(r#"{"jsonrpc":"2.0","#).unwrap_err();
        assert!(matches!(e.error, A2aError::Parse(_)));
        assert_eq!(e.rpc_id, None);
        let e = rpc(r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#).unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidRequest(_)));
        let e = rpc(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}"#).unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidRequest(_)));
        let e = rpc(r#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}"#).unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidRequest(_)));
        let e =
            rpc(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"skillId":5}}}}"#)
                .unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidParams { .. }));
    }

    #[test]
    fn missing_or_foreign_version_header_is_refused_like_the_sdk() {
        let body = br#"{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{}}}"#;
        let e = decode(&Method::POST, "/", None, &HeaderMap::new(), body).unwrap_err();
        assert!(matches!(e.error, A2aError::VersionNotSupported(_)));
        let mut two = HeaderMap::new();
        two.insert("a2a-version", "2.0".parse().unwrap());
        assert!(decode(&Method::POST, "/", None, &two, body).is_err());
        let mut minor = HeaderMap::new();
        minor.insert("a2a-version", "1.1".parse().unwrap());
        assert!(decode(&Method::POST, "/", None, &minor, body).is_ok());
    }

    #[test]
    fn rest_paths_map_to_operations() {
        let cases = [
            (Method::POST, "/message:send", Operation::SendMessage, None),
            (Method::POST, "/message:stream", Operation::SendStreamingMessage, None),
            (Method::GET, "/tasks", Operation::ListTasks, None),
            (Method::GET, "/tasks/t1", Operation::GetTask, Some("t1")),
            (Method::POST, "/tasks/t1:cancel", Operation::CancelTask, Some("t1")),
            (Method::GET, "/tasks/t1:subscribe", Operation::SubscribeToTask, Some("t1")),
            (Method::POST, "/tasks/t1:subscribe", Operation::SubscribeToTask, Some("t1")),
            (
                Method::POST,
                "/tasks/t1/pushNotificationConfigs",
                Operation::CreateTaskPushNotificationConfig,
                Some("t1"),
            ),
            (Method::GET, "/tasks/t1/pushNotificationConfigs", Operation::ListTaskPushNotificationConfigs, Some("t1")),
            (Method::GET, "/tasks/t1/pushNotificationConfigs/c", Operation::GetTaskPushNotificationConfig, Some("t1")),
            (
                Method::DELETE,
                "/tasks/t1/pushNotificationConfigs/c",
                Operation::DeleteTaskPushNotificationConfig,
                Some("t1"),
            ),
            (Method::GET, "/extendedAgentCard", Operation::GetExtendedAgentCard, None),
            (Method::GET, "/tasks/a%2Db", Operation::GetTask, Some("a-b")),
        ];
        for (method, path, op, task) in cases {
            let body: &[u8] = if op.is_send() { br#"{"message":{}}"# } else { b"" };
            let call = decode(&method, path, None, &v1(), body).unwrap_or_else(|e| panic!("{path}: {e:?}"));
            assert_eq!(call.binding, Binding::Rest);
            assert_eq!(call.operation, op, "{path}");
            assert_eq!(call.task_id.as_deref(), task, "{path}");
            // The path goes on canonical: ids written again with only unreserved characters bare.
            let canonical = if path == "/tasks/a%2Db" { "/tasks/a-b" } else { path };
            assert_eq!(call.rest_path.as_deref(), Some(canonical));
        }
    }

    #[test]
    fn rest_unknown_paths_and_methods_are_not_found() {
        for (method, path) in [
            (Method::GET, "/nope/nope"),
            (Method::GET, "/message:send"),
            (Method::DELETE, "/tasks/t1"),
            (Method::GET, "/tasks/t1:cancel"),
            (Method::GET, "/tasks/t1:explode"),
            (Method::GET, "/tasks/%zz"),
            (Method::GET, "/"),
        ] {
            let e = decode(&method, path, None, &v1(), b"").unwrap_err();
            assert!(matches!(e.error, A2aError::MethodNotFound(_)), "{method} {path}");
            assert_eq!(e.binding, Binding::Rest);
        }
    }

    #[test]
    fn rest_send_bodies_are_checked() {
        let e = decode(&Method::POST, "/message:send", None, &v1(), br#"{"message":"#).unwrap_err();
        assert!(matches!(e.error, A2aError::Parse(_)));
        let e = decode(&Method::POST, "/message:send", None, &v1(), br#"{"metadata":{}}"#).unwrap_err();
        assert!(matches!(e.error, A2aError::InvalidParams { .. }));
    }

    #[test]
    fn agent_paths_are_split_off() {
        assert_eq!(split_agent_path("/agents/echo/"), (Some("echo"), "/"));
        assert_eq!(split_agent_path("/agents/echo"), (Some("echo"), "/"));
        assert_eq!(split_agent_path("/agents/echo/tasks/t:cancel"), (Some("echo"), "/tasks/t:cancel"));
        assert_eq!(split_agent_path("/tasks"), (None, "/tasks"));
        let call = decode(&Method::GET, "/agents/echo/tasks/t1", Some("historyLength=2"), &v1(), b"").unwrap();
        assert_eq!(call.agent.as_deref(), Some("echo"));
        assert_eq!(call.rest_path.as_deref(), Some("/tasks/t1?historyLength=2"));
        let call = decode(
            &Method::POST,
            "/agents/echo/",
            None,
            &v1(),
            br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#,
        )
        .unwrap();
        assert_eq!((call.binding, call.agent.as_deref()), (Binding::JsonRpc, Some("echo")));
    }
    #[test]
    fn v03_requests_are_translated_into_their_1_0_form() {
        let body = br#"{"jsonrpc":"2.0","id":"q","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"taskId":"t1","metadata":{"skillId":"echo"}},"configuration":{"blocking":false}}}"#;
        let decoded = decode_any(&Method::POST, "/", None, &HeaderMap::new(), body).expect("0.3 send");
        let call = &decoded.call;
        assert_eq!(
            (call.dialect, call.binding, call.operation),
            (Dialect::V03, Binding::JsonRpc, Operation::SendMessage)
        );
        assert_eq!((call.task_id.as_deref(), call.skill_id.as_deref()), (Some("t1"), Some("echo")));
        let one: Value = serde_json::from_slice(&decoded.body).unwrap();
        assert_eq!(one["method"], "SendMessage");
        assert_eq!(one["id"], "q");
        assert_eq!(one["params"]["message"]["role"], "ROLE_USER");
        assert_eq!(one["params"]["message"]["parts"][0], serde_json::json!({"text": "hi"}));
        assert_eq!(one["params"]["configuration"]["returnImmediately"], true);
        let mut v03 = HeaderMap::new();
        v03.insert("a2a-version", "0.3".parse().unwrap());
        let get = br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t9"}}"#;
        let decoded = decode_any(&Method::POST, "/agents/echo/", None, &v03, get).expect("0.3 get");
        assert_eq!((decoded.call.operation, decoded.call.task_id.as_deref()), (Operation::GetTask, Some("t9")));
        assert_eq!(decoded.call.agent.as_deref(), Some("echo"));
        // With a 1.x header a 0.3 method name is just unknown; 1.0 requests are not translated.
        let refusal = decode_any(&Method::POST, "/", None, &v1(), get).unwrap_err();
        assert_eq!(refusal.dialect, Dialect::V1);
        assert!(matches!(refusal.error, A2aError::MethodNotFound(_)));
        let same = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t9"}}"#;
        let canonical = decode_any(&Method::POST, "/", None, &v1(), same).unwrap().body;
        assert_eq!(canonical, br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t9"}}"#);
    }

    /// At least 20 malformed 0.3 requests, each refused in the 0.3 error shape with its 0.3 code.
    #[test]
    fn malformed_v03_requests_get_0_3_errors() {
        let cases: &[(&str, i64)] = &[
            (r#"{"jsonrpc":"2.0","#, -32700),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}]"#, -32600),
            (r#""message/send""#, -32600),
            (r#"{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tasks/get","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}"#, -32601),
            (r#"{"jsonrpc":"2.0","id":1,"method":"message/sendSubscribe","params":{}}"#, -32601),
            (r#"{"jsonrpc":"2.0","id":1,"method":"message/send"}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":[1]}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}"#, -32602),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":"x"}}}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"video"}]}}}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file"}]}}}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[],"metadata":{"skillId":5}}}}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[]},"configuration":"fast"}}"#,
                -32602,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":5}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","historyLength":"x"}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":"t"}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"t"}}"#, -32602),
        ];
        assert!(cases.len() >= 20);
        for (body, code) in cases {
            let refusal = decode_any(&Method::POST, "/", None, &HeaderMap::new(), body.as_bytes()).expect_err(body);
            assert_eq!(refusal.dialect, Dialect::V03, "{body}");
            let rendered = super::super::errors::render_in(
                &refusal.error,
                refusal.dialect,
                refusal.binding,
                refusal.rpc_id.as_ref(),
            );
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert_eq!(v["error"]["code"], *code, "{body}: {v}");
            assert_eq!(v["error"]["data"], Value::Null, "{body}: {v}");
            assert!(v["error"]["message"].is_string(), "{body}: {v}");
            assert_eq!(v["jsonrpc"], "2.0");
        }
    }
    /// At least 20 malformed A2A 1.0 requests, each refused in its binding's 1.0 shape: a JSON-RPC
    /// error object (with ErrorInfo except for protocol-level errors), or an HTTP status with a
    /// google.rpc.Status body.
    #[test]
    fn malformed_v1_requests_get_1_0_errors() {
        let rpc: &[(&str, i64)] = &[
            (r#"{"jsonrpc":"2.0","#, -32700),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]"#, -32600),
            (r#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{"id":"t"}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":null}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}"#, -32601),
            (r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":"hi"}}"#, -32602),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"skillId":[]}}}}"#,
                -32602,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":[]}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":""}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":7}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":"t"}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"id":"c"}}"#, -32602),
        ];
        for (body, code) in rpc {
            let refusal = decode_any(&Method::POST, "/", None, &v1(), body.as_bytes()).expect_err(body);
            let rendered = super::super::errors::render_in(
                &refusal.error,
                refusal.dialect,
                refusal.binding,
                refusal.rpc_id.as_ref(),
            );
            assert_eq!(rendered.status, http::StatusCode::OK, "{body}");
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert_eq!(v["error"]["code"], *code, "{body}: {v}");
            assert_eq!(v["jsonrpc"], "2.0");
            if *code != -32700 && *code != -32600 && *code != -32601 {
                assert_eq!(v["error"]["data"][0]["reason"], "INVALID_PARAMS", "{body}: {v}");
            }
        }
        let rest: &[(Method, &str, &str, u16)] = &[
            (Method::POST, "/message:send", r#"{"message":"#, 400),
            (Method::POST, "/message:send", r#"{"metadata":{}}"#, 400),
            (Method::POST, "/message:stream", r#"[]"#, 400),
            (Method::POST, "/message:send", r#"{"message":{"metadata":{"skillId":1}}}"#, 400),
            (Method::GET, "/message:send", "", 404),
            (Method::DELETE, "/tasks/t1", "", 404),
            (Method::GET, "/tasks/t1:explode", "", 404),
            (Method::PUT, "/tasks/t1:cancel", "", 404),
            (Method::GET, "/nope", "", 404),
            (Method::PATCH, "/tasks", "", 404),
        ];
        for (method, path, body, status) in rest {
            let refusal = decode_any(method, path, None, &v1(), body.as_bytes()).expect_err(path);
            let rendered = super::super::errors::render_in(
                &refusal.error,
                refusal.dialect,
                refusal.binding,
                refusal.rpc_id.as_ref(),
            );
            assert_eq!(rendered.status.as_u16(), *status, "{method} {path} {body}");
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert_eq!(v["error"]["code"], *status, "{method} {path}: {v}");
            assert!(v["error"]["status"].is_string() && v["error"]["details"][0]["reason"].is_string(), "{v}");
        }
        assert!(rpc.len() + rest.len() >= 20);
    }

    /// At least 20 malformed early requests, each refused in the early error shape: a 4xx status and
    /// `{"detail": "…"}`.
    #[test]
    fn malformed_early_requests_get_early_errors() {
        let id = "4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b";
        let msg = r#"{"role":"user","parts":[{"type":"text","text":"hi"}]}"#;
        let cases: Vec<(Method, String, String)> = vec![
            (Method::POST, "/tasks/send".into(), "{".into()),
            (Method::POST, "/tasks/send".into(), "[]".into()),
            (Method::POST, "/tasks/send".into(), "\"text\"".into()),
            (Method::POST, "/tasks/send".into(), "{}".into()),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"message":{msg}}}"#)),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"not-a-uuid","message":{msg}}}"#)),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":7,"message":{msg}}}"#)),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"{id}"}}"#)),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"{id}","message":"hi"}}"#)),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"{id}","message":{{"role":"user","parts":"x"}}}}"#)),
            (
                Method::POST,
                "/tasks/send".into(),
                format!(r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"video"}}]}}}}"#),
            ),
            (
                Method::POST,
                "/tasks/send".into(),
                format!(r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"text"}}]}}}}"#),
            ),
            (
                Method::POST,
                "/tasks/send".into(),
                format!(r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"file"}}]}}}}"#),
            ),
            (
                Method::POST,
                "/tasks/send".into(),
                format!(r#"{{"id":"{id}","message":{msg},"metadata":{{"skillId":5}}}}"#),
            ),
            (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"{id}","message":{msg},"historyLength":"x"}}"#)),
            (Method::POST, "/tasks/sendSubscribe".into(), "{".into()),
            (Method::POST, "/tasks/sendSubscribe".into(), format!(r#"{{"id":"","message":{msg}}}"#)),
            (Method::POST, "/tasks/sendSubscribe".into(), format!(r#"{{"id":"{id}","message":null}}"#)),
            (Method::GET, "/tasks/not-a-uuid".into(), String::new()),
            (Method::POST, "/tasks/not-a-uuid/cancel".into(), String::new()),
            (Method::POST, format!("/tasks/{id}/cancel"), "[1]".into()),
            (Method::POST, format!("/tasks/{id}/cancel"), "{".into()),
            (Method::POST, "/tasks/not-a-uuid/send".into(), format!(r#"{{"message":{msg}}}"#)),
            (Method::POST, format!("/tasks/{id}/send"), "{}".into()),
            (
                Method::POST,
                format!("/tasks/{id}/send"),
                format!(r#"{{"id":"0f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b","message":{msg}}}"#),
            ),
        ];
        assert!(cases.len() >= 20);
        for (method, path, body) in &cases {
            let label = format!("{method} {path} {body}");
            let refusal = decode_any(method, path, None, &HeaderMap::new(), body.as_bytes()).expect_err(&label);
            assert_eq!(refusal.dialect, Dialect::Early, "{label}");
            let rendered = super::super::errors::render_in(&refusal.error, refusal.dialect, refusal.binding, None);
            assert!(rendered.status.is_client_error(), "{label}: {}", rendered.status);
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert!(v["detail"].is_string(), "{label}: {v}");
            assert_eq!(v.as_object().map(|o| o.len()), Some(1), "{label}: {v}");
        }
    }

    #[test]
    fn v03_rest_requests_are_read_into_1_0_and_refused_in_the_0_3_rest_form() {
        let send = br#"{"message":{"messageId":"m","taskId":"t1","role":"ROLE_USER","content":[{"text":"hi"}],"metadata":{"skillId":"echo"}},"configuration":{"blocking":false}}"#;
        let decoded = decode_any(&Method::POST, "/agents/e/v1/message:send", None, &HeaderMap::new(), send)
            .expect("0.3 REST send");
        let call = &decoded.call;
        assert_eq!((call.dialect, call.binding, call.operation), (Dialect::V03, Binding::Rest, Operation::SendMessage));
        assert_eq!(
            (call.agent.as_deref(), call.task_id.as_deref(), call.skill_id.as_deref()),
            (Some("e"), Some("t1"), Some("echo"))
        );
        // What goes on is the 1.0 HTTP+JSON form of the checked request.
        assert_eq!(call.rest_path.as_deref(), Some("/message:send"));
        let body: Value = serde_json::from_slice(&decoded.body).unwrap();
        assert_eq!(body["message"]["parts"][0], serde_json::json!({"text": "hi"}));
        assert_eq!(body["configuration"]["returnImmediately"], true);
        let get = decode_any(&Method::GET, "/v1/tasks/a%2Fb", Some("historyLength=3"), &HeaderMap::new(), b"")
            .expect("0.3 REST get");
        assert_eq!(get.call.task_id.as_deref(), Some("a/b"));
        assert_eq!(get.call.rest_path.as_deref(), Some("/tasks/a%2Fb?historyLength=3"));
        let refused: &[(Method, &str, &str, u16)] = &[
            (
                Method::POST,
                "/v1/message:send",
                r#"{"message":{"messageId":"m","messageId":"n","role":"ROLE_USER","content":[]}}"#,
                422,
            ),
            (
                Method::POST,
                "/v1/message:send",
                r#"{"message":{"messageId":"m","role":"ROLE_USER","content":[{"video":1}]}}"#,
                422,
            ),
            (Method::POST, "/v1/message:send", "{", 400),
            (Method::POST, "/v1/tasks/t1:cancel", r#"{"name":"tasks/t2"}"#, 422),
            (
                Method::POST,
                "/v1/tasks/t1/pushNotificationConfigs",
                r#"{"parent":"tasks/t2","config":{"pushNotificationConfig":{"url":"u"}}}"#,
                422,
            ),
            (Method::GET, "/v1/tasks", "", 404),
            (Method::GET, "/v1/card", "", 404),
            (Method::PUT, "/v1/message:send", "", 404),
        ];
        for (method, path, body, status) in refused {
            let refusal = decode_any(method, path, None, &HeaderMap::new(), body.as_bytes()).expect_err(path);
            assert_eq!((refusal.dialect, refusal.binding), (Dialect::V03, Binding::Rest), "{path}");
            let rendered = super::super::errors::render_in(&refusal.error, refusal.dialect, refusal.binding, None);
            assert_eq!(rendered.status.as_u16(), *status, "{method} {path} {body}");
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert!(v["message"].is_string() && v.as_object().map(|o| o.len()) == Some(1), "{v}");
        }
    }

    #[test]
    fn early_requests_are_translated_into_1_0_rest_on_the_agent_task() {
        let id = "4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b";
        let body = format!(
            r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"text","text":"hi"}}]}},"metadata":{{"skillId":"echo"}}}}"#
        );
        let decoded =
            decode_any(&Method::POST, "/agents/e/tasks/sendSubscribe", None, &HeaderMap::new(), body.as_bytes())
                .expect("early send");
        let call = &decoded.call;
        assert_eq!(
            (call.dialect, call.binding, call.operation),
            (Dialect::Early, Binding::Rest, Operation::SendStreamingMessage)
        );
        assert_eq!(
            (call.rest_path.as_deref(), call.skill_id.as_deref(), call.task_id.as_deref()),
            (Some("/message:stream"), Some("echo"), None)
        );
        assert_eq!((decoded.early_id.as_deref(), decoded.new_task, call.agent.as_deref()), (Some(id), true, Some("e")));
        // The caller's own id stands in until routing maps it to the agent's task.
        let decoded =
            decode_any(&Method::GET, &format!("/tasks/{id}"), Some("historyLength=2"), &HeaderMap::new(), b"")
                .expect("get");
        assert_eq!(
            (decoded.call.task_id.as_deref(), decoded.call.rest_path.as_deref()),
            (Some(id), Some(format!("/tasks/{id}?historyLength=2").as_str()))
        );
        assert_eq!((decoded.early_id.as_deref(), decoded.new_task), (Some(id), false));
        // With the 1.0 header, GET /tasks/{id} is 1.0.
        let v1 = decode_any(&Method::GET, &format!("/tasks/{id}"), None, &v1(), b"").expect("1.0 get");
        assert_eq!((v1.call.dialect, v1.call.task_id.as_deref()), (Dialect::V1, Some(id)));
    }
}
