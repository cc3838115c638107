//! Tests of decoding (over 400 lines: a case per dialect and rule, each self-contained).

use super::*;

fn v1() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("a2a-version", "1.0".parse().unwrap());
    h
}

fn rpc(body: &str) -> Result<A2aCall, Refusal> {
    decode(&Method::POST, "/", None, &v1(), body.as_bytes())
}

/// What the native leg writes for the agent from a decoded call (the one writer, [`encode`]).
fn written(decoded: &Decoded) -> Written {
    encode(&decoded.call, &decoded.request)
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
    let call =
        rpc(r#"{"jsonrpc":"2.0","id":2,"method":"GetTaskPushNotificationConfig","params":{"taskId":"abc","id":"x"}}"#)
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
    let e = rpc(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"skillId":5}}}}"#)
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
        (Method::POST, "/tasks/t1/pushNotificationConfigs", Operation::CreateTaskPushNotificationConfig, Some("t1")),
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
        let decoded = decode_any(&method, path, None, &v1(), body).unwrap_or_else(|e| panic!("{path}: {:?}", e.error));
        let call = &decoded.call;
        assert_eq!(call.binding, Binding::Rest);
        assert_eq!(call.operation, op, "{path}");
        assert_eq!(call.task_id.as_deref(), task, "{path}");
        // The path goes on canonical: ids written again with only unreserved characters bare.
        let canonical = if path == "/tasks/a%2Db" { "/tasks/a-b" } else { path };
        assert_eq!(written(&decoded).rest_path.as_deref(), Some(canonical));
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
    let decoded = decode_any(&Method::GET, "/agents/echo/tasks/t1", Some("historyLength=2"), &v1(), b"").unwrap();
    assert_eq!(decoded.call.agent.as_deref(), Some("echo"));
    assert_eq!(written(&decoded).rest_path.as_deref(), Some("/tasks/t1?historyLength=2"));
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
    assert_eq!((call.dialect, call.binding, call.operation), (Dialect::V03, Binding::JsonRpc, Operation::SendMessage));
    assert_eq!((call.task_id.as_deref(), call.skill_id.as_deref()), (Some("t1"), Some("echo")));
    let one: Value = serde_json::from_slice(&written(&decoded).body).unwrap();
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
    let canonical = written(&decode_any(&Method::POST, "/", None, &v1(), same).unwrap()).body;
    assert_eq!(&canonical[..], br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t9"}}"#);
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
        let rendered = refusal.rendered();
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
        (r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"skillId":[]}}}}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":[]}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":""}}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":7}}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":"t"}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"id":"c"}}"#, -32602),
    ];
    for (body, code) in rpc {
        let refusal = decode_any(&Method::POST, "/", None, &v1(), body.as_bytes()).expect_err(body);
        let rendered = refusal.rendered();
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
        let rendered = refusal.rendered();
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
        (Method::POST, "/tasks/send".into(), format!(r#"{{"id":"{id}","message":{msg},"metadata":{{"skillId":5}}}}"#)),
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
        let rendered = refusal.rendered();
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
    let decoded = decode_any(&Method::POST, "/agents/e/tasks/sendSubscribe", None, &HeaderMap::new(), body.as_bytes())
        .expect("early send");
    let call = &decoded.call;
    assert_eq!(
        (call.dialect, call.binding, call.operation),
        (Dialect::Early, Binding::Rest, Operation::SendStreamingMessage)
    );
    assert_eq!(
        (written(&decoded).rest_path.as_deref(), call.skill_id.as_deref(), call.task_id.as_deref()),
        (Some("/message:stream"), Some("echo"), None)
    );
    assert_eq!((decoded.early_id.as_deref(), decoded.new_task, call.agent.as_deref()), (Some(id), true, Some("e")));
    // The caller's own id stands in until routing maps it to the agent's task.
    let decoded = decode_any(&Method::GET, &format!("/tasks/{id}"), Some("historyLength=2"), &HeaderMap::new(), b"")
        .expect("get");
    assert_eq!(
        (decoded.call.task_id.as_deref(), written(&decoded).rest_path.as_deref()),
        (Some(id), Some(format!("/tasks/{id}?historyLength=2").as_str()))
    );
    assert_eq!((decoded.early_id.as_deref(), decoded.new_task), (Some(id), false));
    // With the 1.0 header, GET /tasks/{id} is 1.0.
    let v1 = decode_any(&Method::GET, &format!("/tasks/{id}"), None, &v1(), b"").expect("1.0 get");
    assert_eq!((v1.call.dialect, v1.call.task_id.as_deref()), (Dialect::V1, Some(id)));
}

#[test]
fn v03_rest_requests_are_read_into_1_0_and_refused_in_the_0_3_rest_form() {
    let send = br#"{"message":{"messageId":"m","taskId":"t1","role":"ROLE_USER","content":[{"text":"hi"}],"metadata":{"skillId":"echo"}},"configuration":{"blocking":false}}"#;
    let decoded =
        decode_any(&Method::POST, "/agents/e/v1/message:send", None, &HeaderMap::new(), send).expect("0.3 REST send");
    let call = &decoded.call;
    assert_eq!((call.dialect, call.binding, call.operation), (Dialect::V03, Binding::Rest, Operation::SendMessage));
    assert_eq!(
        (call.agent.as_deref(), call.task_id.as_deref(), call.skill_id.as_deref()),
        (Some("e"), Some("t1"), Some("echo"))
    );
    // What goes on is the 1.0 HTTP+JSON form of the checked request.
    let written_send = written(&decoded);
    assert_eq!(written_send.rest_path.as_deref(), Some("/message:send"));
    let body: Value = serde_json::from_slice(&written_send.body).unwrap();
    assert_eq!(body["message"]["parts"][0], serde_json::json!({"text": "hi"}));
    assert_eq!(body["configuration"]["returnImmediately"], true);
    let get = decode_any(&Method::GET, "/v1/tasks/a%2Fb", Some("historyLength=3"), &HeaderMap::new(), b"")
        .expect("0.3 REST get");
    assert_eq!(get.call.task_id.as_deref(), Some("a/b"));
    assert_eq!(written(&get).rest_path.as_deref(), Some("/tasks/a%2Fb?historyLength=3"));
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
        (Method::POST, "/v1/card", "", 404),
        (Method::PUT, "/v1/message:send", "", 404),
    ];
    for (method, path, body, status) in refused {
        let refusal = decode_any(method, path, None, &HeaderMap::new(), body.as_bytes()).expect_err(path);
        assert_eq!((refusal.dialect, refusal.binding), (Dialect::V03, Binding::Rest), "{path}");
        let rendered = refusal.rendered();
        assert_eq!(rendered.status.as_u16(), *status, "{method} {path} {body}");
        let v: Value = serde_json::from_slice(&rendered.body).unwrap();
        // `{"message"}` as the 0.3 SDK's server writes it, and the error's `type` (the 1.x SDK reads it).
        let only_those = v.as_object().is_some_and(|o| o.keys().all(|k| k == "message" || k == "type"));
        assert!(v["message"].is_string() && only_those, "{v}");
    }
}

/// A key repeated anywhere is refused in every binding and dialect, read in the same pass as the
/// request itself: inside `params` as invalid params, in the request object (a member twice, or a
/// key twice inside a member other than `params`) as an invalid request.
#[test]
fn a_repeated_key_is_refused_wherever_it_is() {
    let message = r#""message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]"#;
    let invalid_params = [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{{message},"taskId":"a","taskId":"b"}}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{{message},"metadata":{{"x":{{"k":1,"k":2}}}}}}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{{message}}},"unknown":1}},"params":{{}}}}"#
        ),
        r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"a","text":"b"}]}}}"#
            .into(),
    ];
    for body in &invalid_params {
        let refusal = rpc(body).expect_err(body);
        assert!(
            matches!(refusal.error, A2aError::InvalidParams { .. } | A2aError::InvalidRequest(_)),
            "{body}: {:?}",
            refusal.error
        );
    }
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"},"extra":{"k":1,"k":2}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"},"extra":1,"extra":2}"#,
    ] {
        let refusal = rpc(body).expect_err(body);
        assert!(matches!(refusal.error, A2aError::InvalidRequest(_)), "{body}: {:?}", refusal.error);
    }
    let inside_params = rpc(&invalid_params[0]).expect_err("repeated taskId");
    assert!(inside_params.error.to_string().contains("appears twice"), "{}", inside_params.error);
    // A 0.3 method's params (no A2A-Version: a 0.3 caller).
    let v03 = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"a","id":"b"}}"#;
    let refusal = decode(&Method::POST, "/", None, &HeaderMap::new(), v03.as_bytes()).expect_err(v03);
    assert!(matches!(refusal.error, A2aError::InvalidParams { .. }), "{:?}", refusal.error);
    // HTTP+JSON bodies, 1.0 and 0.3.
    let rest = br#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"s":1,"s":2}}}"#;
    let refusal = decode(&Method::POST, "/message:send", None, &v1(), rest).expect_err("1.0 REST");
    assert!(matches!(refusal.error, A2aError::InvalidParams { .. }), "{:?}", refusal.error);
    let refusal = decode(&Method::POST, "/v1/message:send", None, &HeaderMap::new(), rest).expect_err("0.3 REST");
    assert!(matches!(refusal.error, A2aError::InvalidParams { .. }), "{:?}", refusal.error);
}

/// The JSON-RPC envelope reads `params` straight into the model when `method` comes first, and
/// keeps them raw for a second read otherwise: both readings accept the same requests into the same
/// call and model, and refuse the same ones with the same error.
#[test]
fn params_read_with_the_envelope_or_after_it_decode_alike() {
    let message = r#"{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"skillId":"echo"}}"#;
    let cases = [
        ("SendMessage", format!(r#"{{"message":{message}}}"#)),
        ("SendStreamingMessage", format!(r#"{{"message":{message},"configuration":{{"historyLength":2}}}}"#)),
        ("GetTask", r#"{"id":"t1","historyLength":3}"#.to_owned()),
        ("CancelTask", r#"{"id":"t1","metadata":{"why":"done"}}"#.to_owned()),
        ("ListTasks", r#"{"contextId":"c","pageSize":5}"#.to_owned()),
        // Refused, each the same way in both orders.
        ("GetTask", r#"["t1"]"#.to_owned()),
        ("GetTask", r#"{"id":"t1","id":"t2"}"#.to_owned()),
        ("GetTask", r#"{"id":7}"#.to_owned()),
        ("SendMessage", r#"{"message":{"parts":[{"text":"a","text":"b"}]}}"#.to_owned()),
        ("SendMessage", "null".to_owned()),
        ("NoSuchMethod", r#"{"id":"t1"}"#.to_owned()),
    ];
    for (method, params) in cases {
        let method_first = format!(r#"{{"jsonrpc":"2.0","id":"r","method":"{method}","params":{params}}}"#);
        let params_first = format!(r#"{{"params":{params},"jsonrpc":"2.0","method":"{method}","id":"r"}}"#);
        assert!(
            matches!(
                json_rpc::read_envelope(method_first.as_bytes()),
                Ok(json_rpc::OnePass { params: json_rpc::Params::Read(_), .. })
            ) || decode_any(&Method::POST, "/", None, &v1(), method_first.as_bytes()).is_err(),
            "{method_first}: a well-formed request in the SDKs' order is read in one pass"
        );
        let one = decode_any(&Method::POST, "/", None, &v1(), method_first.as_bytes());
        let two = decode_any(&Method::POST, "/", None, &v1(), params_first.as_bytes());
        match (one, two) {
            (Ok(a), Ok(b)) => {
                assert_eq!((written(&a), a.call, a.request), (written(&b), b.call, b.request), "{method_first}");
            }
            (Err(a), Err(b)) => assert_eq!(format!("{:?}", a.error), format!("{:?}", b.error), "{method_first}"),
            (a, b) => panic!("{method_first}: {:?} against {:?}", a.map(|d| d.call), b.map(|d| d.call)),
        }
    }
}

/// A 0.3 call's params are read in one strict pass; the two-pass reading (a repeated-key walk, then
/// serde with the offending field named) reads them alike: the same request, or a refusal by both.
#[test]
fn v03_params_read_in_one_strict_pass_or_in_two_alike() {
    let message = r#"{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}"#;
    let cases = [
        ("message/send", format!(r#"{{"message":{message}}}"#)),
        ("message/stream", format!(r#"{{"message":{message},"configuration":{{"historyLength":2}}}}"#)),
        ("tasks/get", r#"{"id":"t1","historyLength":3}"#.to_owned()),
        ("tasks/cancel", r#"{"id":"t1","metadata":{"why":"done"}}"#.to_owned()),
        ("tasks/pushNotificationConfig/get", r#"{"id":"t1","pushNotificationConfigId":"c"}"#.to_owned()),
        // Refused by both.
        ("tasks/get", r#"{"id":"t1","id":"t2"}"#.to_owned()),
        ("tasks/get", r#"{"id":7}"#.to_owned()),
        ("tasks/get", r#"["t1"]"#.to_owned()),
        ("message/send", r#"{"message":{"kind":"message","messageId":"m","messageId":"n"}}"#.to_owned()),
        ("message/send", format!(r#"{{"message":{message},"metadata":{{"a":1,"a":2}}}}"#)),
        ("message/send", "null".to_owned()),
    ];
    for (method, params) in cases {
        let one = v03::request_to_v1_strict(method, Some(params.as_bytes()));
        let two = strict::check_unique_keys(params.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|()| v03::request_to_v1(method, Some(params.as_bytes())).map_err(|e| e.to_string()));
        match (one, two) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{method} {params}"),
            (Err(_), Err(_)) => {}
            (one, two) => panic!("{method} {params}: one pass {one:?}, two passes {two:?}"),
        }
    }
}
