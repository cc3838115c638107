//! Agent self-registration: an agent presents a registration credential and its base URL at
//! `POST /admin/v1/registrations`; the gateway checks the name against the credential's patterns,
//! the URL's origin against its allow-list, `card_path` (before the card's URL is built), every
//! address the final URL's host resolves to against the address screen ([`crate::screen`]), then,
//! in [`admission`], fetches the card through the screen, refuses skills the credential does not
//! grant (or a file/admin backend's skill it does not share), and probes every binding the card
//! offers ([`super::admission`]) before the agent enters routing. Repeating the registration is
//! the heartbeat. An agent about to stop drains itself first with
//! `POST /admin/v1/registrations/{name}/drain` (no new tasks reach it; calls on its tasks still
//! do) and leaves with `DELETE /admin/v1/registrations/{name}`; it is also dropped when its
//! heartbeats stop for `heartbeat_ttl` or its health checks fail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use reqwest::Url;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Admin, AdminError, Host, audit, change_fleet};
use crate::config::{Backend, RegistrationCredential, SkillGrant, glob_match};
use crate::overlay::{Origin, Source};
use crate::screen::{ScreenError, ScreenPolicy, SystemResolver, screen_url};

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
    let url = agent_url(&body.url, credential)?;
    let card_path = body.card_path.clone().unwrap_or_else(|| "/.well-known/agent-card.json".into());
    let card_url = card_url(&url, &card_path)?;
    screen_addresses(&card_url, screen).await?;
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
    let grant = credential.skill_grant();
    if let Err(refusal) = admission(&gateway, &url, card_url, screen, &grant).await {
        overlay.refuse_admission(&body.name, &credential.id, &refusal.to_string());
        return Err(refusal);
    }
    overlay.clear_admission(&body.name);
    let backend = Backend {
        card_path,
        skill_grant: Some(Arc::new(grant)),
        screen: Some(Arc::new(screen.clone())),
        ..Backend::at(body.name.clone(), url.to_string().trim_end_matches('/'))
    };
    let origin = Origin::Agent { credential: credential.id.clone(), last_heartbeat: Instant::now() };
    change_fleet(host.as_ref(), |overlay| overlay.add(backend, origin)).await?;
    audit(&host.gateway(), &agent_admin(credential), "agent.register", &body.name, Some(json!({"url": body.url})));
    Ok(answer(StatusCode::CREATED))
}

/// What a new agent must pass before it enters routing: its card (fetched through the address
/// screen, which judges the name again at connect time), the skills it claims, and a probe of
/// every binding the gateway would call it on.
async fn admission(
    gateway: &crate::gateway::Gateway,
    url: &Url,
    card_url: Url,
    screen: &ScreenPolicy,
    grant: &SkillGrant,
) -> Result<(), AdminError> {
    let client = crate::screen::client_builder(Arc::new(screen.clone()))
        .build()
        .map_err(|e| AdminError::Unprocessable(format!("the card probe could not start: {e}")))?;
    let timeout = gateway.config.health.timeout;
    let card = crate::registry::probe_card(&client, card_url, timeout, gateway.config.limits.max_card_bytes)
        .await
        .map_err(|e| AdminError::Unprocessable(format!("the agent's card was not accepted: {e}")))?;
    check_skills(gateway, grant, &card)?;
    super::admission::probe(&client, url, &card, timeout)
        .await
        .map_err(|e| AdminError::Unprocessable(format!("the agent failed its admission probe: {e}")))?;
    Ok(())
}

/// Refuses a card that claims a skill the credential does not grant, or one a file-configured or
/// admin-registered backend serves that the grant does not share. Refused rather than trimmed: an
/// agent admitted with fewer skills than it announces would fail its callers quietly.
fn check_skills(
    gateway: &crate::gateway::Gateway,
    grant: &SkillGrant,
    card: &serde_json::Value,
) -> Result<(), AdminError> {
    let overlay = &gateway.shared.overlay;
    let served: Vec<(String, String)> = gateway
        .registry
        .status()
        .into_iter()
        .filter(|b| overlay.source(&b.name) != Source::Agent)
        .flat_map(|b| b.skills.into_iter().map(move |s| (s, b.name.clone())))
        .collect();
    let ids = card.get("skills").and_then(|s| s.as_array()).into_iter().flatten();
    for id in ids.filter_map(|s| s.get("id")?.as_str()) {
        let owner = served.iter().find(|(skill, _)| skill == id).map(|(_, backend)| backend);
        if !grant.allows(id, false) {
            return Err(AdminError::Forbidden(format!(
                "this credential does not grant the skill '{id}' (its skills: {})",
                grant.skills.join(", ")
            )));
        }
        if let Some(backend) = owner
            && !grant.allows(id, true)
        {
            return Err(AdminError::Forbidden(format!(
                "the skill '{id}' is served by the backend '{backend}'; this credential may not join it (shared_skills)"
            )));
        }
    }
    Ok(())
}

/// The agent's base URL if this credential may register it: http(s), no user-info, query or
/// fragment, an allowed origin.
fn agent_url(text: &str, credential: &RegistrationCredential) -> Result<Url, AdminError> {
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
    Ok(url)
}

/// The card's URL: `card_path` is checked first (an absolute path of plain characters, no `..`
/// segment) and the URL built from it must stay on the agent's origin, so the path cannot name
/// another host or port (`@host:port/…`, `//host/…`).
fn card_url(base: &Url, card_path: &str) -> Result<Url, AdminError> {
    let bad = |why: &str| AdminError::BadRequest(format!("card_path: {why}"));
    if !card_path.starts_with('/') || card_path.starts_with("//") {
        return Err(bad("must be an absolute path such as /.well-known/agent-card.json"));
    }
    if card_path.len() > 256 {
        return Err(bad("longer than 256 characters"));
    }
    if !card_path.chars().all(|c| c.is_ascii_alphanumeric() || "/-._~".contains(c)) {
        return Err(bad("only letters, digits and / - . _ ~ are allowed"));
    }
    if card_path.split('/').any(|segment| segment == "..") {
        return Err(bad("no '..' segments"));
    }
    let url =
        Url::parse(&format!("{}{card_path}", base.as_str().trim_end_matches('/'))).map_err(|e| bad(&e.to_string()))?;
    if url.origin() != base.origin() {
        return Err(bad("must stay on the agent's origin"));
    }
    Ok(url)
}

/// Screens every address the final URL's host resolves to (the gateway's one address screen,
/// `crate::screen`), for a clear refusal before anything is fetched.
async fn screen_addresses(url: &Url, policy: &ScreenPolicy) -> Result<(), AdminError> {
    screen_url(url.as_str(), policy, &SystemResolver).await.map(drop).map_err(|error| match error {
        ScreenError::Refused(_) => AdminError::Forbidden(format!("url: {error}")),
        ScreenError::Unresolved => AdminError::Unprocessable(format!("url: {error}")),
        _ => AdminError::BadRequest(format!("url: {error}")),
    })
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
