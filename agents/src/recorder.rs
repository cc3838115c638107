//! Test hooks: every request an agent receives on its A2A endpoints (card, JSON-RPC, HTTP+JSON)
//! is recorded with its headers and what it asked for, so end-to-end tests can check what the
//! gateway actually forwarded. `GET /debug/requests` lists them, `DELETE` clears them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::Serialize;
use serde_json::Value;

use crate::App;

/// Oldest records are dropped past this, so a long demo run cannot grow without bound.
const MAX_RECORDS: usize = 10_000;

/// The binding a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Binding {
    #[serde(rename = "JSONRPC")]
    JsonRpc,
    #[serde(rename = "HTTP+JSON")]
    Rest,
    #[serde(rename = "CARD")]
    Card,
}

/// What a binding learned about a request while decoding it.
#[derive(Debug, Clone)]
pub struct Recording {
    pub binding: Binding,
    /// The JSON-RPC method as sent, or the operation an HTTP+JSON route maps to.
    pub operation: Option<String>,
    pub jsonrpc_id: Option<Value>,
    pub task_id: Option<String>,
}

impl Recording {
    pub fn new(binding: Binding) -> Self {
        Self { binding, operation: None, jsonrpc_id: None, task_id: None }
    }
}

/// One received request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub seq: u64,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub binding: Binding,
    pub operation: Option<String>,
    pub jsonrpc_id: Option<Value>,
    pub task_id: Option<String>,
    /// Lower-case names; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
}

#[derive(Default)]
pub struct Recorder {
    records: Mutex<VecDeque<RecordedRequest>>,
    next_seq: AtomicU64,
}

impl Recorder {
    pub fn record(&self, method: &Method, uri: &Uri, headers: &HeaderMap, recording: Recording) {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let value = String::from_utf8_lossy(value.as_bytes());
            names
                .entry(name.as_str().to_owned())
                .and_modify(|joined| {
                    joined.push_str(", ");
                    joined.push_str(&value);
                })
                .or_insert_with(|| value.into_owned());
        }
        let record = RecordedRequest {
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed) + 1,
            method: method.as_str().to_owned(),
            path: uri.path().to_owned(),
            query: uri.query().map(str::to_owned),
            binding: recording.binding,
            operation: recording.operation,
            jsonrpc_id: recording.jsonrpc_id,
            task_id: recording.task_id,
            headers: names,
        };
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if records.len() == MAX_RECORDS {
            records.pop_front();
        }
        records.push_back(record);
    }

    pub fn all(&self) -> Vec<RecordedRequest> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        records.iter().cloned().collect()
    }

    pub fn clear(&self) {
        self.records.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// `GET /debug/requests`
pub async fn list(State(app): State<Arc<App>>) -> impl IntoResponse {
    Json(app.recorder.all())
}

/// `DELETE /debug/requests`
pub async fn clear(State(app): State<Arc<App>>) -> StatusCode {
    app.recorder.clear();
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn records_headers_and_what_was_asked() {
        let recorder = Recorder::default();
        let mut headers = HeaderMap::new();
        headers.insert("A2A-Version", HeaderValue::from_static("1.0"));
        headers.append("x-many", HeaderValue::from_static("a"));
        headers.append("x-many", HeaderValue::from_static("b"));
        let uri: Uri = "/a2a/rest/tasks/t1?historyLength=0".parse().expect("uri");
        let recording = Recording {
            operation: Some("GetTask".into()),
            task_id: Some("t1".into()),
            ..Recording::new(Binding::Rest)
        };
        recorder.record(&Method::GET, &uri, &headers, recording);
        let all = recorder.all();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].seq, 1);
        assert_eq!(all[0].path, "/a2a/rest/tasks/t1");
        assert_eq!(all[0].query.as_deref(), Some("historyLength=0"));
        assert_eq!(all[0].headers.get("a2a-version").map(String::as_str), Some("1.0"));
        assert_eq!(all[0].headers.get("x-many").map(String::as_str), Some("a, b"));
        recorder.clear();
        assert!(recorder.all().is_empty());
    }
}
