//! Limits on the shape of a whole request body, checked before anything parses it: a call nested
//! thousands of levels deep (in message metadata, a part, anywhere) is refused before the decoder,
//! the policies or the agent recurse into it. The body's size is bounded earlier, while it is read.
//!
//! The check is a single pass over the bytes that counts open arrays and objects, skipping string
//! contents (escapes included), so it costs about as much as a `memchr` over the body and allocates
//! nothing. It does not validate the JSON: the decoder does that on what passes.

use a2a_core::A2aError;
use a2a_policies::validate::nested_deeper_than as deeper_than;

/// The default `limits.max_json_depth`: deep enough for every A2A request (the envelope takes about
/// six levels) with a data part at validation's default `max_data_depth` (32).
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Refuses `body` when its arrays and objects nest more than `max_depth` levels deep.
pub fn check_depth(body: &[u8], max_depth: usize) -> Result<(), A2aError> {
    match deeper_than(body, max_depth) {
        false => Ok(()),
        true => Err(A2aError::Parse(format!(
            "the request is nested more than {max_depth} levels deep; flatten it (limits.max_json_depth)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn counts_arrays_and_objects() {
        assert!(!deeper_than(nested(64).as_bytes(), 64));
        assert!(deeper_than(nested(65).as_bytes(), 64));
        assert!(deeper_than(br#"{"a":{"b":{"c":1}}}"#, 2));
        assert!(!deeper_than(br#"{"a":{"b":{"c":1}}}"#, 3));
        // Siblings do not add up.
        assert!(!deeper_than(br#"[[1],[2],{"x":[3]}]"#, 3));
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        let text = format!(r#"{{"t":"{}"}}"#, "[{".repeat(1000));
        assert!(!deeper_than(text.as_bytes(), 2));
        // An escaped quote does not end the string; an escaped backslash does not escape the quote.
        assert!(!deeper_than(br#"{"t":"\"[[[[","u":1}"#, 1));
        assert!(deeper_than(br#"{"t":"\\",  "u":[[1]]}"#, 2));
        assert!(!deeper_than(br#"{"t":"\\\"[[[","u":1}"#, 1));
    }

    #[test]
    fn deep_metadata_is_a_parse_error() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"metadata":{{"x":{}}}}}}}}}"#,
            nested(5000)
        );
        assert!(matches!(check_depth(body.as_bytes(), DEFAULT_MAX_DEPTH), Err(A2aError::Parse(_))));
        assert!(check_depth(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#, 64).is_ok());
    }
}
