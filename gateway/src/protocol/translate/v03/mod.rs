//! A2A 0.3 over JSON-RPC 2.0: methods `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
//! `tasks/resubscribe`, `tasks/pushNotificationConfig/{set,get,list,delete}`,
//! `agent/getAuthenticatedExtendedCard`; `kind`-tagged objects and parts; kebab-case states; `final`
//! on the last status update; `configuration.blocking`; errors `{"code","message","data":null}`; cards
//! with `url` / `preferredTransport` / `additionalInterfaces`.
//!
//! Requests: [`request_to_v1`] / [`request_from_v1`]. Unary results: [`result_to_v1`] /
//! [`result_from_v1`]. Stream events (each SSE event's `result`): [`event_to_v1`] / [`event_from_v1`].
//! Errors: [`error_to_v1`] / [`error_from_v1`]. Cards: [`card_to_v1`] / [`card_from_v1`] /
//! [`hybrid_card`]. The JSON-RPC envelope (`jsonrpc`, `id`) is the same in both versions and stays the
//! caller's: see [`crate::protocol::translate::jsonrpc`].

mod requests;
pub mod rest;
mod results;

// The dialect's objects, cards, errors, methods, params and results are the wire model's
// (`a2a_model::v03`); this module reads and writes its requests and results as 1.0 ones.
pub use a2a_model::v03::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, DEFAULT_VERSION, Error03, Event, File,
    FileContent, Message, MessageSendConfiguration, MessageSendParams, Params, Part, PartContent03,
    PushNotificationAuthenticationInfo, PushNotificationConfig, Result03, Role, Task, TaskArtifactUpdateEvent,
    TaskIdParams, TaskPushNotificationConfig, TaskQueryParams, TaskState, TaskStatus, TaskStatusUpdateEvent,
    add_v03_security, card_from_v1, card_to_v1, error_from_v1, error_to_v1, hybrid_card, method_of, operation_of,
    security_scheme_from_v1, security_scheme_to_v1,
};
pub use requests::{request_from_v1, request_to_v1, request_to_v1_strict};
pub use results::{event_from_v1, event_to_v1, parse_event, result_from_v1, result_to_v1};

/// How error messages name this dialect.
const DIALECT: &str = "A2A 0.3";

/// The protocol version 0.3 clients send in `A2A-Version` (the SDK's 0.3 transports); a 0.3 agent
/// also takes requests without the header.
pub const VERSION_HEADER_VALUE: &str = "0.3";
/// The header 0.3 clients name extensions in (1.0: `A2A-Extensions`).
pub const EXTENSIONS_HEADER: &str = "X-A2A-Extensions";
