//! The configuration as the admin API shows it: the file as written (`${VAR}` references stay
//! references, their values are never shown) with every secret replaced. A secret is found by its
//! type, not its name: every secret-bearing field is an `a2a_policies::auth::Secret`, whose schema
//! is `writeOnly`, so the document is walked beside the configuration's JSON Schema. URLs lose
//! their user-info wherever they are.

use serde_json::Value;

pub use a2a_policies::secret::REDACTED;

/// Redacts a configuration file document (as parsed from YAML).
pub fn redact_config(document: &mut Value) {
    redact_with(document, Some(&crate::config_schema::schema()));
}

/// Redacts what has no schema: URL user-info only.
pub fn redact_urls(value: &mut Value) {
    redact_with(value, None);
}

fn redact_with(value: &mut Value, schema: Option<&Value>) {
    if schema.is_some_and(is_secret) {
        redact_strings(value);
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                redact_with(item, schema.and_then(|s| property(s, key)));
            }
        }
        Value::Array(items) => {
            let items_schema = schema.and_then(|s| find(s, &|s| s.get("items")));
            items.iter_mut().for_each(|item| redact_with(item, items_schema));
        }
        Value::String(s) => {
            if let Some(clean) = without_userinfo(s) {
                *s = clean;
            }
        }
        _ => {}
    }
}

/// Whether `schema` is the secret type (or an optional one: a branch of it).
pub fn is_secret(schema: &Value) -> bool {
    schema.get("writeOnly") == Some(&Value::Bool(true))
        || ["anyOf", "oneOf"].iter().any(|c| {
            schema
                .get(*c)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(|b| b.get("writeOnly") == Some(&Value::Bool(true))))
        })
}

/// The schema of property `key` of an object schema (looking into its branches).
fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    find(schema, &|s| s.get("properties")?.get(key))
        .or_else(|| find(schema, &|s| s.get("additionalProperties").filter(|a| a.is_object())))
}

/// The first answer of `pick` on `schema` or on one of its `anyOf` / `oneOf` / `allOf` branches.
fn find<'a>(schema: &'a Value, pick: &dyn Fn(&'a Value) -> Option<&'a Value>) -> Option<&'a Value> {
    if let Some(found) = pick(schema) {
        return Some(found);
    }
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|c| schema.get(*c)?.as_array())
        .flatten()
        .find_map(|branch| find(branch, pick))
}

/// Every string inside `value` becomes [`REDACTED`].
fn redact_strings(value: &mut Value) {
    match value {
        Value::String(s) => *s = REDACTED.into(),
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(map) => map.values_mut().for_each(redact_strings),
        _ => {}
    }
}

/// `scheme://user:pass@host/…` without its user-info; `None` when there is none.
fn without_userinfo(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(format!("{scheme}://{REDACTED}@{}", &rest[at + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_and_the_rest_kept() {
        let mut doc = json!({
            "auth": {"api_keys": {"keys": [{"id": "ops", "hash": "sha256$00$11", "caller": "ops"}]},
                     "jwt": {"issuers": [{"issuer": "i", "audiences": ["a"], "hs256_secret": "shh"}]},
                     "max_token_bytes": 8192},
            "audit": {"chain_key": "0123456789abcdef0123456789abcdef-chain"},
            "backends": [{"name": "a", "url": "http://u:p@h:1/x", "auth": {"bearer": "tok"}},
                         {"name": "b", "url": "http://h:2", "auth": {"oauth2": {"token_url": "http://h/t", "client_id": "c", "client_secret": "s"}}}],
            "admin": {"registration": {"credentials": [{"id": "r", "hash": "sha256$22$33", "names": ["x"], "skills": ["x"], "origins": ["http://h"]}]}},
        });
        redact_config(&mut doc);
        let text = doc.to_string();
        for secret in ["sha256$", "shh", "\"tok\"", "\"s\"", "u:p", "-chain"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(doc["auth"]["api_keys"]["keys"][0]["id"], "ops");
        assert_eq!(doc["auth"]["max_token_bytes"], 8192);
        assert_eq!(doc["backends"][0]["url"], "http://[redacted]@h:1/x");
        assert_eq!(doc["backends"][1]["auth"]["oauth2"]["client_id"], "c");
        assert_eq!(doc["audit"]["chain_key"], REDACTED);
    }

    /// Every field whose name or description suggests a secret is of the secret type, so
    /// [`redact_config`] finds it: a new secret field typed `String` fails here.
    #[test]
    fn every_secret_looking_field_has_the_secret_type() {
        let schema = crate::config_schema::schema();
        let mut offenders = Vec::new();
        walk(&schema, "", &mut offenders);
        assert!(offenders.is_empty(), "secret-looking fields not typed Secret: {offenders:?}");
    }

    /// Names and descriptions that suggest a secret.
    const NAME_HINTS: [&str; 9] =
        ["secret", "password", "passwd", "token", "private", "credential", "bearer", "hash", "signing"];
    const DESCRIPTION_HINTS: [&str; 5] = ["secret", "password", "private key", "signing key", "hmac"];
    /// Fields that match a hint but hold no secret: (name, why).
    const NOT_SECRETS: [(&str, &str); 4] = [
        ("id", "an API key's id, the public part of a2a_<id>_<secret>"),
        ("key", "the path of a PEM private key file (listeners.tls, backends[].tls): the key stays in the file"),
        ("token_url", "the address of a token endpoint"),
        ("username", "a Redis ACL user name; its password is the secret"),
    ];

    fn walk(schema: &Value, path: &str, offenders: &mut Vec<String>) {
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                let here = format!("{path}.{name}");
                let excused = NOT_SECRETS.iter().any(|(n, _)| *n == name);
                if looks_secret(name, property) && is_string(property) && !is_secret(property) && !excused {
                    offenders.push(here.clone());
                }
                walk(property, &here, offenders);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = schema.get(key).filter(|s| s.is_object()) {
                walk(inner, &format!("{path}[]"), offenders);
            }
        }
        for combinator in ["anyOf", "oneOf", "allOf"] {
            for branch in schema.get(combinator).and_then(Value::as_array).into_iter().flatten() {
                walk(branch, path, offenders);
            }
        }
    }

    fn looks_secret(name: &str, property: &Value) -> bool {
        let name = name.to_ascii_lowercase();
        let description = property.get("description").and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
        NAME_HINTS.iter().any(|h| name.contains(h))
            || name.ends_with("key")
            || DESCRIPTION_HINTS.iter().any(|h| description.contains(h))
    }

    /// A string field (possibly optional): the shape a secret has.
    fn is_string(schema: &Value) -> bool {
        let typed = |s: &Value| match s.get("type") {
            Some(Value::String(t)) => t == "string",
            Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
            _ => false,
        };
        typed(schema)
            || ["anyOf", "oneOf"]
                .iter()
                .any(|c| schema.get(*c).and_then(Value::as_array).is_some_and(|b| b.iter().any(typed)))
    }
}
