use super::*;

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("json")
}

/// The checked request of a JSON-RPC body, as the decoder reads it.
fn request_of(operation: Operation, body: &[u8]) -> Request {
    let envelope = jsonrpc::Envelope::parse(body).expect("envelope");
    Request::parse(operation, envelope.params).expect("request")
}

fn get_task(id: &str, history_length: Option<i32>) -> Request {
    Request::GetTask(model::GetTaskRequest { tenant: None, id: id.into(), history_length })
}

#[test]
fn a_1_0_send_becomes_a_0_3_request_and_its_answer_comes_back_in_1_0() {
    let mut call = A2aCall::new(Binding::JsonRpc, Operation::SendMessage);
    call.rpc_id = Some(json!("r"));
    let body = br#"{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    let request = request_of(Operation::SendMessage, body);
    let out = agent_call(Dialect::V03, request, call.rpc_id.as_ref()).expect("0.3 call");
    let sent = json_of(&out.body);
    assert_eq!((&sent["method"], &sent["id"]), (&json!("message/send"), &json!("r")));
    assert_eq!(sent["params"]["message"]["parts"][0], json!({"kind": "text", "text": "hi"}));
    let answer = br#"{"jsonrpc":"2.0","id":"r","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}"#;
    let (status, v1) = unary_to_v1(Dialect::V03, &call, StatusCode::OK, answer);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&v1)["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let error = br#"{"jsonrpc":"2.0","id":"r","error":{"code":-32001,"message":"Task not found","data":null}}"#;
    let rest = A2aCall { binding: Binding::Rest, ..call.clone() };
    let (status, v1) = unary_to_v1(Dialect::V03, &rest, StatusCode::OK, error);
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&v1)["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
}

#[test]
fn early_answers_and_errors_come_back_in_1_0() {
    let mut call = A2aCall::new(Binding::Rest, Operation::GetTask);
    call.task_id = Some("4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b".into());
    let request = get_task("4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b", None);
    let out = agent_call(Dialect::Early, request, None).expect("early call");
    assert_eq!((out.method, out.path.as_deref()), (Method::GET, Some("/tasks/4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b")));
    let task = br#"{"id":"4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b","status":{"state":"working"},"artifacts":[]}"#;
    let (_, v1) = unary_to_v1(Dialect::Early, &call, StatusCode::OK, task);
    assert_eq!(json_of(&v1)["status"]["state"], "TASK_STATE_WORKING");
    let (status, v1) = unary_to_v1(Dialect::Early, &call, StatusCode::NOT_FOUND, br#"{"detail":"Task not found"}"#);
    assert_eq!((status, json_of(&v1)["error"]["status"].clone()), (StatusCode::NOT_FOUND, json!("NOT_FOUND")));
}

#[test]
fn a_json_rpc_call_reaches_an_http_json_agent_and_back() {
    let mut call = A2aCall::new(Binding::JsonRpc, Operation::GetTask);
    call.rpc_id = Some(json!(9));
    let body = br#"{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"t/1","historyLength":2}}"#;
    let out = rebind_call(&call, request_of(Operation::GetTask, body)).expect("rest call");
    assert_eq!((out.method, out.path.as_deref()), (Method::GET, Some("/tasks/t%2F1?historyLength=2")));
    let (status, answer) =
        unary_rebound(&call, StatusCode::OK, br#"{"id":"t/1","status":{"state":"TASK_STATE_WORKING"}}"#);
    assert_eq!(
        (status, json_of(&answer)["result"]["id"].clone(), json_of(&answer)["id"].clone()),
        (StatusCode::OK, json!("t/1"), json!(9))
    );
    let error = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]}}"#;
    let (_, answer) = unary_rebound(&call, StatusCode::NOT_FOUND, error);
    assert_eq!(json_of(&answer)["error"]["code"], -32001);
    let rest = A2aCall { binding: Binding::Rest, ..call };
    let out = rebind_call(&rest, get_task("t/1", None)).expect("rpc call");
    assert_eq!(json_of(&out.body)["method"], "GetTask");
    let (status, answer) = unary_rebound(
        &rest,
        StatusCode::OK,
        br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"Task not found"}}"#,
    );
    assert_eq!((status, json_of(&answer)["error"]["status"].clone()), (StatusCode::NOT_FOUND, json!("NOT_FOUND")));
}

#[test]
fn a_json_rpc_agents_bare_error_reaches_an_http_json_caller_as_the_error_it_names() {
    use super::super::agent_errors::{Verdict, screen};
    // Without `data`, as the 0.3 SDK and hand-written agents answer: the caller still gets the A2A
    // error of that code (status, reason), not the agent failing.
    let call = A2aCall { task_id: Some("t".into()), ..A2aCall::new(Binding::Rest, Operation::CancelTask) };
    for (code, status, reason) in [
        (-32001, StatusCode::NOT_FOUND, "TASK_NOT_FOUND"),
        (-32601, StatusCode::NOT_FOUND, "METHOD_NOT_FOUND"),
        (-32002, StatusCode::BAD_REQUEST, "TASK_NOT_CANCELABLE"),
        (-32004, StatusCode::BAD_REQUEST, "UNSUPPORTED_OPERATION"),
    ] {
        let answer = format!(r#"{{"jsonrpc":"2.0","id":"x","error":{{"code":{code},"message":"no such thing"}}}}"#);
        for (what, (got_status, body)) in [
            ("1.0 agent", unary_rebound(&call, StatusCode::OK, answer.as_bytes())),
            ("0.3 agent", unary_to_v1(Dialect::V03, &call, StatusCode::OK, answer.as_bytes())),
        ] {
            assert_eq!(got_status, status, "{what}, {code}");
            assert_eq!(json_of(&body)["error"]["details"][0]["reason"], reason, "{what}, {code}");
            let verdict = screen(Binding::Rest, got_status, &body);
            assert_eq!(verdict, Verdict::Refused { code, message: "no such thing".into() }, "{what}, {code}");
        }
    }
    // The agent's own details are kept when they name a reason; a code outside the specification
    // still reads as the agent failing.
    let own = br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"gone","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"k":"v"}}]}}"#;
    let (_, body) = unary_rebound(&call, StatusCode::OK, own);
    assert_eq!(json_of(&body)["error"]["details"][0]["metadata"], json!({"k": "v"}));
    let other = br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32077,"message":"mine"}}"#;
    let (status, body) = unary_rebound(&call, StatusCode::OK, other);
    assert_eq!(json_of(&body)["error"]["details"], json!([]));
    assert_eq!(screen(Binding::Rest, status, &body), Verdict::Failed);
}
