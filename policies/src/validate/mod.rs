//! Input validation of messages before anything is forwarded.
//!
//! Only sends (SendMessage, SendStreamingMessage) are checked; every other call passes. The message
//! is read from the checked model ([`Checked`]) the decoder built and the body for the agent is
//! written from — no pass over the body. Two phases, each reported as one [`A2aError::Validation`]
//! whose violations carry JSON pointers:
//!
//! 1. **Shape**, pointers relative to the message object:
//!    - size: the message's JSON at most `max_message_bytes`; at most `max_parts` parts (and at
//!      least one); text parts at most `max_text_bytes` (UTF-8, unescaped); data parts nested at
//!      most `max_data_depth` arrays/objects deep;
//!    - part kinds: each part holds exactly one of `text`, `raw`, `url`, `data` (A2A 1.0) — the
//!      model holds nothing else, and the decoder refuses a part with two kinds or none and any
//!      repeated key, so the gateway and the agent cannot read a part differently;
//!    - input modes: a text part is `text/plain`, a data part `application/json`, a raw or url part
//!      its `mediaType` (else `application/octet-stream`); each must match one of the skill's input
//!      modes (`type/subtype`, `type/*`, `*/*`); a skill with no modes accepts any;
//!    - ids: `messageId` not empty (the model reads a missing one as empty); it and `taskId`,
//!      `contextId` when present (an empty one reads as absent) at most 256 bytes, without control
//!      characters (Unicode `Cc`); then an optional [`IdRule`] (the hook for a dialect's stricter
//!      rule, e.g. UUID task ids).
//! 2. **Schema**, only when the shape is fine and the skill has one: the `data` value of *every*
//!    data part (`{"data": …}`) is validated against the skill's input schema — an agent may read
//!    any of them, so a second part is input as much as the first. Pointers of the first data part
//!    are relative to its value (`/diff`, `/focus/0`, what the example agents read as their input);
//!    those of later data parts relative to the message (`/parts/2/data/diff`). A missing required
//!    property or a property not allowed is reported at the property's own pointer. A message
//!    without a data part is not schema-validated (a skill may take a text-only request) unless the
//!    skill's rules say `require_data_part`, which refuses it with a violation at `""`.
//!
//! The skill is the one routing chose ([`RouteHint`]); without one, only the section's limits and
//! the skill-independent checks apply. A skill's schema and input modes come from the policy
//! configuration when it names them, else from the backend's card through [`SkillCatalog`]. Config
//! schemas are compiled when the policy is built; card schemas once per (backend, skill, card
//! version), on first use. A card schema that cannot be compiled refuses the skill's sends (it is
//! not silently skipped).
//!
//! Construction is cheap and in-process: `ValidateLayer::new(Arc::new(InputValidation::new(&config,
//! base_dir, catalog)?))`; checking a message walks the model (a data part's value is validated as
//! the decoder parsed it); only a body longer than `max_message_bytes` has its message's length
//! counted by writing it to a counter.

mod config;
mod measure;
mod message;
mod schema;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub use self::config::{ConfigError, Limits, SkillRules, ValidationConfig};
pub use self::measure::nested_deeper_than;
pub use self::message::MAX_ID_BYTES;
use self::message::{Report, Rules};
pub use self::schema::check_schema;
use self::schema::{Cache, Compiled};
use crate::check::{Check, CheckLayer, CheckService, Verdict};
use a2a_core::{A2aCall, A2aError, CallRequest, RouteHint};
use a2a_model::Message;

/// What validation needs to know about a backend's skill, from its card.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillSpec {
    /// Changes whenever the card changes; compiled schemas are cached per version.
    pub version: u64,
    /// The skill's `inputSchema` extension field, if the card has one.
    pub input_schema: Option<Arc<Value>>,
    /// The skill's `inputModes`, or the card's `defaultInputModes`; empty accepts any.
    pub input_modes: Vec<String>,
}

/// The registry's view of backends' skills. Called on every checked send: keep it a lookup.
pub trait SkillCatalog: Send + Sync + 'static {
    fn skill(&self, backend: &str, skill_id: &str) -> Option<Arc<SkillSpec>>;
}

/// A catalog that knows no skill: only the policy configuration's rules apply.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCatalog;

impl SkillCatalog for NoCatalog {
    fn skill(&self, _: &str, _: &str) -> Option<Arc<SkillSpec>> {
        None
    }
}

/// Which id an [`IdRule`] is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdField {
    MessageId,
    TaskId,
    ContextId,
}

impl IdField {
    /// The field's pointer in the message.
    pub fn pointer(self) -> &'static str {
        match self {
            IdField::MessageId => "/messageId",
            IdField::TaskId => "/taskId",
            IdField::ContextId => "/contextId",
        }
    }
}

/// A further rule for ids, run after the syntax rule: the place for a dialect's own rule (the early
/// dialect's UUID task ids). `Err` says what is wrong with the id, for the caller.
pub trait IdRule: Send + Sync + 'static {
    fn check(&self, call: &A2aCall, field: IdField, id: &str) -> Result<(), String>;
}

/// One skill's rules, resolved: limits merged, schema compiled.
struct SkillPolicy {
    limits: Limits,
    schema: Option<Compiled>,
    input_modes: Option<Vec<String>>,
    require_data_part: bool,
}

/// The validation policy: build it once from [`ValidationConfig`] and share it.
pub struct InputValidation {
    limits: Limits,
    skills: HashMap<Box<str>, SkillPolicy>,
    catalog: Arc<dyn SkillCatalog>,
    cache: Cache,
    id_rule: Option<Arc<dyn IdRule>>,
}

impl InputValidation {
    /// Resolves the configuration: reads `schema_file`s (relative to `base_dir`, the configuration
    /// file's directory), checks and compiles every configured schema. Blocking file reads: call it
    /// at startup or reload, not per request.
    pub fn new(
        config: &ValidationConfig,
        base_dir: &Path,
        catalog: Arc<dyn SkillCatalog>,
    ) -> Result<InputValidation, ConfigError> {
        let mut skills = HashMap::with_capacity(config.skills.len());
        for (skill, rules) in &config.skills {
            let schema = configured_schema(skill, rules, base_dir)?;
            let policy = SkillPolicy {
                limits: rules.limits(config.limits),
                schema,
                input_modes: rules.input_modes.clone(),
                require_data_part: rules.require_data_part,
            };
            skills.insert(Box::from(skill.as_str()), policy);
        }
        Ok(InputValidation { limits: config.limits, skills, catalog, cache: Cache::default(), id_rule: None })
    }

    /// Reads skills' schemas and input modes from `catalog` (the registry's cards) from now on.
    pub fn with_catalog(mut self, catalog: Arc<dyn SkillCatalog>) -> InputValidation {
        self.catalog = catalog;
        self
    }

    /// Adds a further id rule.
    pub fn with_id_rule(mut self, rule: Arc<dyn IdRule>) -> InputValidation {
        self.id_rule = Some(rule);
        self
    }

    /// Checks `message`, the message of a send `call` routed by `route`.
    pub fn check(&self, call: &A2aCall, route: Option<&RouteHint>, message: &Message) -> Result<(), A2aError> {
        let (backend, skill) = match route {
            Some(RouteHint { backend, skill: Some(skill), .. }) => (&**backend, Some(skill.as_str())),
            _ => ("", None),
        };
        let policy = skill.and_then(|skill| self.skills.get(skill));
        let spec = skill.and_then(|skill| self.catalog.skill(backend, skill));
        let modes = match (policy.and_then(|p| p.input_modes.as_deref()), &spec) {
            (Some(modes), _) => modes,
            (None, Some(spec)) => spec.input_modes.as_slice(),
            (None, None) => &[],
        };
        let id_rule = |field, id: &str| self.id_rule.as_ref().map_or(Ok(()), |rule| rule.check(call, field, id));
        let rules = Rules { limits: policy.map_or(self.limits, |p| p.limits), modes, id_rule: &id_rule };
        let mut report = Report::default();
        let data_parts = message::check(message, &rules, &mut report);
        if !report.is_empty() {
            return Err(refusal("the message is invalid", report));
        }
        let Some(skill) = skill else {
            return Ok(());
        };
        if data_parts.is_empty() && policy.is_some_and(|p| p.require_data_part) {
            let mut report = Report::default();
            report.push("", format!("the skill '{skill}' needs its input in a data part"));
            return Err(refusal("the message has no input for the skill", report));
        }
        // The configured schema is borrowed: cloning its `Arc` on every send would write a count
        // that every worker's sends share.
        let from_card;
        let schema = match (policy.and_then(|p| p.schema.as_ref()), spec.as_deref()) {
            (Some(schema), _) => schema,
            (None, Some(SkillSpec { version, input_schema: Some(schema), .. })) => {
                from_card = self.cache.get_or_compile(backend, skill, *version, schema).map_err(|_| {
                    A2aError::InvalidAgentResponse(format!(
                        "the agent '{backend}' publishes an input schema for the skill '{skill}' that cannot be used"
                    ))
                })?;
                &from_card
            }
            _ => return Ok(()),
        };
        check_data_parts(schema, skill, &data_parts)
    }
}

fn configured_schema(skill: &str, rules: &SkillRules, base_dir: &Path) -> Result<Option<Compiled>, ConfigError> {
    let at = |key: &str, reason: String| ConfigError { path: format!("skills.{skill}.{key}"), reason };
    let (key, schema) = match (&rules.schema_file, &rules.schema) {
        (Some(_), Some(_)) => return Err(at("schema", "give schema or schema_file, not both".into())),
        (None, None) => return Ok(None),
        (None, Some(schema)) => ("schema", schema.clone()),
        (Some(file), None) => {
            let path = base_dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|error| at("schema_file", format!("cannot read {}: {error}", path.display())))?;
            let schema = serde_json::from_str(&text)
                .map_err(|error| at("schema_file", format!("{} is not JSON: {error}", path.display())))?;
            ("schema_file", schema)
        }
    };
    schema::compile(&schema).map(Some).map_err(|reason| at(key, reason))
}

/// Holds the `data` of every data part to the skill's schema: a second part is as much input as the
/// first (an agent may read any of them). Violations of the first data part are located relative to
/// its value (`/diff`), as the example agents read it; those of a later part relative to the message
/// (`/parts/2/data/diff`). The refusal names the first part that failed.
fn check_data_parts(schema: &jsonschema::Validator, skill: &str, parts: &[(usize, &Value)]) -> Result<(), A2aError> {
    let mut all = Report::default();
    let mut first_failed: Option<usize> = None;
    for (n, &(index, data)) in parts.iter().enumerate() {
        let (found, total) = schema::violations(schema, data);
        if total == 0 {
            continue;
        }
        first_failed.get_or_insert(n);
        let prefix = if n == 0 { String::new() } else { format!("/parts/{index}/data") };
        let shown = found.len();
        for violation in found {
            all.push(format!("{prefix}{}", violation.pointer), violation.description);
        }
        all.total += total.saturating_sub(shown);
    }
    let Some(n) = first_failed else { return Ok(()) };
    let what = match n {
        0 => format!("the input (the first data part) does not match the inputSchema of the skill '{skill}'"),
        _ => format!(
            "the input (the data part at /parts/{}) does not match the inputSchema of the skill '{skill}'",
            parts[n].0
        ),
    };
    Err(refusal(&what, all))
}

/// The refusal for a report that is not empty: the message names the first violation and how many
/// more there are.
fn refusal(what: &str, report: Report) -> A2aError {
    let first = report.found.first().map(|v| format!(": {} at '{}'", v.description, v.pointer)).unwrap_or_default();
    let more = match report.total {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    A2aError::Validation { message: format!("{what}{first}{more}"), violations: report.found }
}

/// The check of [`InputValidation`], for every send.
#[derive(Clone)]
pub struct Validation {
    validation: Arc<InputValidation>,
}

/// Applies [`InputValidation`] to every send.
pub type ValidateLayer = CheckLayer<Validation>;
/// The service of [`ValidateLayer`].
pub type ValidateService<S> = CheckService<Validation, S>;

impl ValidateLayer {
    pub fn new(validation: Arc<InputValidation>) -> ValidateLayer {
        CheckLayer::of(Validation { validation })
    }
}

impl Check for Validation {
    fn check(&self, request: CallRequest) -> Verdict {
        let context = request.body();
        let checked = match context.checked.message() {
            _ if !context.call.operation.is_send() => Ok(()),
            Some(message) => self.validation.check(&context.call, context.route(), message),
            None => {
                // The decoder reads a send's message into its checked request: without one it is miswired.
                tracing::error!("validate: a send without its checked message");
                Err(A2aError::Internal)
            }
        };
        checked.map(|()| request).into()
    }
}

#[cfg(test)]
mod tests;
