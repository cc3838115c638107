use http::Method;
use serde_json::{Value, json};

use super::*;
use a2a_core::Operation;

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
    assert_eq!(Route::of(&Method::GET, "/card", decode).map(|r| r.operation()), Some(Operation::GetExtendedAgentCard));
    assert_eq!(Route::of(&Method::POST, "/card", decode), None);
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
        params_of(&set, body(json!({"parent": "tasks/t2", "config": {"pushNotificationConfig": {"url": "u"}}})), None)
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
    let update = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}});
    let rpc = event_to_rpc(update).expect("event");
    assert_eq!((&rpc["kind"], &rpc["final"]), (&json!("status-update"), &json!(false)));
    assert_eq!(event_to_rest(rpc)["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
    let config = json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "http://h"}});
    let rest = result_to_rest(Operation::GetTaskPushNotificationConfig, config.clone());
    assert_eq!(rest["name"], "tasks/t/pushNotificationConfigs/c");
    assert_eq!(result_to_rpc(Operation::GetTaskPushNotificationConfig, rest).expect("rpc"), config);
    assert_eq!((status_of(-32001), code_of(404, Operation::GetTask)), (404, -32001));
}

/// ProtoJSON leaves a false `blocking` out, and the SDK's 0.3 server answers such a send at once
/// (`tests/fixtures/wire-samples/rest-0.3.26-30-send-without-blocking-answers-at-once.txt`: no
/// `configuration`, the task comes back submitted); JSON-RPC's absent `blocking` waits. So a send
/// is translated with `blocking` written out, both ways.
#[test]
fn a_send_without_blocking_does_not_wait_in_either_direction() {
    let capture = std::fs::read_to_string(
        a2a_e2e::repo_root()
            .join("tests/fixtures/wire-samples/rest-0.3.26-30-send-without-blocking-answers-at-once.txt"),
    )
    .expect("capture");
    assert!(!capture.contains("blocking") && capture.contains("TASK_STATE_SUBMITTED"), "{capture}");
    let body = json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]}});
    let Value::Object(body) = body else { unreachable!() };
    let params = params_of(&Route::Send, body.clone(), None).unwrap();
    assert_eq!(params["configuration"]["blocking"], false, "{params}");
    let params = params_of(&Route::Stream, body, None).unwrap();
    assert!(params.get("configuration").is_none(), "a stream has nothing to wait for: {params}");
    let rpc = json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}});
    let (_, _, rest) = request_to_rest(Operation::SendMessage, rpc).unwrap();
    assert_eq!(rest.unwrap()["configuration"]["blocking"], true);
}
