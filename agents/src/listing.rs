//! ListTasks: filtering, paging, and the response shape.
//!
//! The reference SDK prints this one response with ProtoJSON's "always print fields without
//! presence" option: parts carry `"filename":""` and `"mediaType":""`, messages carry
//! `"extensions":[]` and `"referenceTaskIds":[]`, and artifacts are left out unless asked for.
//! The view types below reproduce that shape.

use a2a_model::{Artifact, Message, Part, PartContent, Role, Struct, Task, TaskState};
use serde::Serialize;
use serde_json::Value;

use crate::error::A2aError;
use crate::model::TaskExt;
use crate::requests::{self, ListTasksRequest};
use crate::store::TaskStore;
use crate::time::parse_rfc3339;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    tasks: Vec<ListedTask>,
    page_size: usize,
    total_size: usize,
    next_page_token: String,
}

/// Runs a ListTasks request against the store, newest task first.
pub fn list(store: &TaskStore, request: &ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
    let page_size = requests::page_size(request.page_size)?;
    let history_length = requests::history_length(request.history_length)?;
    let after = match request.status_timestamp_after.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(text) => Some(
            parse_rfc3339(text)
                .ok_or_else(|| A2aError::InvalidParams("statusTimestampAfter must be an RFC 3339 timestamp".into()))?,
        ),
    };
    // The token is the creation number of the last task of the previous page.
    let before = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(token) => {
            Some(token.parse::<u64>().map_err(|_| A2aError::InvalidParams("pageToken is not valid".into()))?)
        }
    };
    let context_id = request.context_id.as_deref().filter(|c| !c.is_empty());
    let matching: Vec<(u64, Task)> = store
        .all_newest_first()
        .into_iter()
        .filter(|(_, task)| context_id.is_none_or(|c| task.context_id == c))
        // UNSPECIFIED is no filter (proto3's zero value: the field was not set).
        .filter(|(_, task)| request.status.is_none_or(|s| s == TaskState::Unspecified || task.status.state == s))
        .filter(|(_, task)| after.is_none_or(|after| updated_after(task, after)))
        .collect();
    let total_size = matching.len();
    let mut page = matching
        .into_iter()
        .filter(|(seq, _)| before.is_none_or(|before| *seq < before))
        .take(page_size + 1)
        .collect::<Vec<_>>();
    let next_page_token = if page.len() > page_size {
        page.truncate(page_size);
        page.last().map(|(seq, _)| seq.to_string()).unwrap_or_default()
    } else {
        String::new()
    };
    let include_artifacts = request.include_artifacts.unwrap_or(false);
    let tasks = page
        .into_iter()
        .map(|(_, task)| ListedTask::new(task.with_history_length(history_length), include_artifacts))
        .collect();
    Ok(ListTasksResponse { tasks, page_size, total_size, next_page_token })
}

/// The status changed at or after `after` (the specification's and the reference SDK's `>=`).
fn updated_after(task: &Task, after: i64) -> bool {
    task.status.timestamp.as_deref().and_then(parse_rfc3339).is_some_and(|at| at >= after)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedTask {
    id: String,
    context_id: String,
    status: ListedStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    artifacts: Vec<ListedArtifact>,
    history: Vec<ListedMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Struct>,
}

impl ListedTask {
    fn new(task: Task, include_artifacts: bool) -> Self {
        let artifacts =
            if include_artifacts { task.artifacts.into_iter().map(ListedArtifact::from).collect() } else { Vec::new() };
        Self {
            id: task.id,
            context_id: task.context_id,
            status: ListedStatus {
                state: task.status.state,
                message: task.status.message.map(ListedMessage::from),
                timestamp: task.status.timestamp,
            },
            artifacts,
            history: task.history.into_iter().map(ListedMessage::from).collect(),
            metadata: task.metadata,
        }
    }
}

#[derive(Debug, Serialize)]
struct ListedStatus {
    state: TaskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<ListedMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedMessage {
    message_id: String,
    context_id: String,
    task_id: String,
    role: Role,
    parts: Vec<ListedPart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Struct>,
    extensions: Vec<String>,
    reference_task_ids: Vec<String>,
}

impl From<Message> for ListedMessage {
    fn from(message: Message) -> Self {
        Self {
            message_id: message.message_id,
            context_id: message.context_id.unwrap_or_default(),
            task_id: message.task_id.unwrap_or_default(),
            role: message.role,
            parts: message.parts.into_iter().map(ListedPart::from).collect(),
            metadata: message.metadata,
            extensions: message.extensions,
            reference_task_ids: message.reference_task_ids,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedPart {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Struct>,
    filename: String,
    media_type: String,
}

impl From<Part> for ListedPart {
    fn from(part: Part) -> Self {
        let (mut text, mut raw, mut url, mut data) = (None, None, None, None);
        match part.content {
            PartContent::Text(t) => text = Some(t),
            PartContent::Raw(r) => raw = Some(r),
            PartContent::Url(u) => url = Some(u),
            PartContent::Data(d) => data = Some(d),
        }
        Self {
            text,
            raw,
            url,
            data,
            metadata: part.metadata,
            filename: part.filename.unwrap_or_default(),
            media_type: part.media_type.unwrap_or_default(),
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedArtifact {
    artifact_id: String,
    name: String,
    description: String,
    parts: Vec<ListedPart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Struct>,
    extensions: Vec<String>,
}

impl From<Artifact> for ListedArtifact {
    fn from(artifact: Artifact) -> Self {
        Self {
            artifact_id: artifact.artifact_id,
            name: artifact.name.unwrap_or_default(),
            description: artifact.description.unwrap_or_default(),
            parts: artifact.parts.into_iter().map(ListedPart::from).collect(),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

#[cfg(test)]
mod tests {
    use a2a_model::TaskStatus;

    use super::*;

    use crate::model::agent_text;

    fn task(id: &str, context: &str, state: TaskState, timestamp: Option<&str>) -> Task {
        let mut message = agent_text(id, context, "hello");
        message.role = Role::User;
        Task {
            id: id.into(),
            context_id: context.into(),
            status: TaskStatus { state, message: None, timestamp: timestamp.map(str::to_owned) },
            artifacts: vec![],
            history: vec![message],
            metadata: None,
        }
    }

    fn store_with_three() -> TaskStore {
        let store = TaskStore::default();
        store.create(task("a", "c1", TaskState::Completed, Some("2026-12-02T10:00:00.000000Z")));
        store.create(task("b", "c2", TaskState::Working, Some("2026-12-02T11:00:00.000000Z")));
        store.create(task("c", "c1", TaskState::Completed, Some("2026-12-02T12:00:00.000000Z")));
        store
    }

    fn ids(response: &ListTasksResponse) -> Vec<&str> {
        response.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn newest_first_with_sdk_defaults_printed() {
        let store = store_with_three();
        let response = list(&store, &ListTasksRequest::default()).expect("lists");
        assert_eq!(ids(&response), ["c", "b", "a"]);
        let json = serde_json::to_value(&response).unwrap_or_default();
        assert_eq!(json["totalSize"], 3);
        assert_eq!(json["pageSize"], 50);
        assert_eq!(json["nextPageToken"], "");
        let first_message = &json["tasks"][0]["history"][0];
        assert_eq!(first_message["extensions"], serde_json::json!([]));
        assert_eq!(first_message["referenceTaskIds"], serde_json::json!([]));
        assert_eq!(first_message["parts"][0]["filename"], "");
        assert_eq!(first_message["parts"][0]["mediaType"], "");
        assert!(json["tasks"][0].get("artifacts").is_none());
    }

    #[test]
    fn filters_by_context_status_and_time() {
        let store = store_with_three();
        let by = |request: ListTasksRequest| {
            list(&store, &request).map(|r| ids(&r).iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let context = ListTasksRequest { context_id: Some("c1".into()), ..ListTasksRequest::default() };
        assert_eq!(by(context), Ok(vec!["c".into(), "a".into()]));
        let working = ListTasksRequest { status: Some(TaskState::Working), ..ListTasksRequest::default() };
        assert_eq!(by(working), Ok(vec!["b".into()]));
        let recent = ListTasksRequest {
            status_timestamp_after: Some("2026-12-02T10:30:00Z".into()),
            ..ListTasksRequest::default()
        };
        assert_eq!(by(recent), Ok(vec!["c".into(), "b".into()]));
        let at_or_after = ListTasksRequest {
            status_timestamp_after: Some("2026-12-02T13:00:00+02:00".into()),
            ..ListTasksRequest::default()
        };
        assert_eq!(by(at_or_after), Ok(vec!["c".into(), "b".into()]), "b's own time, given with an offset, includes b");
        let unspecified = ListTasksRequest { status: Some(TaskState::Unspecified), ..ListTasksRequest::default() };
        assert_eq!(by(unspecified), Ok(vec!["c".into(), "b".into(), "a".into()]));
        let bad = ListTasksRequest { status_timestamp_after: Some("soon".into()), ..ListTasksRequest::default() };
        assert!(by(bad).is_err());
    }

    #[test]
    fn pages_through_with_tokens() {
        let store = store_with_three();
        let first =
            list(&store, &ListTasksRequest { page_size: Some(2), ..ListTasksRequest::default() }).expect("page 1");
        assert_eq!(ids(&first), ["c", "b"]);
        assert_eq!(first.total_size, 3);
        let second = list(
            &store,
            &ListTasksRequest {
                page_size: Some(2),
                page_token: Some(first.next_page_token.clone()),
                ..ListTasksRequest::default()
            },
        )
        .expect("page 2");
        assert_eq!(ids(&second), ["a"]);
        assert_eq!(second.next_page_token, "");
        let bad_token = ListTasksRequest { page_token: Some("x".into()), ..ListTasksRequest::default() };
        assert!(list(&store, &bad_token).is_err());
    }
}
