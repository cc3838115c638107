//! The push-config operations, answered by the gateway (Create, Get, List, Delete), and the config a
//! send carries, taken off the send before it goes to the agent. Routing has already checked that
//! the task is the caller's (another caller's task does not exist for this one); the store is read
//! per owner on top of that.

use std::sync::Arc;

use a2a_core::{A2aCall, A2aError, Binding, Caller};
use axum::body::Body;
use http::{HeaderValue, Response, header};
use serde_json::{Value, json};

use super::{Push, StoredConfig, answer_form, new_id};
use crate::protocol::A2A_JSON;
use crate::screen::{SystemResolver, screen_url};
use a2a_model::{ListTaskPushNotificationConfigsResponse, Request, TaskPushNotificationConfig};

/// Whether `request` is one of the push-config calls the gateway answers itself ([`answer`]).
pub fn is_push_call(request: &Request) -> bool {
    matches!(
        request,
        Request::CreateTaskPushNotificationConfig(_)
            | Request::GetTaskPushNotificationConfig(_)
            | Request::ListTaskPushNotificationConfigs(_)
            | Request::DeleteTaskPushNotificationConfig(_)
    )
}

/// Whether `request` is a send that carries a push config ([`take_from_send`] takes it off).
pub fn carries_push_config(request: &Request) -> bool {
    let (Request::SendMessage(send) | Request::SendStreamingMessage(send)) = request else { return false };
    send.configuration.as_ref().is_some_and(|c| c.task_push_notification_config.is_some())
}

/// Answers a push-config operation, or `None` when `request` is not one.
pub async fn answer(
    push: Option<&Push>,
    owner: Option<&Arc<str>>,
    caller: Option<&Caller>,
    backend: &Arc<str>,
    call: &A2aCall,
    request: &Request,
) -> Option<Result<Response<Body>, A2aError>> {
    if !is_push_call(request) {
        return None;
    }
    let Some(push) = push.filter(|p| p.config.enabled) else { return Some(Err(not_enabled())) };
    let owner = Push::owner(owner);
    let task_id = call.task_id.as_deref().unwrap_or("");
    Some(match request {
        Request::CreateTaskPushNotificationConfig(config) => {
            create(push, &owner, caller, backend, call, task_id, config.clone()).await.map(|c| reply(call, &c))
        }
        Request::GetTaskPushNotificationConfig(r) => match push.store.get(&owner, task_id, r.id.as_deref()).await {
            Ok(Some(stored)) => Ok(reply(call, &answer_form(stored.config, task_id))),
            Ok(None) => Err(A2aError::TaskNotFound),
            Err(error) => Err(error.into()),
        },
        Request::ListTaskPushNotificationConfigs(_) => match push.store.list(&owner, task_id).await {
            Ok(listed) => {
                let configs = listed.into_iter().map(|s| answer_form(s.config, task_id)).collect();
                Ok(reply(call, &ListTaskPushNotificationConfigsResponse { configs, next_page_token: None }))
            }
            Err(error) => Err(error.into()),
        },
        Request::DeleteTaskPushNotificationConfig(r) => match push.store.delete(&owner, task_id, r.id.as_deref()).await
        {
            Ok(true) => Ok(match call.binding {
                Binding::JsonRpc => json_response(&json!({"result": null, "id": call.rpc_id, "jsonrpc": "2.0"})),
                Binding::Rest => json_response(&json!({})),
            }),
            Ok(false) => Err(A2aError::TaskNotFound),
            Err(error) => Err(error.into()),
        },
        _ => return None,
    })
}

/// Takes the push config off a send, in the checked request itself, so that the agent never gets
/// it: screened, and kept (see [`Push::expect`]) until the send's answer names its task. A send
/// without one is left as it is.
pub async fn take_from_send(
    push: Option<&Push>,
    owner: Option<&Arc<str>>,
    caller: Option<&Caller>,
    backend: &Arc<str>,
    request_id: Arc<str>,
    call: &A2aCall,
    request: &mut Request,
) -> Result<(), A2aError> {
    let (Request::SendMessage(send) | Request::SendStreamingMessage(send)) = request else { return Ok(()) };
    let Some(config) = send.configuration.as_mut().and_then(|c| c.task_push_notification_config.take()) else {
        return Ok(());
    };
    let Some(push) = push.filter(|p| p.config.enabled) else { return Err(not_enabled()) };
    let config = screened(push, config).await?;
    let stored = StoredConfig { config, caller: caller.cloned(), backend: backend.clone(), dialect: call.dialect };
    push.expect(request_id, Push::owner(owner), stored);
    Ok(())
}

async fn create(
    push: &Push,
    owner: &Arc<str>,
    caller: Option<&Caller>,
    backend: &Arc<str>,
    call: &A2aCall,
    task_id: &str,
    config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let mut config = screened(push, config).await?;
    config.task_id = Some(task_id.to_owned());
    let stored = StoredConfig {
        config: config.clone(),
        caller: caller.cloned(),
        backend: backend.clone(),
        dialect: call.dialect,
    };
    push.store.put(owner, task_id, stored, push.config.max_configs_per_task).await.map_err(A2aError::from)?;
    push.deliveries.watch(task_id, backend);
    Ok(config)
}

/// The config with an id, once its URL passed the screen.
async fn screened(push: &Push, mut config: TaskPushNotificationConfig) -> Result<TaskPushNotificationConfig, A2aError> {
    if let Err(refused) = screen_url(&config.url, &push.config.screen_policy(), &SystemResolver).await {
        metrics::counter!(crate::metrics::PUSH_REFUSED).increment(1);
        return Err(A2aError::invalid_params(format!("the push-notification url is refused: {refused}")));
    }
    if config.id.is_none() {
        config.id = Some(new_id());
    }
    Ok(config)
}

fn not_enabled() -> A2aError {
    A2aError::UnsupportedOperation("push notifications are not enabled at this gateway".into())
}

fn reply(call: &A2aCall, result: &impl serde::Serialize) -> Response<Body> {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    match call.binding {
        Binding::JsonRpc => json_response(&json!({"result": result, "id": call.rpc_id, "jsonrpc": "2.0"})),
        Binding::Rest => json_response(&result),
    }
}

fn json_response(value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    let content_type = if value.get("jsonrpc").is_some() { "application/json" } else { A2A_JSON };
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
