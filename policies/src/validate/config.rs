//! The `validation` section of the policy configuration: size limits for every message and, per
//! skill, tighter or looser limits, accepted input modes and a schema supplied or overridden here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// ```yaml
/// validation:
///   limits: {max_parts: 32, max_text_bytes: 1048576, max_data_depth: 32, max_message_bytes: 4194304}
///   skills:
///     review-pr: {schema_file: deploy/schemas/review-pr.json, max_parts: 4}
///     summarize: {input_modes: [text/plain], require_data_part: false}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidationConfig {
    #[serde(default)]
    pub limits: Limits,
    /// Rules for skills by skill id, applied on every backend offering that skill.
    #[serde(default)]
    pub skills: BTreeMap<String, SkillRules>,
}

/// Size limits of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MessageLimits")]
pub struct Limits {
    /// Parts in the message.
    #[serde(default = "default_max_parts")]
    pub max_parts: usize,
    /// UTF-8 bytes of one text part, after JSON unescaping.
    #[serde(default = "default_max_text_bytes")]
    pub max_text_bytes: usize,
    /// Nesting of arrays and objects inside one data part (`{"a": [1]}` is 2 deep).
    #[serde(default = "default_max_data_depth")]
    pub max_data_depth: usize,
    /// Bytes of the message's JSON as sent (the body as a whole is limited by the gateway).
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_parts: default_max_parts(),
            max_text_bytes: default_max_text_bytes(),
            max_data_depth: default_max_data_depth(),
            max_message_bytes: default_max_message_bytes(),
        }
    }
}

fn default_max_parts() -> usize {
    32
}

fn default_max_text_bytes() -> usize {
    1 << 20
}

fn default_max_data_depth() -> usize {
    32
}

fn default_max_message_bytes() -> usize {
    4 << 20
}

/// What the policy says about one skill. Every field is optional; limits left out are the
/// section's `limits`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillRules {
    /// A JSON file holding the skill's input schema, relative to the configuration's directory.
    /// Overrides the schema the backend's card publishes.
    #[serde(default)]
    pub schema_file: Option<PathBuf>,
    /// The schema inline, as an alternative to `schema_file`.
    #[serde(default)]
    pub schema: Option<Value>,
    /// Media types the skill accepts, overriding the card's `inputModes`.
    #[serde(default)]
    pub input_modes: Option<Vec<String>>,
    /// Refuse messages without a data part (the schema then always applies). Off by default: skills
    /// such as `review-pr` also take a text-only request, which has nothing for the schema to check.
    #[serde(default)]
    pub require_data_part: bool,
    #[serde(default)]
    pub max_parts: Option<usize>,
    #[serde(default)]
    pub max_text_bytes: Option<usize>,
    #[serde(default)]
    pub max_data_depth: Option<usize>,
    #[serde(default)]
    pub max_message_bytes: Option<usize>,
}

impl SkillRules {
    /// This skill's limits: its own where given, else `base`.
    pub fn limits(&self, base: Limits) -> Limits {
        Limits {
            max_parts: self.max_parts.unwrap_or(base.max_parts),
            max_text_bytes: self.max_text_bytes.unwrap_or(base.max_text_bytes),
            max_data_depth: self.max_data_depth.unwrap_or(base.max_data_depth),
            max_message_bytes: self.max_message_bytes.unwrap_or(base.max_message_bytes),
        }
    }
}

/// A configuration value that cannot be used, located by its key path inside the section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConfigError {
    pub path: String,
    pub reason: String,
}
