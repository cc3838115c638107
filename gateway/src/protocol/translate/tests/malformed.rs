//! Malformed requests in each dialect: every one is refused with a [`TranslateError`] that names the
//! problem (and where), and that becomes the right refusal for the caller. The gateway renders that
//! refusal in the caller's dialect.

use a2a_core::A2aError;
use http::Method;

use crate::protocol::translate::{TranslateError, early, v03};

/// What a refusal should be: a JSON syntax error, an invalid field (at this pointer), or an unknown
/// method / path.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Json,
    Invalid(&'static str),
    Unknown,
}

fn check(what: &str, got: Result<impl std::fmt::Debug, TranslateError>, want: Want) {
    let err = match got {
        Ok(value) => panic!("{what}: accepted as {value:?}"),
        Err(err) => err,
    };
    match (&err, want) {
        (TranslateError::Json(_), Want::Json) | (TranslateError::UnknownOperation(_), Want::Unknown) => {}
        (TranslateError::Invalid { pointer, .. }, Want::Invalid(at)) => assert_eq!(pointer, at, "{what}: {err}"),
        _ => panic!("{what}: {err:?}, expected {want:?}"),
    }
    let refusal = err.clone().into_request_error();
    let fits = match want {
        Want::Json => matches!(refusal, A2aError::Parse(_)),
        Want::Invalid(_) => matches!(refusal, A2aError::InvalidParams { .. }),
        Want::Unknown => matches!(refusal, A2aError::MethodNotFound(_)),
    };
    assert!(fits, "{what}: {refusal:?}");
    assert!(!err.to_string().is_empty());
}

const MESSAGE: &str = r#"{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}"#;

fn with_message(message: &str) -> String {
    format!(r#"{{"message":{message}}}"#)
}

#[test]
fn malformed_0_3_requests() {
    let cases: Vec<(&str, String, Want)> = vec![
        ("tasks/list", "{}".into(), Want::Unknown),
        ("SendMessage", with_message(MESSAGE), Want::Unknown),
        ("", "{}".into(), Want::Unknown),
        ("message/send", "{".into(), Want::Json),
        ("message/send", r#"{"message":}"#.into(), Want::Json),
        ("message/send", "[]".into(), Want::Invalid("")),
        ("message/send", r#""text""#.into(), Want::Invalid("")),
        ("message/send", "{}".into(), Want::Invalid("")),
        ("message/send", with_message(r#"{"messageId":"m","parts":[]}"#), Want::Invalid("/message")),
        (
            "message/send",
            with_message(r#"{"messageId":"m","role":"system","parts":[]}"#),
            Want::Invalid("/message/role"),
        ),
        (
            "message/send",
            with_message(r#"{"messageId":5,"role":"user","parts":[]}"#),
            Want::Invalid("/message/messageId"),
        ),
        (
            "message/send",
            with_message(r#"{"messageId":"m","role":"user","parts":{}}"#),
            Want::Invalid("/message/parts"),
        ),
        (
            "message/send",
            with_message(r#"{"kind":"task","messageId":"m","role":"user","parts":[]}"#),
            Want::Invalid("/message/kind"),
        ),
        ("message/send", with_message(r#"{"role":"user","parts":[{}]}"#), Want::Invalid("/message/parts/0")),
        (
            "message/send",
            with_message(r#"{"role":"user","parts":[{"kind":"image","text":"x"}]}"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            "message/send",
            with_message(r#"{"role":"user","parts":[{"kind":"text"}]}"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            "message/send",
            with_message(r#"{"role":"user","parts":[{"kind":"text","text":7}]}"#),
            Want::Invalid("/message/parts/0/text"),
        ),
        (
            "message/send",
            with_message(r#"{"role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","uri":"https://x"}}]}"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            "message/send",
            with_message(r#"{"role":"user","parts":[{"kind":"file","file":{}}]}"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            "message/stream",
            format!(r#"{{"message":{MESSAGE},"configuration":{{"blocking":"yes"}}}}"#),
            Want::Invalid("/configuration/blocking"),
        ),
        (
            "message/stream",
            format!(r#"{{"message":{MESSAGE},"configuration":{{"historyLength":"3"}}}}"#),
            Want::Invalid("/configuration/historyLength"),
        ),
        ("message/send", format!(r#"{{"message":{MESSAGE},"metadata":"x"}}"#), Want::Invalid("/metadata")),
        ("tasks/get", "{}".into(), Want::Invalid("")),
        ("tasks/get", r#"{"id":42}"#.into(), Want::Invalid("/id")),
        ("tasks/get", r#"{"id":"t","historyLength":-1.5}"#.into(), Want::Invalid("/historyLength")),
        ("tasks/cancel", "null".into(), Want::Invalid("")),
        ("tasks/resubscribe", r#"{"taskId":"t"}"#.into(), Want::Invalid("")),
        ("tasks/pushNotificationConfig/set", r#"{"taskId":"t"}"#.into(), Want::Invalid("")),
        (
            "tasks/pushNotificationConfig/set",
            r#"{"taskId":"t","pushNotificationConfig":{"url":"https://h","authentication":{"schemes":"Bearer"}}}"#
                .into(),
            Want::Invalid("/pushNotificationConfig/authentication/schemes"),
        ),
        ("tasks/pushNotificationConfig/delete", r#"{"id":["t"]}"#.into(), Want::Invalid("/id")),
    ];
    assert!(cases.len() >= 20);
    for (method, params, want) in cases {
        let got = v03::request_to_v1(method, Some(params.as_bytes()));
        check(&format!("{method} {params}"), got, want);
    }
}

#[test]
fn malformed_0_3_answers_from_agents() {
    let cases: &[(&str, Want)] = &[
        (r#"{"kind":"status","taskId":"t"}"#, Want::Invalid("/kind")),
        (r#"{"kind":"status-update","taskId":"t","contextId":"c"}"#, Want::Invalid("")),
        (r#"{"kind":"task","id":"t","status":{"state":7}}"#, Want::Invalid("/status/state")),
        (r#"[{"kind":"task"}]"#, Want::Invalid("")),
        ("{", Want::Json),
    ];
    for (json, want) in cases {
        let got = v03::event_to_v1(json.as_bytes());
        if let Err(e) = &got {
            // An agent's malformed answer is its fault, not the caller's.
            assert!(matches!(e.clone().into_response_error(), A2aError::InvalidAgentResponse(_)));
        }
        check(json, got, *want);
    }
}

const ID: &str = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";
const OTHER: &str = "7c1f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";

fn send(id: &str, parts: &str) -> String {
    format!(r#"{{"id":"{id}","message":{{"role":"user","parts":{parts}}}}}"#)
}

#[test]
fn malformed_early_requests() {
    let task = format!("/tasks/{ID}");
    let cases: Vec<(Method, String, Option<&str>, String, Want)> = vec![
        (Method::POST, "/tasks/send".into(), None, "{".into(), Want::Json),
        (Method::POST, "/tasks/send".into(), None, "".into(), Want::Json),
        (Method::POST, "/tasks/send".into(), None, "[]".into(), Want::Invalid("")),
        (Method::POST, "/tasks/send".into(), None, format!(r#"{{"id":"{ID}"}}"#), Want::Invalid("")),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            r#"{"message":{"role":"user","parts":[]}}"#.into(),
            Want::Invalid("/id"),
        ),
        (Method::POST, "/tasks/send".into(), None, send("task-1", "[]"), Want::Invalid("/id")),
        (Method::POST, "/tasks/send".into(), None, send(&ID.replace('-', ""), "[]"), Want::Invalid("/id")),
        (
            Method::POST,
            "/tasks/sendSubscribe".into(),
            None,
            r#"{"id":42,"message":{"role":"user","parts":[]}}"#.into(),
            Want::Invalid("/id"),
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            format!(r#"{{"id":"{ID}","message":{{"role":"system","parts":[]}}}}"#),
            Want::Invalid("/message/role"),
        ),
        (Method::POST, "/tasks/send".into(), None, send(ID, "[{}]"), Want::Invalid("/message/parts/0")),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            send(ID, r#"[{"type":"image","text":"x"}]"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            send(ID, r#"[{"type":"text","text":5}]"#),
            Want::Invalid("/message/parts/0/text"),
        ),
        (Method::POST, "/tasks/send".into(), None, send(ID, r#"[{"type":"data"}]"#), Want::Invalid("/message/parts/0")),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            send(ID, r#"[{"type":"file","file":{"bytes":"aGk=","uri":"https://x"}}]"#),
            Want::Invalid("/message/parts/0"),
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            send(ID, r#"{"type":"text","text":"x"}"#),
            Want::Invalid("/message/parts"),
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            format!(r#"{{"id":"{ID}","message":{{"role":"user","parts":[]}},"metadata":[]}}"#),
            Want::Invalid("/metadata"),
        ),
        (
            Method::POST,
            "/tasks/send".into(),
            None,
            format!(r#"{{"id":"{ID}","message":{{"role":"user","parts":[]}},"historyLength":"x"}}"#),
            Want::Invalid("/historyLength"),
        ),
        (Method::GET, "/tasks/not-a-uuid".into(), None, "".into(), Want::Invalid("")),
        (Method::GET, task.clone(), Some("historyLength=-1"), "".into(), Want::Invalid("/historyLength")),
        (Method::GET, task.clone(), Some("historyLength=abc"), "".into(), Want::Invalid("/historyLength")),
        (Method::POST, format!("{task}/cancel"), None, "[1]".into(), Want::Invalid("")),
        (Method::POST, format!("{task}/cancel"), None, "{".into(), Want::Json),
        (Method::POST, format!("{task}/cancel"), None, r#"{"metadata":1}"#.into(), Want::Invalid("/metadata")),
        (Method::POST, format!("{task}/send"), None, send(OTHER, "[]"), Want::Invalid("/id")),
        (Method::POST, "/tasks/x/send".into(), None, send(ID, "[]"), Want::Invalid("")),
        (Method::DELETE, task.clone(), None, "".into(), Want::Unknown),
        (Method::GET, "/tasks/send/x".into(), None, "".into(), Want::Unknown),
        (Method::POST, "/message:send".into(), None, "{}".into(), Want::Unknown),
        (Method::PUT, early::CARD_PATH.into(), None, "".into(), Want::Unknown),
    ];
    assert!(cases.len() >= 20);
    for (method, path, query, body, want) in cases {
        let got = early::Call::parse(&method, &path, query, body.as_bytes());
        check(&format!("{method} {path}?{query:?} {body}"), got, want);
    }
}
