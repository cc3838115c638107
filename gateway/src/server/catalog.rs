//! The catalog endpoint (`/.well-known/ai-catalog.json`): who asks (authenticated like any call
//! when it sends credentials), then that caller's view of the fleet with its validators.

use super::*;

use a2a_core::{ClientAddress, ClientCertificate};
use a2a_policies::auth::AuthFailure;
use bytes::Bytes;

use crate::catalog::conditional::{PRIVATE_CACHE_CONTROL, PUBLIC_CACHE_CONTROL, respond};
use crate::catalog::{CATALOG_MEDIA_TYPE, Viewer, catalog, extended::vary};

pub(super) async fn ai_catalog(State(runtime): State<Arc<Runtime>>, request: Request<Body>) -> Response<Body> {
    let gateway = runtime.gateway();
    let headers = request.headers();
    let caller = match &gateway.authenticator {
        None => None,
        Some(authenticator) => {
            let address = request.extensions().get::<ClientAddress>().map(ClientAddress::limit_key);
            if let Some(address) = address
                && let Err(refusal) = authenticator.admit(address)
            {
                return Refusal::rest(refusal, Dialect::V1).into_response();
            }
            // A verified client certificate is a credential here as on every call.
            let certificate = request.extensions().get::<ClientCertificate>();
            match authenticator.authenticate(headers, certificate).await {
                Ok(caller) => Some(caller),
                // No credentials: the public view.
                Err(AuthFailure::Missing) => None,
                Err(failure) => {
                    if let Some(address) = address {
                        authenticator.failed(address, &failure);
                    }
                    tracing::info!(reason = %failure, "catalog: authentication refused");
                    return Refusal::rest(authenticator.refusal(&failure), Dialect::V1).into_response();
                }
            }
        }
    };
    let viewer = Viewer::of(caller.as_ref());
    let base = gateway.config.public_base(runtime.bound);
    let document = catalog(&gateway.registry.snapshot(), &gateway.permissions, viewer, &base);
    let Ok(body) = serde_json::to_vec(&document) else {
        return Refusal::rest(A2aError::Internal, Dialect::V1).into_response();
    };
    let body = Bytes::from(body);
    let etag = crate::card::etag_of(&body);
    let cache_control = match viewer {
        Viewer::Public => PUBLIC_CACHE_CONTROL,
        Viewer::Caller(_) => PRIVATE_CACHE_CONTROL,
    };
    respond(body, CATALOG_MEDIA_TYPE, &etag, cache_control, &vary(&gateway), headers)
}
