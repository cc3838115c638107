//! The early A2A REST dialect (the project's seed) as its server writes it: `type`-tagged parts,
//! messages with only a role and parts, tasks with a client-generated `id` and an optional
//! `sessionId`, kebab-case states, errors as `{"detail": …}`, the card at `/.well-known/agent.json` —
//! and their value conversions to and from the 1.0 model.
//!
//! Its request bodies are here too; its calls (methods and paths, the HTTP request to an early agent) and its stream converters are the
//! gateway's dialect codec (`protocol::translate::early`), built on these.

mod card;
mod error;
mod objects;
mod requests;

pub use card::{AgentCapabilities, AgentCard, AgentSkill, Authentication, PROTOCOL_VERSION, card_from_v1, card_to_v1};
pub use error::{EarlyError, error_from_v1, error_to_v1};
pub use objects::{Artifact, Message, Part, Role, StateIn, Task, TaskState, TaskStatus, artifact_id};
pub use requests::{CancelTaskRequest, SendTaskRequest};
