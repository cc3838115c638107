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

impl<S, B> Service<Request<Bytes>> for RouteService<S>
where
    S: Service<Request<Bytes>, Response = http::Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
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
            let owner = owner_key(request.extensions().get::<Caller>(), state.isolation);
            if let Some(call) = request.extensions().get::<A2aCall>() {
                refuse_unpromised_push(&state.registry.snapshot(), call)?;
            }
            let extensions = request.extensions_mut();
            let (Some(mut call), Some(mut checked)) = (extensions.remove::<A2aCall>(), extensions.remove::<Checked>())
            else {
                return Err(A2aError::Internal);
            };
            if amend(&state, owner.as_ref(), &mut call, &mut checked).await? {
                *request.body_mut() = Bytes::from(encode(&mut call, &checked.request));
            }
            if !matches!(call.operation, Operation::ListTasks | Operation::GetExtendedAgentCard) {
                let snapshot = state.registry.snapshot();
                let caller = request.extensions().get::<Caller>();
                let message = checked.message();
                let router = Router {
                    snapshot: &snapshot,
                    registry: &state.registry,
                    directory: state.directory.as_ref(),
                    default_skill: state.default_skill.as_deref(),
                    owner: owner.as_ref(),
                    resolving: message.map(|message| Resolving {
                        mode: state.resolve,
                        margin: state.resolve_margin,
                        permissions: &state.permissions,
                        caller,
                        message,
                    }),
                };
                let route = router.route(&call).await?;
                claim_context(state.directory.as_ref(), owner.as_ref(), &call, &route).await?;
                let info = request.extensions().get::<RequestInfo>().cloned();
                if let Some(decision) = &route.decision {
                    metrics::counter!(crate::metrics::SKILL_RESOLUTIONS, "rule" => decision.rule()).increment(1);
                    if let Some(info) = &info {
                        info.set_route_reason(decision.reason());
                    }
                }
                // A skill the gateway decided for a message that named none (resolved, or its
                // context's or task's) goes on to an agent with several skills as if the caller had
                // named it: the agent must not pick another.
                if call.operation.is_send()
                    && call.skill_id.is_none()
                    && let Some(skill) = &route.skill
                    && (route.decision.is_some() || route.backend.skills.len() > 1)
                {
                    name_skill(&mut checked.request, skill);
                    call.skill_id = Some(skill.clone());
                    *request.body_mut() = Bytes::from(encode(&mut call, &checked.request));
                }
                let hint = RouteHint { backend: route.backend.name.clone(), skill: route.skill, skills: route.skills };
                if let Some(info) = &info {
                    info.set_route(hint.clone());
                }
                request.extensions_mut().insert(hint);
            }
            let early = checked.early.is_some();
            request.extensions_mut().insert(call);
            request.extensions_mut().insert(checked);
            let mut response = inner.oneshot(request).await?;
            if early {
                let scope: Arc<str> = owner.unwrap_or_else(|| Arc::from(""));
                response.extensions_mut().insert(EarlyScope(scope));
            }
            Ok(response)
        })
    }
}
