//! A secret from the configuration (token, client secret, key): compared and cloned like a string,
//! never printed.

use std::fmt;

use serde::Deserialize;

#[derive(Clone, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
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

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}
