//! The admin API's checks of one configuration generation ([`AdminGuard`], built with each
//! [`crate::gateway::Gateway`]): who is calling — an operator with an admin credential, or an agent
//! with a registration credential — and the API's refusals ([`AdminError`]). The API itself is
//! [`crate::admin`]'s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::AuthMethod;
use a2a_policies::auth::Authenticator;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::{AdminConfig, RegistrationConfig, RegistrationCredential};
use crate::screen::{AllowRule, ScreenPolicy};

/// An authenticated operator (or, for registrations, agent).
#[derive(Debug, Clone)]
pub struct Admin {
    pub id: String,
    pub method: &'static str,
}

/// The admin API's checks of one configuration generation: admin credentials and registration
/// credentials.
pub struct AdminGuard {
    admins: Option<Arc<Authenticator>>,
    required_scope: Option<String>,
    pub(crate) registration: Option<Registrations>,
}

impl AdminGuard {
    pub fn new(config: &AdminConfig, http: reqwest::Client, stop: &CancellationToken) -> anyhow::Result<AdminGuard> {
        let admins = match &config.auth {
            Some(auth) => Some(Arc::new(Authenticator::new(auth, http.clone(), stop)?)),
            None => None,
        };
        let registration = match &config.registration {
            Some(registration) => Some(Registrations::new(registration, http, stop)?),
            None => None,
        };
        Ok(AdminGuard { admins, required_scope: config.required_scope.clone(), registration })
    }

    /// Who is calling the admin API, or the refusal.
    pub(crate) async fn admit(
        &self,
        headers: &HeaderMap,
        loopback_listener: bool,
        peer: SocketAddr,
    ) -> Result<Admin, AdminError> {
        let Some(admins) = &self.admins else {
            if loopback_listener {
                return Ok(Admin { id: format!("local:{}", peer.ip()), method: "loopback" });
            }
            return Err(AdminError::NotConfigured);
        };
        let caller = admins.authenticate(headers, None).await.map_err(|failure| {
            tracing::info!(reason = %failure, "admin API refused a credential");
            if failure.presented() { AdminError::InvalidCredentials } else { AdminError::MissingCredentials }
        })?;
        if let Some(scope) = &self.required_scope
            && !caller.has_scope(scope)
        {
            return Err(AdminError::Forbidden(format!("the credential lacks the admin scope '{scope}'")));
        }
        let method = match caller.auth {
            AuthMethod::ApiKey { .. } => "api_key",
            AuthMethod::Jwt { .. } => "jwt",
            AuthMethod::Introspection => "introspection",
            AuthMethod::Mtls => "mtls",
            AuthMethod::Anonymous => "anonymous",
        };
        Ok(Admin { id: caller.id.to_string(), method })
    }
}

/// Why an admin request was refused; rendered as `{"error": {"status", "message"}}`.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("the admin API needs credentials (Authorization: Bearer <admin key or token>)")]
    MissingCredentials,
    #[error("the credentials are not valid for the admin API")]
    InvalidCredentials,
    #[error("the admin API is off: configure admin.auth, or bind listeners.admin to a loopback address")]
    NotConfigured,
    #[error("{0}")]
    Forbidden(String),
    #[error("no backend named '{0}'")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unprocessable(String),
}

impl AdminError {
    fn status(&self) -> StatusCode {
        match self {
            AdminError::MissingCredentials | AdminError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            AdminError::NotConfigured | AdminError::Forbidden(_) => StatusCode::FORBIDDEN,
            AdminError::NotFound(_) => StatusCode::NOT_FOUND,
            AdminError::Conflict(_) => StatusCode::CONFLICT,
            AdminError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AdminError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = json!({"error": {"code": status.as_u16(), "status": status.canonical_reason(), "message": self.to_string()}});
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"a2a-gateway-admin\""));
        }
        response
    }
}

/// The registration credentials of one configuration generation.
pub struct Registrations {
    authenticator: Authenticator,
    credentials: Vec<(RegistrationCredential, ScreenPolicy)>,
    pub(crate) heartbeat_ttl: Duration,
}

impl Registrations {
    pub fn new(config: &RegistrationConfig, http: reqwest::Client, stop: &CancellationToken) -> anyhow::Result<Self> {
        let authenticator = Authenticator::new(&config.auth_config(), http, stop)?;
        let mut credentials = Vec::new();
        for credential in &config.credentials {
            let allow = credential
                .allow_addresses
                .iter()
                .map(|entry| entry.parse::<AllowRule>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?;
            credentials.push((credential.clone(), ScreenPolicy { allow_http: true, allow }));
        }
        Ok(Registrations { authenticator, credentials, heartbeat_ttl: config.heartbeat_ttl })
    }

    pub(crate) async fn credential(
        &self,
        headers: &HeaderMap,
    ) -> Result<&(RegistrationCredential, ScreenPolicy), AdminError> {
        let caller = self.authenticator.authenticate(headers, None).await.map_err(|failure| {
            tracing::info!(reason = %failure, "registration refused a credential");
            if failure.presented() { AdminError::InvalidCredentials } else { AdminError::MissingCredentials }
        })?;
        let AuthMethod::ApiKey { key_id } = &caller.auth else { return Err(AdminError::InvalidCredentials) };
        self.credentials.iter().find(|(c, _)| *c.id == **key_id).ok_or(AdminError::InvalidCredentials)
    }
}
