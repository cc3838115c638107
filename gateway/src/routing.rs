//! Route resolution, right after authentication: chooses the backend for a call and records it as a
//! [`RouteHint`] for the policies and the forwarder. In order: the owner of the task the call names;
//! the agent of a per-agent path; a healthy backend declaring the explicit skill (`metadata.skillId`);
//! the owner of a known context; the configured default skill. Anything else is refused with the list
//! of skills on offer. A task or context that belongs to another caller does not exist for this one.

use std::sync::Arc;
use std::task::{Context, Poll};

use a2a_policies::{A2aCall, A2aError, AuthMethod, Caller, Operation, RequestInfo, RouteHint};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::Request;
use serde::Deserialize;
use serde_json::json;
use tower::{Layer, Service, ServiceExt};

use crate::directory::TaskDirectory;
use crate::registry::{Backend, Registry, Snapshot};

/// Who owns a task for isolation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Each caller sees only the tasks it created.
    #[default]
    Caller,
    /// Callers of one tenant share their tasks.
    Tenant,
}

/// The owner key of tasks a caller creates. Anonymous callers (no authentication configured) own
/// nothing: without identities there is nothing to isolate by.
pub fn owner_key(caller: Option<&Caller>, isolation: Isolation) -> Option<Arc<str>> {
    let caller = caller?;
    if caller.auth == AuthMethod::Anonymous {
        return None;
    }
    match (isolation, &caller.tenant) {
        (Isolation::Tenant, Some(tenant)) => Some(Arc::from(format!("tenant:{tenant}"))),
        _ => Some(caller.id.clone()),
    }
}

/// Everything routing reads.
pub struct Router<'a> {
    pub snapshot: &'a Snapshot,
    pub registry: &'a Registry,
    pub directory: &'a dyn TaskDirectory,
    pub default_skill: Option<&'a str>,
    /// The caller's owner key (see [`owner_key`]).
    pub owner: Option<&'a Arc<str>>,
}

/// The chosen backend and the skill the call uses, when known.
pub struct Route {
    pub backend: Arc<Backend>,
    pub skill: Option<String>,
}

impl Router<'_> {
    pub async fn route(&self, call: &A2aCall) -> Result<Route, A2aError> {
        if let Some(task_id) = &call.task_id {
            return self.task_owner(call, task_id).await;
        }
        if let Some(agent) = &call.agent {
            let backend = self.snapshot.backend(agent).ok_or_else(|| A2aError::AgentNotFound(agent.clone()))?;
            let skill = call.skill_id.clone().or_else(|| only_skill(backend));
            return Ok(Route { backend: usable(backend)?, skill });
        }
        if let Some(skill) = &call.skill_id {
            return self.by_skill(skill);
        }
        if let Some(context_id) = &call.context_id
            && let Some(entry) = self.directory.context(context_id).await
            && entry.owner.as_ref() == self.owner
            && let Some(backend) = self.snapshot.backend(&entry.backend)
        {
            return Ok(Route { backend: usable(backend)?, skill: only_skill(backend) });
        }
        if let Some(skill) = self.default_skill {
            return self.by_skill(skill);
        }
        Err(self.no_route("name a skill in the message's metadata.skillId"))
    }

    /// The owner of a task. A task the gateway never saw, one that belongs to another caller, or one
    /// asked for under another agent's path, does not exist for the caller.
    async fn task_owner(&self, call: &A2aCall, task_id: &str) -> Result<Route, A2aError> {
        let entry = self.directory.task(task_id).await.ok_or(A2aError::TaskNotFound)?;
        if entry.owner.as_ref() != self.owner {
            return Err(A2aError::TaskNotFound);
        }
        if call.agent.as_deref().is_some_and(|agent| agent != &*entry.backend) {
            return Err(A2aError::TaskNotFound);
        }
        let backend = self.snapshot.backend(&entry.backend).ok_or(A2aError::TaskNotFound)?;
        let skill = entry.skill.as_deref().map(str::to_string).or_else(|| only_skill(backend));
        Ok(Route { backend: usable(backend)?, skill })
    }

    fn by_skill(&self, skill: &str) -> Result<Route, A2aError> {
        let candidates = self.snapshot.with_skill(skill);
        match self.registry.pick(&candidates) {
            Some(backend) => Ok(Route { backend: backend.clone(), skill: Some(skill.to_string()) }),
            None => Err(self.no_route(&format!("no available agent offers the skill '{skill}'"))),
        }
    }

    fn no_route(&self, reason: &str) -> A2aError {
        let skills = self.snapshot.skill_ids().join(",");
        A2aError::InvalidParams {
            message: format!("{reason}; available skills: [{skills}]"),
            detail: Some(json!({ "availableSkills": skills })),
        }
    }
}

fn only_skill(backend: &Backend) -> Option<String> {
    match backend.skills.as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    }
}

fn usable(backend: &Arc<Backend>) -> Result<Arc<Backend>, A2aError> {
    if backend.healthy {
        Ok(backend.clone())
    } else {
        Err(A2aError::BackendUnavailable(format!("the agent '{}' is unavailable; try again later", backend.name)))
    }
}

/// What the route layer needs from the gateway.
pub struct RouteState {
    pub registry: Arc<Registry>,
    pub directory: Arc<dyn TaskDirectory>,
    pub default_skill: Option<String>,
    pub isolation: Isolation,
}

/// Resolves the route of every call that has one (all but ListTasks and GetExtendedAgentCard, which
/// the gateway answers across backends) and attaches it as a [`RouteHint`].
#[derive(Clone)]
pub struct RouteLayer {
    state: Arc<RouteState>,
}

impl RouteLayer {
    pub fn new(state: Arc<RouteState>) -> RouteLayer {
        RouteLayer { state }
    }
}

impl<S> Layer<S> for RouteLayer {
    type Service = RouteService<S>;
    fn layer(&self, inner: S) -> RouteService<S> {
        RouteService { inner, state: self.state.clone() }
    }
}

#[derive(Clone)]
pub struct RouteService<S> {
    inner: S,
    state: Arc<RouteState>,
}

impl<S> Service<Request<Bytes>> for RouteService<S>
where
    S: Service<Request<Bytes>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<S::Response, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Bytes>) -> Self::Future {
        let inner = self.inner.clone();
        let state = self.state.clone();
        Box::pin(async move {
            let call = request.extensions().get::<A2aCall>().ok_or(A2aError::Internal)?;
            if !matches!(call.operation, Operation::ListTasks | Operation::GetExtendedAgentCard) {
                let owner = owner_key(request.extensions().get::<Caller>(), state.isolation);
                let snapshot = state.registry.snapshot();
                let router = Router {
                    snapshot: &snapshot,
                    registry: &state.registry,
                    directory: state.directory.as_ref(),
                    default_skill: state.default_skill.as_deref(),
                    owner: owner.as_ref(),
                };
                let route = router.route(call).await?;
                let hint = RouteHint { backend: route.backend.name.clone(), skill: route.skill };
                if let Some(info) = request.extensions().get::<RequestInfo>() {
                    info.set_route(hint.clone());
                }
                request.extensions_mut().insert(hint);
            }
            inner.oneshot(request).await
        })
    }
}
