//! The operator's side, on the admin listener: the admin API (`/admin/v1/…`, JSON), agent
//! self-registration, and the status page (`/admin/`). Runtime changes are kept in an
//! [`crate::overlay::Overlay`] over the configuration file, so a reload keeps them; each is
//! audited with the admin's identity.
//!
//! Who may call it ([`crate::admin_guard`]): with `admin.auth` configured, a credential it accepts
//! (and, with `admin.required_scope`, carrying that scope); without it, anyone who can reach the
//! admin listener — allowed only when that listener is bound to a loopback address. Either way a
//! web page cannot drive it: see `admin/origin.rs`.

mod admission;
mod api;
pub mod cli;
mod origin;
mod redact;
mod registration;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use futures::future::BoxFuture;

use crate::config::Config;
use crate::gateway::Gateway;

pub use crate::admin_guard::{Admin, AdminError, AdminGuard};
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
async fn change_fleet(host: &dyn Host, change: impl FnOnce(&crate::overlay::Overlay)) -> Result<(), AdminError> {
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
