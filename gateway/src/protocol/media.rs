//! Media types as Content-Type headers carry them, compared without allocating: type names are
//! case-insensitive (RFC 9110 §8.3.1), and the parameters after `;` do not change what a body is.

/// The media type of a Content-Type value without its parameters, trimmed
/// (`Application/JSON; charset=utf-8` → `Application/JSON`).
pub fn essence(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// Whether `essence` is JSON as a request body must be: `application/json` or an
/// `application/…+json` type (`application/a2a+json`), in any case.
pub fn is_json_request_type(essence: &str) -> bool {
    essence.eq_ignore_ascii_case("application/json")
        || (starts_with_ignoring_case(essence, "application/") && ends_with_ignoring_case(essence, "+json"))
}

/// Whether `essence` is JSON as an agent's answer may declare it: `application/json` or any
/// `…+json` type, in any case.
pub fn is_json_answer_type(essence: &str) -> bool {
    essence.eq_ignore_ascii_case("application/json") || ends_with_ignoring_case(essence, "+json")
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.as_bytes().get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn ends_with_ignoring_case(text: &str, suffix: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= suffix.len() && bytes[bytes.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_types_are_known_in_any_case_and_with_parameters() {
        for request in
            ["application/json", "Application/JSON; charset=utf-8", " application/a2a+json ", "APPLICATION/A2A+JSON"]
        {
            assert!(is_json_request_type(essence(request)), "{request}");
            assert!(is_json_answer_type(essence(request)), "{request}");
        }
        for neither in ["text/plain", "application/xml", "text/json+x", "", ";", "application/jsonx", "json"] {
            assert!(!is_json_request_type(essence(neither)), "{neither}");
            assert!(!is_json_answer_type(essence(neither)), "{neither}");
        }
        // An answer may declare a `+json` type outside `application/`; a request may not.
        assert!(is_json_answer_type(essence("text/vnd.a+JSON")));
        assert!(!is_json_request_type(essence("text/vnd.a+JSON")));
        // Not a byte boundary of a character: no panic.
        assert!(!is_json_request_type(essence("applicatiö/x+json")));
        assert!(!is_json_answer_type(essence("é")));
    }
}
