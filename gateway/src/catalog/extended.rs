//! GetExtendedAgentCard, answered by the gateway on every binding and dialect: the card of the
//! address the caller asked (the gateway's, or under `/agents/{name}/` that agent's) with only the
//! skills the caller may use. Backends' own extended cards are not passed on: they would bypass the
//! rewrite.

use a2a_core::{A2aCall, A2aError, Binding, Caller, Dialect};
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};

use super::Viewer;
use super::conditional::{PRIVATE_CACHE_CONTROL, respond};
use crate::gateway::Gateway;
use crate::registry::Snapshot;

/// The extended card of an authenticated caller, in the call's binding. The HTTP+JSON answer (a
/// GET) carries validators for the caller's view and is 304 when the caller holds it.
pub fn extended_card(
    gateway: &Gateway,
    snapshot: &Snapshot,
    call: &A2aCall,
    caller: Option<&Caller>,
    headers: &HeaderMap,
) -> Result<Response<Body>, A2aError> {
    let Viewer::Caller(caller) = Viewer::of(caller) else { return Err(A2aError::ExtendedCardNotConfigured) };
    let served = match call.agent.as_deref() {
        None => &snapshot.gateway_card,
        Some(name) => snapshot.agent_card(name).ok_or_else(|| match snapshot.backend(name) {
            Some(_) => A2aError::BackendUnavailable(format!("the agent '{name}' is unavailable; try again later")),
            None => A2aError::AgentNotFound(name.to_owned()),
        })?,
    };
    // The 1.0 card; a 0.3 caller's answer is translated on the way out like any other.
    let mut card: serde_json::Value = serde_json::from_slice(&served.strict).map_err(|_| A2aError::Internal)?;
    // An agent the caller may use nothing of still answers with its card, without skills.
    gateway.permissions.retain_card_skills(caller, &mut card);
    // The validator names the caller's view, not its signature: a signature may differ each time
    // (ECDSA), the view only when the caller's skills or the card change.
    let view_etag = crate::card::etag_of(&serde_json::to_vec(&card).map_err(|_| A2aError::Internal)?);
    // This caller's card is another card: the served one's signature does not cover it.
    if let Some(signer) = gateway.registry.card_signer() {
        card = signer.sign(&card);
    }
    let vary = vary(gateway);
    match call.binding {
        Binding::JsonRpc => {
            let body = serde_json::json!({"result": card, "id": call.rpc_id, "jsonrpc": "2.0"});
            let mut response = Response::new(Body::from(serde_json::to_vec(&body).map_err(|_| A2aError::Internal)?));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            private(&mut response, &vary);
            Ok(response)
        }
        Binding::Rest => {
            let body = Bytes::from(serde_json::to_vec(&card).map_err(|_| A2aError::Internal)?);
            if call.dialect != Dialect::V1 {
                // Translated on the way out: a validator of the 1.0 body would not name what is sent.
                let mut response = Response::new(Body::from(body));
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::protocol::A2A_JSON));
                private(&mut response, &vary);
                return Ok(response);
            }
            Ok(respond(body, crate::protocol::A2A_JSON, &view_etag, PRIVATE_CACHE_CONTROL, &vary, headers))
        }
    }
}

/// The request headers a caller's view depends on: its credentials.
pub fn vary(gateway: &Gateway) -> String {
    let names = match &gateway.authenticator {
        Some(authenticator) => authenticator.credential_headers(),
        None => vec![header::AUTHORIZATION],
    };
    names.iter().map(http::HeaderName::as_str).collect::<Vec<_>>().join(", ")
}

/// Marks a per-caller answer as cacheable only by the caller.
fn private(response: &mut Response<Body>, vary: &str) {
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(PRIVATE_CACHE_CONTROL));
    if let Ok(vary) = HeaderValue::from_str(vary) {
        out.insert(header::VARY, vary);
    }
}
