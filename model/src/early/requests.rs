//! The early dialect's request bodies. Reading a call from its method, path and body, and making it
//! a 1.0 request, is the gateway's codec (`protocol::translate::early`).

use serde::{Deserialize, Serialize};

use super::Message;
use crate::{Struct, empty_as_none, null_as_empty};

/// The body of `POST /tasks/send`, `/tasks/sendSubscribe` and `/tasks/{id}/send`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendTaskRequest {
    /// The client's task id. Optional in a continue body, where the path names the task.
    #[serde(default)]
    pub id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "session_id")]
    pub session_id: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
}

/// The body of `POST /tasks/{id}/cancel` (may be empty).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}
