//! Holds the README's cost table ("What a call costs in parsing and writing") to the code: counts
//! the JSON passes and writes of a unary SendMessage on each caller path, from the caller's bytes to
//! the body for the agent, and of the agent's answer on its way back (`a2a_model::passes`).

use a2a_core::{Binding, Dialect, Operation};
use a2a_model::passes::{Passes, counted, so_far};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::json;

use super::agent_errors::{Verdict, read_answer, screen};
use super::bridge::{self, Answering};
use super::decode::{decode_any, encode};

const MESSAGE: &str =
    r#"{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}],"metadata":{"skillId":"bench"}}"#;

fn v1() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("a2a-version", HeaderValue::from_static("1.0"));
    headers
}

/// The passes and writes from the caller's bytes to the agent's body: the decoder's, then the
/// native leg's writing of the checked request.
fn request(method: Method, path: &str, headers: HeaderMap, body: &str) -> Passes {
    let (written, passes) = counted(|| {
        decode_any(&method, path, None, &headers, body.as_bytes())
            .map(|decoded| encode(&decoded.call, &decoded.request))
    });
    let written = written.unwrap_or_else(|refusal| panic!("{path} {body}: {:?}", refusal.error));
    assert!(!written.body.is_empty(), "a body for the agent");
    passes
}

fn passes(reads: u32, writes: u32) -> Passes {
    Passes { reads, writes }
}

#[test]
fn a_unary_send_is_read_once_and_written_once_for_the_agent() {
    let rpc = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{MESSAGE}}}}}"#);
    assert_eq!(request(Method::POST, "/", v1(), &rpc), passes(1, 1), "1.0 JSON-RPC, method before params");

    let params_first = format!(r#"{{"jsonrpc":"2.0","id":1,"params":{{"message":{MESSAGE}}},"method":"SendMessage"}}"#);
    assert_eq!(request(Method::POST, "/", v1(), &params_first), passes(2, 1), "1.0 JSON-RPC, params first");

    let rest = format!(r#"{{"message":{MESSAGE}}}"#);
    assert_eq!(request(Method::POST, "/message:send", v1(), &rest), passes(2, 2), "1.0 HTTP+JSON");

    let v03_message = r#"{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hello"}]}"#;
    let v03 = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{v03_message}}}}}"#);
    assert_eq!(request(Method::POST, "/", HeaderMap::new(), &v03), passes(2, 1), "0.3 JSON-RPC");

    let v03_rest = format!(r#"{{"message":{v03_message}}}"#);
    assert_eq!(request(Method::POST, "/v1/message:send", HeaderMap::new(), &v03_rest), passes(2, 2), "0.3 HTTP+JSON");

    let early = r#"{"message":{"role":"user","parts":[{"type":"text","text":"hello"}]}}"#;
    let early_path = "/tasks/0b5a0c8e-8a53-4b2f-9c1e-2f6a8f4b7d10/send";
    assert_eq!(request(Method::POST, early_path, HeaderMap::new(), early), passes(2, 1), "early REST");
}

#[test]
fn a_1_0_answer_is_read_once_on_its_way_back() {
    let task = json!({"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}});
    let rpc = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": {"task": task}})).unwrap();
    let ((verdict, fact), passes_made) = counted(|| {
        let verdict = screen(Binding::JsonRpc, StatusCode::OK, &rpc);
        (verdict, read_answer(Binding::JsonRpc, Some("application/json"), &rpc, Some(&json!(1)), false))
    });
    assert!(matches!(verdict, Verdict::Pass));
    assert!(fact.is_ok_and(|fact| fact.is_some()), "the task's facts are read");
    assert_eq!(passes_made, passes(1, 0), "screened by a scan, checked and read in one pass");
}

#[tokio::test]
async fn a_0_3_callers_answer_costs_two_more_passes_and_one_write() {
    let task = json!({"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}});
    let rpc = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": {"task": task}})).unwrap();
    let answering = Answering {
        dialect: Dialect::V03,
        binding: Binding::JsonRpc,
        operation: Operation::SendMessage,
        rpc_id: Some(json!(1)),
        early_id: None,
        new_task: false,
        early_ids: None,
        early_scope: None,
    };
    let mut response = http::Response::new(axum::body::Body::from(rpc));
    response.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // The test runs on one thread (a current-thread runtime): the count is this answer's.
    let start = so_far();
    let answer = bridge::answer(answering, response).await;
    let passes_made = so_far().since(start);
    let body = http_body_util::BodyExt::collect(answer.into_body()).await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["kind"], "task", "{v}");
    assert_eq!(passes_made, passes(2, 1), "the envelope, its result into the model, the 0.3 answer written");
}
