//! Measurements taken on JSON text as the parser left it, without decoding it: the unescaped length
//! of a string and the nesting depth of a value.

/// Byte length of a JSON string literal once unescaped, counted without decoding it; `None` when
/// `literal` is not a string. `literal` comes from the parser, so its escapes are well-formed.
pub fn unescaped_len(literal: &str) -> Option<usize> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let (mut len, mut i) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            len += 1;
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'u') {
            let code = u16::from_str_radix(inner.get(i + 2..i + 6)?, 16).ok()?;
            // A surrogate pair is 4 bytes in UTF-8: 2 for each half.
            len += match code {
                0..=0x7F => 1,
                0x80..=0x7FF | 0xD800..=0xDFFF => 2,
                _ => 3,
            };
            i += 6;
        } else {
            len += 1;
            i += 2;
        }
    }
    Some(len)
}

/// Whether arrays and objects in `json` nest more than `max` deep, found by one scan of the text.
/// Brackets inside strings do not count; a backslash escapes the next byte inside a string.
pub fn nested_deeper_than(json: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    #[test]
    fn unescaped_lengths_match_decoding() {
        for text in ["", "plain", "tab\tnew\nline", "quote \" and \\ slash", "é ü 漢字", "emoji 😀", "\u{7f}\u{80}"]
        {
            let literal = serde_json::to_string(text).expect("json");
            assert_eq!(unescaped_len(&literal), Some(text.len()), "{literal}");
        }
        assert_eq!(unescaped_len(r#""\u00e9\ud83d\ude00""#), Some("é😀".len()));
        assert_eq!(unescaped_len("42"), None);
    }

    #[test]
    fn depth_counts_containers_not_brackets_in_strings() {
        assert!(!nested_deeper_than(r#"{"a": [1, {"b": 2}]}"#.as_bytes(), 3));
        assert!(nested_deeper_than(r#"{"a": [1, {"b": 2}]}"#.as_bytes(), 2));
        assert!(!nested_deeper_than(r#"{"a": "[[[[[[\"{{{{"}"#.as_bytes(), 1));
        assert!(!nested_deeper_than("7".as_bytes(), 0));
    }

    /// Every character as a `\uXXXX` escape (surrogate pairs beyond the BMP).
    fn all_escaped(text: &str) -> String {
        let mut literal = String::from('"');
        for unit in text.encode_utf16() {
            literal.push_str(&format!("\\u{unit:04x}"));
        }
        literal.push('"');
        literal
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
        fn the_unescaped_length_is_the_decoded_length(text in any::<String>()) {
            let literal = serde_json::to_string(&text).expect("json");
            prop_assert_eq!(unescaped_len(&literal), Some(text.len()));
            let escaped = all_escaped(&text);
            prop_assert_eq!(serde_json::from_str::<String>(&escaped).expect("decodes"), text.clone());
            prop_assert_eq!(unescaped_len(&escaped), Some(text.len()));
        }

        #[test]
        fn the_depth_scan_agrees_with_the_parsed_value(value in json()) {
            let text = serde_json::to_string(&value).expect("json");
            for max in 0..8 {
                prop_assert_eq!(nested_deeper_than(text.as_bytes(), max), depth(&value) > max, "{} at {}", text, max);
            }
        }
    }
}
