//! An example agent speaking the early A2A REST dialect of the project's seed (a FastAPI server in
//! the original), used as a backend and a caller's counterpart in bridging tests:
//!
//! - `POST /tasks/send` — body `{id, sessionId?, message: {role, parts}, metadata?, historyLength?}`;
//!   runs the task and answers with it whole (completed, or input-required for `early-clarify`).
//! - `POST /tasks/sendSubscribe` — the same as SSE, each event the whole task: working, then the end.
//! - `GET /tasks/{id}` (`?historyLength=`), `POST /tasks/{id}/cancel`, `POST /tasks/{id}/send`
//!   (continue a task in input-required), the card at `/.well-known/agent.json`.
//! - Skills (by `metadata.skillId` of the request or message; `early-echo` when absent): `early-echo`
//!   sends the message's parts back as artifact `echo`; `early-clarify` asks a question first.
//!
//! Task ids are the client's: a UUID (hyphenated) in the body's `id`. A reused id is refused with
//! **409 Conflict** (continue a task with `POST /tasks/{id}/send` instead). Errors are
//! `{"detail": …}`: 404 unknown task, 400 a cancel of a task that is not submitted / working /
//! input-required (or a continue of one not in input-required), 422 a body that does not fit.
//! Test hooks as on the 1.0 agents: `GET|DELETE /debug/requests` (operations recorded as
//! `tasks/send`, `tasks/sendSubscribe`, `tasks/get`, `tasks/cancel`, `tasks/continue`,
//! `GetAgentCard`), `GET /healthz`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! a2a_example_agents::serve_early(listener, std::future::pending()).await
//! # }
//! ```

mod card;
mod model;
mod routes;
mod skills;
mod store;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use serde_json::Value;

use crate::recorder::Recorder;
use store::EarlyStore;

/// Bodies larger than this are refused (413).
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Shared state of the early agent's routes.
struct EarlyApp {
    store: EarlyStore,
    card: Value,
    recorder: Recorder,
}

/// The early agent's routes. `base_url` (like `http://127.0.0.1:4321`) is where callers reach it;
/// the card's `url` derives from it.
pub fn early_router(base_url: &str) -> Router {
    let app = Arc::new(EarlyApp {
        store: EarlyStore::default(),
        card: card::describe(base_url),
        recorder: Recorder::default(),
    });
    Router::new()
        .route(card::PATH, get(routes::card))
        .route("/tasks/send", post(routes::send))
        .route("/tasks/sendSubscribe", post(routes::send_subscribe))
        .route("/tasks/{id}", get(routes::get))
        .route("/tasks/{id}/cancel", post(routes::cancel))
        .route("/tasks/{id}/send", post(routes::continue_task))
        .route("/debug/requests", get(routes::recorded).delete(routes::clear_recorded))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

/// Serves the early agent on `listener` until `shutdown` resolves; the card advertises the
/// listener's local address. Its streams are short (two events), so shutdown waits for them.
pub async fn serve_early(
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let base_url = format!("http://{}", listener.local_addr()?);
    axum::serve(listener, early_router(&base_url)).with_graceful_shutdown(shutdown).await
}
