//! In-process tests of [`a2a_stack`]: the order of its layers and how a refusal is rendered in each
//! dialect, with a stand-in innermost service (no network, no backend).

use std::sync::{Arc, Mutex};

use a2a_core::{A2aError, CallRequest};
use axum::body::Body;
use http::{Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceExt};

use super::a2a_stack;
use crate::config::Config;
use crate::gateway::{Gateway, Shared};

/// What the innermost service saw of one call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    caller: String,
    backend: Option<String>,
    /// The checked request carries the send's message.
    message: bool,
}

/// Answers every call it is given with an empty 1.0 JSON-RPC result and remembers what it saw.
#[derive(Clone, Default)]
struct Innermost(Arc<Mutex<Vec<Seen>>>);

impl Innermost {
    fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

impl Service<CallRequest> for Innermost {
    type Response = Response<Body>;
    type Error = A2aError;
    type Future = std::future::Ready<Result<Response<Body>, A2aError>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), A2aError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let context = request.body();
        self.0.lock().unwrap().push(Seen {
            caller: context.caller.id.to_string(),
            backend: context.route().map(|r| r.backend.to_string()),
            message: context.checked.message().is_some(),
        });
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"message": {
            "messageId": "answer", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}}});
        let mut response = Response::new(Body::from(answer.to_string()));
        response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        std::future::ready(Ok(response))
    }
}

fn card() -> Value {
    json!({
        "name": "echo", "description": "echoes", "version": "1",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:9/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": []}]
    })
}

/// A gateway with one backend, `echo` (never contacted), and the policy sections in `extra`.
async fn gateway(extra: &str) -> Arc<Gateway> {
    crate::install_crypto_provider();
    let yaml = format!("backends:\n  - {{name: echo, url: 'http://127.0.0.1:9'}}\n{extra}");
    let config = Config::parse(&yaml, &|_| None).expect("a valid configuration");
    let policies = config.compile().expect("valid policies");
    let shared = Shared::new(&config, None).await.expect("shared state");
    let gateway = Gateway::new(config, policies, "http://gateway.test".into(), shared, None, &CancellationToken::new())
        .expect("a gateway");
    gateway.registry.install_card("echo", card());
    gateway
}

// `a2a_<id>_<64 hex digits>`, the form of generated keys.
const ALICE_KEY: &str = "a2a_a_00000000000000000000000000000000000000000000000000000000000000a1";
const BOB_KEY: &str = "a2a_b_00000000000000000000000000000000000000000000000000000000000000b0";

fn keys() -> String {
    let (alice, bob) = (a2a_policies::auth::hash_key(ALICE_KEY), a2a_policies::auth::hash_key(BOB_KEY));
    format!(
        "auth:\n  api_keys:\n    keys:\n      - {{id: a, hash: '{alice}', caller: alice}}\n      - {{id: b, hash: '{bob}', caller: bob}}\n"
    )
}

fn message(text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}],
        "metadata": {"skillId": "echo"}})
}

/// A 1.0 JSON-RPC SendMessage to `path` (the gateway's root or an agent's).
fn send(path: &str, key: Option<&str>, message: Value) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": message}});
    let mut request = Request::post(path)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Body::from(body.to_string()))
        .unwrap();
    if let Some(key) = key {
        request.headers_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    request
}

async fn answer<S>(stack: &S, request: Request<Body>) -> (StatusCode, Value)
where
    S: Service<Request<Body>, Response = Response<Body>, Error = std::convert::Infallible> + Clone,
{
    let response = stack.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_call_that_passes_reaches_the_innermost_service_with_every_fact() {
    let innermost = Innermost::default();
    let gateway = gateway(&keys()).await;
    let stack = a2a_stack(gateway, innermost.clone());
    let (status, body) = answer(&stack, send("/", Some(ALICE_KEY), message("hi"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["message"]["messageId"], "answer", "{body}");
    let seen = innermost.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].backend.as_deref(), seen[0].message), (Some("echo"), true));
    assert!(seen[0].caller.contains("alice"), "{seen:?}");
}

#[tokio::test]
async fn authentication_comes_before_routing() {
    let innermost = Innermost::default();
    let stack = a2a_stack(gateway(&keys()).await, innermost.clone());
    // An agent that does not exist: an unauthenticated caller learns nothing about it.
    let (status, body) = answer(&stack, send("/agents/nobody/", None, message("hi"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], crate::protocol::errors::CODE_UNAUTHENTICATED, "{body}");
    // Authenticated, the same probe is answered by routing.
    let (status, body) = answer(&stack, send("/agents/nobody/", Some(ALICE_KEY), message("hi"))).await;
    assert_ne!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(innermost.seen().is_empty());
}

#[tokio::test]
async fn the_caller_quota_meters_probes_and_denials_before_routing_and_authorization() {
    let innermost = Innermost::default();
    let extra = format!(
        "{}permissions:\n  default: deny\n  rules:\n    - {{skills: [echo], callers: ['key:alice']}}\nrate_limit:\n  default: {{per_minute: 1, burst: 2}}\n",
        keys()
    );
    let stack = a2a_stack(gateway(&extra).await, innermost.clone());
    // bob may not use echo: refused by authorization, then by his quota (a denial used it up too).
    let (status, body) = answer(&stack, send("/", Some(BOB_KEY), message("hi"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // A probe for an agent that does not exist uses the quota as well.
    let (status, body) = answer(&stack, send("/agents/nobody/", Some(BOB_KEY), message("hi"))).await;
    assert_ne!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let (status, body) = answer(&stack, send("/agents/nobody/", Some(BOB_KEY), message("hi"))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["code"], crate::protocol::errors::CODE_RATE_LIMITED, "{body}");
    // alice's quota is her own.
    let (status, body) = answer(&stack, send("/", Some(ALICE_KEY), message("hi"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(innermost.seen().len(), 1);
}

#[tokio::test]
async fn validation_runs_after_authorization() {
    let innermost = Innermost::default();
    let extra = format!(
        "{}permissions:\n  default: deny\n  rules:\n    - {{skills: [echo], callers: ['key:alice']}}\nvalidation:\n  limits: {{max_text_bytes: 8}}\n",
        keys()
    );
    let stack = a2a_stack(gateway(&extra).await, innermost.clone());
    let long = "longer than eight bytes";
    // bob may not use the skill: he is told so, not what is wrong with his input.
    let (status, body) = answer(&stack, send("/", Some(BOB_KEY), message(long))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], crate::protocol::errors::CODE_PERMISSION_DENIED, "{body}");
    // alice may: her input is checked.
    let (status, body) = answer(&stack, send("/", Some(ALICE_KEY), message(long))).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::OK, &json!(-32602)), "{body}");
    let (status, body) = answer(&stack, send("/", Some(ALICE_KEY), message("short"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(innermost.seen().len(), 1, "only the valid, permitted call gets through");
}

#[tokio::test]
async fn a_refusal_is_rendered_in_the_callers_dialect_and_binding() {
    let innermost = Innermost::default();
    let extra = format!("{}permissions:\n  default: deny\n", keys());
    let stack = a2a_stack(gateway(&extra).await, innermost.clone());
    let bearer = format!("Bearer {ALICE_KEY}");
    let request = |method: &str, path: &str, version: Option<&str>, body: Value| {
        let mut builder = Request::builder().method(method).uri(path).header("authorization", &bearer);
        if let Some(version) = version {
            builder = builder.header("a2a-version", version);
        }
        builder.header("content-type", "application/json").body(Body::from(body.to_string())).unwrap()
    };
    let denied = crate::protocol::errors::CODE_PERMISSION_DENIED;

    // 1.0 JSON-RPC: the error object with the request's id, and the policy's HTTP status.
    let rpc = json!({"jsonrpc": "2.0", "id": "r1", "method": "SendMessage", "params": {"message": message("hi")}});
    let (status, body) = answer(&stack, request("POST", "/", Some("1.0"), rpc)).await;
    assert_eq!((status, &body["id"], &body["error"]["code"]), (StatusCode::FORBIDDEN, &json!("r1"), &json!(denied)));
    assert_eq!(body["error"]["data"][0]["reason"], "PERMISSION_DENIED", "{body}");

    // 1.0 HTTP+JSON: a google.rpc.Status body.
    let rest = json!({"message": message("hi")});
    let (status, body) = answer(&stack, request("POST", "/agents/echo/message:send", Some("1.0"), rest)).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::FORBIDDEN, &json!(403)), "{body}");
    assert_eq!(body["error"]["status"], "PERMISSION_DENIED", "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "PERMISSION_DENIED", "{body}");

    // 0.3 JSON-RPC: the 0.3 error object, `data: null`.
    let message03 = json!({"kind": "message", "messageId": "m03", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}], "metadata": {"skillId": "echo"}});
    let rpc03 = json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message03}});
    let (status, body) = answer(&stack, request("POST", "/", None, rpc03)).await;
    assert_eq!((status, &body["id"], &body["error"]["code"]), (StatusCode::FORBIDDEN, &json!(3), &json!(denied)));
    assert_eq!(body["error"]["data"], Value::Null, "{body}");

    // Early REST: a status and a detail.
    let early = json!({"id": uuid::Uuid::new_v4().to_string(),
        "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}, "metadata": {"skillId": "echo"}});
    let (status, body) = answer(&stack, request("POST", "/tasks/send", None, early)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["detail"].is_string() && body.as_object().is_some_and(|o| o.len() == 1), "{body}");

    assert!(innermost.seen().is_empty(), "no refused call reaches the innermost service");
}

/// The request path's futures stay small: each level of async state is copied whole into the future
/// that awaits it (or into its box), so a large one costs a copy per call at every level above it.
/// Bounds with room over today's sizes (x86-64: the decode future 2544 bytes, the forward service's
/// 1152; before the forward was boxed and the inner call started by a plain function, 4184 and 4216).
#[tokio::test]
async fn the_request_paths_futures_stay_small() {
    let gateway = gateway("").await;
    let stack = a2a_stack(gateway.clone(), super::ForwardService::new(gateway.clone()));
    let decode = super::ServeA2a::serve(&stack, send("/", None, message("hi")));
    let size = std::mem::size_of_val(&*decode);
    assert!(size <= 3072, "the decode future is {size} bytes");

    let call = a2a_core::A2aCall::new(a2a_core::Binding::JsonRpc, a2a_core::Operation::SendMessage);
    let context = a2a_core::CallContext::for_test(call, "r-1");
    let forward = super::ForwardService::new(gateway).call(Request::new(Box::new(context)));
    let size = std::mem::size_of_val(&*forward);
    assert!(size <= 1536, "the forward service's future is {size} bytes");
}
