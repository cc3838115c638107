//! A2A 1.0 in its ProtoJSON form: the objects, requests, results, errors and agent card of the
//! protocol, and the [`Operation`]s that carry them. Pure data and serde, no I/O.
//!
//! The gateway translates every dialect through this model (dialect → model → dialect, so each
//! dialect needs one pair of conversions), its policies name operations with it, and the example
//! agents answer in it. Reading is lenient the ProtoJSON way (`""` reads as absent, unknown enum names
//! as `*_UNSPECIFIED`); writing omits defaults, in the field order of the proto.
//!
//! The other dialects' objects sit beside it, each with its value conversions to and from 1.0:
//! [`v03`] (A2A 0.3 as its JSON-RPC binding writes it) and [`early`] (the early REST dialect). Their
//! requests, results and stream converters are the gateway's dialect codecs, built on these.

mod card;
pub mod early;
mod enums;
mod error;
mod objects;
mod operation;
mod parse;
pub mod passes;
mod protojson;
mod read;
mod requests;
pub mod strict;
pub mod v03;

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
pub use operation::Operation;
pub use parse::{ParseError, parse, parse_object};
pub use protojson::{Struct, empty_as_none, is_false, null_as_default, null_as_empty};
pub use read::from_json;
pub use requests::{
    AuthenticationInfo, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest, ParamsOf,
    Request, Response, SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
