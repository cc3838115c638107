use std::sync::Arc;

use serde_json::json;
use tower::{Layer, ServiceExt, service_fn};

use super::*;
use a2a_core::CallContext;
use a2a_core::{A2aCall, AuthMethod, Binding, Operation, RequestInfo};

fn caller(id: &str, tenant: Option<&str>, scopes: &[&str]) -> Caller {
    Caller {
        id: Arc::from(id),
        tenant: tenant.map(Arc::from),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        auth: AuthMethod::ApiKey { key_id: Arc::from("k") },
    }
}

fn permissions(config: serde_json::Value) -> Permissions {
    let config: PermissionsConfig = serde_json::from_value(config).expect("config parses");
    Permissions::new(&config).expect("config is valid")
}

fn config_error(config: serde_json::Value) -> String {
    let config: PermissionsConfig = serde_json::from_value(config).expect("config parses");
    Permissions::new(&config).expect_err("config is invalid").to_string()
}

#[test]
fn a_scope_rule_allows_holders_of_any_listed_scope() {
    let p = permissions(json!({"rules": [{"skills": ["review-pr"], "any_scope": ["review:write", "admin"]}]}));
    assert!(p.may_use(&caller("a", None, &["review:write"]), "review-pr"));
    assert!(p.may_use(&caller("b", None, &["other", "admin"]), "review-pr"));
    assert!(!p.may_use(&caller("c", None, &["review:read"]), "review-pr"));
    assert!(!p.may_use(&caller("d", None, &[]), "review-pr"));
    assert!(!p.may_use(&caller("a", None, &["review:write"]), "deploy"), "the rule names only review-pr");
}

#[test]
fn a_callers_rule_allows_only_the_listed_callers() {
    let p = permissions(json!({"rules": [{"skills": ["deploy"], "callers": ["jwt:https://idp/|alice"]}]}));
    assert!(p.may_use(&caller("jwt:https://idp/|alice", None, &[]), "deploy"));
    assert!(!p.may_use(&caller("jwt:https://idp/|bob", None, &[]), "deploy"));
    assert!(!p.may_use(&caller("jwt:https://idp/|alice2", None, &[]), "deploy"), "ids match exactly");
}

#[test]
fn a_tenants_rule_needs_a_listed_tenant() {
    let p = permissions(json!({"rules": [{"skills": ["echo"], "tenants": ["acme", "globex"]}]}));
    assert!(p.may_use(&caller("a", Some("acme"), &[]), "echo"));
    assert!(p.may_use(&caller("b", Some("globex"), &[]), "echo"));
    assert!(!p.may_use(&caller("c", Some("initech"), &[]), "echo"));
    assert!(!p.may_use(&caller("d", None, &[]), "echo"), "a caller without tenant never matches");
}

#[test]
fn every_given_condition_must_hold() {
    let p = permissions(json!({"rules": [{
        "skills": ["echo"], "any_scope": ["echo"], "tenants": ["acme"], "callers": ["a", "b"]
    }]}));
    assert!(p.may_use(&caller("a", Some("acme"), &["echo"]), "echo"));
    assert!(!p.may_use(&caller("a", Some("acme"), &[]), "echo"), "scope missing");
    assert!(!p.may_use(&caller("a", Some("globex"), &["echo"]), "echo"), "wrong tenant");
    assert!(!p.may_use(&caller("c", Some("acme"), &["echo"]), "echo"), "unlisted caller");
}

#[test]
fn a_rule_without_conditions_applies_to_every_caller() {
    let p = permissions(json!({"rules": [{"skills": ["echo", "shout"]}]}));
    assert!(p.may_use(&caller("anyone", None, &[]), "echo"));
    assert!(p.may_use(&caller("anyone", None, &[]), "shout"));
    assert!(!p.may_use(&caller("anyone", None, &[]), "review-pr"));
}

#[test]
fn a_wildcard_rule_names_every_skill() {
    let p = permissions(json!({"rules": [{"skills": ["*"], "any_scope": ["a2a:all"]}]}));
    assert!(p.may_use(&caller("a", None, &["a2a:all"]), "echo"));
    assert!(p.may_use(&caller("a", None, &["a2a:all"]), "anything-at-all"));
    assert!(!p.may_use(&caller("b", None, &[]), "echo"));
}

#[test]
fn the_default_decides_when_no_rule_matches() {
    let deny = permissions(json!({"default": "deny", "rules": [{"skills": ["echo"]}]}));
    assert!(!deny.may_use(&caller("a", None, &[]), "shout"));
    assert_eq!(deny.decide(&caller("a", None, &[]), "shout"), (Effect::Deny, DecidedBy::Default));
    let allow = permissions(json!({"default": "allow", "rules": [{"skills": ["echo"], "effect": "deny"}]}));
    assert!(allow.may_use(&caller("a", None, &[]), "shout"));
    assert!(!allow.may_use(&caller("a", None, &[]), "echo"));
    assert_eq!(allow.decide(&caller("a", None, &[]), "echo"), (Effect::Deny, DecidedBy::Rule(0)));
}

#[test]
fn the_default_is_deny_when_left_out() {
    let p = permissions(json!({}));
    assert!(!p.may_use(&caller("a", None, &["everything"]), "echo"));
    assert!(Permissions::allow_all().may_use(&caller("a", None, &[]), "echo"));
}

#[test]
fn the_first_matching_rule_wins() {
    let p = permissions(json!({"default": "allow", "rules": [
        {"skills": ["deploy"], "tenants": ["acme"]},
        {"skills": ["deploy"], "effect": "deny"},
    ]}));
    assert_eq!(p.decide(&caller("a", Some("acme"), &[]), "deploy"), (Effect::Allow, DecidedBy::Rule(0)));
    assert_eq!(p.decide(&caller("b", Some("globex"), &[]), "deploy"), (Effect::Deny, DecidedBy::Rule(1)));
    assert!(p.may_use(&caller("b", Some("globex"), &[]), "echo"));
}

#[test]
fn the_extended_card_lists_only_usable_skills() {
    let p = permissions(json!({"rules": [
        {"skills": ["echo"]},
        {"skills": ["review-pr"], "any_scope": ["review:write"]},
    ]}));
    let card = json!({"name": "gw", "skills": [
        {"id": "echo", "name": "Echo"},
        {"id": "review-pr", "name": "Review"},
        {"id": "deploy", "name": "Deploy"},
        {"name": "no id"},
    ]});
    let ids = |card: &serde_json::Value| -> Vec<String> {
        card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
    };
    let mut reviewer = card.clone();
    p.retain_card_skills(&caller("r", None, &["review:write"]), &mut reviewer);
    assert_eq!(ids(&reviewer), ["echo", "review-pr"]);
    assert_eq!(reviewer["name"], "gw", "the rest of the card is untouched");
    let mut guest = card.clone();
    p.retain_card_skills(&caller("g", None, &[]), &mut guest);
    assert_eq!(ids(&guest), ["echo"]);
    let mut no_skills = json!({"name": "gw"});
    p.retain_card_skills(&caller("g", None, &[]), &mut no_skills);
    assert_eq!(no_skills, json!({"name": "gw"}));
}

#[test]
fn validation_names_the_key_path() {
    let rules = |rule: serde_json::Value| json!({"rules": [{"skills": ["echo"]}, rule]});
    assert_eq!(config_error(rules(json!({"skills": []}))), "permissions.rules[1].skills: must not be empty");
    assert!(config_error(rules(json!({"skills": ["*", "echo"]}))).starts_with("permissions.rules[1].skills: "));
    assert!(
        config_error(rules(json!({"skills": ["a"], "any_scope": []})))
            .starts_with("permissions.rules[1].any_scope: must not be empty")
    );
    assert!(config_error(rules(json!({"skills": ["a"], "callers": []}))).starts_with("permissions.rules[1].callers: "));
    assert!(
        config_error(rules(json!({"skills": ["a"], "tenants": ["x", " "]})))
            .starts_with("permissions.rules[1].tenants[1]: must not be blank")
    );
    assert!(config_error(rules(json!({"skills": ["a", ""]}))).starts_with("permissions.rules[1].skills[1]: "));
}

#[test]
fn unknown_keys_and_effects_are_refused() {
    assert!(
        serde_json::from_value::<PermissionsConfig>(json!({"rules": [{"skills": ["a"], "scopes": ["x"]}]})).is_err()
    );
    assert!(serde_json::from_value::<PermissionsConfig>(json!({"default": "maybe"})).is_err());
    assert!(
        serde_json::from_value::<PermissionsConfig>(json!({"rules": [{"any_scope": ["x"]}]})).is_err(),
        "skills is required"
    );
}

fn request(caller: Caller, skill: Option<&str>) -> (CallRequest, RequestInfo) {
    let mut context = CallContext::for_test(A2aCall::new(Binding::JsonRpc, Operation::SendMessage), "req-1");
    context.caller = caller;
    context.info.set_route(RouteHint {
        backend: Arc::from("echo"),
        skill: skill.map(String::from),
        skills: skill.map(String::from).into_iter().collect(),
    });
    let info = context.info.clone();
    (http::Request::new(Box::new(context)), info)
}

async fn run(p: Permissions, request: CallRequest) -> Result<&'static str, A2aError> {
    let inner = service_fn(|_: CallRequest| async { Ok::<_, A2aError>("forwarded") });
    AuthorizeLayer::new(Arc::new(p)).layer(inner).oneshot(request).await
}

#[tokio::test]
async fn the_layer_forwards_an_allowed_call() {
    let p = permissions(json!({"rules": [{"skills": ["echo"], "any_scope": ["echo"]}]}));
    let (request, info) = request(caller("a", None, &["echo"]), Some("echo"));
    assert_eq!(run(p, request).await, Ok("forwarded"));
    assert_eq!(info.denial_detail(), None);
}

#[tokio::test]
async fn the_layer_refuses_a_forbidden_skill_clearly_and_records_why() {
    let p = permissions(json!({"rules": [{"skills": ["review-pr"], "any_scope": ["review:write"]}]}));
    let (request, info) = request(caller("bob", Some("acme"), &["review:read"]), Some("review-pr"));
    let refusal = run(p, request).await.unwrap_err();
    assert_eq!(refusal, A2aError::PermissionDenied("you may not use the skill 'review-pr'".into()));
    let detail = info.denial_detail().expect("detail recorded");
    assert!(
        detail.contains("caller 'bob'") && detail.contains("rules[0] unmet: any_scope [\"review:write\"]"),
        "{detail}"
    );
    assert!(detail.contains("permissions.default: deny"), "{detail}");
}

#[tokio::test]
async fn the_layer_names_the_deny_rule_that_decided() {
    let p = permissions(json!({"default": "allow", "rules": [{"skills": ["deploy"], "effect": "deny"}]}));
    let (request, info) = request(caller("bob", None, &[]), Some("deploy"));
    assert!(matches!(run(p, request).await, Err(A2aError::PermissionDenied(_))));
    assert_eq!(info.denial_detail(), Some("permissions.rules[0] denies skill 'deploy' to caller 'bob'"));
}

#[tokio::test]
async fn routed_calls_without_a_skill_are_refused_unless_everything_is_allowed() {
    let lax = permissions(json!({"rules": []}));
    let (no_skill, _) = request(caller("a", None, &[]), None);
    assert!(matches!(run(lax, no_skill).await, Err(A2aError::PermissionDenied(_))), "no fact, no permission");
    let (no_skill, _) = request(caller("a", None, &[]), None);
    assert_eq!(run(Permissions::allow_all(), no_skill).await, Ok("forwarded"));
    let mut unrouted = CallContext::for_test(A2aCall::new(Binding::JsonRpc, Operation::SendMessage), "req-2");
    unrouted.caller = caller("a", None, &[]);
    let no_route = http::Request::new(Box::new(unrouted));
    assert_eq!(run(permissions(json!({})), no_route).await, Ok("forwarded"), "no RouteHint at all");

    let strict = permissions(json!({"require_known_skill": true, "default": "allow"}));
    let (no_skill, info) = request(caller("a", None, &[]), None);
    assert!(matches!(run(strict, no_skill).await, Err(A2aError::PermissionDenied(_))));
    assert!(info.denial_detail().unwrap().contains("require_known_skill"));
}

#[test]
fn long_skill_ids_are_clipped_in_the_refusal() {
    let p = permissions(json!({}));
    let long = "x".repeat(500);
    let route = RouteHint { backend: Arc::from("echo"), skill: Some(long.clone()), skills: vec![long] };
    let (refusal, _) = p.check(&caller("a", None, &[]), Some(&route)).unwrap_err();
    assert_eq!(refusal.to_string(), format!("you may not use the skill '{}'", "x".repeat(64)));
}

fn hint(skill: Option<&str>, skills: &[&str]) -> RouteHint {
    RouteHint {
        backend: Arc::from("multi"),
        skill: skill.map(String::from),
        skills: skills.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn a_call_that_names_no_skill_needs_every_skill_the_agent_hosts() {
    let p = permissions(json!({"rules": [{"skills": ["echo"]}]}));
    let alice = caller("alice", None, &[]);
    assert!(p.check(&alice, Some(&hint(None, &["echo"]))).is_ok());
    let (refusal, detail) = p.check(&alice, Some(&hint(None, &["echo", "deploy"]))).unwrap_err();
    assert!(refusal.to_string().contains("name one with metadata.skillId: [echo]"), "{refusal}");
    assert!(detail.contains("deploy"), "{detail}");
    // A follow-up that names an allowed skill is still checked against its task's skill.
    let (refusal, _) = p.check(&alice, Some(&hint(Some("echo"), &["deploy", "echo"]))).unwrap_err();
    assert!(refusal.to_string().contains("'deploy' (the task's skill)"), "{refusal}");
}

#[test]
fn an_agent_without_skills_is_authorized_only_when_everything_is_allowed() {
    let alice = caller("alice", None, &[]);
    assert!(Permissions::allow_all().check(&alice, Some(&hint(None, &[]))).is_ok());
    let p = permissions(json!({"default": "allow", "rules": [{"skills": ["x"], "effect": "deny"}]}));
    assert!(p.check(&alice, Some(&hint(None, &[]))).is_err());
    // Calls the gateway answers itself have no route and need no skill.
    assert!(p.check(&alice, None).is_ok());
}

#[test]
fn tenant_rules_can_name_whose_tenants_they_trust() {
    let p = permissions(json!({"rules": [{"skills": ["echo"], "tenants": ["acme"], "issuers": ["https://idp-a/"]}]}));
    let from =
        |issuer: &str| Caller { auth: AuthMethod::Jwt { issuer: Arc::from(issuer) }, ..caller("x", Some("acme"), &[]) };
    assert!(p.may_use(&from("https://idp-a/"), "echo"));
    assert!(!p.may_use(&from("https://idp-b/"), "echo"), "another issuer's acme is another tenant");
    let config: PermissionsConfig =
        serde_json::from_value(json!({"rules": [{"skills": ["echo"], "tenants": ["acme"]}]})).unwrap();
    assert!(config.check_tenant_sources(&["https://idp-a/".into()]).is_ok());
    let error = config.check_tenant_sources(&["https://idp-a/".into(), "https://idp-b/".into()]).unwrap_err();
    assert_eq!(error.path, "permissions.rules[0].tenants");
}
