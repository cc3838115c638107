//! Turns an HTTP request into an [`A2aCall`]: which dialect, binding and operation, which agent path,
//! task, context and skill. Only the few fields routing and policies need are parsed; a 1.0 body is
//! forwarded unchanged. A 0.3 JSON-RPC request (a 0.3 method name, with no `A2A-Version` header or a
//! 0.x one) is translated into its 1.0 JSON-RPC form, which policies and backends then see; an
//! early-dialect request (`POST /tasks/send`, `/tasks/sendSubscribe`, `/tasks/{id}/cancel`,
//! `/tasks/{id}/send`, and `GET /tasks/{id}` without an `A2A-Version` header) into its 1.0 HTTP+JSON
//! form, with the caller's task id replaced by the agent's (see [`EarlyIds`]).

use a2a_policies::{A2aCall, A2aError, Binding, Dialect, Operation};
use http::{HeaderMap, Method};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::agent_side::segment;
use super::early_ids::EarlyIds;
use super::translate::model::{self, Request};
use super::translate::{early, jsonrpc, v03};

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

/// A decoded request: the call, and the body of its 1.0 form when the caller spoke another dialect
/// (`None`: the caller's body is already 1.0 and goes on unchanged).
#[derive(Debug)]
pub struct Decoded {
    pub call: A2aCall,
    pub translated: Option<Vec<u8>>,
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
    decode_any(method, path, query, headers, body, None).map(|decoded| decoded.call)
}

/// Decodes one request of any dialect, translating a non-1.0 one into its 1.0 form. `early_ids` maps
/// early callers' task ids to the agents' (`None`: the caller's ids are used as they are).
pub fn decode_any(
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    early_ids: Option<&EarlyIds>,
) -> Result<Decoded, Refusal> {
    let (agent, rest) = split_agent_path(path);
    if agent.is_some_and(str::is_empty) {
        return Err(rest_refusal(A2aError::MethodNotFound("no agent named in the path /agents/".into())));
    }
    if is_early(method, rest, headers) {
        let mut decoded = decode_early(method, rest, query, body, early_ids)?;
        decoded.call.agent = agent.map(str::to_string);
        return Ok(decoded);
    }
    let (mut call, translated) = if rest == "/" && method == Method::POST {
        decode_json_rpc(headers, body)?
    } else {
        (decode_rest(method, rest, query, headers, body).map_err(rest_refusal)?, None)
    };
    call.agent = agent.map(str::to_string);
    Ok(Decoded { call, translated, early_id: None, new_task: false })
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

/// An early call: parsed (task ids checked to be UUIDs), then made the 1.0 HTTP+JSON request on the
/// agent's task.
fn decode_early(
    method: &Method,
    rest: &str,
    query: Option<&str>,
    body: &[u8],
    early_ids: Option<&EarlyIds>,
) -> Result<Decoded, Refusal> {
    let parsed = early::Call::parse(method, rest, query, body).map_err(|e| early_refusal(e.into_request_error()))?;
    let early_id = parsed.task_id().unwrap_or_default().to_owned();
    let new_task = matches!(parsed, early::Call::Send(_) | early::Call::SendSubscribe(_));
    let agent_task = match early_ids {
        Some(ids) if new_task && ids.contains(&early_id) => {
            return Err(early_refusal(A2aError::invalid_params(format!(
                "the task id {early_id} is already in use; a new task needs a new id"
            ))));
        }
        Some(ids) if !new_task => ids.get(&early_id),
        _ => None,
    };
    let task_ref =
        agent_task.as_ref().map(|t| early::TaskRef { task_id: &t.task_id, context_id: t.context_id.as_deref() });
    let request = parsed.into_v1(task_ref).ok_or_else(|| early_refusal(A2aError::Internal))?;
    let operation = request.operation();
    let encoded = |r: &Request| serde_json::to_vec(r).map_err(|_| early_refusal(A2aError::Internal));
    let (rest_path, body) = match &request {
        Request::SendMessage(_) => ("/message:send".to_owned(), encoded(&request)?),
        Request::SendStreamingMessage(_) => ("/message:stream".to_owned(), encoded(&request)?),
        Request::GetTask(get) => {
            let query = get.history_length.map(|n| format!("?historyLength={n}")).unwrap_or_default();
            (format!("/tasks/{}{query}", segment(&get.id)), Vec::new())
        }
        Request::CancelTask(cancel) => (format!("/tasks/{}:cancel", segment(&cancel.id)), encoded(&request)?),
        _ => return Err(early_refusal(A2aError::Internal)),
    };
    let mut call = A2aCall::new(Binding::Rest, operation);
    call.dialect = Dialect::Early;
    if operation.is_send() {
        let params: SendParams =
            serde_json::from_slice(&body).map_err(|e| early_refusal(A2aError::invalid_params(e.to_string())))?;
        read_send(&mut call, params).map_err(early_refusal)?;
    } else if let Request::GetTask(model::GetTaskRequest { id, .. })
    | Request::CancelTask(model::CancelTaskRequest { id, .. }) = &request
    {
        call.task_id = Some(id.clone());
    }
    call.rest_path = Some(rest_path);
    Ok(Decoded { call, translated: Some(body), early_id: Some(early_id), new_task })
}

/// The dialect a request is answered in when it cannot be decoded (or its body not even read):
/// JSON-RPC without an `A2A-Version` header, or with a 0.x one, is a 0.3 caller.
pub fn dialect_hint(method: &Method, path: &str, headers: &HeaderMap) -> Dialect {
    let rest = split_agent_path(path).1;
    if *method == Method::POST && rest == "/" && legacy_version(headers) {
        Dialect::V03
    } else if is_early(method, rest, headers) {
        Dialect::Early
    } else {
        Dialect::V1
    }
}

/// No `A2A-Version` header, or a 0.x one: how 0.3 clients call.
fn legacy_version(headers: &HeaderMap) -> bool {
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
    version.is_empty() || version.starts_with("0.")
}

fn rest_refusal(error: A2aError) -> Refusal {
    Refusal { dialect: Dialect::V1, binding: Binding::Rest, rpc_id: None, error }
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

fn decode_json_rpc(headers: &HeaderMap, body: &[u8]) -> Result<(A2aCall, Option<Vec<u8>>), Refusal> {
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
            A2aError::InvalidRequest("the request must be a JSON-RPC 2.0 request object".into())
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
    if legacy && v03::operation_of(&method).is_some() {
        return decode_v03(&method, envelope.params, rpc_id);
    }
    let Some(operation) = Operation::from_method_name(&method) else {
        return Err(refuse(Some(rpc_id), A2aError::MethodNotFound("Method not found".into())));
    };
    if let Err(error) = check_version(headers) {
        // A 1.0 method name: the caller speaks 1.0 with a missing or wrong version.
        return Err(Refusal { dialect: Dialect::V1, binding: Binding::JsonRpc, rpc_id: Some(rpc_id), error });
    }
    let mut call = A2aCall::new(Binding::JsonRpc, operation);
    let params = envelope.params.map(RawValue::get).unwrap_or("{}");
    if let Err(error) = read_params(&mut call, params.as_bytes()) {
        return Err(Refusal { dialect: Dialect::V1, binding: Binding::JsonRpc, rpc_id: Some(rpc_id), error });
    }
    call.rpc_id = Some(rpc_id);
    Ok((call, None))
}

/// A 0.3 JSON-RPC request: translated into the 1.0 request envelope (same id), decoded from that.
fn decode_v03(method: &str, params: Option<&RawValue>, rpc_id: Value) -> Result<(A2aCall, Option<Vec<u8>>), Refusal> {
    let refuse = |rpc_id: &Value, error| Refusal {
        dialect: Dialect::V03,
        binding: Binding::JsonRpc,
        rpc_id: Some(rpc_id.clone()),
        error,
    };
    let request = v03::request_to_v1(method, params.map(|p| p.get().as_bytes()))
        .map_err(|e| refuse(&rpc_id, e.into_request_error()))?;
    let operation = request.operation();
    let params = serde_json::to_vec(&request).map_err(|_| refuse(&rpc_id, A2aError::Internal))?;
    let mut call = A2aCall::new(Binding::JsonRpc, operation);
    call.dialect = Dialect::V03;
    read_params(&mut call, &params).map_err(|e| refuse(&rpc_id, e))?;
    let body = jsonrpc::request(&rpc_id, operation.method_name(), Some(&request));
    call.rpc_id = Some(rpc_id);
    Ok((call, Some(body)))
}

/// The fields of a send request routing needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendParams {
    message: Option<MessageFields>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageFields {
    task_id: Option<String>,
    context_id: Option<String>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    skill_id: Option<Value>,
}

/// The task a task-scoped JSON-RPC call names: `id` for task calls, `taskId` for push configs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    id: Option<Value>,
    task_id: Option<Value>,
}

fn read_params(call: &mut A2aCall, params: &[u8]) -> Result<(), A2aError> {
    let bad = |e: serde_json::Error| A2aError::invalid_params(format!("invalid params: {e}"));
    match call.operation {
        Operation::SendMessage | Operation::SendStreamingMessage => {
            let params: SendParams = serde_json::from_slice(params).map_err(bad)?;
            read_send(call, params)
        }
        Operation::GetTask | Operation::CancelTask | Operation::SubscribeToTask => {
            let params: TaskParams = serde_json::from_slice(params).map_err(bad)?;
            call.task_id = Some(non_empty_string(params.id, "params.id")?);
            Ok(())
        }
        Operation::CreateTaskPushNotificationConfig
        | Operation::GetTaskPushNotificationConfig
        | Operation::ListTaskPushNotificationConfigs
        | Operation::DeleteTaskPushNotificationConfig => {
            let params: TaskParams = serde_json::from_slice(params).map_err(bad)?;
            call.task_id = Some(non_empty_string(params.task_id, "params.taskId")?);
            Ok(())
        }
        Operation::ListTasks | Operation::GetExtendedAgentCard => {
            serde_json::from_slice::<&RawValue>(params).map_err(bad)?;
            Ok(())
        }
    }
}

fn read_send(call: &mut A2aCall, params: SendParams) -> Result<(), A2aError> {
    let Some(message) = params.message else {
        return Err(A2aError::invalid_params("'message' is required"));
    };
    call.task_id = message.task_id.filter(|s| !s.is_empty());
    call.context_id = message.context_id.filter(|s| !s.is_empty());
    // The message's own skill wins over the request's: it is the more specific of the two.
    let skill = message.metadata.and_then(|m| m.skill_id).or_else(|| params.metadata.and_then(|m| m.skill_id));
    call.skill_id = match skill {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(_) => return Err(A2aError::invalid_params("'metadata.skillId' must be a non-empty string")),
    };
    Ok(())
}

fn non_empty_string(value: Option<Value>, name: &str) -> Result<String, A2aError> {
    match value {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(A2aError::invalid_params(format!("'{name}' is required and must be a non-empty string"))),
    }
}

fn decode_rest(
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<A2aCall, A2aError> {
    let (operation, task_id) = rest_operation(method, path)?;
    check_version(headers)?;
    let mut call = A2aCall::new(Binding::Rest, operation);
    call.task_id = task_id;
    call.rest_path = Some(match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    });
    if operation.is_send() {
        let params: SendParams = serde_json::from_slice(body).map_err(|e| {
            if e.is_data() {
                A2aError::invalid_params(format!("invalid request body: {e}"))
            } else {
                A2aError::Parse(format!("invalid JSON: {e}"))
            }
        })?;
        read_send(&mut call, params)?;
    }
    Ok(call)
}

/// Maps an HTTP+JSON method and path (below the binding's base) to an operation and task id.
fn rest_operation(method: &Method, path: &str) -> Result<(Operation, Option<String>), A2aError> {
    let not_found = || A2aError::MethodNotFound(format!("no A2A operation at {method} {path}"));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let is = |m: Method| *method == m;
    let op = match segments.as_slice() {
        ["message:send"] if is(Method::POST) => (Operation::SendMessage, None),
        ["message:stream"] if is(Method::POST) => (Operation::SendStreamingMessage, None),
        ["tasks"] if is(Method::GET) => (Operation::ListTasks, None),
        ["extendedAgentCard"] if is(Method::GET) => (Operation::GetExtendedAgentCard, None),
        ["tasks", task] => {
            if let Some(id) = task.strip_suffix(":cancel") {
                if !is(Method::POST) {
                    return Err(not_found());
                }
                (Operation::CancelTask, Some(id))
            } else if let Some(id) = task.strip_suffix(":subscribe") {
                if !is(Method::GET) && !is(Method::POST) {
                    return Err(not_found());
                }
                (Operation::SubscribeToTask, Some(id))
            } else if is(Method::GET) && !task.contains(':') {
                (Operation::GetTask, Some(*task))
            } else {
                return Err(not_found());
            }
        }
        ["tasks", task, "pushNotificationConfigs"] if is(Method::POST) => {
            (Operation::CreateTaskPushNotificationConfig, Some(*task))
        }
        ["tasks", task, "pushNotificationConfigs"] if is(Method::GET) => {
            (Operation::ListTaskPushNotificationConfigs, Some(*task))
        }
        ["tasks", task, "pushNotificationConfigs", config] if !config.is_empty() && is(Method::GET) => {
            (Operation::GetTaskPushNotificationConfig, Some(*task))
        }
        ["tasks", task, "pushNotificationConfigs", config] if !config.is_empty() && is(Method::DELETE) => {
            (Operation::DeleteTaskPushNotificationConfig, Some(*task))
        }
        _ => return Err(not_found()),
    };
    let task_id = match op.1 {
        None => None,
        Some(raw) => Some(percent_decode(raw).filter(|id| !id.is_empty()).ok_or_else(not_found)?),
    };
    Ok((op.0, task_id))
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
            assert_eq!(call.rest_path.as_deref(), Some(path));
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
        let decoded = decode_any(&Method::POST, "/", None, &HeaderMap::new(), body, None).expect("0.3 send");
        let call = &decoded.call;
        assert_eq!(
            (call.dialect, call.binding, call.operation),
            (Dialect::V03, Binding::JsonRpc, Operation::SendMessage)
        );
        assert_eq!((call.task_id.as_deref(), call.skill_id.as_deref()), (Some("t1"), Some("echo")));
        let one: Value = serde_json::from_slice(decoded.translated.as_deref().expect("translated")).unwrap();
        assert_eq!(one["method"], "SendMessage");
        assert_eq!(one["id"], "q");
        assert_eq!(one["params"]["message"]["role"], "ROLE_USER");
        assert_eq!(one["params"]["message"]["parts"][0], serde_json::json!({"text": "hi"}));
        assert_eq!(one["params"]["configuration"]["returnImmediately"], true);
        let mut v03 = HeaderMap::new();
        v03.insert("a2a-version", "0.3".parse().unwrap());
        let get = br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t9"}}"#;
        let decoded = decode_any(&Method::POST, "/agents/echo/", None, &v03, get, None).expect("0.3 get");
        assert_eq!((decoded.call.operation, decoded.call.task_id.as_deref()), (Operation::GetTask, Some("t9")));
        assert_eq!(decoded.call.agent.as_deref(), Some("echo"));
        // With a 1.x header a 0.3 method name is just unknown; 1.0 requests are not translated.
        let refusal = decode_any(&Method::POST, "/", None, &v1(), get, None).unwrap_err();
        assert_eq!(refusal.dialect, Dialect::V1);
        assert!(matches!(refusal.error, A2aError::MethodNotFound(_)));
        let same = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t9"}}"#;
        assert!(decode_any(&Method::POST, "/", None, &v1(), same, None).unwrap().translated.is_none());
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
            let refusal =
                decode_any(&Method::POST, "/", None, &HeaderMap::new(), body.as_bytes(), None).expect_err(body);
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
            let refusal = decode_any(&Method::POST, "/", None, &v1(), body.as_bytes(), None).expect_err(body);
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
            let refusal = decode_any(method, path, None, &v1(), body.as_bytes(), None).expect_err(path);
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
            let refusal = decode_any(method, path, None, &HeaderMap::new(), body.as_bytes(), None).expect_err(&label);
            assert_eq!(refusal.dialect, Dialect::Early, "{label}");
            let rendered = super::super::errors::render_in(&refusal.error, refusal.dialect, refusal.binding, None);
            assert!(rendered.status.is_client_error(), "{label}: {}", rendered.status);
            let v: Value = serde_json::from_slice(&rendered.body).unwrap();
            assert!(v["detail"].is_string(), "{label}: {v}");
            assert_eq!(v.as_object().map(|o| o.len()), Some(1), "{label}: {v}");
        }
    }

    #[test]
    fn early_requests_are_translated_into_1_0_rest_on_the_agent_task() {
        let id = "4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b";
        let body = format!(
            r#"{{"id":"{id}","message":{{"role":"user","parts":[{{"type":"text","text":"hi"}}]}},"metadata":{{"skillId":"echo"}}}}"#
        );
        let decoded =
            decode_any(&Method::POST, "/agents/e/tasks/sendSubscribe", None, &HeaderMap::new(), body.as_bytes(), None)
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
        let ids = EarlyIds::new(std::time::Duration::from_secs(60));
        ids.insert(
            id,
            crate::protocol::early_ids::AgentTask { task_id: "agent-7".into(), context_id: Some("c".into()) },
        );
        let decoded = decode_any(
            &Method::GET,
            &format!("/tasks/{id}"),
            Some("historyLength=2"),
            &HeaderMap::new(),
            b"",
            Some(&ids),
        )
        .expect("get");
        assert_eq!(
            (decoded.call.task_id.as_deref(), decoded.call.rest_path.as_deref()),
            (Some("agent-7"), Some("/tasks/agent-7?historyLength=2"))
        );
        // A reused id is refused; with the 1.0 header, GET /tasks/{id} is 1.0.
        let refusal =
            decode_any(&Method::POST, "/tasks/send", None, &HeaderMap::new(), body.as_bytes(), Some(&ids)).unwrap_err();
        assert_eq!(refusal.dialect, Dialect::Early);
        let v1 = decode_any(&Method::GET, &format!("/tasks/{id}"), None, &v1(), b"", Some(&ids)).expect("1.0 get");
        assert_eq!((v1.call.dialect, v1.call.task_id.as_deref()), (Dialect::V1, Some(id)));
    }
}
