//! The media type of a request body: A2A's JSON bindings take JSON (`application/json`, the HTTP+JSON
//! binding's `application/a2a+json`, any `+json` type); a body declared as anything else is refused
//! with ContentTypeNotSupportedError (JSON-RPC `-32005`, HTTP+JSON 415) before it is parsed, as the
//! specification's error table has it — a parse error would blame the body for what its header says.
//! A body without `Content-Type` is read as JSON, as the reference SDK reads it.

use a2a_core::A2aError;
use http::{HeaderMap, Method, header};

use crate::protocol::media;

/// Refuses a POST body whose declared media type is not JSON.
pub(super) fn check(method: &Method, headers: &HeaderMap, body: &[u8]) -> Result<(), A2aError> {
    if *method != Method::POST || body.is_empty() {
        return Ok(());
    }
    let Some(declared) = headers.get(header::CONTENT_TYPE) else { return Ok(()) };
    let essence = media::essence(declared.to_str().unwrap_or_default());
    if media::is_json_request_type(essence) {
        return Ok(());
    }
    Err(A2aError::ContentTypeNotSupported(format!(
        "the request body must be JSON (Content-Type: application/json or application/a2a+json), not '{}'",
        essence.to_ascii_lowercase().chars().take(80).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(content_type: Option<&'static str>) -> Result<(), A2aError> {
        let mut headers = HeaderMap::new();
        if let Some(value) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
        }
        check(&Method::POST, &headers, b"{}")
    }

    #[test]
    fn json_media_types_pass_others_are_refused_before_parsing() {
        for ok in
            [None, Some("application/json"), Some("Application/JSON; charset=utf-8"), Some("application/a2a+json")]
        {
            assert_eq!(with(ok), Ok(()), "{ok:?}");
        }
        for refused in ["text/plain", "application/x-www-form-urlencoded", "application/xml", "text/json+x"] {
            assert!(matches!(with(Some(refused)), Err(A2aError::ContentTypeNotSupported(_))), "{refused}");
        }
        // Nothing to judge: no body, or not a POST.
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(check(&Method::POST, &headers, b""), Ok(()));
        assert_eq!(check(&Method::GET, &headers, b"x"), Ok(()));
    }
}
