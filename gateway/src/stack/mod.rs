//! The A2A service stack every call goes through, assembled in one place ([`a2a_stack`]) so the
//! request path reads top to bottom, and the gateway's own layers: decode ([`front`]: builds the
//! per-request [`CallContext`] that is the body of every request inside, and is the one place
//! protocol errors become responses) and the innermost forward service ([`forward`]).

mod forward;
mod front;
mod media_type;
mod undecided;

pub use self::forward::ForwardService;
pub use self::front::{DecodeLayer, DecodeService};

use std::convert::Infallible;
use std::sync::Arc;

use a2a_core::{A2aError, CallRequest};
use axum::body::Body;
use futures::future::BoxFuture;
use http::{Request, Response};
use tower::Service;

use a2a_policies::auth::AuthLayer;
use a2a_policies::authorize::AuthorizeLayer;
use a2a_policies::concurrency::{ConcurrencyLayer, LeaseBody};
use a2a_policies::rate_limit::RateLimitLayer;
use a2a_policies::validate::ValidateLayer;

use crate::gateway::Gateway;
use crate::metrics::MetricsLayer;
use crate::routing::RouteLayer;

/// The A2A request path as the public listener calls it: through a shared reference, to a boxed
/// future. (Called as a tower `Service` it must be owned through `poll_ready` and `call`: a clone of
/// the whole stack, boxed, per request, and its boxed future boxed once more.)
pub trait ServeA2a: Send + Sync {
    fn serve(&self, request: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>>;
}

/// The A2A request path, outermost first: this function is the one place where the order of the
/// layers is decided. `innermost` answers what passed every layer: [`ForwardService`] in the
/// gateway, a stand-in in tests of the order and of refusal rendering.
pub fn a2a_stack<S>(
    gateway: Arc<Gateway>,
    innermost: S,
) -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send> + ServeA2a + Clone + 'static
where
    S: Service<CallRequest, Response = Response<Body>, Error = A2aError> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    tower::ServiceBuilder::new()
        // Reads and decodes the call (a 0.3 or early one into its 1.0 form); answers and renders
        // every refusal from below in the caller's dialect and binding.
        .layer(DecodeLayer {
            max_body: gateway.config.limits.max_request_bytes,
            body_timeout: gateway.config.listeners.protection.body_read_timeout,
            max_depth: gateway.config.limits.max_json_depth,
            early_ids: gateway.shared.early_ids.clone(),
            grpc: gateway.config.listeners.grpc,
            anonymous: gateway.authenticator.is_none(),
        })
        // A span per call (when traces are exported), parent of the backend's.
        .option_layer(crate::telemetry::installed_layer())
        // Counts and times every call, refusals included.
        .layer(MetricsLayer)
        // One audit record per call (and per denial, with its reason); task events come through
        // the observers.
        .option_layer(gateway.shared.audit.as_ref().map(|audit| audit.layer()))
        // Bearer JWT, API key or introspected token → Caller, or 401 with a challenge. Without
        // authentication configured, callers are known by their address (the context's caller
        // from the start).
        .option_layer(gateway.authenticator.clone().map(AuthLayer::new))
        // Request rate quotas per caller and global, before routing and authorization: every
        // answered request (a not-found probe, a permission denial) is metered.
        .option_layer(gateway.rate_limits.clone().map(RateLimitLayer::per_caller))
        // Chooses the backend (task owner, agent path, skill, context, default) → RouteHint;
        // another caller's task or context does not exist for this one.
        .layer(RouteLayer::new(gateway.route_state.clone()))
        // Skill permissions of the caller.
        .layer(AuthorizeLayer::new(gateway.permissions.clone()))
        // Per-skill send quotas, now that the skill is known.
        .option_layer(gateway.rate_limits.clone().filter(|l| l.has_skill_quotas()).map(RateLimitLayer::per_skill))
        // Live tasks per caller: a lease per task until it is seen to end.
        .option_layer(gateway.shared.live_tasks.clone().map(|live| {
            tower::ServiceBuilder::new()
                .map_response(|response: Response<LeaseBody<Body>>| response.map(Body::new))
                .layer(ConcurrencyLayer::new(live))
                .into_inner()
        }))
        // The input against the skill's schema, sizes, part kinds and ids.
        .option_layer(gateway.validation.clone().map(ValidateLayer::new))
        .service(innermost)
}

#[cfg(test)]
mod tests;
