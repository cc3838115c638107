//! A caller's request in any binding and dialect, then an agent's answer to it: decoded, written for
//! each kind of agent, the answer read and turned back into the caller's dialect. Nothing may panic;
//! a refusal is never a server error; and the request the gateway writes for a 1.0 JSON-RPC agent
//! decodes to the request it judged (the agent reads exactly that).
#![no_main]

use std::sync::LazyLock;

use a2a_core::{A2aCall, Binding, Dialect};
use a2a_gateway::protocol::agent_side::{self, EventConverter};
use a2a_gateway::protocol::bridge::{self, Answering};
use a2a_gateway::protocol::decode::{decode_any, encode};
use a2a_gateway::protocol::{agent_errors, json_limits};
use arbitrary::Arbitrary;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    method: u8,
    path: u8,
    tail: &'a str,
    query: Option<&'a str>,
    version: u8,
    content_type: u8,
    body: &'a [u8],
    answer_status: u16,
    answer_is_stream: bool,
    answer: &'a [u8],
}

const METHODS: [Method; 5] = [Method::POST, Method::GET, Method::DELETE, Method::PUT, Method::PATCH];

fn path(choice: u8, tail: &str) -> String {
    match choice % 20 {
        0 => "/".into(),
        1 => "/message:send".into(),
        2 => "/message:stream".into(),
        3 => format!("/tasks/{tail}"),
        4 => format!("/tasks/{tail}:cancel"),
        5 => format!("/tasks/{tail}:subscribe"),
        6 => "/tasks".into(),
        7 => format!("/tasks/{tail}/pushNotificationConfigs"),
        8 => format!("/tasks/{tail}/pushNotificationConfigs/{tail}"),
        9 => "/v1/message:send".into(),
        10 => format!("/v1/tasks/{tail}"),
        11 => "/tasks/send".into(),
        12 => "/tasks/sendSubscribe".into(),
        13 => format!("/tasks/{tail}/cancel"),
        14 => format!("/tasks/{tail}/send"),
        15 => format!("/agents/{tail}"),
        16 => format!("/agents/a/{tail}"),
        17 => "/extendedAgentCard".into(),
        18 => "/v1/message:stream".into(),
        _ => format!("/{tail}"),
    }
}

fn headers(version: u8, content_type: u8) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let version = match version % 5 {
        0 => None,
        1 => Some("1.0"),
        2 => Some("0.3"),
        3 => Some("2.0"),
        _ => Some("1"),
    };
    if let Some(version) = version {
        headers.insert("a2a-version", HeaderValue::from_static(version));
    }
    let content_type = match content_type % 4 {
        0 => None,
        1 => Some("application/json"),
        2 => Some("application/a2a+json; charset=utf-8"),
        _ => Some("text/plain"),
    };
    if let Some(content_type) = content_type {
        headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    headers
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap());

fuzz_target!(|input: Input<'_>| {
    let method = &METHODS[usize::from(input.method) % METHODS.len()];
    let path = path(input.path, input.tail);
    let headers = headers(input.version, input.content_type);
    let _ = json_limits::check_depth(input.body, 32);
    let decoded = match decode_any(method, &path, input.query, &headers, input.body) {
        Ok(decoded) => decoded,
        Err(refusal) => {
            let response = refusal.into_response();
            assert!(!response.status().is_server_error(), "a refusal of {path}: {}", response.status());
            return;
        }
    };
    let (call, request) = (&decoded.call, &decoded.request);
    round_trip(call, request);
    if call.binding == Binding::Rest {
        rest_round_trip(method, call, request);
    }

    // Written for each kind of agent.
    let _ = agent_side::rebind_call(call, request.clone());
    let _ = agent_side::agent_call(Dialect::V03, request.clone(), call.rpc_id.as_ref());
    let _ = agent_side::agent_call(Dialect::Early, request.clone(), call.rpc_id.as_ref());
    let _ = agent_side::agent_call_v03_rest(request.clone());
    if let Err(error) = a2a_gateway::protocol::grpc::back::request_message(request, Some("tenant")) {
        panic!("a checked request does not go to a gRPC agent ({error:?}): {request:?}");
    }

    // The agent's answer, read by each kind of leg.
    let status = StatusCode::from_u16(input.answer_status % 500 + 100).unwrap_or(StatusCode::OK);
    let answer = input.answer;
    for binding in [Binding::JsonRpc, Binding::Rest] {
        let _ = agent_errors::read_answer(binding, Some("application/json"), answer, call.rpc_id.as_ref(), true);
        let _ = agent_errors::screen(binding, status, answer);
    }
    let _ = agent_side::unary_to_v1(Dialect::V03, call, status, answer);
    let _ = agent_side::unary_to_v1(Dialect::Early, call, status, answer);
    let _ = agent_side::unary_rebound(call, status, answer);
    let _ = agent_side::unary_v03_rest_to_v1(call, status, answer);
    let _ = agent_side::continuation_stream(call, status, answer);
    for converter in [
        EventConverter::new(Dialect::V03, call),
        EventConverter::new(Dialect::Early, call),
        EventConverter::new(Dialect::V03, call).v03_rest(),
    ] {
        let mut converter = converter;
        if let Err(unread) = converter.event(answer, &mut |_| {}) {
            let _ = converter.unread_event(unread);
        }
    }

    // A 1.0 answer (or stream) turned into the caller's dialect.
    let answering = Answering {
        dialect: call.dialect,
        binding: call.binding,
        operation: call.operation,
        rpc_id: call.rpc_id.clone(),
        early_id: decoded.early_id.clone(),
        new_task: decoded.new_task,
        early_ids: None,
        early_scope: None,
    };
    let mut response = http::Response::new(axum::body::Body::from(answer.to_vec()));
    *response.status_mut() = status;
    let content_type = if input.answer_is_stream { "text/event-stream" } else { "application/json" };
    response.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    RUNTIME.block_on(async move {
        let converted = bridge::answer(answering, response).await;
        let _ = converted.into_body().collect().await;
    });
});

/// The body written for a 1.0 JSON-RPC agent, read back as the gateway reads a caller's: the same
/// request.
fn round_trip(call: &A2aCall, request: &a2a_model::Request) {
    let mut as_rpc = call.clone();
    as_rpc.binding = Binding::JsonRpc;
    as_rpc.rpc_id = Some(serde_json::json!(7));
    let written = encode(&as_rpc, request);
    let headers = headers(1, 1);
    match decode_any(&Method::POST, "/", None, &headers, &written.body) {
        Ok(again) => assert_eq!(&again.request, request, "written as {}", String::from_utf8_lossy(&written.body)),
        Err(refusal) => panic!(
            "the gateway refuses what it wrote for the agent ({:?}): {}",
            refusal.error,
            String::from_utf8_lossy(&written.body)
        ),
    }
}

/// The path and body written for a 1.0 HTTP+JSON agent (under the caller's method, as the gateway
/// sends it), read back as the gateway reads a caller's: the same request.
fn rest_round_trip(method: &Method, call: &A2aCall, request: &a2a_model::Request) {
    let written = encode(call, request);
    let target = written.rest_path.as_deref().expect("an HTTP+JSON request has a path");
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    let headers = headers(1, 1);
    match decode_any(method, path, query, &headers, &written.body) {
        Ok(again) => assert_eq!(
            &again.request,
            request,
            "written as {method} {target} {}",
            String::from_utf8_lossy(&written.body)
        ),
        Err(refusal) => panic!(
            "the gateway refuses what it wrote for the agent ({:?}): {method} {target} {}",
            refusal.error,
            String::from_utf8_lossy(&written.body)
        ),
    }
}
