//! The admin API's endpoints (`/admin/v1/…`) and the status page (`/admin/`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{Admin, AdminError, Host, audit, change_fleet};
use crate::config::Backend;
use crate::gateway::Gateway;
use crate::overlay::Origin;

type HostState = State<Arc<dyn Host>>;
type Peer = ConnectInfo<SocketAddr>;

pub fn routes() -> Router<Arc<dyn Host>> {
    Router::new()
        .route("/admin/", get(page))
        .route("/admin", get(page))
        .route("/admin/v1/backends", get(list_backends).post(register))
        .route("/admin/v1/backends/{name}", get(one_backend).delete(deregister))
        .route("/admin/v1/backends/{name}/drain", post(drain).delete(undrain))
        .route("/admin/v1/backends/{name}/refresh", post(refresh))
        .route("/admin/v1/config", get(effective_config))
        .route("/admin/v1/tasks", get(tasks))
        .route("/admin/v1/stats", get(stats))
}

/// The status page: one self-contained document, refreshed from the API by its own script.
async fn page() -> Response {
    let mut response = Html(include_str!("page.html")).into_response();
    let headers = response.headers_mut();
    headers.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    // Everything the page needs is inline; it talks only to this origin.
    headers.insert(
        http::header::CONTENT_SECURITY_POLICY,
        http::HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
        ),
    );
    response
}

/// The current generation and the admin calling, or the refusal.
async fn admit(
    host: &Arc<dyn Host>,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<(Arc<Gateway>, Admin), AdminError> {
    let gateway = host.gateway();
    let loopback = host.admin_address().is_some_and(|a| a.ip().is_loopback());
    let admin = gateway.admin.admit(headers, loopback, peer).await?;
    Ok((gateway, admin))
}

fn backend_json(gateway: &Gateway, status: &crate::registry::BackendStatus) -> Value {
    let mut value = serde_json::to_value(status).unwrap_or(Value::Null);
    value["source"] = json!(gateway.shared.overlay.source(&status.name));
    value
}

async fn list_backends(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, _) = admit(&host, &headers, peer).await?;
    let backends: Vec<Value> = gateway.registry.status().iter().map(|s| backend_json(&gateway, s)).collect();
    let refused = gateway.shared.overlay.refused_admissions();
    Ok(axum::Json(json!({"backends": backends, "refused_agents": refused})).into_response())
}

async fn one_backend(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, _) = admit(&host, &headers, peer).await?;
    let status = gateway.registry.status().into_iter().find(|s| s.name == name).ok_or(AdminError::NotFound(name))?;
    Ok(axum::Json(backend_json(&gateway, &status)).into_response())
}

/// Registers a backend: the body is a `backends[]` entry of the configuration file.
async fn register(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AdminError> {
    let (gateway, admin) = admit(&host, &headers, peer).await?;
    let backend: Backend = serde_json::from_slice(&body).map_err(|e| {
        AdminError::BadRequest(format!("the body must be a backend entry ({{\"name\", \"url\", …}}): {e}"))
    })?;
    if gateway.registry.snapshot().backend(&backend.name).is_some() {
        return Err(AdminError::Conflict(format!("a backend named '{}' exists; remove it first", backend.name)));
    }
    let (name, url) = (backend.name.clone(), backend.url.clone());
    change_fleet(host.as_ref(), |overlay| overlay.add(backend, Origin::Admin)).await?;
    let gateway = host.gateway();
    audit(&gateway, &admin, "backend.register", &name, Some(json!({"url": url})));
    let status = gateway.registry.status().into_iter().find(|s| s.name == name);
    let body = status.map(|s| backend_json(&gateway, &s)).unwrap_or(Value::Null);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn deregister(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, admin) = admit(&host, &headers, peer).await?;
    if gateway.registry.snapshot().backend(&name).is_none() {
        return Err(AdminError::NotFound(name));
    }
    let in_file = host.file_config().backends.iter().any(|b| b.name == name);
    change_fleet(host.as_ref(), |overlay| overlay.remove(&name, in_file))
        .await
        .map_err(|e| AdminError::Conflict(format!("'{name}' cannot be removed: {e}")))?;
    audit(&host.gateway(), &admin, "backend.deregister", &name, None);
    Ok(axum::Json(json!({"removed": name})).into_response())
}

async fn set_draining(
    host: Arc<dyn Host>,
    peer: SocketAddr,
    name: String,
    headers: HeaderMap,
    draining: bool,
) -> Result<Response, AdminError> {
    let (gateway, admin) = admit(&host, &headers, peer).await?;
    let overlay = &gateway.shared.overlay;
    let _one_at_a_time = overlay.changes.lock().await;
    // The layer first: a generation built meanwhile starts with the mark.
    overlay.set_draining(&name, draining);
    let gateway = host.gateway();
    if !gateway.registry.set_draining(&name, draining) {
        overlay.set_draining(&name, false);
        return Err(AdminError::NotFound(name));
    }
    let action = if draining { "backend.drain" } else { "backend.undrain" };
    audit(&gateway, &admin, action, &name, None);
    let status = gateway.registry.status().into_iter().find(|s| s.name == name);
    Ok(axum::Json(status.map(|s| backend_json(&gateway, &s)).unwrap_or(Value::Null)).into_response())
}

async fn drain(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    set_draining(host, peer, name, headers, true).await
}

async fn undrain(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    set_draining(host, peer, name, headers, false).await
}

async fn refresh(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, admin) = admit(&host, &headers, peer).await?;
    let status = gateway.registry.refresh(&name).await.ok_or_else(|| AdminError::NotFound(name.clone()))?;
    audit(&gateway, &admin, "backend.refresh", &name, Some(json!({"healthy": status.healthy})));
    Ok(axum::Json(backend_json(&gateway, &status)).into_response())
}

/// The configuration in effect: the file as written (secrets redacted, `${VAR}` references not
/// expanded), the runtime layer over it, and the resulting backends.
async fn effective_config(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, _) = admit(&host, &headers, peer).await?;
    let mut file = gateway.config.document.as_deref().cloned().unwrap_or(Value::Null);
    super::redact::redact_config(&mut file);
    let backends: Vec<Value> = gateway
        .config
        .backends
        .iter()
        .map(|b| {
            json!({
                "name": b.name,
                "url": b.url,
                "card_path": b.card_path,
                "source": gateway.shared.overlay.source(&b.name),
                "auth": b.auth.as_ref().map(|_| super::redact::REDACTED),
            })
        })
        .collect();
    let mut body = json!({"file": file, "runtime": gateway.shared.overlay.describe(), "backends": backends});
    super::redact::redact_urls(&mut body["runtime"]);
    Ok(axum::Json(body).into_response())
}

#[derive(serde::Deserialize)]
struct TaskQuery {
    /// Include tasks in a terminal state too.
    #[serde(default)]
    all: bool,
}

/// Tasks by owner (caller or tenant): ids and states only, no content.
async fn tasks(
    State(host): HostState,
    ConnectInfo(peer): Peer,
    Query(query): Query<TaskQuery>,
    headers: HeaderMap,
) -> Result<Response, AdminError> {
    let (gateway, _) = admit(&host, &headers, peer).await?;
    const LIMIT: usize = 10_000;
    let list = gateway.directory().list(LIMIT).await;
    let truncated = list.len() == LIMIT;
    let mut by_owner: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (id, entry) in list {
        if !query.all && entry.state.is_some_and(|s| s.is_terminal()) {
            continue;
        }
        let owner = entry.owner.as_deref().unwrap_or("(anonymous)").to_string();
        let state = entry.state.map(|s| s.as_str());
        by_owner.entry(owner).or_default().push(json!({"id": id, "state": state, "backend": &*entry.backend}));
    }
    let callers: Vec<Value> = by_owner
        .into_iter()
        .map(|(caller, mut tasks)| {
            tasks.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
            json!({"caller": caller, "tasks": tasks})
        })
        .collect();
    Ok(axum::Json(json!({"callers": callers, "truncated": truncated})).into_response())
}

/// What the status page shows besides backends and tasks: gauges and recent traffic.
async fn stats(State(host): HostState, ConnectInfo(peer): Peer, headers: HeaderMap) -> Result<Response, AdminError> {
    let (gateway, _) = admit(&host, &headers, peer).await?;
    let mut body = crate::metrics::recent::RECENT.report();
    body["open_streams"] = json!(crate::metrics::OPEN_STREAMS.load(Ordering::Relaxed));
    body["live_tasks"] = json!(gateway.shared.live_tasks.as_ref().map(|l| l.total_leased()));
    Ok(axum::Json(body).into_response())
}
