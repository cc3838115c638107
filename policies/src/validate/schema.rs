//! JSON Schema handling: checking and compiling schemas, caching compiled validators per
//! (backend, skill, card version), and turning schema errors into JSON-pointer violations.

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use a2a_core::Violation;

/// Violations reported at most for one message; the rest are summarised in the error message.
pub const MAX_VIOLATIONS: usize = 32;

/// A compiled schema, shared by every request to its skill.
pub type Compiled = Arc<jsonschema::Validator>;

/// Checks that `schema` is a usable JSON Schema: valid against its draft's meta-schema and
/// compilable here (no external `$ref`s — the gateway never fetches schemas). For
/// `a2a-gateway check` and for schemas the policy configuration names.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    compile(schema).map(|_| ())
}

pub fn compile(schema: &Value) -> Result<Compiled, String> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return Err("a JSON Schema is an object (or true/false)".into());
    }
    if let Err(error) = jsonschema::meta::validate(schema) {
        let at = error.instance_path().as_str();
        let at = if at.is_empty() { String::new() } else { format!(" at '{at}'") };
        return Err(format!("not a valid JSON Schema{at}: {}", error.masked()));
    }
    jsonschema::validator_for(schema).map(Arc::new).map_err(|error| format!("cannot be compiled: {}", error.masked()))
}

/// Card schemas compiled once per (backend, skill, card version). A schema that does not compile
/// is remembered too, so that it is not recompiled for every request.
#[derive(Default)]
pub struct Cache {
    by_backend: DashMap<Box<str>, HashMap<Box<str>, Entry>>,
}

struct Entry {
    version: u64,
    compiled: Result<Compiled, Arc<str>>,
}

impl Cache {
    pub fn get_or_compile(
        &self,
        backend: &str,
        skill: &str,
        version: u64,
        schema: &Value,
    ) -> Result<Compiled, Arc<str>> {
        if let Some(skills) = self.by_backend.get(backend)
            && let Some(entry) = skills.get(skill).filter(|entry| entry.version == version)
        {
            return entry.compiled.clone();
        }
        // Compiled outside any lock; two requests racing here both compile, and one result stays.
        let compiled = compile(schema).map_err(|why| {
            tracing::warn!(backend, skill, version, %why, "the inputSchema on the card cannot be used");
            Arc::<str>::from(why)
        });
        let entry = Entry { version, compiled: compiled.clone() };
        self.by_backend.entry(Box::from(backend)).or_default().insert(Box::from(skill), entry);
        compiled
    }

    /// Compiled entries held (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_backend.iter().map(|skills| skills.len()).sum()
    }
}

/// The violations of `instance` against `schema`, pointing into `instance`. A missing required
/// property and a property the schema does not allow are reported at the property's own pointer
/// (`/diff`, `/extra`), one violation each.
pub fn violations(schema: &jsonschema::Validator, instance: &Value) -> (Vec<Violation>, usize) {
    let mut found = Vec::new();
    let mut total = 0;
    for error in schema.iter_errors(instance) {
        let at = error.instance_path().as_str();
        let mut push = |pointer: String, description: String| {
            total += 1;
            if found.len() < MAX_VIOLATIONS {
                found.push(Violation { pointer, description });
            }
        };
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                push(child(at, name), "required property is missing".into());
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                for name in unexpected {
                    push(child(at, name), "property is not allowed by the schema".into());
                }
            }
            // Masked: the message names the rule, not the caller's value (which may be huge).
            _ => push(at.to_owned(), error.masked_with("the value").to_string()),
        }
    }
    (found, total)
}

/// `pointer` extended by one property name, escaped as RFC 6901 says.
fn child(pointer: &str, name: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + name.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for c in name.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_are_checked_against_their_meta_schema() {
        assert!(check_schema(&json!({"type": "object", "required": ["diff"]})).is_ok());
        assert!(check_schema(&json!(true)).is_ok());
        let bad = check_schema(&json!({"type": "objekt"})).unwrap_err();
        assert!(bad.contains("not a valid JSON Schema at '/type'"), "{bad}");
        assert!(check_schema(&json!({"required": "diff"})).is_err());
        assert!(check_schema(&json!([1])).is_err());
        let remote = check_schema(&json!({"$ref": "https://example.com/schema.json"})).unwrap_err();
        assert!(remote.starts_with("cannot be compiled"), "{remote}");
    }

    #[test]
    fn compiles_once_per_card_version() {
        let cache = Cache::default();
        let schema = json!({"type": "string"});
        let first = cache.get_or_compile("b", "s", 1, &schema).expect("compiles");
        let again = cache.get_or_compile("b", "s", 1, &json!({"type": "number"})).expect("cached");
        assert!(Arc::ptr_eq(&first, &again), "the same version is not compiled again");
        let newer = cache.get_or_compile("b", "s", 2, &json!({"type": "number"})).expect("compiles");
        assert!(newer.is_valid(&json!(3)) && !newer.is_valid(&json!("x")));
        assert_eq!(cache.len(), 1, "the old version is replaced");
        assert!(cache.get_or_compile("b", "broken", 1, &json!({"type": 5})).is_err());
        assert_eq!(cache.len(), 2, "failures are remembered");
    }

    #[test]
    fn pointers_name_the_property() {
        assert_eq!(child("", "diff"), "/diff");
        assert_eq!(child("/a", "x/y~z"), "/a/x~1y~0z");
    }
}
