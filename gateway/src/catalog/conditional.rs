//! Cache validators on the documents the gateway answers itself (cards, the catalog, extended
//! cards): `ETag`, `Cache-Control` and `Vary`, and `304 Not Modified` for a matching `If-None-Match`.

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

/// How long a client may use a per-caller document (the catalog, an extended card) without asking
/// again; only the caller's own cache may keep it.
pub const PRIVATE_CACHE_CONTROL: &str = "private, max-age=60, must-revalidate";
/// The same for the public view, which any cache may keep (`Vary` keeps callers' views apart).
pub const PUBLIC_CACHE_CONTROL: &str = "public, max-age=60, must-revalidate";

/// Whether `If-None-Match` names `etag` (or `*`); `None` when the request has no `If-None-Match`.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> Option<bool> {
    let mut tags = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .peekable();
    tags.peek()?;
    Some(tags.any(|tag| tag == etag || tag == "*"))
}

/// A JSON document with its validators: 304 without a body when the caller holds this version.
pub fn respond(
    body: Bytes,
    content_type: &'static str,
    etag: &str,
    cache_control: &'static str,
    vary: &str,
    headers: &HeaderMap,
) -> Response<Body> {
    let mut response = match if_none_match(headers, etag) {
        Some(true) => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        }
        _ => {
            let mut r = Response::new(Body::from(body));
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
    };
    let out = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(etag) {
        out.insert(header::ETAG, etag);
    }
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    if let Ok(vary) = HeaderValue::from_str(vary) {
        out.insert(header::VARY, vary);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn if_none_match_names_the_tag_in_a_list_or_star() {
        assert_eq!(if_none_match(&HeaderMap::new(), "W/\"a\""), None);
        assert_eq!(if_none_match(&with("W/\"b\", W/\"a\""), "W/\"a\""), Some(true));
        assert_eq!(if_none_match(&with("*"), "W/\"a\""), Some(true));
        assert_eq!(if_none_match(&with("W/\"b\""), "W/\"a\""), Some(false));
    }

    #[test]
    fn a_held_version_is_answered_304_with_its_validators() {
        let response = respond(
            Bytes::from_static(b"{}"),
            "application/json",
            "W/\"a\"",
            PRIVATE_CACHE_CONTROL,
            "authorization",
            &with("W/\"a\""),
        );
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(response.headers()[header::ETAG], "W/\"a\"");
        assert_eq!(response.headers()[header::VARY], "authorization");
        let fresh = respond(
            Bytes::from_static(b"{}"),
            "application/json",
            "W/\"a\"",
            PRIVATE_CACHE_CONTROL,
            "authorization",
            &HeaderMap::new(),
        );
        assert_eq!(fresh.status(), StatusCode::OK);
        assert_eq!(fresh.headers()[header::CACHE_CONTROL], PRIVATE_CACHE_CONTROL);
    }
}
