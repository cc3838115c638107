//! A secret from the configuration (token, client secret, key, key hash): compared and cloned like a
//! string, never shown. Its `Debug`, `Display` and `Serialize` all render `[redacted]`, and its
//! JSON Schema is marked `writeOnly`, which is how the admin API finds every secret in the file it
//! shows: by type, not by the field's name.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a secret renders anywhere it is shown.
pub const REDACTED: &str = "[redacted]";

#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl schemars::JsonSchema for Secret {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Secret".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // `writeOnly`: the value is given to the gateway and never shown back.
        schemars::json_schema!({"type": "string", "writeOnly": true})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_renders_its_value() {
        let secret = Secret::new("hunter2");
        let shown = format!("{secret} {secret:?} {}", serde_json::to_string(&secret).unwrap());
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(secret.expose(), "hunter2");
    }
}
