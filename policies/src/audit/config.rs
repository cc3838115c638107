//! The `audit:` section of the gateway configuration and its validation.

use std::path::PathBuf;

use serde::Deserialize;

/// ```yaml
/// audit:
///   stdout: false
///   file: {path: /var/log/a2a/audit.jsonl, max_bytes: 104857600, max_files: 10}
///   queue: 65536
///   include_content_for_skills: []
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Also write every record to standard output (JSON lines, a chain of its own).
    #[serde(default)]
    pub stdout: bool,
    /// The append-only file; `null` turns it off.
    #[serde(default = "default_file")]
    pub file: Option<FileConfig>,
    /// Records that may wait for the writer; beyond that they are counted as dropped and reported.
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// Skills whose requests' message parts are written into `task.received` records. Empty by
    /// default: message text and data are never logged otherwise.
    #[serde(default)]
    pub include_content_for_skills: Vec<String>,
    /// The secret that keys the file's hash chain (HMAC-SHA256) and its seals, e.g.
    /// `${AUDIT_CHAIN_KEY}`; at least 32 bytes. Without it the chain is plain SHA-256: anyone who
    /// can write the file can recompute it (`check` warns).
    #[serde(default)]
    pub chain_key: Option<crate::secret::Secret>,
    /// What happens while a target cannot write (a full disk): see [`OnWriteFailure`].
    #[serde(default)]
    pub on_write_failure: OnWriteFailure,
}

/// The log's promise is that every call is recorded or its loss is: either calls stop while the
/// log cannot write, or they go on and the loss is counted and written down once it can.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnWriteFailure {
    /// New calls are refused with a retryable error (`AUDIT_UNAVAILABLE`, HTTP 503) while a target
    /// cannot write; records already made wait in memory and are written, in order, once it can.
    #[default]
    FailClosed,
    /// Calls are served; records that cannot be written are counted, and an `audit.dropped`
    /// record with the exact count and time range is written as soon as writing works again.
    FailOpen,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            stdout: false,
            file: default_file(),
            queue: default_queue(),
            include_content_for_skills: Vec::new(),
            chain_key: None,
            on_write_failure: OnWriteFailure::default(),
        }
    }
}

/// The audit file and its size-based rotation: when the next record would take the file past
/// `max_bytes`, it is renamed `<path>.<n>` (n counting up, 8 digits) and a new file begins; at most
/// `max_files` rotated files are kept besides the active one.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default = "default_path")]
    pub path: PathBuf,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    #[serde(default = "default_max_files")]
    pub max_files: usize,
}

impl Default for FileConfig {
    fn default() -> Self {
        FileConfig { path: default_path(), max_bytes: default_max_bytes(), max_files: default_max_files() }
    }
}

fn default_file() -> Option<FileConfig> {
    Some(FileConfig::default())
}
fn default_queue() -> usize {
    65_536
}
fn default_path() -> PathBuf {
    PathBuf::from("/var/log/a2a/audit.jsonl")
}
fn default_max_bytes() -> u64 {
    100 * 1024 * 1024
}
fn default_max_files() -> usize {
    10
}

/// Smallest rotation size accepted: a file must hold its anchor and a few records.
pub const MIN_MAX_BYTES: u64 = 1024;
const MAX_QUEUE: usize = 1 << 24;
const MAX_FILES: usize = 100_000;

/// A configuration value that cannot work, named by its key path (`audit.file.max_bytes`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { path: path.into(), message: message.into() }
}

impl AuditConfig {
    /// Checks what types alone cannot. Key paths start at `audit`, the section's name in the
    /// gateway configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.stdout && self.file.is_none() {
            return Err(invalid("audit", "no sink: set audit.stdout to true or configure audit.file"));
        }
        if self.queue == 0 || self.queue > MAX_QUEUE {
            return Err(invalid("audit.queue", format!("must be between 1 and {MAX_QUEUE}")));
        }
        if let Some(file) = &self.file {
            if file.path.as_os_str().is_empty() || file.path.file_name().is_none() {
                return Err(invalid("audit.file.path", "must name a file (e.g. /var/log/a2a/audit.jsonl)"));
            }
            if file.max_bytes < MIN_MAX_BYTES {
                return Err(invalid("audit.file.max_bytes", format!("must be at least {MIN_MAX_BYTES}")));
            }
            if file.max_files == 0 || file.max_files > MAX_FILES {
                return Err(invalid(
                    "audit.file.max_files",
                    format!("must be between 1 and {MAX_FILES} (rotated files kept besides the active one)"),
                ));
            }
        }
        if self.chain_key.as_ref().is_some_and(|k| k.expose().len() < 32) {
            return Err(invalid("audit.chain_key", "must be at least 32 bytes (e.g. `openssl rand -hex 32`)"));
        }
        for (i, skill) in self.include_content_for_skills.iter().enumerate() {
            let at = format!("audit.include_content_for_skills[{i}]");
            if skill.trim().is_empty() {
                return Err(invalid(at, "must be a skill id"));
            }
            if self.include_content_for_skills[..i].contains(skill) {
                return Err(invalid(at, format!("'{skill}' is listed twice")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> AuditConfig {
        serde_json::from_value(serde_json::from_str::<serde_json::Value>(yaml).unwrap()).unwrap()
    }

    #[test]
    fn defaults_match_the_documented_shape() {
        let config = parse("{}");
        assert_eq!(config, AuditConfig::default());
        assert!(!config.stdout);
        let file = config.file.as_ref().unwrap();
        assert_eq!(file.path, PathBuf::from("/var/log/a2a/audit.jsonl"));
        assert_eq!((file.max_bytes, file.max_files), (104_857_600, 10));
        assert_eq!(config.queue, 65_536);
        assert!(config.include_content_for_skills.is_empty());
        config.validate().unwrap();
    }

    #[test]
    fn unknown_keys_are_refused() {
        let value = serde_json::json!({"file": {"path": "/tmp/a", "max_byte": 10}});
        let error = serde_json::from_value::<AuditConfig>(value).unwrap_err().to_string();
        assert!(error.contains("max_byte"), "{error}");
    }

    #[test]
    fn validation_names_the_key_path() {
        let cases = [
            (r#"{"file": null}"#, "audit"),
            (r#"{"queue": 0}"#, "audit.queue"),
            (r#"{"file": {"path": ""}}"#, "audit.file.path"),
            (r#"{"file": {"max_bytes": 10}}"#, "audit.file.max_bytes"),
            (r#"{"file": {"max_files": 0}}"#, "audit.file.max_files"),
            (r#"{"include_content_for_skills": ["a", " "]}"#, "audit.include_content_for_skills[1]"),
            (r#"{"include_content_for_skills": ["a", "a"]}"#, "audit.include_content_for_skills[1]"),
        ];
        for (yaml, path) in cases {
            let error = parse(yaml).validate().unwrap_err();
            assert_eq!(error.path, path, "{yaml}: {error}");
        }
        parse(r#"{"stdout": true, "file": null}"#).validate().unwrap();
    }
}
