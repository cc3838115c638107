//! The operator's side, on the admin listener: the admin API (`/admin/v1/…`, JSON), agent
//! self-registration, and the status page (`/admin/`). Runtime changes are kept in an
//! [`overlay::Overlay`] over the configuration file, so a reload keeps them; each is audited with
//! the admin's identity.
//!
//! Who may call it: with `admin.auth` configured, a credential it accepts (and, with
//! `admin.required_scope`, carrying that scope); without it, anyone who can reach the admin
//! listener — allowed only when that listener is bound to a loopback address. Either way a web
//! page cannot drive it: see `admin/origin.rs`.

mod admission;
mod api;
pub mod cli;
mod origin;
pub mod overlay;
mod redact;
mod registration;

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_core::AuthMethod;
use a2a_policies::auth::Authenticator;
use axum::Router;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::gateway::Gateway;

pub use crate::config::AdminConfig;
pub use registration::spawn_expiry;

/// What the admin API needs of the running gateway (implemented by the server's runtime).
pub trait Host: Send + Sync + 'static {
    /// The current generation.
    fn gateway(&self) -> Arc<Gateway>;
    /// The configuration file as last loaded, without the runtime layer.
    fn file_config(&self) -> Config;
    /// Builds and swaps in a generation from the file with the runtime layer applied; an error
    /// (the result does not validate or cannot start) leaves the running generation.
    fn rebuild(&self) -> BoxFuture<'_, anyhow::Result<()>>;
    /// Where the admin listener is bound.
    fn admin_address(&self) -> Option<SocketAddr>;
}

/// The admin router, mounted on the admin listener.
pub fn router(host: Arc<dyn Host>) -> Router {
    api::routes()
        .merge(registration::routes())
        .layer(axum::middleware::from_fn_with_state(host.clone(), origin::guard))
        .with_state(host)
}

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
    registration: Option<registration::Registrations>,
}

impl AdminGuard {
    pub fn new(config: &AdminConfig, http: reqwest::Client, stop: &CancellationToken) -> anyhow::Result<AdminGuard> {
        let admins = match &config.auth {
            Some(auth) => Some(Arc::new(Authenticator::new(auth, http.clone(), stop)?)),
            None => None,
        };
        let registration = match &config.registration {
            Some(registration) => Some(registration::Registrations::new(registration, http, stop)?),
            None => None,
        };
        Ok(AdminGuard { admins, required_scope: config.required_scope.clone(), registration })
    }

    /// Who is calling the admin API, or the refusal.
    async fn admit(&self, headers: &HeaderMap, loopback_listener: bool, peer: SocketAddr) -> Result<Admin, AdminError> {
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

/// Writes an `admin.change` audit record (and a log line).
fn audit(gateway: &Gateway, admin: &Admin, action: &'static str, target: &str, detail: Option<serde_json::Value>) {
    tracing::info!(admin = %admin.id, action, target, "admin change");
    if let Some(audit) = &gateway.shared.audit {
        audit.admin_change(a2a_policies::audit::AdminChange {
            admin: admin.id.clone(),
            method: admin.method,
            action,
            target: target.to_string(),
            detail,
        });
    }
}

/// Applies a change to the runtime layer and swaps in a generation with it; when that fails the
/// layer is put back and the reason returned.
async fn change_fleet(host: &dyn Host, change: impl FnOnce(&overlay::Overlay)) -> Result<(), AdminError> {
    let gateway = host.gateway();
    let overlay = &gateway.shared.overlay;
    let _one_at_a_time = overlay.changes.lock().await;
    let saved = overlay.snapshot();
    change(overlay);
    if let Err(error) = host.rebuild().await {
        overlay.restore(saved);
        return Err(AdminError::Unprocessable(format!("{error:#}")));
    }
    Ok(())
}
