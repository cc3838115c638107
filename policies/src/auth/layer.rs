//! The tower layer: authenticates each request before the inner service sees it.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::Request;
use tower::{Layer, Service};

use super::Authenticator;
use crate::call::RequestInfo;
use crate::caller::ClientAddress;
use crate::error::A2aError;

/// Puts a [`Caller`](crate::Caller) into every request's extensions (and records it with
/// [`RequestInfo::set_caller`]), or refuses the request with
/// [`A2aError::Unauthenticated`]. Goes right after decode/audit and before route resolution.
#[derive(Clone)]
pub struct AuthLayer {
    authenticator: Arc<Authenticator>,
}

impl AuthLayer {
    pub fn new(authenticator: Arc<Authenticator>) -> AuthLayer {
        AuthLayer { authenticator }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService { inner, authenticator: self.authenticator.clone() }
    }
}

#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    authenticator: Arc<Authenticator>,
}

impl<S> Service<Request<Bytes>> for AuthService<S>
where
    S: Service<Request<Bytes>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<S::Response, A2aError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Bytes>) -> Self::Future {
        // The clone that was driven to readiness serves this request; a fresh clone stays behind.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let authenticator = self.authenticator.clone();
        Box::pin(async move {
            let info = request.extensions().get::<RequestInfo>().cloned();
            // Before any credential is looked at: an address flooding bad tokens is refused here.
            let address = request.extensions().get::<ClientAddress>().map(ClientAddress::limit_key);
            if let Some(address) = address
                && let Err(refusal) = authenticator.admit(address)
            {
                if let Some(info) = &info {
                    info.set_denial_detail(format!("address {address} refused before authentication: {refusal}"));
                }
                return Err(refusal);
            }
            match authenticator.authenticate(request.headers()).await {
                Ok(caller) => {
                    tracing::debug!(caller = %caller.id, "authenticated");
                    if let Some(info) = &info {
                        info.set_caller(caller.clone());
                    }
                    request.extensions_mut().insert(caller);
                    inner.call(request).await
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
        })
    }
}
