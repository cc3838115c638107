//! A2A 0.3 over HTTP+JSON (the SDK's REST transport): routes under `/v1/` and bodies in the
//! ProtoJSON of the 0.3 `a2a.proto` (`content` for a message's parts, `ROLE_USER`, `TASK_STATE_*`,
//! parts as `{text}` / `{file: {fileWithUri | fileWithBytes}}` / `{data: {data}}`, push configs named
//! `tasks/{id}/pushNotificationConfigs/{configId}`); errors are an HTTP status and `{"message"}`.
//!
//! Every body is translated to and from the 0.3 JSON-RPC form (`kind`-tagged, kebab-case states), so
//! the one 0.3 ↔ 1.0 translation of this module's siblings serves both 0.3 bindings. Pure JSON values
//! in, JSON values out; keys this binding does not define are left behind. A field may be spelled
//! `taskId` or `task_id` (ProtoJSON parsers read both); both at once is refused.

mod bodies;
mod errors;
mod fields;
mod routes;
#[cfg(test)]
mod tests;

pub use bodies::{event_to_rest, event_to_rpc, message_to_rest, message_to_rpc, result_to_rest, result_to_rpc};
pub use errors::{code_of, error_body, status_of};
pub use routes::{Route, params_of, request_to_rest};
