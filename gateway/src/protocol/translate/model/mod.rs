//! The internal model: A2A 1.0 in its ProtoJSON form. Every bridge goes dialect → model → dialect, so
//! each dialect needs one pair of conversions, not one per other dialect.

mod card;
mod error;
mod objects;
mod requests;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    BINDING_GRPC, BINDING_HTTP_JSON, BINDING_JSONRPC, SecurityRequirement, StringList,
};
pub use error::{ErrorKind, ErrorObject};
pub use objects::{
    Artifact, Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Struct, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
pub(crate) use objects::{empty_as_none, null_as_default, null_as_empty};
pub use requests::{
    AuthenticationInfo, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest, Request,
    Response, SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef,
};
