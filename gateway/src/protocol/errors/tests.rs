use super::*;

fn parse(r: &ErrorResponse) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn task_not_found_matches_the_sdk_capture_in_json_rpc() {
    let r = render(&A2aError::TaskNotFound, Binding::JsonRpc, Some(&json!("req-20")));
    assert_eq!(r.status, StatusCode::OK);
    // jsonrpc-1.0-20-error-GetTask-not-found.txt, field for field.
    let expected: Value = serde_json::from_str(
            r#"{"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]},"id":"req-20","jsonrpc":"2.0"}"#,
        )
        .unwrap();
    assert_eq!(parse(&r), expected);
}

#[test]
fn task_not_found_matches_the_sdk_capture_in_rest() {
    let r = render(&A2aError::TaskNotFound, Binding::Rest, None);
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // rest-1.0-20-error-tasks-get-not-found.txt
    let expected: Value = serde_json::from_str(
            r#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}}"#,
        )
        .unwrap();
    assert_eq!(parse(&r), expected);
}

#[test]
fn parse_error_has_null_id_and_no_data() {
    let r = render(&A2aError::Parse("bad".into()), Binding::JsonRpc, None);
    let v = parse(&r);
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], -32700);
    assert!(v["error"].get("data").is_none());
}

#[test]
fn invalid_params_detail_goes_into_error_info_metadata() {
    let error = A2aError::InvalidParams {
        message: "no skill".into(),
        detail: Some(json!({"availableSkills": "echo,review-pr"})),
    };
    let v = parse(&render(&error, Binding::Rest, None));
    assert_eq!(v["error"]["details"][0]["metadata"]["availableSkills"], "echo,review-pr");
    assert_eq!(v["error"]["code"], 400);
}

#[test]
fn policy_refusals_carry_their_http_status_and_headers() {
    let unauth = A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer realm=\"a2a\"".into() };
    let r = render(&unauth, Binding::JsonRpc, Some(&json!(1)));
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers[0].0, header::WWW_AUTHENTICATE);
    assert_eq!(parse(&r)["error"]["code"], CODE_UNAUTHENTICATED);
    let limited =
        A2aError::RateLimited { message: "slow down".into(), retry_after: std::time::Duration::from_millis(1200) };
    let r = render(&limited, Binding::Rest, None);
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers[0], (header::RETRY_AFTER, HeaderValue::from(2u64)));
    assert_eq!(parse(&r)["error"]["details"][0]["reason"], "RATE_LIMITED");
}

#[test]
fn validation_failures_list_each_pointer() {
    let error = A2aError::Validation {
        message: "input does not match the skill's schema".into(),
        violations: vec![a2a_core::Violation { pointer: "/diff".into(), description: "is required".into() }],
    };
    let v = parse(&render(&error, Binding::JsonRpc, Some(&json!(1))));
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["data"][1]["fieldViolations"][0]["field"], "/diff");
    let v = parse(&render(&error, Binding::Rest, None));
    assert_eq!(v["error"]["details"][1]["@type"], "type.googleapis.com/google.rpc.BadRequest");
}

#[test]
fn v03_callers_get_the_0_3_error_object() {
    let r = render_in(&A2aError::TaskNotFound, Dialect::V03, Binding::JsonRpc, Some(&json!("q")));
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        parse(&r),
        json!({"error": {"code": -32001, "message": "Task not found", "data": null}, "id": "q", "jsonrpc": "2.0"})
    );
    let version = A2aError::VersionNotSupported("no".into());
    assert_eq!(parse(&render_in(&version, Dialect::V03, Binding::JsonRpc, None))["error"]["code"], -32603);
    let unauth = A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer".into() };
    let r = render_in(&unauth, Dialect::V03, Binding::JsonRpc, None);
    assert_eq!((r.status, parse(&r)["error"]["code"].clone()), (StatusCode::UNAUTHORIZED, json!(CODE_UNAUTHENTICATED)));
}

#[test]
fn early_callers_get_a_status_and_a_detail() {
    let r = render_in(&A2aError::TaskNotFound, Dialect::Early, Binding::Rest, None);
    assert_eq!((r.status, parse(&r)), (StatusCode::NOT_FOUND, json!({"detail": "Task not found"})));
}

#[test]
fn a_lost_connection_does_not_invite_a_blind_retry() {
    let error = A2aError::AgentConnectionLost { agent: "echo".into(), task_id: Some("t-9".into()) };
    let r = render(&error, Binding::Rest, None);
    assert_eq!(r.status, StatusCode::BAD_GATEWAY);
    assert!(r.headers.iter().all(|(name, _)| name != header::RETRY_AFTER));
    let v = parse(&r);
    assert_eq!(v["error"]["details"][0]["metadata"], json!({"taskMayExist": "true", "taskId": "t-9"}));
    assert!(v["error"]["message"].as_str().unwrap().contains("t-9 may have changed"), "{v}");
    let new_task = A2aError::AgentConnectionLost { agent: "echo".into(), task_id: None };
    assert!(new_task.to_string().contains("a task may have been created"));
}

#[test]
fn backend_unavailable_is_503_in_rest_and_internal_in_json_rpc() {
    let error = A2aError::BackendUnavailable("agent 'echo' is unavailable".into());
    assert_eq!(render(&error, Binding::Rest, None).status, StatusCode::SERVICE_UNAVAILABLE);
    let v = parse(&render(&error, Binding::JsonRpc, Some(&json!(7))));
    assert_eq!(v["error"]["code"], -32603);
    assert_eq!(v["id"], 7);
}

#[test]
fn outages_are_503_with_retry_after_in_every_dialect() {
    let outage = A2aError::AgentUnavailable {
        message: "the agents that offer the skill 'x' are unavailable; retry later".into(),
        retry_after: std::time::Duration::from_millis(200),
    };
    let audit = A2aError::AuditUnavailable { retry_after: std::time::Duration::from_secs(1) };
    for (error, code, reason) in
        [(&outage, CODE_AGENT_UNAVAILABLE, "AGENT_UNAVAILABLE"), (&audit, CODE_AUDIT_UNAVAILABLE, "AUDIT_UNAVAILABLE")]
    {
        let retry = (header::RETRY_AFTER, HeaderValue::from(1u64));
        for (dialect, binding) in
            [(Dialect::V1, Binding::JsonRpc), (Dialect::V1, Binding::Rest), (Dialect::V03, Binding::JsonRpc)]
        {
            let r = render_in(error, dialect, binding, Some(&json!(3)));
            assert_eq!((r.status, &r.headers[..]), (StatusCode::SERVICE_UNAVAILABLE, &[retry.clone()][..]));
            let v = parse(&r);
            match binding {
                Binding::JsonRpc => assert_eq!((&v["error"]["code"], &v["id"]), (&json!(code), &json!(3))),
                Binding::Rest => assert_eq!(v["error"]["details"][0]["reason"], reason),
            }
        }
        let r = render_in(error, Dialect::Early, Binding::Rest, None);
        assert_eq!((r.status, r.headers.len()), (StatusCode::SERVICE_UNAVAILABLE, 1));
    }
}

#[test]
fn refusals_the_specification_names_take_code_status_and_reason_from_its_one_table() {
    let cases = [
        (A2aError::InvalidRequest("x".into()), ErrorKind::InvalidRequest),
        (A2aError::MethodNotFound("x".into()), ErrorKind::MethodNotFound),
        (A2aError::InvalidParams { message: "x".into(), detail: None }, ErrorKind::InvalidParams),
        (A2aError::TaskNotFound, ErrorKind::TaskNotFound),
        (A2aError::ExtendedCardNotConfigured, ErrorKind::ExtendedAgentCardNotConfigured),
        (A2aError::PushNotificationNotSupported, ErrorKind::PushNotificationNotSupported),
        (A2aError::UnsupportedOperation("x".into()), ErrorKind::UnsupportedOperation),
        (A2aError::VersionNotSupported("x".into()), ErrorKind::VersionNotSupported),
        (A2aError::Internal, ErrorKind::Internal),
    ];
    for (error, kind) in cases {
        let rpc = parse(&render(&error, Binding::JsonRpc, None));
        assert_eq!(rpc["error"]["code"], json!(kind.code()), "{error:?}");
        assert_eq!(rpc["error"]["data"][0]["reason"], json!(kind.reason().unwrap()), "{error:?}");
        let rest = render(&error, Binding::Rest, None);
        assert_eq!(rest.status.as_u16(), kind.http_status(), "{error:?}");
    }
    // The one deliberate departure: an agent's malformed answer is the agent's fault (502).
    let bad = render(&A2aError::InvalidAgentResponse("x".into()), Binding::Rest, None);
    assert_eq!(bad.status, StatusCode::BAD_GATEWAY);
    assert_eq!(parse(&bad)["error"]["details"][0]["reason"], json!("INVALID_AGENT_RESPONSE"));
}
