//! Skill permissions: which callers may use which skills.
//!
//! Owns the `permissions` config section, its compiled form [`Permissions`] (also used to trim the
//! extended agent card to the skills a caller may use), and the [`AuthorizeLayer`] that refuses a call
//! whose skill the caller may not use. It sits after route resolution (which names the skill in
//! [`RouteHint`]) and before rate limiting.
//!
//! Rules are read top to bottom; the first rule that names the skill and whose conditions all hold
//! decides (its `effect`, `allow` unless said otherwise). When no rule matches, `default` decides.
//!
//! ```yaml
//! permissions:
//!   default: deny
//!   rules:
//!     - skills: [review-pr]
//!       any_scope: [review:write]
//!     - skills: ["*"]
//!       tenants: [acme]
//! ```

mod config;

use std::sync::Arc;

use crate::check::{Check, CheckLayer, CheckService, Verdict};
use a2a_core::{A2aError, CallRequest, Caller, RouteHint};

pub use config::{Effect, PermissionsConfig, PermissionsConfigError, RuleConfig};

/// Compiled permission rules. Build once per configuration and share it (`Arc`).
#[derive(Debug, Clone)]
pub struct Permissions {
    default: Effect,
    require_known_skill: bool,
    rules: Box<[Rule]>,
}

#[derive(Debug, Clone)]
struct Rule {
    effect: Effect,
    /// `None` stands for `"*"`: every skill.
    skills: Option<Box<[Box<str>]>>,
    any_scope: Option<Box<[Box<str>]>>,
    callers: Option<Box<[Box<str>]>>,
    tenants: Option<Box<[Box<str>]>>,
    issuers: Option<Box<[Box<str>]>>,
}

/// What decided a call: a rule (by its index in `permissions.rules`) or the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    Rule(usize),
    Default,
}

impl Rule {
    fn names_skill(&self, skill: &str) -> bool {
        self.skills.as_ref().is_none_or(|skills| skills.iter().any(|s| &**s == skill))
    }

    fn holds_for(&self, caller: &Caller) -> bool {
        self.any_scope.as_ref().is_none_or(|scopes| scopes.iter().any(|s| caller.has_scope(s)))
            && self.callers.as_ref().is_none_or(|ids| ids.iter().any(|id| **id == *caller.id))
            && self.tenants.as_ref().is_none_or(|tenants| {
                caller.tenant.as_deref().is_some_and(|tenant| tenants.iter().any(|t| &**t == tenant))
            })
            && self.issuers.as_ref().is_none_or(|issuers| issuers.iter().any(|i| &**i == caller.tenant_authority()))
    }

    /// The conditions that do not hold for `caller`, for the audit log.
    fn unmet(&self, caller: &Caller) -> Vec<String> {
        let mut unmet = Vec::new();
        if let Some(scopes) = &self.any_scope
            && !scopes.iter().any(|s| caller.has_scope(s))
        {
            unmet.push(format!("any_scope {scopes:?}"));
        }
        if let Some(ids) = &self.callers
            && !ids.iter().any(|id| **id == *caller.id)
        {
            unmet.push(format!("callers {ids:?}"));
        }
        if let Some(tenants) = &self.tenants
            && !caller.tenant.as_deref().is_some_and(|tenant| tenants.iter().any(|t| &**t == tenant))
        {
            unmet.push(format!("tenants {tenants:?}"));
        }
        if let Some(issuers) = &self.issuers
            && !issuers.iter().any(|i| &**i == caller.tenant_authority())
        {
            unmet.push(format!("issuers {issuers:?}"));
        }
        unmet
    }
}

impl Permissions {
    /// Validates and compiles a `permissions` section.
    pub fn new(config: &PermissionsConfig) -> Result<Permissions, PermissionsConfigError> {
        config.validate()?;
        let boxed = |items: &[String]| items.iter().map(|s| Box::from(s.as_str())).collect();
        let list = |items: &Option<Vec<String>>| items.as_deref().map(boxed);
        let rules = config
            .rules
            .iter()
            .map(|rule| Rule {
                effect: rule.effect,
                skills: if rule.skills.iter().any(|s| s == "*") { None } else { Some(boxed(&rule.skills)) },
                any_scope: list(&rule.any_scope),
                callers: list(&rule.callers),
                tenants: list(&rule.tenants),
                issuers: list(&rule.issuers),
            })
            .collect();
        Ok(Permissions { default: config.default, require_known_skill: config.require_known_skill, rules })
    }

    /// Every caller may use every skill (a gateway without a `permissions` section).
    pub fn allow_all() -> Permissions {
        Permissions { default: Effect::Allow, require_known_skill: false, rules: Box::new([]) }
    }

    /// Whether `caller` may use `skill`.
    pub fn may_use(&self, caller: &Caller, skill: &str) -> bool {
        self.decide(caller, skill).0 == Effect::Allow
    }

    /// The verdict for `caller` on `skill` and what decided it.
    pub fn decide(&self, caller: &Caller, skill: &str) -> (Effect, DecidedBy) {
        self.rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.names_skill(skill) && rule.holds_for(caller))
            .map_or((self.default, DecidedBy::Default), |(i, rule)| (rule.effect, DecidedBy::Rule(i)))
    }

    /// Removes from an agent card's `skills` every skill `caller` may not use: the caller's extended
    /// card lists only what it may call. Skills without a string `id` are removed too.
    pub fn retain_card_skills(&self, caller: &Caller, card: &mut serde_json::Value) {
        if let Some(serde_json::Value::Array(skills)) = card.get_mut("skills") {
            skills.retain(|skill| {
                skill.get("id").and_then(serde_json::Value::as_str).is_some_and(|id| self.may_use(caller, id))
            });
        }
    }

    /// Whether every caller may use every skill (no rule, default allow): the only case in which a
    /// call to an agent that declares no skills is allowed.
    pub fn allows_everything(&self) -> bool {
        self.rules.is_empty() && self.default == Effect::Allow
    }

    /// Checks one call. `Err` carries the caller-facing refusal and the operator-facing detail.
    /// A routed call is allowed only when the caller may use every skill it may exercise
    /// ([`RouteHint::skills`]); a routed call whose skills cannot be told is refused unless every
    /// caller may use everything. Calls the gateway answers itself (no route) need no skill.
    fn check(&self, caller: &Caller, route: Option<&RouteHint>) -> Result<(), (A2aError, String)> {
        let named = route.and_then(|r| r.skill.as_deref());
        if named.is_none() && self.require_known_skill {
            let refusal = A2aError::PermissionDenied(
                "this call names no skill; name the skill you want with metadata.skillId".into(),
            );
            return Err((refusal, "permissions.require_known_skill: the call's skill is unknown".into()));
        }
        let Some(route) = route else { return Ok(()) };
        if route.skills.is_empty() {
            if self.allows_everything() {
                return Ok(());
            }
            let refusal =
                A2aError::PermissionDenied("the agent declares no skills: the call cannot be authorized".into());
            return Err((refusal, format!("the agent '{}' declares no skills to authorize by", route.backend)));
        }
        let denied = route.skills.iter().find(|skill| !self.may_use(caller, skill));
        let Some(skill) = denied else { return Ok(()) };
        let detail = match self.decide(caller, skill) {
            (_, DecidedBy::Rule(i)) => {
                format!("permissions.rules[{i}] denies skill '{skill}' to caller '{}'", caller.id)
            }
            (_, DecidedBy::Default) => self.explain_default_denial(caller, skill),
        };
        if named.is_some() || route.skills.len() == 1 {
            let shown = named.filter(|n| *n != skill.as_str()).map_or(String::new(), |_| " (the task's skill)".into());
            return Err((
                A2aError::PermissionDenied(format!("you may not use the skill '{}'{shown}", clip(skill))),
                detail,
            ));
        }
        let allowed: Vec<&str> = route.skills.iter().filter(|s| self.may_use(caller, s)).map(|s| clip(s)).collect();
        let refusal = A2aError::PermissionDenied(format!(
            "this call names no skill and the agent hosts several, not all of which you may use; name one with metadata.skillId: [{}]",
            allowed.join(",")
        ));
        Err((refusal, format!("no skill named; {detail}")))
    }

    fn explain_default_denial(&self, caller: &Caller, skill: &str) -> String {
        let mut detail = format!(
            "no rule allows skill '{skill}' to caller '{}' (tenant {:?}, scopes {:?}); permissions.default: deny",
            caller.id,
            caller.tenant.as_deref(),
            &*caller.scopes
        );
        for (i, rule) in self.rules.iter().enumerate().filter(|(_, rule)| rule.names_skill(skill)) {
            detail.push_str(&format!("; rules[{i}] unmet: {}", rule.unmet(caller).join(", ")));
        }
        detail
    }
}

/// A skill id as echoed to the caller: ids come from the request, so keep them short.
fn clip(skill: &str) -> &str {
    match skill.char_indices().nth(64) {
        Some((end, _)) => &skill[..end],
        None => skill,
    }
}

/// Refuses calls whose skill the caller may not use. Reads [`Caller`] and [`RouteHint`] from the
/// request extensions and records why it refused in [`RequestInfo`].
#[derive(Debug, Clone)]
pub struct Authorization {
    permissions: Arc<Permissions>,
}

/// The layer of [`Authorization`].
pub type AuthorizeLayer = CheckLayer<Authorization>;
/// The service of [`AuthorizeLayer`].
pub type Authorize<S> = CheckService<Authorization, S>;

impl AuthorizeLayer {
    pub fn new(permissions: Arc<Permissions>) -> AuthorizeLayer {
        CheckLayer::of(Authorization { permissions })
    }
}

impl Check for Authorization {
    fn check(&self, request: CallRequest) -> Verdict {
        let context = request.body();
        match self.permissions.check(&context.caller, context.route()) {
            Ok(()) => Verdict::Pass(request),
            Err((refusal, detail)) => {
                tracing::debug!(%detail, "skill permission refused");
                context.info.set_denial_detail(detail);
                Verdict::Refuse(refusal)
            }
        }
    }
}

#[cfg(test)]
mod tests;
