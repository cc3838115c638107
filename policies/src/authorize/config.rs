//! The `permissions` config section and its validation.

use serde::Deserialize;

/// What a rule (or the default) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    #[default]
    Allow,
    Deny,
}

/// `permissions`: who may use which skills.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// What applies to a skill call no rule matches. Deny unless said otherwise: a section that
    /// lists rules means "only these".
    #[serde(default = "default_effect")]
    pub default: Effect,
    /// Refuse calls whose skill the gateway cannot tell (instead of letting them through; task-scoped
    /// calls are checked by task ownership elsewhere).
    #[serde(default)]
    pub require_known_skill: bool,
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
}

fn default_effect() -> Effect {
    Effect::Deny
}

/// `permissions.rules[i]`: matches a call when its skill is listed and every condition given holds.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Skill ids, or `"*"` alone for every skill.
    pub skills: Vec<String>,
    /// The caller holds at least one of these scopes.
    #[serde(default)]
    pub any_scope: Option<Vec<String>>,
    /// The caller's id is one of these.
    #[serde(default)]
    pub callers: Option<Vec<String>>,
    /// The caller's tenant is one of these (a caller without a tenant never matches).
    #[serde(default)]
    pub tenants: Option<Vec<String>>,
    /// Whose word on the caller counts: JWT issuers (their `issuer` URL), `api-key` or
    /// `introspection`. Required with `tenants` when more than one of them can name a tenant.
    #[serde(default)]
    pub issuers: Option<Vec<String>>,
    #[serde(default)]
    pub effect: Effect,
}

/// A `permissions` section that cannot be used, with the key path at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PermissionsConfigError {
    pub path: String,
    pub message: String,
}

fn invalid(path: String, message: &str) -> PermissionsConfigError {
    PermissionsConfigError { path, message: message.into() }
}

impl PermissionsConfig {
    /// Checks what types alone cannot. Paths start at `permissions`.
    pub fn validate(&self) -> Result<(), PermissionsConfigError> {
        for (i, rule) in self.rules.iter().enumerate() {
            let at = |key: &str| format!("permissions.rules[{i}].{key}");
            check_list(&at("skills"), &rule.skills, "must not be empty")?;
            if rule.skills.len() > 1 && rule.skills.iter().any(|s| s == "*") {
                return Err(invalid(at("skills"), "\"*\" stands for every skill and must be the only entry"));
            }
            for (key, list) in [
                ("any_scope", &rule.any_scope),
                ("callers", &rule.callers),
                ("tenants", &rule.tenants),
                ("issuers", &rule.issuers),
            ] {
                if let Some(list) = list {
                    check_list(&at(key), list, "must not be empty (leave the key out to not check it)")?;
                }
            }
        }
        Ok(())
    }

    /// Refuses rules that trust a tenant name without saying whose: with several sources of tenant
    /// claims (`tenant_sources`, e.g. two JWT issuers), `tenants` needs `issuers`.
    pub fn check_tenant_sources(&self, tenant_sources: &[String]) -> Result<(), PermissionsConfigError> {
        if tenant_sources.len() < 2 {
            return Ok(());
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.tenants.is_some() && rule.issuers.is_none() {
                return Err(invalid(
                    format!("permissions.rules[{i}].tenants"),
                    &format!(
                        "several authorities name tenants ({}); say whose tenants these are with 'issuers'",
                        tenant_sources.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn check_list(path: &str, list: &[String], when_empty: &str) -> Result<(), PermissionsConfigError> {
    if list.is_empty() {
        return Err(invalid(path.into(), when_empty));
    }
    match list.iter().position(|item| item.trim().is_empty()) {
        Some(j) => Err(invalid(format!("{path}[{j}]"), "must not be blank")),
        None => Ok(()),
    }
}
