//! Agent self-registration: an agent presents a registration credential and its base URL at
//! `POST /admin/v1/registrations`; the gateway checks the name against the credential's patterns,
//! the URL's origin against its allow-list, every address the host resolves to against the
//! address screen, then fetches and checks the agent's card before admitting it. Repeating the
//! registration is the heartbeat. An agent about to stop drains itself first with
//! `POST /admin/v1/registrations/{name}/drain` (no new tasks reach it; calls on its tasks still
//! do) and leaves with `DELETE /admin/v1/registrations/{name}`; it is also dropped when its
//! heartbeats stop for `heartbeat_ttl` or its health checks fail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::AuthMethod;
use a2a_policies::auth::Authenticator;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use reqwest::Url;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::config::{RegistrationConfig, RegistrationCredential, glob_match};
use super::overlay::{Origin, Source};
use super::{Admin, AdminError, Host, audit, change_fleet};
use crate::config::Backend;
use crate::screen::{Screen, resolve};

/// The registration credentials of one configuration generation.
pub struct Registrations {
    authenticator: Authenticator,
    credentials: Vec<(RegistrationCredential, Screen)>,
    heartbeat_ttl: Duration,
}

impl Registrations {
    pub fn new(config: &RegistrationConfig, http: reqwest::Client, stop: &CancellationToken) -> anyhow::Result<Self> {
        let authenticator = Authenticator::new(&config.auth_config(), http, stop)?;
        let mut credentials = Vec::new();
        for credential in &config.credentials {
            let screen = Screen::parse(&credential.allow_addresses).map_err(anyhow::Error::msg)?;
            credentials.push((credential.clone(), screen));
        }
        Ok(Registrations { authenticator, credentials, heartbeat_ttl: config.heartbeat_ttl })
    }

    async fn credential(&self, headers: &HeaderMap) -> Result<&(RegistrationCredential, Screen), AdminError> {
        let caller = self.authenticator.authenticate(headers, None).await.map_err(|failure| {
            tracing::info!(reason = %failure, "registration refused a credential");
            if failure.presented() { AdminError::InvalidCredentials } else { AdminError::MissingCredentials }
        })?;
        let AuthMethod::ApiKey { key_id } = &caller.auth else { return Err(AdminError::InvalidCredentials) };
        self.credentials.iter().find(|(c, _)| *c.id == **key_id).ok_or(AdminError::InvalidCredentials)
    }
}

pub fn routes() -> Router<Arc<dyn Host>> {
    Router::new()
        .route("/admin/v1/registrations", post(register))
        .route("/admin/v1/registrations/{name}", delete(leave))
        .route("/admin/v1/registrations/{name}/drain", post(drain))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    name: String,
    /// The agent's base URL; its card is at `card_path` under it.
    url: String,
    #[serde(default)]
    card_path: Option<String>,
}

fn agent_admin(credential: &RegistrationCredential) -> Admin {
    Admin { id: format!("agent:{}", credential.id), method: "registration" }
}

async fn register(State(host): State<Arc<dyn Host>>, headers: HeaderMap, body: Bytes) -> Result<Response, AdminError> {
    let gateway = host.gateway();
    let registrations = gateway.admin.registration.as_ref().ok_or(AdminError::NotFound("registrations".into()))?;
    let (credential, screen) = registrations.credential(&headers).await?;
    let body: RegisterBody = serde_json::from_slice(&body)
        .map_err(|e| AdminError::BadRequest(format!("the body must be {{\"name\", \"url\"}}: {e}")))?;
    if !credential.names.iter().any(|p| glob_match(p, &body.name)) {
        return Err(AdminError::Forbidden(format!("this credential may not register the name '{}'", body.name)));
    }
    let url = screen_url(&body.url, credential, screen).await?;
    let ttl = registrations.heartbeat_ttl;
    let overlay = &gateway.shared.overlay;
    let answer = |status| {
        (status, axum::Json(json!({"name": body.name, "heartbeat_ttl_ms": ttl.as_millis() as u64}))).into_response()
    };
    if overlay.heartbeat(&body.name, &credential.id, &body.url) {
        return Ok(answer(StatusCode::OK));
    }
    let taken = gateway.registry.snapshot().backend(&body.name).is_some();
    if taken && overlay.agent_credential(&body.name).as_deref() != Some(credential.id.as_str()) {
        return Err(AdminError::Conflict(format!("the name '{}' is taken", body.name)));
    }
    let card_path = body.card_path.clone().unwrap_or_else(|| "/.well-known/agent-card.json".into());
    let card_url = Url::parse(&format!("{}{card_path}", body.url.trim_end_matches('/')))
        .map_err(|e| AdminError::BadRequest(format!("card_path: {e}")))?;
    crate::registry::probe_card(
        &gateway.shared.client,
        card_url,
        gateway.config.health.timeout,
        gateway.config.limits.max_card_bytes,
    )
    .await
    .map_err(|e| AdminError::Unprocessable(format!("the agent's card was not accepted: {e}")))?;
    let backend = Backend {
        name: body.name.clone(),
        url: url.to_string().trim_end_matches('/').to_string(),
        card_path,
        health_interval: None,
        auth: None,
        forward_caller_token: false,
        dialect: None,
        tls: None,
        card_jwks: None,
        require_signed_card: false,
    };
    let origin = Origin::Agent { credential: credential.id.clone(), last_heartbeat: Instant::now() };
    change_fleet(host.as_ref(), |overlay| overlay.add(backend, origin)).await?;
    audit(&host.gateway(), &agent_admin(credential), "agent.register", &body.name, Some(json!({"url": body.url})));
    Ok(answer(StatusCode::CREATED))
}

/// The agent's base URL if it may be called: http(s), no user-info, an allowed origin, and only
/// addresses the screen passes.
async fn screen_url(text: &str, credential: &RegistrationCredential, screen: &Screen) -> Result<Url, AdminError> {
    let url = Url::parse(text).map_err(|e| AdminError::BadRequest(format!("url: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(AdminError::BadRequest("url: must be http:// or https://".into()));
    }
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
        return Err(AdminError::BadRequest("url: no user-info, query or fragment".into()));
    }
    let origin = url.origin().ascii_serialization();
    if !credential.origins.iter().any(|p| glob_match(p, &origin)) {
        return Err(AdminError::Forbidden(format!("the origin {origin} is not allowed for this credential")));
    }
    let host = url.host_str().ok_or_else(|| AdminError::BadRequest("url: no host".into()))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let addresses = resolve(host, port).await.map_err(AdminError::Unprocessable)?;
    screen.check_all(&addresses).map_err(|e| AdminError::Forbidden(format!("url: {e}")))?;
    Ok(url)
}

/// The credential of the agent `name`, if the caller presented the one that registered it.
async fn own_agent(host: &dyn Host, name: &str, headers: &HeaderMap) -> Result<RegistrationCredential, AdminError> {
    let gateway = host.gateway();
    let registrations = gateway.admin.registration.as_ref().ok_or(AdminError::NotFound("registrations".into()))?;
    let (credential, _) = registrations.credential(headers).await?;
    if gateway.shared.overlay.agent_credential(name).as_deref() != Some(credential.id.as_str()) {
        return Err(AdminError::NotFound(name.to_string()));
    }
    Ok(credential.clone())
}

/// An agent about to stop takes no new tasks; the calls on its live tasks still reach it.
async fn drain(
    State(host): State<Arc<dyn Host>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let credential = own_agent(host.as_ref(), &name, &headers).await?;
    let shared = host.gateway().shared.clone();
    let overlay = &shared.overlay;
    let _one_at_a_time = overlay.changes.lock().await;
    // The layer first: a generation built meanwhile starts with the mark.
    overlay.set_draining(&name, true);
    let gateway = host.gateway();
    if !gateway.registry.set_draining(&name, true) {
        overlay.set_draining(&name, false);
        return Err(AdminError::NotFound(name));
    }
    audit(&gateway, &agent_admin(&credential), "agent.drain", &name, None);
    Ok(axum::Json(json!({"draining": name})).into_response())
}

async fn leave(
    State(host): State<Arc<dyn Host>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let credential = own_agent(host.as_ref(), &name, &headers).await?;
    change_fleet(host.as_ref(), |overlay| overlay.remove(&name, false)).await?;
    audit(&host.gateway(), &agent_admin(&credential), "agent.leave", &name, None);
    Ok(axum::Json(json!({"removed": name})).into_response())
}

/// Every second: self-registered agents whose heartbeats stopped, or whose health checks fail,
/// leave the fleet.
pub fn spawn_expiry(host: Arc<dyn Host>, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = ticker.tick() => expire(host.as_ref()).await,
            }
        }
    });
}

async fn expire(host: &dyn Host) {
    let gateway = host.gateway();
    let Some(registrations) = &gateway.admin.registration else { return };
    let overlay = &gateway.shared.overlay;
    let mut leaving: Vec<(String, String, &'static str)> = overlay
        .expired_agents(registrations.heartbeat_ttl)
        .into_iter()
        .map(|(name, credential)| (name, credential, "heartbeat"))
        .collect();
    let unhealthy_after = gateway.config.health.unhealthy_after;
    for status in gateway.registry.status() {
        let failing = !status.healthy && status.consecutive_failures >= unhealthy_after;
        if failing && overlay.source(&status.name) == Source::Agent && !leaving.iter().any(|l| l.0 == status.name) {
            let credential = overlay.agent_credential(&status.name).unwrap_or_default();
            leaving.push((status.name, credential, "health"));
        }
    }
    if leaving.is_empty() {
        return;
    }
    let names: Vec<String> = leaving.iter().map(|l| l.0.clone()).collect();
    let removed = change_fleet(host, |overlay| names.iter().for_each(|name| overlay.remove(name, false))).await;
    if let Err(error) = removed {
        tracing::warn!(%error, "expired agents could not be removed");
        return;
    }
    let gateway = host.gateway();
    for (name, credential, why) in leaving {
        let admin = Admin { id: format!("agent:{credential}"), method: "expiry" };
        audit(&gateway, &admin, "agent.expire", &name, Some(json!({"reason": why})));
    }
}
