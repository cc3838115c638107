//! The nesting depth of JSON: scanned on text before it is parsed (the decoder's guard), and walked
//! on a parsed value (a data part's limit).

use serde_json::Value;

/// Whether arrays and objects in `json` nest more than `max` deep, found by one scan of the text.
/// Brackets inside strings do not count; a backslash escapes the next byte inside a string.
pub fn nested_deeper_than(json: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = json.get(at) {
        match byte {
            b'"' => match string_end(json, at + 1) {
                Some(end) => {
                    at = end;
                    continue;
                }
                // An unterminated string: nothing after it nests.
                None => return false,
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    false
}

/// Where the string whose contents start at `from` ends (just past its closing quote), jumping
/// from quote or backslash to the next with `memchr2`: most of a request's bytes are in strings.
fn string_end(json: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let found = from + memchr::memchr2(b'"', b'\\', json.get(from..)?)?;
        match json[found] {
            // A backslash escapes the byte after it.
            b'\\' => from = found + 2,
            _ => return Some(found + 1),
        }
    }
}

/// Whether arrays and objects in `value` nest more than `max` deep (the depth
/// [`nested_deeper_than`] finds in the value's text).
pub fn value_deeper_than(value: &Value, max: usize) -> bool {
    // A container at `max == 0` is one level too deep; the walk goes no deeper than `max`.
    match value {
        Value::Array(items) => max == 0 || items.iter().any(|item| value_deeper_than(item, max - 1)),
        Value::Object(fields) => max == 0 || fields.values().any(|item| value_deeper_than(item, max - 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn depth_counts_containers_not_brackets_in_strings() {
        assert!(!nested_deeper_than(r#"{"a": [1, {"b": 2}]}"#.as_bytes(), 3));
        assert!(nested_deeper_than(r#"{"a": [1, {"b": 2}]}"#.as_bytes(), 2));
        assert!(!nested_deeper_than(r#"{"a": "[[[[[[\"{{{{"}"#.as_bytes(), 1));
        assert!(!nested_deeper_than("7".as_bytes(), 0));
        // An escaped quote does not end a string; a backslash at the very end ends the scan.
        assert!(nested_deeper_than(br#""a\"[" ["#, 0));
        assert!(!nested_deeper_than(br#""a\"[ ["#, 0));
        assert!(!nested_deeper_than(b"[\"abc\\", 1));
    }

    fn depth(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    fn json() -> impl Strategy<Value = Value> {
        // Strings full of brackets, quotes and backslashes are what could fool the depth scan.
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            "[\\[\\]{}\"\\\\a]{0,6}".prop_map(Value::from)
        ];
        leaf.prop_recursive(6, 48, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[{}\"a]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_depth_scan_agrees_with_the_parsed_value(value in json()) {
            let text = serde_json::to_string(&value).expect("json");
            for max in 0..8 {
                prop_assert_eq!(nested_deeper_than(text.as_bytes(), max), depth(&value) > max, "{} at {}", text, max);
                prop_assert_eq!(value_deeper_than(&value, max), depth(&value) > max, "{} at {}", text, max);
            }
        }
    }
}
