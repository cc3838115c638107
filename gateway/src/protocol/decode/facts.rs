//! The facts policies and routing decide on (task, context, skill, tenant), read from the checked
//! request, with a request whose facts disagree refused.

use super::*;

/// Reads what policies and routing decide on from the checked request into `call`, and refuses a
/// request whose facts disagree with each other. The request's `tenant` names an agent of this
/// gateway (as `/agents/{name}/` does); it is not passed on.
pub(super) fn read_facts(call: &mut A2aCall, request: &mut Request) -> Result<(), A2aError> {
    if let Some(tenant) = take_tenant(request) {
        match &call.agent {
            Some(agent) if *agent != tenant => {
                return Err(A2aError::invalid_params("'tenant' names another agent than the path"));
            }
            _ => call.agent = Some(tenant),
        }
    }
    match request {
        Request::SendMessage(send) | Request::SendStreamingMessage(send) => {
            call.task_id.clone_from(&send.message.task_id);
            call.context_id.clone_from(&send.message.context_id);
            call.skill_id = named_skill(send)?;
        }
        Request::GetTask(model::GetTaskRequest { id, .. })
        | Request::CancelTask(model::CancelTaskRequest { id, .. })
        | Request::SubscribeToTask(model::SubscribeToTaskRequest { id, .. }) => {
            call.task_id = Some(required(id, "id")?);
        }
        Request::CreateTaskPushNotificationConfig(config) => {
            call.task_id = Some(required(config.task_id.as_deref().unwrap_or(""), "taskId")?);
        }
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => {
            call.task_id = Some(required(&r.task_id, "taskId")?);
        }
        Request::ListTaskPushNotificationConfigs(r) => call.task_id = Some(required(&r.task_id, "taskId")?),
        Request::ListTasks(_) | Request::GetExtendedAgentCard(_) => {}
    }
    Ok(())
}

fn required(value: &str, name: &str) -> Result<String, A2aError> {
    if value.is_empty() {
        return Err(A2aError::invalid_params(format!("'{name}' is required and must be a non-empty string")));
    }
    Ok(value.to_owned())
}

/// Removes the request's `tenant`, returning it.
fn take_tenant(request: &mut Request) -> Option<String> {
    match request {
        Request::SendMessage(r) | Request::SendStreamingMessage(r) => r.tenant.take(),
        Request::GetTask(r) => r.tenant.take(),
        Request::ListTasks(r) => r.tenant.take(),
        Request::CancelTask(r) => r.tenant.take(),
        Request::SubscribeToTask(r) => r.tenant.take(),
        Request::CreateTaskPushNotificationConfig(r) => r.tenant.take(),
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => r.tenant.take(),
        Request::ListTaskPushNotificationConfigs(r) => r.tenant.take(),
        Request::GetExtendedAgentCard(r) => r.tenant.take(),
    }
}

/// Metadata keys that name a skill: the gateway's convention, and the snake spelling an agent
/// might read instead.
const SKILL_KEYS: [&str; 2] = ["skillId", "skill_id"];

/// The skill a send names in its message's or its request's metadata. Every place that names one
/// must name the same: an agent may read any of them.
fn named_skill(send: &model::SendMessageRequest) -> Result<Option<String>, A2aError> {
    let mut named: Option<&str> = None;
    for metadata in [send.message.metadata.as_ref(), send.metadata.as_ref()].into_iter().flatten() {
        for key in SKILL_KEYS {
            match metadata.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if !s.is_empty() => match named {
                    Some(other) if other != s => {
                        return Err(A2aError::invalid_params(
                            "the request names two different skills; name one skill in metadata.skillId",
                        ));
                    }
                    _ => named = Some(s),
                },
                Some(_) => return Err(A2aError::invalid_params("'metadata.skillId' must be a non-empty string")),
            }
        }
    }
    Ok(named.map(str::to_owned))
}
