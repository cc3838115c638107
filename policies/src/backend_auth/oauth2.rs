//! OAuth2 client credentials (RFC 6749 §4.4): one cached access token per backend, fetched by one
//! request at a time however many calls need it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use base64::Engine;
use http::{HeaderValue, header};

use super::config::{ClientAuth, OAuth2Config};
use super::{Clock, CredentialError};

/// Lifetime assumed when the token endpoint does not say (`expires_in` is only recommended).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);
/// Longest lifetime believed, so that a silly `expires_in` cannot pin a token forever.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Largest token response read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

struct Cached {
    value: HeaderValue,
    refresh_at: Instant,
}

struct Failure {
    at: Instant,
    error: CredentialError,
}

pub(super) struct ClientCredentials {
    backend: Arc<str>,
    client: reqwest::Client,
    token_url: reqwest::Url,
    /// The form body, encoded once.
    form: bytes::Bytes,
    basic: Option<HeaderValue>,
    timeout: Duration,
    refresh_before: Duration,
    cached: ArcSwapOption<Cached>,
    /// Held while fetching; remembers the last failure so that calls which waited on a failed fetch
    /// share its error instead of each trying again in turn.
    fetch: tokio::sync::Mutex<Option<Failure>>,
}

impl ClientCredentials {
    /// `config` must have been validated.
    pub(super) fn new(backend: Arc<str>, config: &OAuth2Config, client: reqwest::Client) -> Option<ClientCredentials> {
        let token_url = reqwest::Url::parse(&config.token_url).ok()?;
        let mut params = vec![("grant_type", "client_credentials")];
        params.extend(config.scope.as_deref().map(|scope| ("scope", scope)));
        params.extend(config.audience.as_deref().map(|audience| ("audience", audience)));
        let basic = match config.client_auth {
            ClientAuth::Form => {
                params.push(("client_id", &config.client_id));
                params.push(("client_secret", config.client_secret.expose()));
                None
            }
            ClientAuth::Basic => {
                // RFC 6749 §2.3.1: id and secret are form-urlencoded before they are joined.
                let pair =
                    format!("{}:{}", form_component(&config.client_id), form_component(config.client_secret.expose()));
                let mut value =
                    HeaderValue::try_from(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
                        .ok()?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Some(ClientCredentials {
            backend,
            client,
            token_url,
            form: bytes::Bytes::from(form_encode(&params)),
            basic,
            timeout: config.timeout,
            refresh_before: config.refresh_before,
            cached: ArcSwapOption::empty(),
            fetch: tokio::sync::Mutex::new(None),
        })
    }

    /// The current access token as an `Authorization` value, fetching one if needed.
    pub(super) async fn token(&self, clock: &Clock) -> Result<HeaderValue, CredentialError> {
        if let Some(value) = self.fresh(clock.now()) {
            return Ok(value);
        }
        let waited_since = clock.now();
        let mut last_failure = self.fetch.lock().await;
        if let Some(value) = self.fresh(clock.now()) {
            return Ok(value);
        }
        if let Some(failure) = &*last_failure
            && failure.at >= waited_since
        {
            return Err(failure.error.clone());
        }
        let started = clock.now();
        match self.request().await {
            Ok((value, lifetime)) => {
                // Refresh early, but never later than halfway through a short-lived token's life.
                let refresh_at = started + lifetime - self.refresh_before.min(lifetime / 2);
                self.cached.store(Some(Arc::new(Cached { value: value.clone(), refresh_at })));
                *last_failure = None;
                Ok(value)
            }
            Err(error) => {
                tracing::warn!(backend = %self.backend, %error, "fetching a backend access token failed");
                *last_failure = Some(Failure { at: clock.now(), error: error.clone() });
                Err(error)
            }
        }
    }

    fn fresh(&self, now: Instant) -> Option<HeaderValue> {
        self.cached.load().as_ref().filter(|cached| now < cached.refresh_at).map(|cached| cached.value.clone())
    }

    async fn request(&self) -> Result<(HeaderValue, Duration), CredentialError> {
        let mut request = self
            .client
            .post(self.token_url.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .timeout(self.timeout)
            .body(self.form.clone());
        if let Some(basic) = &self.basic {
            request = request.header(header::AUTHORIZATION, basic.clone());
        }
        let unreachable = |e: reqwest::Error| CredentialError::TokenRequest {
            backend: self.backend.clone(),
            reason: if e.is_timeout() { "timed out".into() } else { e.without_url().to_string() },
        };
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(self.bad(format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        let json: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        if !status.is_success() {
            // RFC 6749 §5.2: the error code is safe to log; the description may echo the request.
            let error = json.as_ref().and_then(|j| j.get("error")).and_then(|e| e.as_str()).map(clip);
            return Err(CredentialError::TokenRefused {
                backend: self.backend.clone(),
                status: status.as_u16(),
                error,
            });
        }
        let json = json.ok_or_else(|| self.bad("the answer is not JSON".into()))?;
        let token = json.get("access_token").and_then(|t| t.as_str()).filter(|t| !t.is_empty());
        let token = token.ok_or_else(|| self.bad("no access_token".into()))?;
        match json.get("token_type").and_then(|t| t.as_str()) {
            Some(kind) if !kind.eq_ignore_ascii_case("bearer") => {
                return Err(self.bad(format!("token_type '{}' is not Bearer", clip(kind))));
            }
            _ => {}
        }
        let mut value = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| self.bad("the access_token is not a valid header value".into()))?;
        value.set_sensitive(true);
        Ok((value, lifetime(json.get("expires_in"))))
    }

    fn bad(&self, reason: String) -> CredentialError {
        CredentialError::BadTokenResponse { backend: self.backend.clone(), reason }
    }
}

/// `expires_in` in seconds; some servers send it as a string.
fn lifetime(expires_in: Option<&serde_json::Value>) -> Duration {
    let seconds = match expires_in {
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match seconds {
        Some(s) if s.is_finite() => Duration::from_secs_f64(s.clamp(0.0, MAX_LIFETIME.as_secs_f64())),
        _ => DEFAULT_LIFETIME,
    }
}

fn clip(text: &str) -> String {
    text.chars().take(64).filter(|c| !c.is_control()).collect()
}

/// `application/x-www-form-urlencoded`, through the URL crate's encoder (reqwest's `form` feature is
/// not enabled in this workspace).
fn form_encode(pairs: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse("http://form.invalid/").expect("static URL");
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_string()
}

/// One form-urlencoded component (`a b&c` → `a+b%26c`).
fn form_component(text: &str) -> String {
    let pair = form_encode(&[("", text)]);
    pair.strip_prefix('=').unwrap_or(&pair).to_string()
}
