use std::sync::Arc;

use a2a_core::{A2aError, AuthMethod, CallContext, CallRequest, Caller, RouteHint};
use a2a_policies::authorize::{AuthorizeLayer, Permissions, PermissionsConfig};
use serde_json::{Value, json};
use tower::{Layer, ServiceExt, service_fn};

use super::*;

fn caller(id: &str, tenant: Option<&str>, scopes: &[&str], auth: AuthMethod) -> Caller {
    Caller {
        id: Arc::from(id),
        tenant: tenant.map(Arc::from),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        auth,
    }
}

fn jwt(issuer: &str) -> AuthMethod {
    AuthMethod::Jwt { issuer: Arc::from(issuer) }
}

fn permissions(config: Value) -> Permissions {
    let config: PermissionsConfig = serde_json::from_value(config).expect("config parses");
    Permissions::new(&config).expect("config is valid")
}

/// Whether the authorization layer lets `caller` call `skill` on an agent hosting `skills`.
async fn layer_allows(p: &Permissions, caller: &Caller, skill: &str, skills: &[&str]) -> bool {
    let inner = service_fn(|_: CallRequest| async { Ok::<_, A2aError>(()) });
    let call = a2a_core::A2aCall::new(a2a_core::Binding::JsonRpc, a2a_core::Operation::SendMessage);
    let mut context = CallContext::for_test(call, "r");
    context.caller = caller.clone();
    let skills: Vec<String> = skills.iter().map(|s| s.to_string()).collect();
    let named = (!skill.is_empty()).then(|| skill.to_string());
    let route =
        RouteHint { backend: Arc::from("agent"), skills: named.clone().map_or(skills, |s| vec![s]), skill: named };
    context.info.set_route(route);
    let request = http::Request::new(Box::new(context));
    AuthorizeLayer::new(Arc::new(p.clone())).layer(inner).oneshot(request).await.is_ok()
}

fn card(skills: &[&str]) -> Value {
    json!({"name": "agent", "skills": skills.iter().map(|id| json!({"id": id, "name": id})).collect::<Vec<_>>()})
}

fn listed(card: &Option<Value>) -> Vec<String> {
    let skills = card.as_ref().and_then(|c| c["skills"].as_array().cloned()).unwrap_or_default();
    skills.iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
}

/// Every rule kind (skill list, `*`, scopes, caller ids, tenants, issuers, a deny effect, the
/// default): the skills the caller's view lists are exactly those the authorization layer lets it call.
#[tokio::test]
async fn discovery_and_enforcement_agree_for_every_rule_kind() {
    let skills = ["echo", "review-pr", "deploy", "clarify", "slow"];
    let p = permissions(json!({
        "default": "deny",
        "rules": [
            {"skills": ["deploy"], "effect": "deny", "tenants": ["globex"], "issuers": ["https://idp/"]},
            {"skills": ["review-pr"], "any_scope": ["review:write"]},
            {"skills": ["deploy"], "callers": ["jwt:https://idp/|ops"]},
            {"skills": ["clarify"], "tenants": ["acme"], "issuers": ["https://idp/"]},
            {"skills": ["*"], "any_scope": ["admin"]},
            {"skills": ["echo"]},
        ]
    }));
    let callers = [
        caller("jwt:https://idp/|alice", Some("acme"), &["review:write"], jwt("https://idp/")),
        caller("jwt:https://idp/|ops", Some("globex"), &[], jwt("https://idp/")),
        caller("jwt:https://idp/|root", Some("globex"), &["admin"], jwt("https://idp/")),
        caller("jwt:https://other/|mallory", Some("acme"), &[], jwt("https://other/")),
        caller("jwt:https://idp/|ops", None, &[], jwt("https://idp/")),
        caller("key", None, &["admin"], AuthMethod::ApiKey { key_id: Arc::from("k") }),
    ];
    let mut views = std::collections::HashSet::new();
    for caller in &callers {
        let view = view_card(&p, Viewer::of(Some(caller)), card(&skills));
        let mut allowed = Vec::new();
        for skill in skills {
            if layer_allows(&p, caller, skill, &skills).await {
                allowed.push(skill.to_string());
            }
        }
        assert_eq!(listed(&view), allowed, "caller {}", caller.id);
        // A call naming no skill on an agent is allowed exactly when every skill it hosts is listed.
        let unnamed = layer_allows(&p, caller, "", &skills).await;
        assert_eq!(unnamed, allowed.len() == skills.len(), "caller {}", caller.id);
        views.insert(allowed);
    }
    assert!(views.len() >= 5, "the callers see different views: {views:?}");
}

#[tokio::test]
async fn an_agent_without_skills_is_listed_exactly_when_a_call_to_it_is_allowed() {
    let alice = caller("a", None, &[], AuthMethod::ApiKey { key_id: Arc::from("k") });
    for p in [Permissions::allow_all(), permissions(json!({"rules": [{"skills": ["*"]}]}))] {
        let view = view_card(&p, Viewer::of(Some(&alice)), card(&[]));
        assert_eq!(view.is_some(), layer_allows(&p, &alice, "", &[]).await);
    }
}

#[test]
fn no_credentials_and_anonymous_callers_see_the_public_card() {
    let p = permissions(json!({"default": "deny"}));
    let anonymous = Caller::anonymous([127, 0, 0, 1].into());
    for viewer in [Viewer::Public, Viewer::of(Some(&anonymous)), Viewer::of(None)] {
        assert_eq!(listed(&view_card(&p, viewer, card(&["echo", "deploy"]))), ["echo", "deploy"]);
    }
}

#[test]
fn an_entry_names_the_agent_card_skills_with_schemas_and_bindings() {
    let card = json!({
        "name": "Reviewer", "description": "reviews", "version": "1.0.0",
        "supportedInterfaces": [{"url": "http://gw/agents/review/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "skills": [{"id": "review-pr", "name": "Review", "description": "d", "tags": ["t"], "examples": ["e"], "inputSchema": {"type": "object"}}]
    });
    let entry = entry("review", &card, "http://gw");
    assert_eq!(entry["identifier"], "http://gw/agents/review");
    assert_eq!(entry["type"], "application/a2a-agent-card+json");
    assert_eq!(entry["url"], "http://gw/agents/review/.well-known/agent-card.json");
    assert_eq!((&entry["displayName"], &entry["description"]), (&json!("Reviewer"), &json!("reviews")));
    let ours = &entry["extensions"][EXTENSION];
    assert_eq!(ours["skills"][0]["inputSchema"], json!({"type": "object"}));
    assert!(ours["skills"][0].get("examples").is_none());
    assert_eq!(ours["bindings"], card["supportedInterfaces"]);
}
