//! The early A2A REST dialect (the project's seed): `POST /tasks/send`, `POST /tasks/sendSubscribe`
//! (SSE, each event a whole Task), `GET /tasks/{id}`, `POST /tasks/{id}/cancel`,
//! `POST /tasks/{id}/send` (continue), the card at `/.well-known/agent.json`; client-generated UUID
//! task ids; `type`-tagged parts; errors as HTTP statuses with `{"detail": …}`.
//!
//! Caller side: [`Call::parse`] reads a request, [`Call::into_v1`] makes it a 1.0 request,
//! [`result_from_v1`] / [`SnapshotBuilder`] / [`error_from_v1`] / [`card_from_v1`] answer in the early
//! shape. Agent side: [`request_from_v1`] makes the HTTP call, [`result_to_v1`] / [`SnapshotDiffer`] /
//! [`error_to_v1`] / [`card_to_v1`] read the answer.

mod agent;
mod calls;
mod stream;
mod view;

pub use agent::{HttpRequest, request_from_v1, result_to_v1};
pub use calls::{CARD_PATH, Call, Route, TaskRef, check_task_id, result_from_v1, task_of_message};
// The dialect's objects, request bodies, card and errors are the wire model's (`a2a_model::early`);
// this module adds its calls and its stream converters.
pub use a2a_model::early::{
    AgentCapabilities, AgentCard, AgentSkill, Artifact, Authentication, CancelTaskRequest, EarlyError, Message,
    PROTOCOL_VERSION, Part, Role, SendTaskRequest, StateIn, Task, TaskState, TaskStatus, artifact_id, card_from_v1,
    card_to_v1, error_from_v1, error_to_v1,
};
pub use stream::{SnapshotBuilder, SnapshotDiffer};
pub use view::TaskView;
