//! A2A 0.3 JSON-RPC errors: `{"code", "message", "data": null}`, with the codes 0.3 defines.
//!
//! Not carried 1.0 → 0.3: the ErrorInfo / BadRequest details in `data` (0.3 clients do not read them);
//! the codes 0.3 lacks (-32008 ExtensionSupportRequired, -32009 VersionNotSupported and any code
//! outside the specification) become -32603 Internal error, as the SDK's compat layer does; the message
//! is kept. 0.3 → 1.0: `data` (free-form in 0.3) is replaced by the ErrorInfo of the code.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorKind, ErrorObject};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Error03 {
    pub code: i64,
    #[serde(default)]
    pub message: String,
    /// Always written, `null` unless an agent put something there.
    #[serde(default)]
    pub data: Option<Value>,
}

pub fn error_from_v1(error: ErrorObject) -> Error03 {
    let kind = error.kind();
    let code = if kind.known_to_v03() { kind.code() } else { ErrorKind::Internal.code() };
    Error03 { code, message: error.message, data: None }
}

pub fn error_to_v1(error: Error03) -> ErrorObject {
    let kind = ErrorKind::from_code(error.code);
    let message = if error.message.is_empty() { kind.default_message().to_owned() } else { error.message };
    let mut v1 = ErrorObject::new(kind, message);
    if let (ErrorKind::Other(_), Some(data)) = (kind, error.data) {
        // An agent's own code: its data is all there is to go on.
        v1.data = Some(data);
    }
    v1
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_0_3_lacks_become_internal_errors() {
        let v1 = ErrorObject::new(ErrorKind::VersionNotSupported, "A2A version '2.0' is not supported");
        let v03 = error_from_v1(v1);
        assert_eq!(
            serde_json::to_value(&v03).ok(),
            Some(json!({"code": -32603, "message": "A2A version '2.0' is not supported", "data": null}))
        );
        let not_found = error_from_v1(ErrorObject::new(ErrorKind::TaskNotFound, "Task not found"));
        assert_eq!(not_found.code, -32001);
    }

    #[test]
    fn a_0_3_error_gains_its_error_info() {
        let v03: Error03 = serde_json::from_value(json!({"code": -32002, "message": "", "data": null})).expect("error");
        let v1 = error_to_v1(v03);
        assert_eq!(v1.message, "Task cannot be canceled");
        assert_eq!(v1.data.as_ref().and_then(|d| d[0]["reason"].as_str()), Some("TASK_NOT_CANCELABLE"));
        let own = error_to_v1(Error03 { code: -32050, message: "quota".into(), data: Some(json!({"left": 0})) });
        assert_eq!(own.data, Some(json!({"left": 0})));
    }
}
