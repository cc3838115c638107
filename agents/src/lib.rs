//! Four example A2A 1.0 agents — `echo`, `review`, `clarify`, `slow` — served over JSON-RPC
//! (`POST /a2a/jsonrpc`) and HTTP+JSON (`/a2a/rest/...`) with an agent card at
//! `/.well-known/agent-card.json`, speaking the wire format of the reference SDK's captures
//! (`shared/a2a/wire-samples`). The gateway's demo and end-to-end tests run them as backends.
//!
//! Test hooks: `GET /debug/requests` lists every A2A request received (with its headers),
//! `DELETE /debug/requests` clears the list, `GET /healthz` answers 200.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use a2a_example_agents::{AgentKind, AgentOptions, serve};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! serve(AgentKind::Echo, listener, AgentOptions::default(), std::future::pending()).await
//! # }
//! ```

mod behaviour;
mod card;
mod early;
mod error;
mod jsonrpc;
mod listing;
mod model;
mod operation;
mod recorder;
mod requests;
mod rest;
mod sse;
mod store;
mod time;
mod turn;
mod version;

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use crate::behaviour::Behaviour;
use crate::card::Card;
use crate::operation::Agent;
use crate::recorder::Recorder;
pub use crate::store::StoreLimits;
use crate::store::TaskStore;

pub use crate::early::{early_router, serve_early};

/// Room for the review skill's 1,000,000-character diff once JSON-escaped.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Which example agent to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// Skill `echo`: returns the input text as an artifact.
    Echo,
    /// Skill `review-pr`: streams three progress steps, then findings.
    Review,
    /// Skill `clarify`: asks a question (input-required), then completes.
    Clarify,
    /// Skill `slow`: works for a while (10 s by default) and can be canceled.
    Slow,
}

impl AgentKind {
    pub const ALL: [AgentKind; 4] = [Self::Echo, Self::Review, Self::Clarify, Self::Slow];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Echo => "echo",
            Self::Review => "review",
            Self::Clarify => "clarify",
            Self::Slow => "slow",
        }
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the agent kinds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent kind {0:?}: expected one of echo, review, clarify, slow")]
pub struct UnknownAgentKind(pub String);

impl FromStr for AgentKind {
    type Err = UnknownAgentKind;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| UnknownAgentKind(name.to_owned()))
    }
}

/// Settings of an agent process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOptions {
    /// Overrides the card's `name`.
    pub name: Option<String>,
    /// How long the slow agent works (10 s by default).
    pub slow_duration: Duration,
    /// Pause between the review agent's steps (100 ms by default).
    pub step_delay: Duration,
    /// How many finished tasks the agent keeps, and for how long.
    pub store: StoreLimits,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            name: None,
            slow_duration: Duration::from_secs(10),
            step_delay: Duration::from_millis(100),
            store: StoreLimits::default(),
        }
    }
}

/// Shared state of one agent's routes.
struct App {
    agent: Agent,
    card: Card,
    recorder: Recorder,
}

impl App {
    fn new(kind: AgentKind, base_url: &str, options: AgentOptions) -> Self {
        Self {
            agent: Agent {
                store: Arc::new(TaskStore::new(options.store)),
                behaviour: Arc::new(Behaviour::new(kind, &options)),
                shutdown: CancellationToken::new(),
            },
            card: Card::new(kind, base_url, options.name.as_deref()),
            recorder: Recorder::default(),
        }
    }

    /// Ends open streams and blocking waits, and stops running turns.
    fn shut_down(&self) {
        self.agent.shutdown.cancel();
        self.agent.store.abort_all();
    }
}

/// The agent's routes. `base_url` (like `http://127.0.0.1:4321`, no trailing slash) is where
/// callers reach it; the card's interface URLs derive from it.
pub fn router(kind: AgentKind, base_url: &str, opts: AgentOptions) -> Router {
    routes(Arc::new(App::new(kind, base_url, opts)))
}

fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route(card::PATH, get(card::get))
        .route(card::JSONRPC_PATH, post(jsonrpc::handle))
        .route("/debug/requests", get(recorder::list).delete(recorder::clear))
        .route("/healthz", get(|| async { "ok" }))
        // HTTP+JSON paths like `/tasks/{id}:cancel` cannot be axum routes; the binding matches them.
        .fallback(rest::handle)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

/// Serves an agent on `listener` until `shutdown` resolves; the card advertises the
/// listener's local address. At shutdown, open streams end and running work stops.
pub async fn serve(
    kind: AgentKind,
    listener: tokio::net::TcpListener,
    opts: AgentOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let base_url = format!("http://{}", listener.local_addr()?);
    let app = Arc::new(App::new(kind, &base_url, opts));
    let on_shutdown = {
        let app = Arc::clone(&app);
        async move {
            shutdown.await;
            app.shut_down();
        }
    };
    axum::serve(listener, routes(app)).with_graceful_shutdown(on_shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in AgentKind::ALL {
            assert_eq!(kind.to_string().parse::<AgentKind>(), Ok(kind));
        }
        assert_eq!("Review".parse::<AgentKind>(), Ok(AgentKind::Review));
        assert!("multiturn".parse::<AgentKind>().is_err());
    }

    #[test]
    fn default_options() {
        let options = AgentOptions::default();
        assert_eq!(options.slow_duration, Duration::from_secs(10));
        assert_eq!(options.step_delay, Duration::from_millis(100));
        assert_eq!(options.name, None);
    }
}
