//! From verified claims (a JWT's payload or an introspection answer) to a [`Caller`].

use std::sync::Arc;

use serde_json::{Map, Value};

use super::failure::AuthFailure;
use a2a_core::{AuthMethod, Caller};

/// The longest identity or tenant value accepted; they end up in logs, spans and audit records.
const MAX_VALUE_LEN: usize = 512;

/// Identity and tenant values become parts of log lines and keys: no control characters.
fn plain(value: &&str) -> bool {
    !value.is_empty() && value.len() <= MAX_VALUE_LEN && !value.chars().any(char::is_control)
}

/// Which claims name the caller, its tenant and its scopes.
#[derive(Debug, Clone)]
pub(crate) struct ClaimMapping {
    /// Put in front of the identity so that ids from different issuers and methods never collide.
    pub(crate) id_prefix: String,
    pub(crate) identity: String,
    pub(crate) tenant: Option<String>,
    pub(crate) scopes: Vec<String>,
}

impl ClaimMapping {
    pub(crate) fn caller(&self, claims: &Map<String, Value>, auth: AuthMethod) -> Result<Caller, AuthFailure> {
        let identity = claims
            .get(&self.identity)
            .and_then(Value::as_str)
            .filter(plain)
            .ok_or_else(|| AuthFailure::IdentityClaim(self.identity.clone()))?;
        let tenant =
            self.tenant.as_ref().and_then(|name| claims.get(name)).and_then(Value::as_str).filter(plain).map(Arc::from);
        let scopes = self.scopes.iter().find_map(|name| claims.get(name)).map(scopes_of).unwrap_or_default();
        Ok(Caller { id: Arc::from(format!("{}{identity}", self.id_prefix)), tenant, scopes: Arc::from(scopes), auth })
    }
}

/// `scope` is a space-separated string (RFC 8693/9068); `scp` is often an array of strings.
fn scopes_of(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => text.split_ascii_whitespace().map(str::to_owned).collect(),
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mapping() -> ClaimMapping {
        ClaimMapping {
            id_prefix: "jwt:https://idp/|".into(),
            identity: "sub".into(),
            tenant: Some("org".into()),
            scopes: vec!["scope".into(), "scp".into()],
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn identity_tenant_and_space_separated_scopes() {
        let caller = mapping()
            .caller(&claims(json!({"sub": "alice", "org": "acme", "scope": "echo  review"})), AuthMethod::Introspection)
            .unwrap();
        assert_eq!(&*caller.id, "jwt:https://idp/|alice");
        assert_eq!(caller.tenant.as_deref(), Some("acme"));
        assert_eq!(&*caller.scopes, ["echo".to_owned(), "review".to_owned()]);
    }

    #[test]
    fn scp_array_when_scope_is_absent() {
        let caller =
            mapping().caller(&claims(json!({"sub": "bob", "scp": ["a", 1, "b"]})), AuthMethod::Introspection).unwrap();
        assert_eq!(&*caller.scopes, ["a".to_owned(), "b".to_owned()]);
        assert_eq!(caller.tenant, None);
    }

    #[test]
    fn missing_or_odd_identity_is_refused() {
        for bad in
            [json!({}), json!({"sub": ""}), json!({"sub": 42}), json!({"sub": "x".repeat(600)}), json!({"sub": "a\nb"})]
        {
            assert_eq!(
                mapping().caller(&claims(bad), AuthMethod::Introspection),
                Err(AuthFailure::IdentityClaim("sub".into()))
            );
        }
    }
}
