//! The card endpoints: the gateway's card and each agent's, in the form the caller asks for, with
//! cache validators.

use super::*;

pub(super) async fn gateway_card(State(runtime): State<Arc<Runtime>>, headers: HeaderMap) -> Response<Body> {
    serve_card(&runtime.gateway().registry.snapshot().gateway_card, &headers)
}

pub(super) async fn agent_card(
    State(runtime): State<Arc<Runtime>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    agent_card_in(&runtime, name, &headers, Dialect::V1, serve_card)
}

pub(super) async fn early_gateway_card(State(runtime): State<Arc<Runtime>>, headers: HeaderMap) -> Response<Body> {
    serve_early_card(&runtime.gateway().registry.snapshot().gateway_card, &headers)
}

pub(super) async fn early_agent_card(
    State(runtime): State<Arc<Runtime>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    agent_card_in(&runtime, name, &headers, Dialect::Early, serve_early_card)
}

/// An agent's card served by `serve`, or the reason there is none in `dialect`'s REST form.
fn agent_card_in(
    runtime: &Runtime,
    name: String,
    headers: &HeaderMap,
    dialect: Dialect,
    serve: fn(&CardDoc, &HeaderMap) -> Response<Body>,
) -> Response<Body> {
    let snapshot = runtime.gateway().registry.snapshot();
    if let Some(card) = snapshot.agent_card(&name) {
        return serve(card, headers);
    }
    let error = match snapshot.backend(&name) {
        Some(_) => A2aError::BackendUnavailable(format!("the agent '{name}' is unavailable; try again later")),
        None => A2aError::AgentNotFound(name),
    };
    Refusal::rest(error, dialect).into_response()
}

pub(super) fn serve_early_card(card: &CardDoc, headers: &HeaderMap) -> Response<Body> {
    let early = serde_json::from_slice::<model::AgentCard>(&card.strict)
        .ok()
        .and_then(|v1| serde_json::to_value(early::card_from_v1(v1)).ok());
    match early {
        Some(early) => serve_card(&CardDoc::new(&early), headers),
        None => Refusal::rest(A2aError::Internal, Dialect::Early).into_response(),
    }
}

pub(super) fn serve_card(card: &CardDoc, headers: &HeaderMap) -> Response<Body> {
    let (body, etag) = match wants_strict_card(headers) {
        true => (&card.strict, card.strict_etag.as_str()),
        false => (&card.body, card.etag.as_str()),
    };
    let modified = httpdate::fmt_http_date(card.modified);
    // `If-None-Match` wins over `If-Modified-Since` (RFC 9110 §13.2.2).
    let not_modified = match crate::catalog::conditional::if_none_match(headers, etag) {
        Some(matched) => matched,
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| httpdate::parse_http_date(v.to_str().ok()?).ok())
            .is_some_and(|since| card.modified <= since),
    };
    let mut response = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(Body::from(body.clone()));
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    };
    let out = response.headers_mut();
    out.insert(header::ETAG, HeaderValue::from_str(etag).unwrap_or(HeaderValue::from_static("W/\"0\"")));
    if let Ok(value) = HeaderValue::from_str(&modified) {
        out.insert(header::LAST_MODIFIED, value);
    }
    // Cards change with backend health: clients may cache them briefly, then revalidate.
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(CARD_CACHE_CONTROL));
    out.insert(header::VARY, HeaderValue::from_static(VERSION_HEADER));
    response
}

/// How long clients may use a card without asking again.
pub(super) const CARD_CACHE_CONTROL: &str = crate::catalog::conditional::PUBLIC_CACHE_CONTROL;

/// The request header naming the A2A version a client speaks.
pub(super) const VERSION_HEADER: &str = "a2a-version";

/// Whether the card goes out without the 0.3 top-level fields: the client names a 1.x version. The
/// specification has a request without `A2A-Version` read as 0.3, and 0.3 clients find their
/// interface only in those fields; 1.x clients (the SDKs send the header) get a card that is valid
/// against the strict 1.0 schema.
pub(super) fn wants_strict_card(headers: &HeaderMap) -> bool {
    headers
        .get_all(VERSION_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().split('.').next().and_then(|major| major.parse::<u32>().ok()).is_some_and(|m| m >= 1))
}
