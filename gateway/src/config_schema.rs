//! The configuration file's JSON Schema (`a2a-gateway config schema`, committed as
//! `docs/config.schema.json` for editors, and run by `check`).
//!
//! Derived from the config types themselves (`schemars::JsonSchema` beside every `Deserialize`,
//! their doc comments as descriptions, `deny_unknown_fields` as `additionalProperties: false`),
//! so it cannot drift from what the parser accepts. Durations carry
//! `#[schemars(with = "a2a_core::duration::Text")]`: on the wire they are text.

use serde_json::Value;

use crate::config::Config;

/// The schema document.
pub fn schema() -> Value {
    // Inlined rather than `$ref`s: an optional section is then `"type": ["object", "null"]` and
    // a mistake deep inside it is reported at its own path, not as "matches no anyOf branch".
    let generator = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = generator.into_generator().into_root_schema_for::<Config>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), "a2a-gateway configuration".into());
        object.insert(
            "description".into(),
            "The gateway's YAML configuration file. String values may reference ${VAR} environment variables.".into(),
        );
    }
    schema
}

/// The schema as written to `docs/config.schema.json`.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// Checks a parsed configuration document against the schema; the messages name the offending
/// path.
pub fn validate(document: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(&schema()).map_err(|e| vec![format!("the schema: {e}")])?;
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{}: {}", e.instance_path(), e)).collect();
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repo_file(path: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let committed = include_str!("../../docs/config.schema.json");
        assert_eq!(committed, schema_text(), "run `a2a-gateway config schema > docs/config.schema.json`");
    }

    /// Every configuration the repository shows a reader: the example files, the one inside the
    /// Kubernetes manifest, and each YAML block of the README (sections shown alone get the
    /// required `backends` added).
    #[test]
    fn every_example_config_in_the_repo_validates() {
        jsonschema::meta::validate(&schema()).expect("a valid JSON Schema");
        let mut examples: Vec<(String, String)> = Vec::new();
        for file in
            ["deploy/gateway.example.yaml", "deploy/compose-gateway.yaml", "tests/bench/configs/full-stack.yaml"]
        {
            examples.push((file.to_owned(), repo_file(file)));
        }
        let manifest = repo_file("deploy/kubernetes/gateway.yaml");
        let config_map: Value = yaml_serde::from_str(manifest.split("\n---\n").next().unwrap()).unwrap();
        let embedded = config_map["data"]["gateway.yaml"].as_str().expect("the ConfigMap holds gateway.yaml");
        examples.push(("deploy/kubernetes/gateway.yaml (ConfigMap)".to_owned(), embedded.to_owned()));
        let readme = repo_file("README.md");
        for (i, block) in readme.split("```yaml\n").skip(1).enumerate() {
            let block = block.split("```").next().unwrap();
            examples.push((format!("README.md yaml block {}", i + 1), block.to_owned()));
        }
        assert!(examples.len() >= 8, "{} examples", examples.len());
        for (name, text) in examples {
            let mut document: Value = yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Some(object) = document.as_object_mut() {
                object.entry("backends").or_insert_with(|| json!([]));
            }
            assert_eq!(validate(&document), Ok(()), "{name}");
        }
    }

    #[test]
    fn unknown_keys_wrong_types_and_bad_durations_are_named() {
        let document = json!({"backends": [{"name": "a", "url": "http://x", "colour": 1}], "listener": {}});
        let errors = validate(&document).unwrap_err();
        assert!(errors.iter().any(|e| e.contains("listener")), "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("/backends/0") && e.contains("colour")), "{errors:?}");
        // Deep sections are described too (the hand-written schema stopped at their top level).
        let document = json!({"backends": [], "rate_limit": {"default": {"per_second": "many"}},
            "auth": {"jwt": {"issuers": [{"issuer": "x", "leeway": 30}]}}, "health": {"interval": "soon"}});
        let errors = validate(&document).unwrap_err();
        for path in ["/rate_limit/default/per_second", "/auth/jwt/issuers/0/leeway", "/health/interval"] {
            assert!(errors.iter().any(|e| e.starts_with(path)), "{path} not named in {errors:?}");
        }
    }

    #[test]
    fn defaults_read_like_the_file() {
        let schema = schema();
        let text = schema.to_string();
        assert!(text.contains(r#""default":"10s""#), "durations are written as text: {text}");
    }
}
