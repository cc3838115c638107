//! Callers known by the client certificate the listener verified (mutual TLS): the `auth.mtls`
//! section and the [`Caller`] a certificate makes. The listener checks the certificate against
//! `listeners.tls.client_ca` during the handshake and puts what it names on every request of the
//! connection ([`ClientCertificate`]); here that becomes an identity.

use std::sync::Arc;

use a2a_core::{AuthMethod, Caller, ClientCertificate};
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use super::failure::AuthFailure;

/// How a client certificate identifies callers.
///
/// ```yaml
/// auth:
///   mtls:
///     mode: required      # required | optional | with_token
///     bind_token: false   # with_token: the JWT must carry cnf.x5t#S256 of the certificate (RFC 8705)
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MtlsConfig {
    pub mode: MtlsMode,
    /// With `with_token`: a bearer JWT must be bound to the certificate it arrives with (its
    /// `cnf.x5t#S256` is the certificate's SHA-256 thumbprint), so a stolen token is useless
    /// without the certificate's key.
    #[serde(default)]
    pub bind_token: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MtlsMode {
    /// Every connection presents a certificate (the handshake refuses others); the certificate is
    /// the caller. Bearer tokens and API keys are not consulted.
    Required,
    /// A certificate is asked for, not required: a caller with one is known by it (a token beside
    /// it is refused as ambiguous); others authenticate with a token or API key.
    Optional,
    /// A certificate and a bearer token or API key, both verified; the caller is the token's.
    WithToken,
}

impl MtlsConfig {
    /// The caller of a request that came with `certificate` (verified by the listener), or `None`
    /// when the credential headers decide (`optional` without a certificate, `with_token`).
    pub(super) fn certificate_caller(
        &self,
        certificate: Option<&ClientCertificate>,
        has_credential_header: bool,
    ) -> Option<Result<Caller, AuthFailure>> {
        match (self.mode, certificate) {
            (MtlsMode::Required, Some(certificate)) => Some(Ok(caller(certificate))),
            (MtlsMode::Optional, Some(_)) if has_credential_header => {
                Some(Err(AuthFailure::Ambiguous("a client certificate and a credential header")))
            }
            (MtlsMode::Optional, Some(certificate)) => Some(Ok(caller(certificate))),
            (MtlsMode::Required | MtlsMode::WithToken, None) => Some(Err(AuthFailure::NoCertificate)),
            (MtlsMode::Optional, None) | (MtlsMode::WithToken, Some(_)) => None,
        }
    }

    /// With `bind_token`, whether `token` (already verified) is bound to `certificate`.
    pub(super) fn check_binding(
        &self,
        token: &str,
        certificate: Option<&ClientCertificate>,
    ) -> Result<(), AuthFailure> {
        if !(self.bind_token && self.mode == MtlsMode::WithToken) {
            return Ok(());
        }
        let bound = bound_thumbprint(token);
        match (bound, certificate) {
            (Some(bound), Some(certificate)) if bound == *certificate.thumbprint => Ok(()),
            (None, _) => Err(AuthFailure::UnboundToken("the token has no cnf.x5t#S256")),
            _ => Err(AuthFailure::UnboundToken("the token's cnf.x5t#S256 is another certificate's")),
        }
    }
}

/// The caller a certificate names: `mtls:<SPIFFE ID or subject DN>`, with its tenant.
fn caller(certificate: &ClientCertificate) -> Caller {
    Caller {
        id: Arc::from(format!("mtls:{}", certificate.subject)),
        tenant: certificate.tenant.clone(),
        scopes: Arc::from([]),
        auth: AuthMethod::Mtls,
    }
}

/// The `cnf.x5t#S256` of a JWT's payload. Read only after the token's signature was verified.
fn bound_thumbprint(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("cnf")?.get("x5t#S256")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate() -> ClientCertificate {
        ClientCertificate {
            subject: Arc::from("spiffe://example.org/ns/prod/sa/billing"),
            tenant: Some(Arc::from("example.org")),
            thumbprint: Arc::from("abc"),
        }
    }

    fn config(mode: MtlsMode) -> MtlsConfig {
        MtlsConfig { mode, bind_token: true }
    }

    #[test]
    fn a_certificate_is_a_caller_with_the_mtls_authority() {
        let caller = config(MtlsMode::Required).certificate_caller(Some(&certificate()), false).unwrap().unwrap();
        assert_eq!(&*caller.id, "mtls:spiffe://example.org/ns/prod/sa/billing");
        assert_eq!(caller.qualified_tenant().as_deref(), Some("mtls|example.org"));
        assert!(matches!(
            config(MtlsMode::Required).certificate_caller(None, true),
            Some(Err(AuthFailure::NoCertificate))
        ));
        assert!(config(MtlsMode::Optional).certificate_caller(None, true).is_none());
        assert!(matches!(
            config(MtlsMode::Optional).certificate_caller(Some(&certificate()), true),
            Some(Err(AuthFailure::Ambiguous(_)))
        ));
        assert!(config(MtlsMode::WithToken).certificate_caller(Some(&certificate()), true).is_none());
    }

    #[test]
    fn a_bound_token_must_name_the_certificate() {
        let token = |claims: &str| {
            let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
            format!("{}.{}.sig", encode("{}"), encode(claims))
        };
        let with_token = config(MtlsMode::WithToken);
        assert!(with_token.check_binding(&token(r#"{"cnf":{"x5t#S256":"abc"}}"#), Some(&certificate())).is_ok());
        assert!(with_token.check_binding(&token(r#"{"cnf":{"x5t#S256":"xyz"}}"#), Some(&certificate())).is_err());
        assert!(with_token.check_binding(&token("{}"), Some(&certificate())).is_err());
    }
}
