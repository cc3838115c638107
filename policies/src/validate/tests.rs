//! Tests of input validation (over 400 lines: a case per rule, each self-contained).

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tower::{Layer, ServiceExt, service_fn};

use super::*;
use a2a_core::CallContext;
use http::Request;

use a2a_core::{Binding, Checked, Operation, Violation};

const REVIEW_SCHEMA: &str = include_str!("../../tests/limits/review-pr.schema.json");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/limits")
}

/// Cards of two backends: `review` with the `review-pr` schema, `echo` without any schema.
struct Cards {
    review_version: Mutex<(u64, Arc<Value>)>,
}

impl Cards {
    fn new() -> Arc<Cards> {
        let schema = serde_json::from_str(REVIEW_SCHEMA).expect("fixture");
        Arc::new(Cards { review_version: Mutex::new((1, Arc::new(schema))) })
    }
}

impl SkillCatalog for Cards {
    fn skill(&self, backend: &str, skill: &str) -> Option<Arc<SkillSpec>> {
        let modes = |m: &[&str]| m.iter().map(|m| m.to_string()).collect();
        match (backend, skill) {
            ("review", "review-pr") => {
                let (version, schema) = self.review_version.lock().expect("lock").clone();
                let input_modes = modes(&["text/plain", "application/json"]);
                Some(Arc::new(SkillSpec { version, input_schema: Some(schema), input_modes }))
            }
            ("echo", "echo") => {
                Some(Arc::new(SkillSpec { version: 7, input_schema: None, input_modes: modes(&["text/plain"]) }))
            }
            _ => None,
        }
    }
}

fn policy(config: &ValidationConfig) -> InputValidation {
    InputValidation::new(config, &fixtures(), Cards::new()).expect("valid config")
}

fn route(backend: &str, skill: &str) -> RouteHint {
    RouteHint { backend: Arc::from(backend), skill: Some(skill.to_owned()), skills: vec![skill.to_owned()] }
}

fn send_call() -> A2aCall {
    A2aCall::new(Binding::JsonRpc, Operation::SendMessage)
}

/// What the decoder makes of a send with this message: the checked model (read strictly, as every
/// dialect's request is) and the JSON-RPC body written from it for the agent.
fn decoded(message: Value) -> (Checked, Vec<u8>) {
    let params = serde_json::to_string(&json!({"message": message})).expect("json");
    let params = serde_json::value::RawValue::from_string(params).expect("raw");
    let request = a2a_model::Request::parse(Operation::SendMessage, Some(&params)).expect("the decoder accepts it");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": request});
    (Checked { request, early: None }, serde_json::to_vec(&body).expect("json"))
}

/// Whether the decoder refuses a send with this message before any policy sees it.
fn refused_by_the_decoder(message: Value) -> bool {
    let params = serde_json::value::RawValue::from_string(json!({"message": message}).to_string()).expect("raw");
    a2a_model::Request::parse(Operation::SendMessage, Some(&params)).is_err()
}

/// Checks a decoded send as the layer does: the checked message.
fn check_decoded(
    policy: &InputValidation,
    call: &A2aCall,
    route: Option<&RouteHint>,
    message: Value,
) -> Result<(), A2aError> {
    let (checked, _) = decoded(message);
    policy.check(call, route, checked.message().expect("a send"))
}

/// A layer's request for a send with this message, as the decoder hands it on.
fn send_request(message: Value, route: Option<RouteHint>) -> CallRequest {
    let (checked, _) = decoded(message);
    let mut context = CallContext::for_test(send_call(), "r");
    context.checked = checked;
    if let Some(route) = route {
        context.info.set_route(route);
    }
    Request::new(Box::new(context))
}

fn message(parts: Value) -> Value {
    json!({"messageId": "m-1", "role": "ROLE_USER", "parts": parts})
}

fn review(data: Value) -> Value {
    message(json!([{"text": "please review"}, {"data": data}]))
}

fn check_with(policy: &InputValidation, backend: &str, skill: &str, message: Value) -> Result<(), A2aError> {
    check_decoded(policy, &send_call(), Some(&route(backend, skill)), message)
}

fn check(backend: &str, skill: &str, message: Value) -> Result<(), A2aError> {
    check_with(&policy(&ValidationConfig::default()), backend, skill, message)
}

fn violations(result: Result<(), A2aError>) -> Vec<Violation> {
    match result {
        Err(A2aError::Validation { violations, .. }) => violations,
        other => panic!("expected a validation refusal, got {other:?}"),
    }
}

fn pointers(result: Result<(), A2aError>) -> Vec<String> {
    violations(result).into_iter().map(|v| v.pointer).collect()
}

#[tokio::test]
async fn a_valid_input_passes_and_reaches_the_backend() {
    let forwarded = Arc::new(AtomicUsize::new(0));
    let counter = forwarded.clone();
    let backend = service_fn(move |_: CallRequest| {
        counter.fetch_add(1, Ordering::Relaxed);
        async { Ok::<_, A2aError>("forwarded") }
    });
    let layer = ValidateLayer::new(Arc::new(policy(&ValidationConfig::default())));
    let service = layer.layer(backend);
    let valid =
        review(json!({"diff": "+fn main() {}", "title": "t", "focus": ["security", "style"], "language": "rust"}));
    let request = send_request(valid, Some(route("review", "review-pr")));
    assert_eq!(service.clone().oneshot(request).await, Ok("forwarded"));
    assert_eq!(forwarded.load(Ordering::Relaxed), 1);

    let invalid = send_request(review(json!({"title": "no diff"})), Some(route("review", "review-pr")));
    assert!(matches!(service.clone().oneshot(invalid).await, Err(A2aError::Validation { .. })));
    assert_eq!(forwarded.load(Ordering::Relaxed), 1, "a refused input is not forwarded");

    let mut unchecked = send_request(review(json!({"diff": "x"})), Some(route("review", "review-pr")));
    unchecked.body_mut().checked = CallContext::for_test(send_call(), "r").checked;
    assert_eq!(service.oneshot(unchecked).await, Err(A2aError::Internal), "a send without its checked message");
    assert_eq!(forwarded.load(Ordering::Relaxed), 1);
}

#[test]
fn a_missing_required_property_is_reported_at_its_pointer() {
    let result = check("review", "review-pr", review(json!({"title": "t"})));
    let Err(A2aError::Validation { message, violations }) = result else { panic!("expected a refusal") };
    assert_eq!(violations, [Violation { pointer: "/diff".into(), description: "required property is missing".into() }]);
    assert_eq!(
        message,
        "the input (the first data part) does not match the inputSchema of the skill 'review-pr': \
         required property is missing at '/diff'"
    );
}

#[test]
fn a_wrong_type_is_reported_at_its_pointer() {
    let found = violations(check("review", "review-pr", review(json!({"diff": 42}))));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].pointer, "/diff");
    assert!(found[0].description.contains("\"string\""), "{}", found[0].description);
    assert!(!found[0].description.contains("42"), "the caller's value is not echoed");
}

#[test]
fn a_bad_enum_value_is_reported_at_its_pointer() {
    let bad = review(json!({"diff": "x", "focus": ["style", "speed"]}));
    assert_eq!(pointers(check("review", "review-pr", bad)), ["/focus/1"]);
}

#[test]
fn extra_properties_and_extra_nesting_are_reported_at_their_pointers() {
    let extra = review(json!({"diff": "x", "extra": {"deep": true}, "more": 1}));
    assert_eq!(pointers(check("review", "review-pr", extra)), ["/extra", "/more"]);
    let nested = review(json!({"diff": "x", "focus": [["security"]]}));
    let mut found = pointers(check("review", "review-pr", nested));
    found.dedup();
    assert_eq!(found, ["/focus/0"], "not a string, and not one of the values: both at the item");
    let not_an_object = review(json!(["diff"]));
    assert_eq!(pointers(check("review", "review-pr", not_an_object)), [""]);
}

#[test]
fn all_violations_are_listed() {
    let bad = review(json!({"title": 3, "focus": ["speed"], "x": 1}));
    let mut found = pointers(check("review", "review-pr", bad));
    found.sort();
    assert_eq!(found, ["/diff", "/focus/0", "/title", "/x"]);
}

#[test]
fn a_skill_without_a_schema_is_not_schema_validated() {
    assert!(check("echo", "echo", message(json!([{"text": "anything"}]))).is_ok());
    let anything = message(json!([{"data": {"whatever": [1, 2]}}]));
    assert!(check("other", "unknown-skill", anything.clone()).is_ok(), "a skill the catalog does not know");
    let unrouted = policy(&ValidationConfig::default());
    assert!(check_decoded(&unrouted, &send_call(), None, anything).is_ok(), "no skill chosen");
}

#[test]
fn a_text_only_request_has_nothing_for_the_schema_unless_a_data_part_is_required() {
    let text_only = message(json!([{"text": "PR #123"}]));
    assert!(check("review", "review-pr", text_only.clone()).is_ok());
    let mut config = ValidationConfig::default();
    config.skills.insert("review-pr".into(), SkillRules { require_data_part: true, ..SkillRules::default() });
    let found = violations(check_with(&policy(&config), "review", "review-pr", text_only));
    assert_eq!(found[0].pointer, "");
    assert!(found[0].description.contains("data part"), "{}", found[0].description);
}

#[test]
fn the_schema_validates_every_data_part() {
    let second_is_bad = message(json!([{"data": {"diff": "x"}}, {"text": "t"}, {"data": {"not": "checked"}}]));
    let Err(A2aError::Validation { message: text, violations }) = check("review", "review-pr", second_is_bad) else {
        panic!("a second data part that breaks the schema is refused")
    };
    let mut found: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
    found.sort_unstable();
    assert_eq!(found, ["/parts/2/data/diff", "/parts/2/data/not"]);
    assert!(text.contains("/parts/2"), "{text}");
    let first_is_bad = message(json!([{"data": {"nope": 1}}, {"data": {"diff": "x"}}]));
    assert_eq!(pointers(check("review", "review-pr", first_is_bad)), ["/nope", "/diff"]);
    let both_fine = message(json!([{"data": {"diff": "x"}}, {"data": {"diff": "y", "title": "t"}}]));
    assert!(check("review", "review-pr", both_fine).is_ok());
}

#[test]
fn a_configured_schema_file_supplies_or_overrides_the_card() {
    let mut config = ValidationConfig::default();
    let rules = SkillRules { schema_file: Some("review-pr.schema.json".into()), ..SkillRules::default() };
    config.skills.insert("summarize".into(), rules);
    let supplied = policy(&config);
    assert_eq!(pointers(check_with(&supplied, "any", "summarize", review(json!({})))), ["/diff"]);

    let mut config = ValidationConfig::default();
    let inline = SkillRules { schema: Some(json!({"type": "object", "required": ["repo"]})), ..SkillRules::default() };
    config.skills.insert("review-pr".into(), inline);
    let overriding = policy(&config);
    assert_eq!(pointers(check_with(&overriding, "review", "review-pr", review(json!({"diff": "x"})))), ["/repo"]);
}

#[test]
fn card_schemas_are_compiled_once_per_card_version() {
    let cards = Cards::new();
    let policy = InputValidation::new(&ValidationConfig::default(), &fixtures(), cards.clone()).expect("valid");
    for _ in 0..3 {
        assert!(check_with(&policy, "review", "review-pr", review(json!({"diff": "x"}))).is_ok());
    }
    assert_eq!(policy.cache.len(), 1);
    *cards.review_version.lock().expect("lock") = (2, Arc::new(json!({"type": "object", "required": ["repo"]})));
    assert_eq!(pointers(check_with(&policy, "review", "review-pr", review(json!({"diff": "x"})))), ["/repo"]);
    assert_eq!(policy.cache.len(), 1, "the new version replaced the old one");

    *cards.review_version.lock().expect("lock") = (3, Arc::new(json!({"type": "objekt"})));
    let broken = check_with(&policy, "review", "review-pr", review(json!({"diff": "x"})));
    assert!(matches!(broken, Err(A2aError::InvalidAgentResponse(_))), "{broken:?}");
}

#[test]
fn too_many_parts_are_refused() {
    let parts: Vec<Value> = (0..33).map(|i| json!({"text": format!("part {i}")})).collect();
    assert_eq!(pointers(check("echo", "echo", message(Value::Array(parts.clone())))), ["/parts"]);
    assert!(check("echo", "echo", message(Value::Array(parts[..32].to_vec()))).is_ok());

    let mut config = ValidationConfig::default();
    config.skills.insert("echo".into(), SkillRules { max_parts: Some(4), ..SkillRules::default() });
    let found = violations(check_with(&policy(&config), "echo", "echo", message(Value::Array(parts[..5].to_vec()))));
    assert_eq!(found[0].description, "the message has more than 4 parts; at most 4 are allowed");

    let many = message(Value::Array(vec![json!({"text": ""}); 100_000]));
    let config =
        ValidationConfig { limits: Limits { max_message_bytes: 1 << 30, ..Limits::default() }, ..Default::default() };
    let refused = check_decoded(&policy(&config), &send_call(), None, many);
    assert_eq!(pointers(refused), ["/parts"]);
    assert!(check("echo", "echo", message(json!([]))).is_err(), "and at least one part");
}

#[test]
fn too_long_text_is_refused() {
    let config = ValidationConfig { limits: Limits { max_text_bytes: 8, ..Limits::default() }, ..Default::default() };
    let policy = policy(&config);
    assert!(check_with(&policy, "echo", "echo", message(json!([{"text": "12345678"}]))).is_ok());
    let found =
        violations(check_with(&policy, "echo", "echo", message(json!([{"text": "ok"}, {"text": "123456789"}]))));
    assert_eq!(found[0].pointer, "/parts/1/text");
    assert_eq!(found[0].description, "the text is 9 bytes long; at most 8 are allowed");
    // Counted as UTF-8 after unescaping: "ééé\n" is 7 bytes, however it is escaped on the wire.
    let params = r#"{"message":{"messageId":"m","parts":[{"text":"\u00e9\u00e9\u00e9\n"}]}}"#;
    let params = serde_json::value::RawValue::from_string(params.to_owned()).expect("raw");
    let checked =
        Checked { request: a2a_model::Request::parse(Operation::SendMessage, Some(&params)).expect("ok"), early: None };
    assert!(policy.check(&send_call(), None, checked.message().expect("a send")).is_ok());
    let nine = message(json!([{"text": "\u{e9}\u{e9}\u{e9}\n\n\n"}]));
    assert_eq!(pointers(check_with(&policy, "echo", "echo", nine)), ["/parts/0/text"]);
}

#[test]
fn deep_data_and_big_messages_are_refused() {
    let config = ValidationConfig {
        limits: Limits { max_data_depth: 3, max_message_bytes: 200, ..Limits::default() },
        ..Default::default()
    };
    let policy = policy(&config);
    let shallow = message(json!([{"data": {"a": [{"b": 1}]}}]));
    assert!(check_with(&policy, "x", "y", shallow).is_ok());
    let deep = message(json!([{"data": {"a": [{"b": [1]}]}}]));
    assert_eq!(pointers(check_with(&policy, "x", "y", deep)), ["/parts/0/data"]);
    let big = message(json!([{"text": "x".repeat(300)}]));
    assert_eq!(pointers(check_with(&policy, "x", "y", big)), [""]);
    // The limit holds the message as written for the agent, to the byte, not the body around it.
    let sized = |text_len: usize| message(json!([{"text": "x".repeat(text_len)}]));
    let written =
        |message: Value| serde_json::to_vec(decoded(message).0.message().expect("a send")).expect("json").len();
    let overhead = written(sized(0));
    assert_eq!(written(sized(200 - overhead)), 200);
    assert!(check_with(&policy, "x", "y", sized(200 - overhead)).is_ok(), "a 200-byte message in a longer body");
    let found = violations(check_with(&policy, "x", "y", sized(201 - overhead)));
    assert_eq!(found[0].description, "the message is 201 bytes long; at most 200 are allowed");
}

#[test]
fn parts_the_model_cannot_hold_never_reach_validation() {
    // A part with two kinds or none, one that is not an object, a repeated key, a kind of the wrong
    // type: the decoder refuses each, so the model validation reads has exactly one kind per part.
    assert!(refused_by_the_decoder(message(json!([{"text": "a", "url": "https://x/y"}]))));
    assert!(refused_by_the_decoder(message(json!([{"file": {"uri": "https://x/y"}}]))));
    assert!(refused_by_the_decoder(message(json!(["text"]))));
    assert!(refused_by_the_decoder(message(json!([{"text": 5}]))));
    assert!(refused_by_the_decoder(message(json!([{"url": "u", "mediaType": 3}]))));
    let twice = r#"{"message":{"messageId":"m","parts":[{"text":"a","text":"b"}]}}"#;
    let twice = serde_json::value::RawValue::from_string(twice.to_owned()).expect("raw");
    assert!(a2a_model::Request::parse(Operation::SendMessage, Some(&twice)).is_err());
    // 0.3's `kind` is not part of the 1.0 model: it is dropped, never written for the agent.
    let (checked, body) = decoded(message(json!([{"kind": "text", "text": "0.3 style"}])));
    assert!(!String::from_utf8_lossy(&body).contains("kind"), "{}", String::from_utf8_lossy(&body));
    let policy = policy(&ValidationConfig::default());
    assert!(policy.check(&send_call(), Some(&route("echo", "echo")), checked.message().expect("send")).is_ok());

    let described =
        message(json!([{"text": "a", "metadata": {"k": 1}, "filename": "a.txt", "mediaType": "text/plain"}]));
    assert!(check("echo", "echo", described).is_ok(), "the optional fields are fine");
    let empty = message(json!([{"text": ""}, {"raw": ""}, {"url": ""}]));
    assert_eq!(pointers(check("x", "y", empty)), ["/parts/1/raw", "/parts/2/url"]);
}

#[test]
fn parts_the_skill_does_not_accept_are_refused() {
    let data_to_echo = message(json!([{"data": {"a": 1}}]));
    let found = violations(check("echo", "echo", data_to_echo));
    assert_eq!(found[0].pointer, "/parts/0");
    assert_eq!(found[0].description, "this skill does not accept 'application/json' input; it accepts text/plain");
    let image = message(json!([{"text": "see"}, {"raw": "iVBORw0KGgo=", "mediaType": "image/png"}]));
    assert_eq!(pointers(check("review", "review-pr", image.clone())), ["/parts/1"]);
    let link = message(json!([{"url": "https://x/diff"}]));
    assert_eq!(pointers(check("review", "review-pr", link)), ["/parts/0"], "octet-stream when no media type");

    let mut config = ValidationConfig::default();
    let wide = SkillRules { input_modes: Some(vec!["text/*".into(), "image/*".into()]), ..SkillRules::default() };
    config.skills.insert("review-pr".into(), wide);
    assert!(check_with(&policy(&config), "review", "review-pr", image).is_ok(), "configured modes, wildcards");
}

#[test]
fn bad_ids_are_refused() {
    // The model reads a missing message id as an empty one, and writes it so for the agent.
    let missing = json!({"parts": [{"text": "x"}]});
    assert_eq!(
        violations(check("echo", "echo", missing))[0],
        Violation { pointer: "/messageId".into(), description: "must not be empty".into() }
    );
    assert!(refused_by_the_decoder(json!({"messageId": 7, "parts": [{"text": "x"}]})), "not a string");
    let cases = [
        (json!({"messageId": ""}), "/messageId", "must not be empty"),
        (json!({"messageId": "m", "contextId": "a\u{7}b"}), "/contextId", "must not contain control characters"),
        (json!({"messageId": "m", "taskId": "t\u{85}"}), "/taskId", "must not contain control characters"),
        (json!({"messageId": "m".repeat(257)}), "/messageId", "must be at most 256 bytes long"),
    ];
    for (mut message, pointer, description) in cases {
        message["parts"] = json!([{"text": "x"}]);
        let found = violations(check("echo", "echo", message));
        assert_eq!(found, [Violation { pointer: pointer.into(), description: description.into() }]);
    }
    // An empty optional id reads as absent: nothing the agent receives.
    let fine = json!({"messageId": "m".repeat(256), "taskId": "task-1", "contextId": "", "parts": [{"text": "x"}]});
    assert!(check("echo", "echo", fine).is_ok());
}

#[test]
fn a_further_id_rule_can_be_plugged_in() {
    struct UuidTaskIds;
    impl IdRule for UuidTaskIds {
        fn check(&self, call: &A2aCall, field: IdField, id: &str) -> Result<(), String> {
            if call.binding == Binding::Rest && field == IdField::TaskId && uuid::Uuid::parse_str(id).is_err() {
                return Err("must be a UUID in this dialect".into());
            }
            Ok(())
        }
    }
    let policy = policy(&ValidationConfig::default()).with_id_rule(Arc::new(UuidTaskIds));
    let message = |task: &str| json!({"messageId": "m", "taskId": task, "parts": [{"text": "x"}]});
    let rest = A2aCall::new(Binding::Rest, Operation::SendMessage);
    let found = violations(check_decoded(&policy, &rest, None, message("t-1")));
    assert_eq!(found[0].pointer, "/taskId");
    assert!(check_decoded(&policy, &rest, None, message("1b4e28ba-2fa1-11d2-883f-0016d3cca427")).is_ok());
    assert!(check_decoded(&policy, &send_call(), None, message("t-1")).is_ok(), "the rule's own choice");
}

#[test]
fn streaming_sends_are_checked_alike() {
    let rest = A2aCall::new(Binding::Rest, Operation::SendStreamingMessage);
    let params = serde_json::value::RawValue::from_string(json!({"message": review(json!({"diff": 1}))}).to_string())
        .expect("raw");
    let request = a2a_model::Request::parse(Operation::SendStreamingMessage, Some(&params)).expect("decoded");
    let checked = Checked { request, early: None };
    let policy = policy(&ValidationConfig::default());
    let found =
        violations(policy.check(&rest, Some(&route("review", "review-pr")), checked.message().expect("a send")));
    assert_eq!(found[0].pointer, "/diff");
}

#[tokio::test]
async fn other_operations_pass_untouched() {
    let layer = ValidateLayer::new(Arc::new(policy(&ValidationConfig::default())));
    let service = layer.layer(service_fn(|_: CallRequest| async { Ok::<_, A2aError>("forwarded") }));
    let context = CallContext::for_test(A2aCall::new(Binding::Rest, Operation::GetTask), "r");
    let request = Request::new(Box::new(context));
    assert_eq!(service.oneshot(request).await, Ok("forwarded"));
}

#[test]
fn configured_schemas_are_checked_when_the_policy_is_built() {
    let build = |rules: SkillRules| {
        let mut config = ValidationConfig::default();
        config.skills.insert("s".into(), rules);
        InputValidation::new(&config, &fixtures(), Arc::new(NoCatalog)).err()
    };
    let missing = build(SkillRules { schema_file: Some("nope.json".into()), ..SkillRules::default() }).expect("error");
    assert_eq!(missing.path, "skills.s.schema_file");
    let invalid = build(SkillRules { schema_file: Some("not-a-schema.json".into()), ..SkillRules::default() });
    assert!(invalid.expect("error").reason.contains("not a valid JSON Schema"));
    let both = SkillRules {
        schema_file: Some("review-pr.schema.json".into()),
        schema: Some(json!({})),
        ..SkillRules::default()
    };
    assert_eq!(build(both).expect("error").path, "skills.s.schema");
    assert!(check_schema(&serde_json::from_str(REVIEW_SCHEMA).expect("fixture")).is_ok());
}

#[test]
fn the_config_has_safe_defaults_and_refuses_unknown_keys() {
    let config: ValidationConfig = serde_json::from_str(
        r#"{"limits": {"max_parts": 8}, "skills": {"review-pr": {"schema_file": "s.json", "max_parts": 4}}}"#,
    )
    .expect("parses");
    assert_eq!(config.limits, Limits { max_parts: 8, ..Limits::default() });
    assert_eq!(config.skills["review-pr"].limits(config.limits).max_parts, 4);
    assert_eq!(
        Limits::default(),
        Limits { max_parts: 32, max_text_bytes: 1 << 20, max_data_depth: 32, max_message_bytes: 4 << 20 }
    );
    assert!(serde_json::from_str::<ValidationConfig>(r#"{"skills": {"x": {"schema_fil": "s.json"}}}"#).is_err());
}
