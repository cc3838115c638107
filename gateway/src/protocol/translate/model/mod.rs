//! The internal model: A2A 1.0 in its ProtoJSON form. Every bridge goes dialect → model → dialect, so
//! each dialect needs one pair of conversions, not one per other dialect.

mod card;
mod enums;
mod error;
mod objects;
mod protojson;
mod requests;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    BINDING_GRPC, BINDING_HTTP_JSON, BINDING_JSONRPC, SecurityRequirement, StringList,
};
pub use enums::{Role, TaskState};
pub use error::{ErrorKind, ErrorObject};
pub use objects::{
    Artifact, Message, Part, PartContent, SendMessageResponse, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskStatus, TaskStatusUpdateEvent,
};
pub use protojson::Struct;
pub(crate) use protojson::{empty_as_none, null_as_default, null_as_empty};
pub use requests::{
    AuthenticationInfo, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest, Request,
    Response, SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef,
};
