//! Bearer JWTs: picks the issuer from the token's unverified `iss`, then verifies the signature,
//! algorithm, `iss`, `aud`, `exp` and `nbf` with that issuer's keys and rules only.
//!
//! The algorithm comes from the issuer's allowed list: the token's `alg` only selects among
//! them, `none` cannot even be parsed, and a JWKS issuer never allows HMAC (validated config), so
//! a token signed with a public key as an HMAC secret is refused before any key is touched.

use std::collections::HashMap;
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::claims::ClaimMapping;
use super::config::{IssuerConfig, JwtConfig};
use super::failure::{AuthFailure, clip};
use super::jwks::{Jwks, JwksSettings};
use super::validate::AuthConfigError;
use a2a_core::{AuthMethod, Caller};

/// A `kid` longer than this is refused without a lookup or a fetch.
const MAX_KID_LEN: usize = 256;

/// Every configured issuer, by its exact `iss`.
pub(crate) struct JwtVerifier {
    issuers: HashMap<String, Issuer>,
}

pub(crate) struct Issuer {
    name: Arc<str>,
    keys: KeySource,
    /// One prepared validation per allowed algorithm (jsonwebtoken wants one family per check).
    rules: Vec<(Algorithm, Validation)>,
    claims: ClaimMapping,
    /// Tokens whose signature this issuer's JWKS keys already verified: a client sends the same
    /// token many times, and an RSA or ECDSA check costs 100–300 µs while this lookup costs about one.
    verified: VerifiedTokens,
    leeway: u64,
}

/// Bound of [`VerifiedTokens`]; past it the cache starts over (tokens then verify again, once).
const MAX_VERIFIED_TOKENS: usize = 10_000;

/// Verified tokens by their exact text. A hit counts only while the token has not expired and the
/// key that verified it is still the issuer's current key for its `kid` — a key removed from the
/// JWKS stops its tokens at the next refresh, exactly as without the cache.
#[derive(Default)]
struct VerifiedTokens(dashmap::DashMap<Box<str>, Verified, crate::ByOutsiders>);

struct Verified {
    caller: Caller,
    exp: u64,
    key: Arc<super::jwks::JwksKey>,
    /// The header's `kid` and `alg` the key was chosen by.
    kid: Option<Box<str>>,
    alg: Algorithm,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

enum KeySource {
    Jwks(Arc<Jwks>),
    Secret(DecodingKey),
}

#[derive(serde::Deserialize)]
struct UnverifiedIssuer {
    #[serde(default)]
    iss: Option<String>,
}

impl JwtVerifier {
    /// Builds the issuers and starts one JWKS refresher per JWKS issuer, stopped by `stop`.
    pub(crate) fn new(
        config: &JwtConfig,
        http: &reqwest::Client,
        stop: &CancellationToken,
    ) -> Result<JwtVerifier, AuthConfigError> {
        let settings = JwksSettings {
            refresh_interval: config.jwks_refresh_interval,
            min_refresh_interval: config.jwks_min_refresh_interval,
            fetch_timeout: config.jwks_fetch_timeout,
            max_age: config.jwks_max_age,
        };
        let mut issuers = HashMap::with_capacity(config.issuers.len());
        for (i, issuer) in config.issuers.iter().enumerate() {
            let built = Issuer::new(issuer, &format!("auth.jwt.issuers[{i}]"), http, settings)?;
            issuers.insert(issuer.issuer.clone(), built);
        }
        // Only once every issuer is built, so that a failure leaves no task behind.
        for issuer in issuers.values() {
            if let KeySource::Jwks(jwks) = &issuer.keys {
                jwks.spawn_refresher(stop.child_token());
            }
        }
        Ok(JwtVerifier { issuers })
    }

    /// The caller of a token an issuer verified before, while it would verify alike now (its key is
    /// still the issuer's current one for its `kid`, and it has not expired): found by the token's
    /// text, without decoding its header and claims again. Anything else takes [`Self::issuer_of`]
    /// and [`Issuer::verify`], as the first time.
    pub(crate) fn already_verified(&self, token: &str) -> Option<Caller> {
        self.issuers.values().find_map(|issuer| issuer.already_verified(token))
    }

    /// The issuer a token claims to come from, with its unverified header. An error means the
    /// token is not a JWT of a configured issuer (another method may still accept it).
    pub(crate) fn issuer_of(&self, token: &str) -> Result<(&Issuer, Header), AuthFailure> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| AuthFailure::MalformedJwt(format!("header: {}", describe(e.kind()))))?;
        let claimed: UnverifiedIssuer = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|e| AuthFailure::MalformedJwt(format!("payload: {}", describe(e.kind()))))?;
        let iss = claimed.iss.ok_or_else(|| AuthFailure::MalformedJwt("no iss claim".into()))?;
        let issuer = self.issuers.get(&iss).ok_or_else(|| AuthFailure::UnknownIssuer(clip(&iss)))?;
        Ok((issuer, header))
    }

    /// Fetches every JWKS now.
    pub(crate) async fn refresh_all(&self) -> bool {
        let mut all = true;
        for issuer in self.issuers.values() {
            if let KeySource::Jwks(jwks) = &issuer.keys {
                all &= jwks.refresh().await;
            }
        }
        all
    }
}

impl Issuer {
    fn new(
        config: &IssuerConfig,
        path: &str,
        http: &reqwest::Client,
        settings: JwksSettings,
    ) -> Result<Issuer, AuthConfigError> {
        let name: Arc<str> = Arc::from(config.issuer.as_str());
        let keys = match (&config.jwks_url, &config.hs256_secret) {
            (Some(url), _) => KeySource::Jwks(Arc::new(Jwks::new(name.clone(), url.clone(), http.clone(), settings))),
            (None, Some(secret)) => {
                KeySource::Secret(DecodingKey::from_secret(secret.expose().as_bytes()).map_err(|_| {
                    AuthConfigError { path: format!("{path}.hs256_secret"), message: "not a usable secret".into() }
                })?)
            }
            (None, None) => {
                return Err(AuthConfigError {
                    path: path.into(),
                    message: "set one of jwks_url and hs256_secret".into(),
                });
            }
        };
        let rules = config.algorithms_checked(path)?.into_iter().map(|alg| (alg, validation(config, alg))).collect();
        let claims = ClaimMapping {
            id_prefix: format!("jwt:{}|", config.issuer),
            identity: config.identity_claim.clone(),
            tenant: config.tenant_claim.clone(),
            scopes: config.scope_claims.clone(),
        };
        Ok(Issuer { name, keys, rules, claims, verified: VerifiedTokens::default(), leeway: config.leeway.as_secs() })
    }

    fn already_verified(&self, token: &str) -> Option<Caller> {
        let KeySource::Jwks(jwks) = &self.keys else { return None };
        let hit = self.verified.0.get(token)?;
        let valid =
            now_secs() <= hit.exp.saturating_add(self.leeway) && jwks.is_current(hit.kid.as_deref(), hit.alg, &hit.key);
        valid.then(|| hit.caller.clone())
    }

    /// Verifies `token` (whose unverified `header` [`JwtVerifier::issuer_of`] returned).
    pub(crate) async fn verify(&self, token: &str, header: &Header) -> Result<Caller, AuthFailure> {
        let alg = header.alg;
        let validation = self.rules.iter().find(|(allowed, _)| *allowed == alg).map(|(_, v)| v).ok_or_else(|| {
            AuthFailure::AlgorithmNotAllowed { alg: format!("{alg:?}"), issuer: self.name.to_string() }
        })?;
        let claims = match &self.keys {
            KeySource::Secret(key) => self.decode(token, key, validation)?,
            KeySource::Jwks(jwks) => {
                let kid = header.kid.as_deref();
                if kid.is_some_and(|k| k.len() > MAX_KID_LEN) {
                    return Err(AuthFailure::UnknownKid {
                        kid: kid.map(clip).unwrap_or_default(),
                        issuer: self.name.to_string(),
                    });
                }
                let key = jwks.key_for(kid, alg).await?;
                if !key.algorithms.contains(&alg) {
                    return Err(AuthFailure::KeyAlgorithmMismatch {
                        kid: kid.map(clip).unwrap_or_default(),
                        alg: format!("{alg:?}"),
                        issuer: self.name.to_string(),
                    });
                }
                let claims = self.decode(token, &key.key, validation)?;
                let caller = self.claims.caller(&claims, AuthMethod::Jwt { issuer: self.name.clone() })?;
                if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
                    if self.verified.0.len() >= MAX_VERIFIED_TOKENS {
                        self.verified.0.clear();
                    }
                    let verified = Verified { caller: caller.clone(), exp, key, kid: kid.map(Box::from), alg };
                    self.verified.0.insert(Box::from(token), verified);
                }
                return Ok(caller);
            }
        };
        self.claims.caller(&claims, AuthMethod::Jwt { issuer: self.name.clone() })
    }

    fn decode(
        &self,
        token: &str,
        key: &DecodingKey,
        validation: &Validation,
    ) -> Result<Map<String, Value>, AuthFailure> {
        jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
            .map(|data| data.claims)
            .map_err(|e| AuthFailure::JwtRejected { issuer: self.name.to_string(), reason: describe(e.kind()) })
    }
}

fn validation(config: &IssuerConfig, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.set_issuer(&[config.issuer.as_str()]);
    validation.set_audience(&config.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.leeway = config.leeway.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = true;
    validation
}

/// A short operator-facing reason for a jsonwebtoken refusal.
fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::ExpiredSignature => "expired (exp)".into(),
        ErrorKind::ImmatureSignature => "not yet valid (nbf)".into(),
        ErrorKind::InvalidIssuer => "wrong issuer (iss)".into(),
        ErrorKind::InvalidAudience => "wrong audience (aud)".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("missing required claim '{claim}'"),
        ErrorKind::InvalidClaimFormat(claim) => format!("claim '{claim}' has the wrong type"),
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key".into(),
        ErrorKind::InvalidToken => "not three dot-separated parts".into(),
        ErrorKind::Base64(_) => "bad base64url".into(),
        // Names e.g. the unknown variant `none` of an `alg: none` header.
        ErrorKind::Json(error) => format!("bad JSON: {}", clip(&error.to_string())),
        ErrorKind::Utf8(_) => "bad UTF-8".into(),
        other => clip(&format!("{other:?}")),
    }
}
