//! The tower layer: authenticates each request before the inner service sees it.

use std::sync::Arc;

use super::Authenticator;
use crate::check::{Check, CheckLayer, CheckService, Verdict};
use a2a_core::{CallRequest, ClientAddress};

/// Puts the verified [`Caller`](a2a_core::Caller) into every request's context (and records it with
/// [`RequestInfo::set_caller`](a2a_core::RequestInfo::set_caller)), or refuses the request with
/// [`A2aError::Unauthenticated`](a2a_core::A2aError::Unauthenticated). Goes right after decode/audit and before route resolution.
#[derive(Clone)]
pub struct Authentication {
    authenticator: Arc<Authenticator>,
}

/// The layer of [`Authentication`].
pub type AuthLayer = CheckLayer<Authentication>;
/// The service of [`AuthLayer`].
pub type AuthService<S> = CheckService<Authentication, S>;

impl AuthLayer {
    pub fn new(authenticator: Arc<Authenticator>) -> AuthLayer {
        CheckLayer::of(Authentication { authenticator })
    }
}

impl Check for Authentication {
    fn check(&self, mut request: CallRequest) -> Verdict {
        // Before any credential is looked at: an address flooding bad tokens is refused here.
        let address = request.body().client.as_ref().map(ClientAddress::limit_key);
        if let Some(address) = address
            && let Err(refusal) = self.authenticator.admit(address)
        {
            request
                .body()
                .info
                .set_denial_detail(format!("address {address} refused before authentication: {refusal}"));
            return Verdict::Refuse(refusal);
        }
        let authenticator = self.authenticator.clone();
        Verdict::Later(Box::pin(async move {
            match authenticator.authenticate(request.headers(), request.body().certificate.as_ref()).await {
                Ok(caller) => {
                    tracing::debug!(caller = %caller.id, "authenticated");
                    let context = request.body_mut();
                    context.info.set_caller(caller.clone());
                    context.caller = caller;
                    Ok(request)
                }
                Err(failure) => {
                    let detail = failure.to_string();
                    let info = &request.body().info;
                    tracing::info!(request_id = info.request_id(), reason = %detail, "authentication refused");
                    info.set_denial_detail(detail);
                    if let Some(address) = address {
                        authenticator.failed(address, &failure);
                    }
                    Err(authenticator.refusal(&failure))
                }
            }
        }))
    }
}
