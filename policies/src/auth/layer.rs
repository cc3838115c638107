//! The tower layer: authenticates each request before the inner service sees it.

use std::sync::Arc;

use bytes::Bytes;
use http::Request;

use super::Authenticator;
use crate::check::{Check, CheckLayer, CheckService, Verdict};
use a2a_core::RequestInfo;
use a2a_core::{ClientAddress, ClientCertificate};

/// Puts a [`Caller`](a2a_core::Caller) into every request's extensions (and records it with
/// [`RequestInfo::set_caller`]), or refuses the request with
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
    fn check(&self, mut request: Request<Bytes>) -> Verdict {
        let info = request.extensions().get::<RequestInfo>().cloned();
        // Before any credential is looked at: an address flooding bad tokens is refused here.
        let address = request.extensions().get::<ClientAddress>().map(ClientAddress::limit_key);
        if let Some(address) = address
            && let Err(refusal) = self.authenticator.admit(address)
        {
            if let Some(info) = &info {
                info.set_denial_detail(format!("address {address} refused before authentication: {refusal}"));
            }
            return Verdict::Refuse(refusal);
        }
        let authenticator = self.authenticator.clone();
        Verdict::Later(Box::pin(async move {
            let certificate = request.extensions().get::<ClientCertificate>();
            match authenticator.authenticate(request.headers(), certificate).await {
                Ok(caller) => {
                    tracing::debug!(caller = %caller.id, "authenticated");
                    if let Some(info) = &info {
                        info.set_caller(caller.clone());
                    }
                    request.extensions_mut().insert(caller);
                    Ok(request)
                }
                Err(failure) => {
                    let detail = failure.to_string();
                    tracing::info!(
                        request_id = info.as_ref().map(RequestInfo::request_id),
                        reason = %detail,
                        "authentication refused"
                    );
                    if let Some(info) = &info {
                        info.set_denial_detail(detail);
                    }
                    if let Some(address) = address {
                        authenticator.failed(address, &failure);
                    }
                    Err(authenticator.refusal(&failure))
                }
            }
        }))
    }
}
