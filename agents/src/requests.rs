//! The parameters of the 1.0 operations, decoded from a JSON-RPC `params` object or an
//! HTTP+JSON body / path / query, and checked the same way for both bindings.

use a2a_model::{Message, Role, TaskState};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::A2aError;

/// Most tasks one ListTasks page may hold, and the page size when none is asked for.
pub const MAX_PAGE_SIZE: usize = 100;
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// `SendMessage` / `SendStreamingMessage`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    pub message: Message,
    #[serde(default)]
    pub configuration: Option<SendMessageConfiguration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub history_length: Option<i64>,
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub return_immediately: Option<bool>,
}

/// `GetTask`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default)]
    pub id: String,
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub history_length: Option<i64>,
}

/// `CancelTask` and `SubscribeToTask`: a task id and nothing these agents use besides.
#[derive(Debug, Deserialize)]
pub struct TaskIdRequest {
    #[serde(default)]
    pub id: String,
}

/// `ListTasks`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default)]
    pub context_id: Option<String>,
    #[serde(default)]
    pub status: Option<TaskState>,
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub page_size: Option<i64>,
    #[serde(default)]
    pub page_token: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub history_length: Option<i64>,
    #[serde(default)]
    pub status_timestamp_after: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub include_artifacts: Option<bool>,
}

/// Decodes operation parameters, naming the offending field on failure.
pub fn decode<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize(params).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." {
            A2aError::InvalidParams(format!("invalid params: {inner}"))
        } else {
            A2aError::InvalidParams(format!("invalid params at {path}: {inner}"))
        }
    })
}

impl SendMessageRequest {
    /// Decodes the params, refusing a role name the proto does not define: the shared model reads
    /// one as `ROLE_UNSPECIFIED` (lenient, as a gateway must be), these agents refuse it as they
    /// always did (an absent role is still accepted).
    pub fn decode(params: Value) -> Result<Self, A2aError> {
        if let Some(name) = params.pointer("/message/role").and_then(Value::as_str)
            && Role::from_name(name).is_none()
        {
            let known: Vec<String> = Role::ALL.iter().map(|role| format!("`{}`", role.as_str())).collect();
            return Err(A2aError::InvalidParams(format!(
                "invalid params at message.role: unknown variant `{name}`, expected one of {}",
                known.join(", ")
            )));
        }
        decode(params)
    }

    /// Checks what the agents rely on: an id and at least one part (decoding already refused a part
    /// without exactly one content field).
    pub fn validate(&self) -> Result<(), A2aError> {
        let message = &self.message;
        if message.message_id.is_empty() {
            return Err(invalid("message.messageId is required"));
        }
        if message.parts.is_empty() {
            return Err(invalid("message.parts must hold at least one part"));
        }
        self.history_length().map(|_| ())
    }

    pub fn history_length(&self) -> Result<Option<usize>, A2aError> {
        history_length(self.configuration.as_ref().and_then(|c| c.history_length))
    }

    pub fn return_immediately(&self) -> bool {
        self.configuration.as_ref().and_then(|c| c.return_immediately).unwrap_or(false)
    }

    /// The task the message continues, if any (ProtoJSON's empty string means unset).
    pub fn task_id(&self) -> Option<&str> {
        self.message.task_id.as_deref().filter(|id| !id.is_empty())
    }
}

/// The task a raw request names (`id`, or `message.taskId`), for the request log; read before
/// decoding so that rejected requests are logged with it too.
pub fn task_id_hint(params: &Value) -> Option<String> {
    params
        .get("id")
        .or_else(|| params.get("message").and_then(|m| m.get("taskId")))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// A task id must be present.
pub fn require_id(id: &str) -> Result<(), A2aError> {
    if id.is_empty() { Err(invalid("id is required")) } else { Ok(()) }
}

/// `historyLength` must not be negative; `None` keeps the whole history.
pub fn history_length(value: Option<i64>) -> Result<Option<usize>, A2aError> {
    match value {
        None => Ok(None),
        Some(n) => usize::try_from(n).map(Some).map_err(|_| invalid("historyLength must be non-negative")),
    }
}

/// The page size to use, within 1..=100.
pub fn page_size(value: Option<i64>) -> Result<usize, A2aError> {
    match value {
        None | Some(0) => Ok(DEFAULT_PAGE_SIZE),
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
            .ok_or_else(|| invalid("pageSize must be between 1 and 100")),
    }
}

fn invalid(message: &str) -> A2aError {
    A2aError::InvalidParams(message.to_owned())
}

/// ProtoJSON accepts 64-bit integers and booleans both bare and as strings; query strings only
/// have strings. These accept either.
mod lenient {
    use super::*;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum IntOrText {
        Int(i64),
        Text(String),
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum BoolOrText {
        Bool(bool),
        Text(String),
    }

    pub fn opt_i64<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
        match Option::<IntOrText>::deserialize(de)? {
            None => Ok(None),
            Some(IntOrText::Int(n)) => Ok(Some(n)),
            Some(IntOrText::Text(text)) => text
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| serde::de::Error::custom(format!("expected an integer, got {text:?}"))),
        }
    }

    pub fn opt_bool<'de, D: Deserializer<'de>>(de: D) -> Result<Option<bool>, D::Error> {
        match Option::<BoolOrText>::deserialize(de)? {
            None => Ok(None),
            Some(BoolOrText::Bool(b)) => Ok(Some(b)),
            Some(BoolOrText::Text(text)) => match text.as_str() {
                "true" | "1" => Ok(Some(true)),
                "false" | "0" => Ok(Some(false)),
                _ => Err(serde::de::Error::custom(format!("expected a boolean, got {text:?}"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn send_message_decodes_the_capture() {
        let request: SendMessageRequest = decode(json!({
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
            "configuration": {"returnImmediately": true, "historyLength": "2"}
        }))
        .expect("decodes");
        assert!(request.validate().is_ok());
        assert!(request.return_immediately());
        assert_eq!(request.history_length(), Ok(Some(2)));
        assert_eq!(request.task_id(), None);
    }

    #[test]
    fn bad_shapes_name_the_field() {
        let error = SendMessageRequest::decode(json!({"message": {"role": "ROLE_NOBODY"}})).expect_err("bad role");
        assert!(matches!(&error, A2aError::InvalidParams(m) if m.contains("message.role")), "{error:?}");
        let error = decode::<SendMessageRequest>(json!({"message": {"role": []}})).expect_err("bad role");
        assert!(matches!(&error, A2aError::InvalidParams(m) if m.contains("message.role")), "{error:?}");
        assert!(decode::<SendMessageRequest>(json!({})).is_err());
    }

    #[test]
    fn messages_need_id_parts_and_single_content() {
        let check =
            |message: Value| decode::<SendMessageRequest>(json!({ "message": message })).and_then(|r| r.validate());
        assert!(check(json!({"role": "ROLE_USER", "parts": [{"text": "x"}]})).is_err());
        assert!(check(json!({"messageId": "m", "role": "ROLE_USER", "parts": []})).is_err());
        assert!(
            check(json!({"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "x", "data": {}}]}))
            .is_err()
        );
        assert!(check(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{}]})).is_err());
        assert!(check(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"a": 1}}]})).is_ok());
    }

    #[test]
    fn history_and_page_limits() {
        assert!(history_length(Some(-1)).is_err());
        assert_eq!(history_length(Some(0)), Ok(Some(0)));
        assert_eq!(page_size(None), Ok(DEFAULT_PAGE_SIZE));
        assert_eq!(page_size(Some(10)), Ok(10));
        assert!(page_size(Some(101)).is_err());
        assert!(page_size(Some(-5)).is_err());
    }

    #[test]
    fn list_request_accepts_query_strings() {
        let request: ListTasksRequest = decode(json!({
            "pageSize": "10", "includeArtifacts": "true", "status": "TASK_STATE_COMPLETED"
        }))
        .expect("decodes");
        assert_eq!(request.page_size, Some(10));
        assert_eq!(request.include_artifacts, Some(true));
        assert_eq!(request.status, Some(TaskState::Completed));
    }
}
