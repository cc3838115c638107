//! The routing layer: runs [`Router`] for each call and puts its [`RouteHint`] into the request.

use super::*;

/// What the route layer needs from the gateway.
pub struct RouteState {
    pub registry: Arc<Registry>,
    pub directory: Arc<dyn TaskDirectory>,
    /// Early callers' task ids → the agents' tasks.
    pub early_ids: Arc<dyn EarlyIds>,
    pub default_skill: Option<String>,
    pub isolation: Isolation,
    pub resolve: ResolveMode,
    pub resolve_margin: f32,
    pub permissions: Arc<Permissions>,
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

impl<S, B> Service<CallRequest> for RouteService<S>
where
    S: Service<CallRequest, Response = http::Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<S::Response, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: CallRequest) -> Self::Future {
        let inner = self.inner.clone();
        let state = self.state.clone();
        Box::pin(async move {
            let context = request.body_mut();
            let owner = owner_key(Some(&context.caller), state.isolation);
            refuse_unpromised_push(&state.registry.current(), &context.call)?;
            amend(&state, owner.as_ref(), &mut context.call, &mut context.checked).await?;
            if !matches!(context.call.operation, Operation::ListTasks | Operation::GetExtendedAgentCard) {
                let snapshot = state.registry.snapshot();
                let router = Router {
                    snapshot: &snapshot,
                    registry: &state.registry,
                    directory: state.directory.as_ref(),
                    default_skill: state.default_skill.as_deref(),
                    owner: owner.as_ref(),
                    resolving: context.checked.message().map(|message| Resolving {
                        mode: state.resolve,
                        margin: state.resolve_margin,
                        permissions: &state.permissions,
                        caller: &context.caller,
                        message,
                    }),
                };
                let route = router.route(&context.call).await?;
                claim_context(state.directory.as_ref(), owner.as_ref(), &context.call, &route).await?;
                if let Some(decision) = &route.decision {
                    metrics::counter!(crate::metrics::SKILL_RESOLUTIONS, "rule" => decision.rule()).increment(1);
                    context.info.set_route_reason(decision.reason());
                }
                // A skill the gateway decided for a message that named none (resolved, or its
                // context's or task's) goes on to an agent with several skills as if the caller had
                // named it: the agent must not pick another.
                if context.call.operation.is_send()
                    && context.call.skill_id.is_none()
                    && let Some(skill) = &route.skill
                    && (route.decision.is_some() || route.backend.skills.len() > 1)
                {
                    name_skill(&mut context.checked.request, skill);
                    context.call.skill_id = Some(skill.clone());
                }
                let hint = RouteHint { backend: route.backend.name.clone(), skill: route.skill, skills: route.skills };
                context.info.set_route(hint);
            }
            let early = context.checked.early.is_some();
            let mut response = inner.oneshot(request).await?;
            if early {
                let scope: Arc<str> = owner.unwrap_or_else(|| Arc::from(""));
                response.extensions_mut().insert(EarlyScope(scope));
            }
            Ok(response)
        })
    }
}
