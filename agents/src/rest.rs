//! The HTTP+JSON binding under `/a2a/rest` (also `/{tenant}/a2a/rest`, as the SDK mounts it):
//! paths matched by hand because `{id}:cancel` shares a segment, bodies read as JSON whatever
//! their Content-Type, successes as `application/a2a+json`, errors as google.rpc.Status.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode, Uri, header};
use serde_json::{Map, Value};

use crate::App;
use crate::card::REST_PREFIX;
use crate::error::{A2aError, RestError};
use crate::operation::{Operation, Reply};
use crate::recorder::{Binding, Recording};
use crate::requests::{self, SendMessageRequest, decode};
use crate::{sse, version};

/// The operation a path names, before its request is read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    SendMessage,
    SendStreamingMessage,
    GetTask(String),
    ListTasks,
    CancelTask(String),
    SubscribeToTask(String),
    PushNotificationConfig(String),
    GetExtendedAgentCard,
}

impl Route {
    fn name(&self) -> &'static str {
        match self {
            Self::SendMessage => "SendMessage",
            Self::SendStreamingMessage => "SendStreamingMessage",
            Self::GetTask(_) => "GetTask",
            Self::ListTasks => "ListTasks",
            Self::CancelTask(_) => "CancelTask",
            Self::SubscribeToTask(_) => "SubscribeToTask",
            Self::PushNotificationConfig(_) => "PushNotificationConfig",
            Self::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    fn task_id(&self) -> Option<&str> {
        match self {
            Self::GetTask(id) | Self::CancelTask(id) | Self::SubscribeToTask(id) | Self::PushNotificationConfig(id) => {
                Some(id)
            }
            _ => None,
        }
    }
}

/// Why a path is not an operation: plain-text answers, like the SDK's router.
#[derive(Debug, PartialEq, Eq)]
enum Miss {
    NotFound,
    MethodNotAllowed,
}

/// Serves every path the router has no explicit route for.
pub async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let route = match route(&method, uri.path()) {
        Ok(route) => route,
        Err(miss) => {
            if strip_prefix(uri.path()).is_some() {
                app.recorder.record(&method, &uri, &headers, Recording::new(Binding::Rest));
            }
            return match miss {
                Miss::NotFound => (StatusCode::NOT_FOUND, "Not Found").into_response(),
                Miss::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response(),
            };
        }
    };
    let body = parse_body(&body);
    let recording = Recording {
        operation: Some(route.name().to_owned()),
        task_id: route.task_id().map(str::to_owned).or_else(|| body.as_ref().ok().and_then(requests::task_id_hint)),
        ..Recording::new(Binding::Rest)
    };
    app.recorder.record(&method, &uri, &headers, recording);
    match run(&app, &headers, &uri, route, body).await {
        Ok(response) => response,
        Err(error) => RestError(error).into_response(),
    }
}

async fn run(
    app: &App,
    headers: &HeaderMap,
    uri: &Uri,
    route: Route,
    body: Result<Value, A2aError>,
) -> Result<Response, A2aError> {
    version::require_v1(headers)?;
    let operation = match route {
        Route::SendMessage => Operation::SendMessage(SendMessageRequest::decode(body?)?),
        Route::SendStreamingMessage => Operation::SendStreamingMessage(SendMessageRequest::decode(body?)?),
        Route::GetTask(id) => Operation::GetTask(decode(query_with_id(uri, id)?)?),
        Route::ListTasks => Operation::ListTasks(decode(query_with_id(uri, String::new())?)?),
        Route::CancelTask(id) => {
            body?;
            Operation::CancelTask(requests::TaskIdRequest { id })
        }
        Route::SubscribeToTask(id) => {
            body?;
            Operation::SubscribeToTask(requests::TaskIdRequest { id })
        }
        Route::PushNotificationConfig(_) => Operation::PushNotificationConfig,
        Route::GetExtendedAgentCard => Operation::GetExtendedAgentCard,
    };
    Ok(match app.agent.execute(operation).await? {
        Reply::Unary(result) => {
            let bytes = serde_json::to_vec(&result).unwrap_or_default();
            ([(header::CONTENT_TYPE, "application/a2a+json")], bytes).into_response()
        }
        Reply::Stream(events) => sse::response(events.map(|event| sse::frame(&event)).boxed()),
    })
}

/// The body as JSON; an empty body counts as `{}` (cancel and subscribe need none).
fn parse_body(body: &[u8]) -> Result<Value, A2aError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| A2aError::Parse(e.to_string()))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(A2aError::InvalidRequest("the request body must be a JSON object".into()))
    }
}

/// Query parameters as a JSON object (strings; the decoders accept numbers as strings), with
/// the path's task id when there is one.
fn query_with_id(uri: &Uri, id: String) -> Result<Value, A2aError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| A2aError::InvalidParams(format!("invalid query string: {e}")))?;
    let mut params: Map<String, Value> = pairs.into_iter().map(|(key, value)| (key, Value::String(value))).collect();
    if !id.is_empty() {
        params.insert("id".into(), Value::String(id));
    }
    Ok(Value::Object(params))
}

/// The part of the path after `/a2a/rest` or `/{tenant}/a2a/rest`.
fn strip_prefix(path: &str) -> Option<&str> {
    after_prefix(path).or_else(|| {
        let tenant_end = path.get(1..)?.find('/')? + 1;
        after_prefix(&path[tenant_end..])
    })
}

fn after_prefix(path: &str) -> Option<&str> {
    path.strip_prefix(REST_PREFIX).filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn route(method: &Method, path: &str) -> Result<Route, Miss> {
    let rest = strip_prefix(path).ok_or(Miss::NotFound)?;
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let post = method == Method::POST;
    let get = method == Method::GET;
    let allowed = |ok: bool, route: Route| if ok { Ok(route) } else { Err(Miss::MethodNotAllowed) };
    match segments.as_slice() {
        ["message:send"] => allowed(post, Route::SendMessage),
        ["message:stream"] => allowed(post, Route::SendStreamingMessage),
        ["tasks"] => allowed(get, Route::ListTasks),
        ["extendedAgentCard"] => allowed(get, Route::GetExtendedAgentCard),
        ["tasks", task] => match task.rsplit_once(':') {
            Some((id, "cancel")) if !id.is_empty() => allowed(post, Route::CancelTask(id.into())),
            Some((id, "subscribe")) if !id.is_empty() => allowed(post || get, Route::SubscribeToTask(id.into())),
            Some(_) => Err(Miss::NotFound),
            None if task.is_empty() => Err(Miss::NotFound),
            None => allowed(get, Route::GetTask((*task).into())),
        },
        ["tasks", id, "pushNotificationConfigs"] if !id.is_empty() => {
            allowed(post || get, Route::PushNotificationConfig((*id).into()))
        }
        ["tasks", id, "pushNotificationConfigs", config] if !id.is_empty() && !config.is_empty() => {
            allowed(get || method == Method::DELETE, Route::PushNotificationConfig((*id).into()))
        }
        _ => Err(Miss::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_the_sdk_paths() {
        let r = |method: Method, path: &str| route(&method, path);
        assert_eq!(r(Method::POST, "/a2a/rest/message:send"), Ok(Route::SendMessage));
        assert_eq!(r(Method::POST, "/a2a/rest/message:stream"), Ok(Route::SendStreamingMessage));
        assert_eq!(r(Method::GET, "/a2a/rest/tasks"), Ok(Route::ListTasks));
        assert_eq!(r(Method::GET, "/a2a/rest/tasks/t1"), Ok(Route::GetTask("t1".into())));
        assert_eq!(r(Method::POST, "/a2a/rest/tasks/t1:cancel"), Ok(Route::CancelTask("t1".into())));
        assert_eq!(r(Method::GET, "/a2a/rest/tasks/t1:subscribe"), Ok(Route::SubscribeToTask("t1".into())));
        assert_eq!(r(Method::POST, "/a2a/rest/tasks/t1:subscribe"), Ok(Route::SubscribeToTask("t1".into())));
        assert_eq!(
            r(Method::DELETE, "/a2a/rest/tasks/t1/pushNotificationConfigs/c"),
            Ok(Route::PushNotificationConfig("t1".into()))
        );
        assert_eq!(r(Method::POST, "/acme/a2a/rest/message:send"), Ok(Route::SendMessage));
    }

    #[test]
    fn misses_like_the_sdk() {
        let r = |method: Method, path: &str| route(&method, path);
        assert_eq!(r(Method::GET, "/a2a/rest/nope/nope/nope"), Err(Miss::NotFound));
        assert_eq!(r(Method::POST, "/a2a/rest/acme/message:send"), Err(Miss::NotFound));
        assert_eq!(r(Method::GET, "/a2a/rest/tasks/t1:pause"), Err(Miss::NotFound));
        assert_eq!(r(Method::GET, "/a2a/restless/tasks"), Err(Miss::NotFound));
        assert_eq!(r(Method::GET, "/a2a/rest/message:send"), Err(Miss::MethodNotAllowed));
        assert_eq!(r(Method::GET, "/a2a/rest/tasks/t1:cancel"), Err(Miss::MethodNotAllowed));
        assert_eq!(r(Method::GET, "/"), Err(Miss::NotFound));
    }

    #[test]
    fn bodies_are_json_objects_or_empty() {
        assert_eq!(parse_body(b""), Ok(Value::Object(Map::new())));
        assert!(matches!(parse_body(b"{\"message\":"), Err(A2aError::Parse(_))));
        assert!(matches!(parse_body(b"[1]"), Err(A2aError::InvalidRequest(_))));
    }
}
