//! Why a credential was refused, in full detail for operators, and the generic refusal the caller
//! gets instead.

use a2a_core::A2aError;

/// The detailed reason a request did not authenticate. Its `Display` goes to the denial detail
/// and the log, never to the caller; values that came from the caller are clipped and quoted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    #[error("no credentials presented")]
    Missing,
    #[error("unsupported Authorization scheme {0:?}")]
    UnsupportedScheme(String),
    #[error("empty bearer token")]
    EmptyBearer,
    #[error("several credentials presented ({0})")]
    Ambiguous(&'static str),
    #[error("the credential header is not visible ASCII")]
    NotText,
    #[error("the token is {len} bytes, more than the limit of {max}")]
    TooLarge { len: usize, max: usize },
    #[error("malformed JWT: {0}")]
    MalformedJwt(String),
    #[error("no configured issuer {0:?}")]
    UnknownIssuer(String),
    #[error("algorithm {alg} is not allowed for issuer {issuer}")]
    AlgorithmNotAllowed { alg: String, issuer: String },
    #[error("no key with kid {kid:?} in the JWKS of {issuer}")]
    UnknownKid { kid: String, issuer: String },
    #[error("the token has no kid and the JWKS of {issuer} does not have exactly one key for {alg}")]
    NoKidAmbiguous { alg: String, issuer: String },
    #[error("key {kid:?} of {issuer} is not for {alg}")]
    KeyAlgorithmMismatch { kid: String, alg: String, issuer: String },
    #[error("no keys of {issuer} are available (JWKS unreachable or invalid, nothing cached)")]
    KeysUnavailable { issuer: String },
    #[error("JWT from {issuer} refused: {reason}")]
    JwtRejected { issuer: String, reason: String },
    #[error("claim {0:?} is missing or not a non-empty string")]
    IdentityClaim(String),
    #[error("unknown API key id {0:?}")]
    UnknownKeyId(String),
    #[error("API key {0:?}: the secret does not match")]
    WrongKeySecret(String),
    #[error("API key {0:?} is revoked")]
    RevokedKey(String),
    #[error("the API key header does not hold a configured key")]
    NotAnApiKey,
    #[error("the bearer token is not a JWT of a configured issuer nor an API key")]
    Unrecognised,
    #[error("introspection: the token is not active")]
    Inactive,
    #[error("introspection: {0}")]
    IntrospectionRejected(String),
    #[error("introspection failed: {0}")]
    IntrospectionFailed(String),
    #[error("no verified client certificate (mutual TLS is required)")]
    NoCertificate,
    #[error("the token is not bound to the client certificate: {0}")]
    UnboundToken(&'static str),
    #[error("introspection calls are over their rate; retry after {retry_after:?}")]
    Throttled { retry_after: std::time::Duration },
}

impl AuthFailure {
    /// Whether the caller presented a credential (RFC 6750: then the challenge names an error).
    pub fn presented(&self) -> bool {
        !matches!(self, AuthFailure::Missing | AuthFailure::UnsupportedScheme(_) | AuthFailure::EmptyBearer)
    }
}

impl AuthFailure {
    /// Whether the failure is held against the caller's address: it presented a credential that
    /// was refused (not: the identity provider was down or busy).
    pub fn counts_against_address(&self) -> bool {
        self.presented()
            && !matches!(
                self,
                AuthFailure::Throttled { .. }
                    | AuthFailure::IntrospectionFailed(_)
                    | AuthFailure::KeysUnavailable { .. }
            )
    }
}

/// The two `WWW-Authenticate` values, computed once per realm.
#[derive(Debug, Clone)]
pub(crate) struct Challenges {
    missing: String,
    invalid: String,
}

impl Challenges {
    pub(crate) fn new(realm: &str) -> Challenges {
        Challenges {
            missing: format!("Bearer realm=\"{realm}\""),
            invalid: format!("Bearer realm=\"{realm}\", error=\"invalid_token\""),
        }
    }

    /// The refusal the caller sees: the same two messages whatever the detailed reason.
    pub(crate) fn refusal(&self, failure: &AuthFailure) -> A2aError {
        if let AuthFailure::Throttled { retry_after } = failure {
            return A2aError::RateLimited {
                message: "too many new credentials are being checked right now; retry shortly".into(),
                retry_after: *retry_after,
            };
        }
        if failure.presented() {
            A2aError::Unauthenticated { message: "invalid credentials".into(), challenge: self.invalid.clone() }
        } else {
            A2aError::Unauthenticated { message: "missing credentials".into(), challenge: self.missing.clone() }
        }
    }
}

/// A caller-supplied value made safe for a log line: at most 64 characters, control characters
/// escaped (a decoded JWT may hold newlines that would forge log lines).
pub(crate) fn clip(value: &str) -> String {
    let mut out = String::with_capacity(value.len().min(80));
    for (i, c) in value.chars().enumerate() {
        if i == 64 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_generic() {
        let challenges = Challenges::new("gw");
        let A2aError::Unauthenticated { message, challenge } = challenges.refusal(&AuthFailure::Missing) else {
            panic!("not unauthenticated")
        };
        assert_eq!((message.as_str(), challenge.as_str()), ("missing credentials", "Bearer realm=\"gw\""));
        let failure = AuthFailure::JwtRejected { issuer: "i".into(), reason: "InvalidSignature".into() };
        let A2aError::Unauthenticated { message, challenge } = challenges.refusal(&failure) else {
            panic!("not unauthenticated")
        };
        assert_eq!(message, "invalid credentials");
        assert_eq!(challenge, "Bearer realm=\"gw\", error=\"invalid_token\"");
    }

    #[test]
    fn clip_cuts_long_values_on_char_boundaries() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(100);
        assert_eq!(clip(&long).chars().count(), 65);
        assert_eq!(clip("a\nforged: line\u{1b}"), "a\\nforged: line\\u{1b}");
    }
}
