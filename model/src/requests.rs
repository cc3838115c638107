//! A2A 1.0 request parameters and unary results, one type per operation, plus [`Request`] /
//! [`Response`] to carry any of them with the [`Operation`] that gives them meaning.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::card::AgentCard;
use super::objects::{Message, SendMessageResponse, Task};
use super::operation::Operation;
use super::parse::{ParseError, parse, parse_object, parse_object_strict};
use super::protojson::{Struct, empty_as_none, is_false, null_as_default, null_as_empty};

/// `SendMessage` / `SendStreamingMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// How a send should be answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// `Some(0)` asks for no history at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Answer with the first task snapshot instead of waiting for a terminal or interrupted state.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `GetTask` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// `CancelTask` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// `SubscribeToTask` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
}

/// How an agent authenticates to a push-notification receiver.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AuthenticationInfo {
    /// An HTTP authentication scheme (`Bearer`, `Basic`, …).
    #[serde(default)]
    pub scheme: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A push-notification receiver of a task: `CreateTaskPushNotificationConfig` params and the result
/// of Create / Get.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config's id; absent asks for the task's only (or first) config.
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// `ListTaskPushNotificationConfigs` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_token")]
    pub page_token: Option<String>,
}

/// `ListTaskPushNotificationConfigs` result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: Option<String>,
}

/// `ListTasks` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "context_id")]
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<super::enums::TaskState>,
    #[serde(alias = "page_size")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(alias = "page_token")]
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(alias = "history_length")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// RFC 3339: only tasks whose status changed after this time.
    #[serde(alias = "status_timestamp_after")]
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    #[serde(alias = "include_artifacts")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// `GetExtendedAgentCard` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// The params of any 1.0 request. Serialises as the params object alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Request {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    /// Only 1.0 has ListTasks.
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreateTaskPushNotificationConfig(TaskPushNotificationConfig),
    GetTaskPushNotificationConfig(TaskPushNotificationConfigRef),
    ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest),
    DeleteTaskPushNotificationConfig(TaskPushNotificationConfigRef),
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

/// A seed that reads the params of one operation (see [`Request::read`]), for a reader that meets
/// them inside a larger document.
#[derive(Clone, Copy)]
pub struct ParamsOf(pub Operation);

impl<'de> serde::de::DeserializeSeed<'de> for ParamsOf {
    type Value = Request;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Request, D::Error> {
        Request::read(self.0, deserializer)
    }
}

impl Request {
    /// Parses the `params` of a 1.0 request (JSON-RPC `params`, or an HTTP+JSON body completed with
    /// the path's ids), refusing a key repeated in any object in the same pass. Absent params read as
    /// `{}`.
    pub fn parse(operation: Operation, params: Option<&RawValue>) -> Result<Request, ParseError> {
        let json = params.map_or("{}", RawValue::get).as_bytes();
        parse_object_strict(json, ParamsOf(operation))
    }

    /// Reads the `params` of `operation` from `deserializer`, for a caller that reads the params
    /// inside a larger document (the JSON-RPC envelope) in one pass. Objects only, like
    /// [`Request::parse`]: serde would read a struct from an array, by position. Strictness is the
    /// deserializer's (see [`strict`](crate::strict)).
    pub fn read<'de, D: serde::Deserializer<'de>>(operation: Operation, deserializer: D) -> Result<Request, D::Error> {
        fn object<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
            struct Object<T>(std::marker::PhantomData<T>);
            impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
                type Value = T;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                    T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                }
            }
            deserializer.deserialize_map(Object(std::marker::PhantomData))
        }
        Ok(match operation {
            Operation::SendMessage => Request::SendMessage(object(deserializer)?),
            Operation::SendStreamingMessage => Request::SendStreamingMessage(object(deserializer)?),
            Operation::GetTask => Request::GetTask(object(deserializer)?),
            Operation::ListTasks => Request::ListTasks(object(deserializer)?),
            Operation::CancelTask => Request::CancelTask(object(deserializer)?),
            Operation::SubscribeToTask => Request::SubscribeToTask(object(deserializer)?),
            Operation::CreateTaskPushNotificationConfig => {
                Request::CreateTaskPushNotificationConfig(object(deserializer)?)
            }
            Operation::GetTaskPushNotificationConfig => Request::GetTaskPushNotificationConfig(object(deserializer)?),
            Operation::ListTaskPushNotificationConfigs => {
                Request::ListTaskPushNotificationConfigs(object(deserializer)?)
            }
            Operation::DeleteTaskPushNotificationConfig => {
                Request::DeleteTaskPushNotificationConfig(object(deserializer)?)
            }
            Operation::GetExtendedAgentCard => Request::GetExtendedAgentCard(object(deserializer)?),
        })
    }

    pub fn operation(&self) -> Operation {
        match self {
            Request::SendMessage(_) => Operation::SendMessage,
            Request::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            Request::GetTask(_) => Operation::GetTask,
            Request::ListTasks(_) => Operation::ListTasks,
            Request::CancelTask(_) => Operation::CancelTask,
            Request::SubscribeToTask(_) => Operation::SubscribeToTask,
            Request::CreateTaskPushNotificationConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Request::GetTaskPushNotificationConfig(_) => Operation::GetTaskPushNotificationConfig,
            Request::ListTaskPushNotificationConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Request::DeleteTaskPushNotificationConfig(_) => Operation::DeleteTaskPushNotificationConfig,
            Request::GetExtendedAgentCard(_) => Operation::GetExtendedAgentCard,
        }
    }
}

/// The result of any unary 1.0 request. Serialises as the result alone (`null` for a delete).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// SendMessage.
    Send(SendMessageResponse),
    /// GetTask, CancelTask.
    Task(Task),
    /// ListTasks, kept as sent.
    ListTasks(Value),
    /// Create / Get push-notification config.
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// DeleteTaskPushNotificationConfig: `null`.
    Deleted(Option<Value>),
    Card(Box<AgentCard>),
}

impl Response {
    /// Parses the result of a unary `operation`. Streaming operations have no unary result: their
    /// events are [`StreamResponse`](super::StreamResponse)s.
    pub fn parse(operation: Operation, result: &RawValue) -> Result<Response, ParseError> {
        let json = result.get().as_bytes();
        Ok(match operation {
            Operation::SendMessage => Response::Send(parse_object(json)?),
            Operation::GetTask | Operation::CancelTask => Response::Task(parse_object(json)?),
            Operation::ListTasks => Response::ListTasks(parse(json)?),
            Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
                Response::PushConfig(parse_object(json)?)
            }
            Operation::ListTaskPushNotificationConfigs => Response::PushConfigs(parse_object(json)?),
            Operation::DeleteTaskPushNotificationConfig => Response::Deleted(None),
            Operation::GetExtendedAgentCard => Response::Card(Box::new(parse_object(json)?)),
            Operation::SendStreamingMessage | Operation::SubscribeToTask => {
                return Err(ParseError::invalid("", format!("{operation} answers with a stream of events")));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: &Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).expect("raw")
    }

    #[test]
    fn parses_params_by_operation_and_serialises_them_alone() {
        let params = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": true, "historyLength": 0}});
        let request = Request::parse(Operation::SendMessage, Some(&raw(&params))).expect("send");
        assert_eq!(request.operation(), Operation::SendMessage);
        assert_eq!(serde_json::to_value(&request).ok(), Some(params));
        let get = Request::parse(Operation::GetTask, Some(&raw(&json!({"id": "t"})))).expect("get");
        assert_eq!(get, Request::GetTask(GetTaskRequest { id: "t".into(), ..GetTaskRequest::default() }));
        let card = Request::parse(Operation::GetExtendedAgentCard, None).expect("card");
        assert_eq!(serde_json::to_value(&card).ok(), Some(json!({})));
    }

    #[test]
    fn refuses_params_without_what_the_operation_needs() {
        let err = Request::parse(Operation::CancelTask, Some(&raw(&json!({"name": "t"})))).unwrap_err();
        assert!(matches!(err, ParseError::Invalid { .. }), "{err:?}");
        assert!(Request::parse(Operation::SendMessage, None).is_err());
    }

    #[test]
    fn parses_results_by_operation() {
        let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}});
        let send = Response::parse(Operation::SendMessage, &raw(&json!({"task": task}))).expect("send");
        assert!(matches!(send, Response::Send(SendMessageResponse::Task(_))));
        assert_eq!(serde_json::to_value(&send).ok(), Some(json!({"task": task})));
        let deleted = Response::parse(Operation::DeleteTaskPushNotificationConfig, &raw(&Value::Null)).expect("del");
        assert_eq!(serde_json::to_value(&deleted).ok(), Some(Value::Null));
        assert!(Response::parse(Operation::SubscribeToTask, &raw(&task)).is_err());
    }
}
