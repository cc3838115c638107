//! A2A 0.3 as its JSON-RPC binding writes it (the SDK's pydantic models): `kind`-tagged objects and
//! parts, kebab-case states, `final` on status updates, errors `{"code","message","data"}`, cards with
//! `url` / `preferredTransport` / `additionalInterfaces` — and their value conversions to and from the
//! 1.0 model (`From` both ways; cards through [`card_to_v1`] / [`card_from_v1`]).
//!
//! The methods and their params and results are here too; reading them into the 1.0 requests and
//! results they stand for (which can fail, naming the culprit) is the gateway's dialect codec
//! (`protocol::translate::v03`), built on these.

mod card;
mod enums;
mod error;
mod objects;
mod parts;
mod requests;
mod results;

pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, DEFAULT_VERSION, add_v03_security, card_from_v1,
    card_to_v1, hybrid_card, security_scheme_from_v1, security_scheme_to_v1,
};
pub use enums::{Role, TaskState};
pub use error::{Error03, error_from_v1, error_to_v1};
pub use objects::{Artifact, Message, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent};
pub(crate) use parts::PartWire;
pub use parts::{File, FileContent, Part, PartContent03};
pub use requests::{
    METHODS, MessageSendConfiguration, MessageSendParams, Params, PushNotificationAuthenticationInfo,
    PushNotificationConfig, TaskIdParams, TaskPushNotificationConfig, TaskQueryParams, method_of, operation_of,
};
pub use results::{Event, Result03};
