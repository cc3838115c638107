//! The `admin:` section: how operators authenticate to the admin API, and which agents may
//! register themselves.

use std::time::Duration;

use a2a_policies::auth::{ApiKeyConfig, ApiKeysConfig, AuthConfig};
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// How operators authenticate to `/admin/v1/…` and `/admin/`: the same shape as the top-level
    /// `auth:` (API keys hashed with `a2a-gateway hash-key`, JWT issuers, introspection). Absent:
    /// the admin API answers only when the admin listener is bound to a loopback address.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// A scope every admin credential must carry (an API key's `scopes`, a token's scope claim).
    /// Required when `auth` has `jwt` or `introspection`: an issuer's every token is not an admin.
    #[serde(default)]
    pub required_scope: Option<String>,
    /// Further `Host` names the admin API answers to (`ops.internal`, `ops.internal:9443`), besides
    /// the admin listener's own address (and `localhost` when it is bound to loopback). Requests
    /// naming any other host are refused: a DNS-rebinding page cannot reach the API.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Agents that may register themselves at `/admin/v1/registrations`.
    #[serde(default)]
    pub registration: Option<RegistrationConfig>,
}

/// Self-registration: who may register which names at which origins.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationConfig {
    /// A registered agent that has not sent a heartbeat (a repeated registration) for this long
    /// leaves the fleet; so does one whose health checks fail.
    #[serde(default = "default_heartbeat_ttl", with = "crate::config::duration_serde")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub heartbeat_ttl: Duration,
    pub credentials: Vec<RegistrationCredential>,
}

fn default_heartbeat_ttl() -> Duration {
    Duration::from_secs(30)
}

/// One registration credential: an API key (`a2a_<id>_<secret>`, presented as a bearer token)
/// and what it may register.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationCredential {
    /// The key's id, as printed by `a2a-gateway hash-key --id <id>`.
    pub id: String,
    /// `sha256$<salt>$<hash>` of the key.
    pub hash: a2a_policies::auth::Secret,
    /// Backend names this credential may register; `*` matches any run of characters
    /// (`team-a-*`).
    pub names: Vec<String>,
    /// Origins the agent's base URL may have: `scheme://host[:port]`, `*` matching any run of
    /// characters (`https://*.agents.internal`, `http://127.0.0.1:*`).
    pub origins: Vec<String>,
    /// Networks the agent's addresses may be in although they are not public (loopback, private,
    /// link-local …; cloud metadata only when listed by itself): `10.0.0.0/8`, `127.0.0.1`, or an
    /// address and port (`127.0.0.1:8080`). The same screen as push webhooks' (`crate::screen`).
    #[serde(default)]
    pub allow_addresses: Vec<String>,
    /// Skill ids the agents registered with this credential may offer; `*` matches any run of
    /// characters (`team-a-*`). A card claiming any other skill is refused at registration, and a
    /// card changed later loses the skills it was not granted.
    pub skills: Vec<String>,
    /// Of `skills`, those the agents may offer although a file-configured or admin-registered
    /// backend serves them too (joining its load balancing). Default none: a self-registered
    /// agent cannot take over another backend's skill.
    #[serde(default)]
    pub shared_skills: Vec<String>,
}

impl RegistrationCredential {
    /// The grant an agent registered with this credential carries.
    pub fn skill_grant(&self) -> crate::config::SkillGrant {
        crate::config::SkillGrant {
            credential: self.id.clone(),
            skills: self.skills.clone(),
            shared_skills: self.shared_skills.clone(),
        }
    }
}

impl AdminConfig {
    /// Checks what serde cannot; errors name the key path under `admin`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let Some(auth) = &self.auth {
            auth.validate().map_err(|e| (format!("admin.{}", e.path), e.message))?;
            if (auth.jwt.is_some() || auth.introspection.is_some()) && self.required_scope.is_none() {
                return Err((
                    "admin.required_scope".into(),
                    "is required with jwt or introspection (otherwise every token of the issuer is an admin)".into(),
                ));
            }
        }
        if let Some(registration) = &self.registration {
            if registration.heartbeat_ttl.is_zero() {
                return Err(("admin.registration.heartbeat_ttl".into(), "must be greater than zero".into()));
            }
            registration.auth_config().validate().map_err(|e| {
                let path = e.path.replacen("auth.api_keys.keys", "admin.registration.credentials", 1);
                (path, e.message)
            })?;
            for (i, credential) in registration.credentials.iter().enumerate() {
                let at = |key: &str| format!("admin.registration.credentials[{i}].{key}");
                if credential.names.is_empty() {
                    return Err((at("names"), "list at least one name pattern".into()));
                }
                if credential.skills.is_empty() {
                    return Err((at("skills"), "list at least one skill id pattern".into()));
                }
                if let Some(bad) =
                    credential.shared_skills.iter().find(|s| !credential.skills.iter().any(|p| glob_match(p, s)))
                {
                    return Err((at("shared_skills"), format!("'{bad}' is not granted by skills")));
                }
                if credential.origins.is_empty() {
                    return Err((at("origins"), "list at least one origin pattern".into()));
                }
                if let Some(bad) = credential.origins.iter().find(|o| !o.contains("://")) {
                    return Err((at("origins"), format!("'{bad}' is not scheme://host[:port]")));
                }
                for entry in &credential.allow_addresses {
                    entry.parse::<crate::screen::AllowRule>().map_err(|e| (at("allow_addresses"), e))?;
                }
            }
        }
        Ok(())
    }
}

impl RegistrationConfig {
    /// The credentials as API keys, so the caller authenticator checks them (caller = credential id).
    pub fn auth_config(&self) -> AuthConfig {
        let keys = self
            .credentials
            .iter()
            .map(|c| ApiKeyConfig {
                id: c.id.clone(),
                hash: c.hash.clone(),
                caller: c.id.clone(),
                tenant: None,
                scopes: Vec::new(),
                revoked: false,
                free_form: false,
            })
            .collect();
        AuthConfig {
            realm: "a2a-gateway-registration".into(),
            max_token_bytes: 8 * 1024,
            jwt: None,
            api_keys: Some(ApiKeysConfig { header: "X-API-Key".into(), keys }),
            introspection: None,
            mtls: None,
            per_address: Default::default(),
        }
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (ASCII case-insensitive).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.to_ascii_lowercase(), text.to_ascii_lowercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == t;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !t.starts_with(first) || t.len() < first.len() + last.len() || !t.ends_with(last) {
        return false;
    }
    let mut rest = &t[first.len()..t.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("team-a-*", "team-a-search"));
        assert!(!glob_match("team-a-*", "team-b-search"));
        assert!(glob_match("http://127.0.0.1:*", "http://127.0.0.1:4100"));
        assert!(glob_match("https://*.agents.internal", "https://x.agents.internal"));
        assert!(!glob_match("https://*.agents.internal", "https://x.agents.internal.evil.com"));
        assert!(glob_match("exact", "EXACT"));
        assert!(!glob_match("a*b*c", "ab"));
        assert!(glob_match("a*b*c", "axxbyyc"));
    }

    #[test]
    fn jwt_admins_need_a_scope() {
        let text = r#"{"auth": {"jwt": {"issuers": [{"issuer": "i", "audiences": ["a"], "hs256_secret": "0123456789abcdef0123456789abcdef"}]}}}"#;
        let config: AdminConfig = serde_json::from_str(text).unwrap();
        assert_eq!(config.validate().unwrap_err().0, "admin.required_scope");
    }
}
