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

use a2a_core::{A2aCall, A2aError, Binding, Dialect, Operation};
pub use a2a_core::{Checked, EarlyCall};
use http::{HeaderMap, Method};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::agent_side::segment;
use super::strict;
use super::translate::{TranslateError, early, jsonrpc, v03};
use a2a_model::{self as model, Request};

pub use super::errors::Refusal;

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

/// A decoded request.
#[derive(Debug)]
pub struct Decoded {
    pub call: A2aCall,
    pub request: Request,
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

/// Decodes one request of any dialect into the checked 1.0 request (written for the agent only by
/// the leg that sends it, [`encode`]).
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
        return Ok(Decoded { call, request, early_id: Some(early_id), new_task });
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
    Ok(Decoded { call, request, early_id: None, new_task: false })
}

/// Decodes a gRPC call: `params` is its request message in ProtoJSON, the JSON-RPC params of the same
/// method, parsed by the same [`Request::parse`] into the same checked model. Inside, the call is a
/// 1.0 JSON-RPC call under a fresh id (one envelope for answers and errors, `POST` for every
/// operation); the gRPC front writes the answer back as gRPC. The package `lf.a2a.v1` says 1.0, so a
/// missing `a2a-version` is no 0.3 caller (another major version is refused).
pub fn decode_grpc(operation: Operation, params: &[u8], headers: &HeaderMap) -> Result<Decoded, A2aError> {
    if headers.contains_key(crate::protocol::VERSION_HEADER) {
        check_version(headers)?;
    }
    a2a_model::passes::read();
    let params: &RawValue = serde_json::from_slice(params).map_err(|_| A2aError::Internal)?;
    let mut request =
        Request::parse(operation, Some(params)).map_err(|e| TranslateError::from(e).into_request_error())?;
    let mut call = A2aCall::new(Binding::JsonRpc, operation);
    call.rpc_id = Some(Value::String(uuid::Uuid::new_v4().to_string()));
    read_facts(&mut call, &mut request)?;
    Ok(Decoded { call, request, early_id: None, new_task: false })
}

/// Whether a request is in the early REST dialect: its paths, except that `GET /tasks/{id}` is 1.0's
/// too and is early only without an `A2A-Version` header.
fn is_early(method: &Method, rest: &str, headers: &HeaderMap) -> bool {
    match early::Route::of(method, rest) {
        None | Some(early::Route::Card) => false,
        Some(early::Route::Get(_)) => !headers.contains_key(crate::protocol::VERSION_HEADER),
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
        match strict::from_slice::<Value>(body).map_err(json_refusal)? {
            Value::Object(object) => object,
            _ => return Err(A2aError::invalid_params("the request body must be a JSON object")),
        }
    };
    let history = match route {
        v03::rest::Route::Get(_) => read_query(query, GET_TASK_QUERY)?.pop().and_then(|(_, v)| v.as_i64()),
        _ => None,
    };
    let params = v03::rest::params_of(&route, object, history).map_err(TranslateError::into_request_error)?;
    a2a_model::passes::write();
    let params = serde_json::to_vec(&params).map_err(|_| A2aError::Internal)?;
    let method_name = v03::method_of(route.operation()).ok_or(A2aError::Internal)?;
    let request = v03::request_to_v1(method_name, Some(&params)).map_err(TranslateError::into_request_error)?;
    let mut call = A2aCall::new(Binding::Rest, request.operation());
    call.dialect = Dialect::V03;
    Ok((call, request))
}

/// No `A2A-Version` header, or a 0.x one: how 0.3 clients call.
fn legacy_version(headers: &HeaderMap) -> bool {
    let version =
        headers.get(crate::protocol::VERSION_HEADER).and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
    version.is_empty() || version.starts_with("0.")
}

fn rest_refusal(error: A2aError) -> Refusal {
    Refusal { dialect: Dialect::V1, binding: Binding::Rest, rpc_id: None, error }
}

mod encode;
mod facts;
mod json_rpc;
mod rest;

pub use self::encode::{Written, encode, rest_form};
use self::facts::read_facts;
use self::json_rpc::{check_version, decode_json_rpc, json_refusal};
use self::rest::{GET_TASK_QUERY, clip, decode_rest, percent_decode, read_query};

#[cfg(test)]
mod tests;
