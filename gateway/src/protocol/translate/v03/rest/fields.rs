//! Reading ProtoJSON fields: either spelling (`taskId` / `task_id`) of a field, refused when both
//! are given; objects and lists with the pointer of what was wrong.

use serde_json::{Map, Value};

use crate::protocol::translate::TranslateError;

/// Removes a field by its camelCase name or its snake_case one; both at once is ambiguous.
pub(super) fn take(map: &mut Map<String, Value>, camel: &str) -> Result<Option<Value>, TranslateError> {
    let snake = snake_case(camel);
    let a = map.remove(camel);
    let b = if snake != camel { map.remove(&snake) } else { None };
    match (a, b) {
        (Some(_), Some(_)) => Err(TranslateError::invalid(
            format!("/{camel}"),
            format!("ambiguous request: '{camel}' is given more than once"),
        )),
        (Some(v), None) | (None, Some(v)) => Ok(Some(v).filter(|v| !v.is_null())),
        (None, None) => Ok(None),
    }
}

fn snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(super) fn object(value: Value, pointer: &str) -> Result<Map<String, Value>, TranslateError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(TranslateError::invalid(pointer, "expected a JSON object")),
    }
}

/// Copies the fields named (camelCase, or their snake_case spelling) from `from` to `to` unchanged.
pub(super) fn copy(
    from: &mut Map<String, Value>,
    to: &mut Map<String, Value>,
    fields: &[&str],
) -> Result<(), TranslateError> {
    for field in fields {
        if let Some(value) = take(from, field)? {
            to.insert((*field).to_owned(), value);
        }
    }
    Ok(())
}

pub(super) fn list(
    value: Option<Value>,
    pointer: &str,
    each: impl Fn(Value, &str) -> Result<Value, TranslateError>,
) -> Result<Option<Value>, TranslateError> {
    match value {
        None => Ok(None),
        Some(Value::Array(items)) => {
            let items: Result<Vec<Value>, _> =
                items.into_iter().enumerate().map(|(i, item)| each(item, &format!("{pointer}/{i}"))).collect();
            Ok(Some(Value::Array(items?)))
        }
        Some(_) => Err(TranslateError::invalid(pointer, "expected a JSON array")),
    }
}
