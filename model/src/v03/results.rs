//! A2A 0.3 JSON-RPC results and stream events, with the value conversions of the events to and
//! from the 1.0 [`StreamResponse`](crate::StreamResponse). Reading a result by its `kind` (or its
//! fields) is the gateway's codec (`protocol::translate::v03`).

use serde::Serialize;
use serde_json::Value;

use super::{AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskStatusUpdateEvent};
use crate::StreamResponse;

/// A 0.3 `result` or stream event: one of the four `kind`s.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl From<StreamResponse> for Event {
    fn from(event: StreamResponse) -> Event {
        match event {
            StreamResponse::Task(t) => Event::Task(t.into()),
            StreamResponse::Message(m) => Event::Message(m.into()),
            StreamResponse::StatusUpdate(u) => Event::StatusUpdate(u.into()),
            StreamResponse::ArtifactUpdate(u) => Event::ArtifactUpdate(u.into()),
        }
    }
}

impl From<Event> for StreamResponse {
    fn from(event: Event) -> StreamResponse {
        match event {
            Event::Task(t) => StreamResponse::Task(t.into()),
            Event::Message(m) => StreamResponse::Message(m.into()),
            Event::StatusUpdate(u) => StreamResponse::StatusUpdate(u.into()),
            Event::ArtifactUpdate(u) => StreamResponse::ArtifactUpdate(u.into()),
        }
    }
}

/// The 0.3 result of any unary method. Serialises as the result alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Result03 {
    /// message/send (task or message), tasks/get, tasks/cancel.
    Event(Event),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(Vec<TaskPushNotificationConfig>),
    /// tasks/pushNotificationConfig/delete: `null`.
    Deleted(Option<Value>),
    Card(Box<AgentCard>),
}
