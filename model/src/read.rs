//! The one reader of JSON bytes on the request path: as text when the whole is UTF-8. A module of
//! its own, below both `parse` and `strict`, which read through it.

/// Reads one JSON document as a `T`: with serde_json's text reader when `json` is valid UTF-8 as a
/// whole (one vectorised check; the byte reader checks every string it meets on its own, which
/// costs more), else with its byte reader, so that a body that is not UTF-8 gets the error it
/// always got, naming where. Every reader of request and answer bodies on the request path uses it.
pub fn from_json<'a, T: serde::Deserialize<'a>>(json: &'a [u8]) -> Result<T, serde_json::Error> {
    match std::str::from_utf8(json) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_reads_as_text_or_bytes_alike() {
        let text = "{\"a\":\"é 漢字 😀\",\"b\":[1,2]}";
        let read: serde_json::Value = from_json(text.as_bytes()).expect("UTF-8 text");
        assert_eq!(read, serde_json::from_slice::<serde_json::Value>(text.as_bytes()).unwrap());
        let borrowed: std::collections::HashMap<&str, &serde_json::value::RawValue> =
            from_json(b"{\"k\":{\"x\":1}}").expect("borrows from the input");
        assert_eq!(borrowed["k"].get(), "{\"x\":1}");
        for not_utf8 in [&b"{\"a\":\"\xff\"}"[..], b"{\"a\":1,\xc3}", b"\xfe"] {
            let error = from_json::<serde_json::Value>(not_utf8).expect_err("not UTF-8");
            let bytes_error = serde_json::from_slice::<serde_json::Value>(not_utf8).unwrap_err();
            assert_eq!(error.to_string(), bytes_error.to_string(), "the byte reader's own error");
        }
    }
}
