//! A2A 0.3 JSON-RPC methods and their params, with the value conversions of the params that have a
//! 1.0 request of the same shape. Reading a method's params into the 1.0 request it stands for, and
//! back, is the gateway's codec (`protocol::translate::v03`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Message;
use crate as model;
use crate::{Operation, Struct, empty_as_none, null_as_empty};

/// The 0.3 method name of each operation 0.3 has.
pub const METHODS: &[(&str, Operation)] = &[
    ("message/send", Operation::SendMessage),
    ("message/stream", Operation::SendStreamingMessage),
    ("tasks/get", Operation::GetTask),
    ("tasks/cancel", Operation::CancelTask),
    ("tasks/resubscribe", Operation::SubscribeToTask),
    ("tasks/pushNotificationConfig/set", Operation::CreateTaskPushNotificationConfig),
    ("tasks/pushNotificationConfig/get", Operation::GetTaskPushNotificationConfig),
    ("tasks/pushNotificationConfig/list", Operation::ListTaskPushNotificationConfigs),
    ("tasks/pushNotificationConfig/delete", Operation::DeleteTaskPushNotificationConfig),
    ("agent/getAuthenticatedExtendedCard", Operation::GetExtendedAgentCard),
];

/// The operation a 0.3 method name stands for.
pub fn operation_of(method: &str) -> Option<Operation> {
    METHODS.iter().find(|(name, _)| *name == method).map(|(_, op)| *op)
}

/// The 0.3 method name of an operation; `None` for ListTasks, which 0.3 lacks.
pub fn method_of(operation: Operation) -> Option<&'static str> {
    METHODS.iter().find(|(_, op)| *op == operation).map(|(name, _)| *name)
}

/// `message/send` and `message/stream` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageSendParams {
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<MessageSendConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendConfiguration {
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// Wait for a terminal or interrupted state (the default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "push_notification_config")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

/// `tasks/get` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/list` params; also `get`
/// params without a config id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    pub id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "push_notification_config_id")]
    pub push_notification_config_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PushNotificationAuthenticationInfo {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub schemes: Vec<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PushNotificationConfig {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushNotificationAuthenticationInfo>,
}

/// `tasks/pushNotificationConfig/set` params and the result of set / get / list (each entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "push_notification_config")]
    pub push_notification_config: PushNotificationConfig,
}

impl From<model::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(c: model::TaskPushNotificationConfig) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            task_id: c.task_id.unwrap_or_default(),
            push_notification_config: PushNotificationConfig {
                id: c.id,
                url: c.url,
                token: c.token,
                authentication: c.authentication.map(|a| PushNotificationAuthenticationInfo {
                    schemes: if a.scheme.is_empty() { Vec::new() } else { vec![a.scheme] },
                    credentials: a.credentials,
                }),
            },
        }
    }
}

impl From<TaskPushNotificationConfig> for model::TaskPushNotificationConfig {
    fn from(c: TaskPushNotificationConfig) -> model::TaskPushNotificationConfig {
        let config = c.push_notification_config;
        model::TaskPushNotificationConfig {
            tenant: None,
            id: config.id,
            task_id: Some(c.task_id).filter(|id| !id.is_empty()),
            url: config.url,
            token: config.token,
            authentication: config.authentication.map(|a| model::AuthenticationInfo {
                scheme: a.schemes.into_iter().next().unwrap_or_default(),
                credentials: a.credentials,
            }),
        }
    }
}

impl From<model::SendMessageRequest> for MessageSendParams {
    fn from(r: model::SendMessageRequest) -> MessageSendParams {
        MessageSendParams {
            message: r.message.into(),
            configuration: r.configuration.map(|c| MessageSendConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                blocking: Some(!c.return_immediately),
                history_length: c.history_length.filter(|n| *n > 0),
                push_notification_config: c
                    .task_push_notification_config
                    .map(|p| TaskPushNotificationConfig::from(p).push_notification_config),
            }),
            metadata: r.metadata,
        }
    }
}

impl From<MessageSendParams> for model::SendMessageRequest {
    fn from(p: MessageSendParams) -> model::SendMessageRequest {
        model::SendMessageRequest {
            tenant: None,
            message: p.message.into(),
            configuration: p.configuration.map(|c| model::SendMessageConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                task_push_notification_config: c.push_notification_config.map(|config| {
                    TaskPushNotificationConfig { task_id: String::new(), push_notification_config: config }.into()
                }),
                history_length: c.history_length.filter(|n| *n > 0),
                return_immediately: c.blocking == Some(false),
            }),
            metadata: p.metadata,
        }
    }
}

/// The params of any 0.3 request. Serialises as the params object alone; [`Params::None`] (the
/// extended-card request) has no params member at all.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Params {
    Send(Box<MessageSendParams>),
    Query(TaskQueryParams),
    Task(TaskIdParams),
    PushConfig(TaskPushNotificationConfig),
    None(Option<Value>),
}

impl Params {
    /// Whether the request goes without a `params` member.
    pub fn is_none(&self) -> bool {
        matches!(self, Params::None(_))
    }
}
