//! Compiling a configuration ([`Config::compile`]): the whole check, which reads the files other
//! modules load (the listener's certificate and key, backends' card keys and TLS files) so that
//! `check` names an unusable one, and the policy sections compiled for the generation that serves
//! the configuration. Here, above the modules it reads through, rather than in [`crate::config`].

use a2a_policies::authorize::Permissions;
use a2a_policies::rate_limit::RateLimits;
use a2a_policies::validate::InputValidation;

use crate::config::{Config, ConfigError, Policies, invalid, section};

impl Config {
    /// Checks the configuration whole and compiles its policy sections (rules, quotas, schemas read
    /// from their files): once per configuration, handed to the gateway generation that serves it.
    pub fn compile(&self) -> Result<Policies, ConfigError> {
        self.validate()?;
        if let Some(tls) = &self.listeners.tls {
            // Read now, so that `check` names an unreadable or mismatched file.
            tls.server_config(&self.base_dir, self.client_certs()).map_err(|e| invalid(e.path(), e.to_string()))?;
        }
        for (i, backend) in self.backends.iter().enumerate() {
            if let Some(jwks) = &backend.card_jwks {
                crate::card::verify::CardKeys::load(&self.base_dir.join(jwks))
                    .map_err(|message| invalid(format!("backends[{i}].card_jwks"), message))?;
            }
        }
        // Backends' CA and client certificate files, likewise.
        crate::clients::BackendClients::build(self).map_err(|(path, message)| invalid(path, message))?;
        let permissions = match &self.permissions {
            Some(rules) => Permissions::new(rules).map_err(|e| invalid(e.path, e.message))?,
            None => Permissions::allow_all(),
        };
        let rate_limits = match &self.rate_limit {
            Some(quotas) => {
                Some(RateLimits::new(quotas).map_err(|e| invalid(section("rate_limit", &e.path), e.reason))?)
            }
            None => None,
        };
        let validation = match &self.validation {
            Some(rules) => Some(
                InputValidation::new(rules, &self.base_dir, std::sync::Arc::new(a2a_policies::validate::NoCatalog))
                    .map_err(|e| invalid(section("validation", &e.path), e.reason))?,
            ),
            None => None,
        };
        Ok(Policies { permissions: std::sync::Arc::new(permissions), rate_limits, validation })
    }
}
