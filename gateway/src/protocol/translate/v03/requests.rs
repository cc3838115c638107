//! A2A 0.3 JSON-RPC requests read into the 1.0 [`Request`] they stand for, and written from one
//! (the methods and their params are the wire model's: `a2a_model::v03`).
//!
//! Not carried 0.3 → 1.0: `metadata` of `tasks/get`, `tasks/resubscribe` and the push-config methods
//! (1.0 has no field for it); all but the first of a push config's `authentication.schemes`;
//! `historyLength: 0` (0.3 reads 0 as "no limit", so it is left unset, as the SDK does).
//! Not carried 1.0 → 0.3: `tenant` everywhere; ListTasks (no 0.3 method; refused as unsupported);
//! `historyLength: 0` (sent as unset: 0.3 cannot ask for no history; trim the answer with
//! [`Task::truncate_history`](a2a_model::Task::truncate_history)); push-config
//! list paging (`pageSize`, `pageToken`).

use a2a_core::Operation;

use super::{
    DIALECT, MessageSendParams, Params, TaskIdParams, TaskPushNotificationConfig, TaskQueryParams, method_of,
    operation_of,
};
use crate::protocol::translate::TranslateError;
use crate::protocol::translate::error::parse_object;
use a2a_model::{self as model, Request, Struct};

/// A 0.3 request's params as the 1.0 request they stand for.
pub fn request_to_v1(method: &str, params: Option<&[u8]>) -> Result<Request, TranslateError> {
    read_request::<Named>(method, params)
}

/// [`request_to_v1`] in one pass that also refuses a key repeated anywhere in the params
/// (`a2a_model::strict`). Its error does not say what is wrong: on one, read the params again with
/// [`a2a_model::strict::check_unique_keys`] and [`request_to_v1`], which name it.
pub fn request_to_v1_strict(method: &str, params: Option<&[u8]>) -> Result<Request, TranslateError> {
    read_request::<Strict>(method, params)
}

/// How the params are read.
trait ParamsReader {
    fn read<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError>;
}

/// Serde's reading, the offending field named by its pointer on an error.
struct Named;

impl ParamsReader for Named {
    fn read<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
        parse_object(json)
    }
}

/// One strict pass.
struct Strict;

impl ParamsReader for Strict {
    fn read<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
        if json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(TranslateError::invalid("", "expected a JSON object"));
        }
        a2a_model::strict::from_slice(json).map_err(|e| TranslateError::Json(e.to_string()))
    }
}

fn read_request<R: ParamsReader>(method: &str, params: Option<&[u8]>) -> Result<Request, TranslateError> {
    let operation =
        operation_of(method).ok_or_else(|| TranslateError::UnknownOperation(format!("Method not found: {method}")))?;
    let json = params.unwrap_or(b"{}");
    Ok(match operation {
        Operation::SendMessage => Request::SendMessage(R::read::<MessageSendParams>(json)?.into()),
        Operation::SendStreamingMessage => Request::SendStreamingMessage(R::read::<MessageSendParams>(json)?.into()),
        Operation::GetTask => {
            let p: TaskQueryParams = R::read(json)?;
            let history_length = p.history_length.filter(|n| *n > 0);
            Request::GetTask(model::GetTaskRequest { tenant: None, id: p.id, history_length })
        }
        Operation::CancelTask => {
            let p: TaskIdParams = R::read(json)?;
            Request::CancelTask(model::CancelTaskRequest { tenant: None, id: p.id, metadata: p.metadata })
        }
        Operation::SubscribeToTask => {
            let p: TaskIdParams = R::read(json)?;
            Request::SubscribeToTask(model::SubscribeToTaskRequest { tenant: None, id: p.id })
        }
        Operation::CreateTaskPushNotificationConfig => {
            Request::CreateTaskPushNotificationConfig(R::read::<TaskPushNotificationConfig>(json)?.into())
        }
        Operation::GetTaskPushNotificationConfig | Operation::DeleteTaskPushNotificationConfig => {
            let p: TaskIdParams = R::read(json)?;
            let reference =
                model::TaskPushNotificationConfigRef { tenant: None, task_id: p.id, id: p.push_notification_config_id };
            if operation == Operation::GetTaskPushNotificationConfig {
                Request::GetTaskPushNotificationConfig(reference)
            } else {
                Request::DeleteTaskPushNotificationConfig(reference)
            }
        }
        Operation::ListTaskPushNotificationConfigs => {
            let p: TaskIdParams = R::read(json)?;
            Request::ListTaskPushNotificationConfigs(model::ListTaskPushNotificationConfigsRequest {
                task_id: p.id,
                ..Default::default()
            })
        }
        Operation::GetExtendedAgentCard => Request::GetExtendedAgentCard(model::GetExtendedAgentCardRequest::default()),
        // Not in METHODS: 0.3 has no way to name it.
        Operation::ListTasks => return Err(TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT }),
    })
}

/// A 1.0 request as the 0.3 method and params that do the same.
pub fn request_from_v1(request: Request) -> Result<(&'static str, Params), TranslateError> {
    let operation = request.operation();
    let method =
        method_of(operation).ok_or(TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT })?;
    let task = |id: String, push_notification_config_id: Option<String>, metadata: Option<Struct>| {
        Params::Task(TaskIdParams { id, push_notification_config_id, metadata })
    };
    let params = match request {
        Request::SendMessage(r) | Request::SendStreamingMessage(r) => Params::Send(Box::new(r.into())),
        Request::GetTask(r) => Params::Query(TaskQueryParams {
            id: r.id,
            history_length: r.history_length.filter(|n| *n > 0),
            metadata: None,
        }),
        Request::CancelTask(r) => task(r.id, None, r.metadata),
        Request::SubscribeToTask(r) => task(r.id, None, None),
        Request::CreateTaskPushNotificationConfig(c) => Params::PushConfig(c.into()),
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => {
            task(r.task_id, r.id, None)
        }
        Request::ListTaskPushNotificationConfigs(r) => task(r.task_id, None, None),
        Request::GetExtendedAgentCard(_) => Params::None(None),
        Request::ListTasks(_) => return Err(TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT }),
    };
    Ok((method, params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::translate::v03::result_to_v1;
    use a2a_model::Response;
    use a2a_model::v03::METHODS;
    use serde_json::{Value, json};

    fn bytes(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).expect("json")
    }

    #[test]
    fn every_0_3_method_has_its_operation() {
        for (name, op) in METHODS {
            assert_eq!(operation_of(name), Some(*op));
            assert_eq!(method_of(*op), Some(*name));
        }
        assert_eq!(method_of(Operation::ListTasks), None);
        assert!(matches!(request_to_v1("tasks/list", None), Err(TranslateError::UnknownOperation(_))));
    }

    #[test]
    fn blocking_is_the_inverse_of_return_immediately() {
        let send = |config: Value| {
            let params = json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                "parts": [{"kind": "text", "text": "x"}]}, "configuration": config});
            match request_to_v1("message/send", Some(&bytes(params))).expect("send") {
                Request::SendMessage(r) => r.configuration.expect("configuration"),
                other => panic!("{other:?}"),
            }
        };
        assert!(send(json!({"blocking": false})).return_immediately);
        assert!(!send(json!({"blocking": true})).return_immediately);
        assert!(!send(json!({})).return_immediately);
        assert_eq!(send(json!({"historyLength": 0})).history_length, None);
        let back = MessageSendParams::from(model::SendMessageRequest {
            tenant: Some("acme".into()),
            message: model::Message::default(),
            configuration: Some(model::SendMessageConfiguration { return_immediately: true, ..Default::default() }),
            metadata: None,
        });
        assert_eq!(back.configuration.and_then(|c| c.blocking), Some(false));
    }

    #[test]
    fn push_config_methods() {
        let set = json!({"taskId": "t", "pushNotificationConfig": {"url": "https://hook", "token": "tok",
            "authentication": {"schemes": ["Bearer", "Basic"], "credentials": "c"}}});
        let Request::CreateTaskPushNotificationConfig(config) =
            request_to_v1("tasks/pushNotificationConfig/set", Some(&bytes(set))).expect("set")
        else {
            panic!("not a create")
        };
        assert_eq!(config.task_id.as_deref(), Some("t"));
        assert_eq!(config.authentication.as_ref().map(|a| a.scheme.as_str()), Some("Bearer"));
        let (method, params) = request_from_v1(Request::CreateTaskPushNotificationConfig(config)).expect("back");
        assert_eq!(method, "tasks/pushNotificationConfig/set");
        assert_eq!(
            serde_json::to_value(&params).ok(),
            Some(json!({"taskId": "t", "pushNotificationConfig": {"url": "https://hook", "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}))
        );
        let get = json!({"id": "t", "pushNotificationConfigId": "p"});
        let request = request_to_v1("tasks/pushNotificationConfig/get", Some(&bytes(get.clone()))).expect("get");
        assert_eq!(
            request,
            Request::GetTaskPushNotificationConfig(model::TaskPushNotificationConfigRef {
                tenant: None,
                task_id: "t".into(),
                id: Some("p".into())
            })
        );
        let (_, params) = request_from_v1(request).expect("back");
        assert_eq!(serde_json::to_value(&params).ok(), Some(get));
        let list = result_to_v1(
            Operation::ListTaskPushNotificationConfigs,
            &bytes(json!([{"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "https://hook"}}])),
        )
        .expect("list");
        let Response::PushConfigs(list) = list else { panic!("not a list") };
        assert_eq!(list.configs[0].id.as_deref(), Some("p"));
    }

    #[test]
    fn list_tasks_has_no_0_3_method() {
        let err = request_from_v1(Request::ListTasks(Default::default())).unwrap_err();
        assert_eq!(err, TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT });
    }

    #[test]
    fn no_params_for_the_extended_card() {
        let (method, params) = request_from_v1(Request::GetExtendedAgentCard(Default::default())).expect("card");
        assert_eq!(method, "agent/getAuthenticatedExtendedCard");
        assert_eq!(serde_json::to_value(&params).ok(), Some(Value::Null));
    }
}
