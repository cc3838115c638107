//! The innermost service: forwards a routed call to its backend (each try an [`Attempt`], the one
//! retry or fail-over a call may have decided by its [`Failover`]), or answers the calls the gateway
//! serves itself.

use std::sync::Arc;
use std::task::{Context, Poll};

use a2a_core::{A2aCall, A2aError, CallContext, CallRequest, Operation, RequestInfo, RouteHint};
use axum::body::Body;
use futures::future::BoxFuture;
use http::Response;
use tower::Service;

use crate::gateway::Gateway;
use crate::observers::Exchange;
use crate::proxy::{ForwardError, Outbound};
use crate::routing;
use a2a_model::Request as A2aRequest;

/// The innermost service: forwards the routed call, or answers the calls the gateway serves itself.
#[derive(Clone)]
pub struct ForwardService {
    gateway: Arc<Gateway>,
}

impl ForwardService {
    pub fn new(gateway: Arc<Gateway>) -> ForwardService {
        ForwardService { gateway }
    }
}

impl Service<CallRequest> for ForwardService {
    type Response = Response<Body>;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<Response<Body>, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let gateway = self.gateway.clone();
        Box::pin(async move {
            let (parts, mut context) = request.into_parts();
            let owner = routing::owner_key(Some(&context.caller), gateway.config.routing.isolation);
            let snapshot = gateway.registry.snapshot();
            match (context.call.operation, &context.checked.request) {
                (Operation::GetExtendedAgentCard, _) => {
                    let caller = Some(&context.caller);
                    return crate::catalog::extended::extended_card(
                        &gateway,
                        &snapshot,
                        &context.call,
                        caller,
                        &parts.headers,
                    );
                }
                (Operation::ListTasks, A2aRequest::ListTasks(request)) => {
                    let (call, caller) = (&context.call, Some(&context.caller));
                    let list = crate::list::list_tasks(&gateway, &snapshot, owner.as_ref(), caller, call, request);
                    return Box::pin(list).await;
                }
                // The decoder reads a ListTasks call into its ListTasks request.
                (Operation::ListTasks, _) => return Err(A2aError::Internal),
                _ => {}
            }
            let CallContext { call, checked, info, caller, .. } = &mut *context;
            let info = &*info;
            // Routing routes every call but the two above.
            let hint = info.route().ok_or(A2aError::Internal)?;
            let request_id: Arc<str> = Arc::from(info.request_id());
            let skill: Option<Arc<str>> = hint.skill.as_deref().map(Arc::from);
            // Push configs are the gateway's: answered here, or taken off a send, so that an agent
            // never gets a caller's URL. (Their futures are boxed, as are a listing's above: calls
            // that have none do not carry their size, copied with every forward's future.)
            let push = gateway.shared.push.as_deref();
            if crate::push::api::is_push_call(&checked.request) {
                let (backend, request) = (&hint.backend, &checked.request);
                let answered = crate::push::api::answer(push, owner.as_ref(), Some(caller), backend, call, request);
                if let Some(answer) = Box::pin(answered).await {
                    return answer;
                }
            }
            if crate::push::api::carries_push_config(&checked.request) {
                let (id, backend, request) = (request_id.clone(), &hint.backend, &mut checked.request);
                let take =
                    crate::push::api::take_from_send(push, owner.as_ref(), Some(caller), backend, id, call, request);
                Box::pin(take).await?;
            }
            let (call, request, caller) = (&*call, &checked.request, Some(&*caller));
            let mut backend = snapshot.backend(&hint.backend).ok_or(A2aError::TaskNotFound)?.clone();
            let mut failover = Failover::new(call, hint.skill.as_deref());
            loop {
                let exchange = Exchange {
                    backend: backend.name.clone(),
                    binding: call.binding,
                    caller: caller.cloned(),
                    owner: owner.clone(),
                    request_id: request_id.clone(),
                    skill: skill.clone(),
                };
                let attempt = Attempt { gateway: &gateway, parts: &parts, info, hint };
                match attempt.run(&backend, exchange, call, request).await? {
                    Ok(response) => return Ok(response),
                    Err(error) => backend = failover.next(&gateway, &snapshot, &backend, error)?,
                }
            }
        })
    }
}

/// One forward of a call to one backend, timed and traced, bounded by the skill's deadline and the
/// drain deadline; its backend's health learns how it went.
struct Attempt<'a> {
    gateway: &'a Gateway,
    parts: &'a http::request::Parts,
    info: &'a RequestInfo,
    hint: &'a RouteHint,
}

impl Attempt<'_> {
    /// The backend's answer or why it gave none (`Ok(Err(_))`, for the failover to judge), or the
    /// gateway's own answer when a deadline passed first (`Err`).
    async fn run(
        &self,
        backend: &Arc<crate::registry::Backend>,
        exchange: Exchange,
        call: &A2aCall,
        request: &A2aRequest,
    ) -> Result<Result<Response<Body>, ForwardError>, A2aError> {
        let (gateway, parts) = (self.gateway, self.parts);
        let asked = std::time::Instant::now();
        // Boxed where it is made: polled in place, the forward's future (the whole agent exchange)
        // would be copied into the select below and with this future into every one that awaits it.
        let forward = Box::pin(async {
            // With traces exported, the backend call is a span of its own and the backend's parent.
            let span = crate::telemetry::backend_call(&parts.headers, &backend.name);
            let headers = span.as_ref().map_or(&parts.headers, |s| &s.headers);
            let outbound = Outbound { call, request, method: &parts.method, headers };
            let result = gateway.forwarder.forward(backend, exchange, outbound).await;
            if let Some(span) = span {
                span.finish(result.as_ref().err().map(|e| e.error().reason()));
            }
            let waited = asked.elapsed();
            crate::metrics::calls::record_backend(&backend.name, waited);
            self.info.add_backend_time(waited);
            result
        });
        // A call still waiting for its backend when the drain deadline passes gets an answer instead
        // of a cut connection. A blocking send names its task only when it ends, so the deadline
        // watch cannot see it: its wait ends at the skill's deadline instead.
        let deadline = self.hint.skill.as_deref().and_then(|s| gateway.config.deadlines.get(s).copied());
        let wait_limit = deadline.filter(|_| call.operation == Operation::SendMessage);
        let drained = gateway.shared.drain_per_worker.get().cancelled();
        // The answer first (`biased`): a deadline only counts while there is none. Without a
        // skill's deadline no timer is made (a select makes every branch's future, disabled or not).
        let result = match wait_limit {
            None => tokio::select! {
                biased;
                result = forward => result,
                _ = drained => return Err(shutting_down()),
            },
            Some(limit) => tokio::select! {
                biased;
                result = forward => result,
                _ = drained => return Err(shutting_down()),
                _ = tokio::time::sleep(limit) => {
                    return Err(A2aError::BackendUnavailable(format!(
                        "the task did not finish within its skill's deadline of {limit:?}; use streaming or returnImmediately to have it canceled at the deadline"
                    )));
                }
            },
        };
        // An agent's error answer is an answer: only failures to answer count.
        gateway.registry.report_request(&backend.name, !result.as_ref().is_err_and(ForwardError::is_backend_failure));
        Ok(result)
    }
}

/// The answer of a call still waiting for its backend when the drain deadline passes.
fn shutting_down() -> A2aError {
    A2aError::BackendUnavailable("the gateway is shutting down; retry".into())
}

/// What a call does when its backend gave no answer (the pipeline's hook, in the shape of pingora's
/// `fail_to_connect`): a call the backend never read goes once more, on a fresh connection (a pooled
/// one to a restarted agent is what failed); a new task routed by skill moves instead to another
/// backend with the skill; nothing else is ever retried.
struct Failover<'a> {
    /// A new task routed by skill: it may go to any backend with the skill.
    movable: bool,
    skill: Option<&'a str>,
    tried: Vec<Arc<str>>,
}

impl<'a> Failover<'a> {
    fn new(call: &A2aCall, skill: Option<&'a str>) -> Failover<'a> {
        let movable = call.operation.is_send() && call.task_id.is_none() && call.agent.is_none();
        Failover { movable, skill, tried: Vec::new() }
    }

    /// The backend to try after `backend` failed with `error`, or the error the caller gets.
    fn next(
        &mut self,
        gateway: &Gateway,
        snapshot: &crate::registry::Snapshot,
        backend: &Arc<crate::registry::Backend>,
        error: ForwardError,
    ) -> Result<Arc<crate::registry::Backend>, A2aError> {
        match error {
            ForwardError::NotSent(_) if !self.movable && !self.tried.contains(&backend.name) => {
                self.tried.push(backend.name.clone());
                Ok(backend.clone())
            }
            ForwardError::NotSent(error) if self.movable => {
                self.tried.push(backend.name.clone());
                let next = self.skill.and_then(|skill| {
                    let candidates: Vec<_> =
                        snapshot.with_skill(skill).into_iter().filter(|b| !self.tried.contains(&b.name)).collect();
                    gateway.registry.pick(&candidates).cloned()
                });
                let next = next.ok_or(error)?;
                tracing::info!(from = %backend.name, to = %next.name, "failing over a new task");
                Ok(next)
            }
            error => Err(error.into_error()),
        }
    }
}
