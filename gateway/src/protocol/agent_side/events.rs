//! An agent's stream events read as the 1.0 events they stand for.

use super::*;

/// Reads an agent's stream events (its dialect and binding) as the 1.0 events, in the caller's
/// binding, they stand for. The relay holds one: for a pass-through stream the tap reads what it
/// gives while the caller gets the agent's bytes; for a bridged stream the caller gets it too.
pub struct EventConverter {
    dialect: Dialect,
    /// A 0.3 agent's events in its HTTP+JSON binding (bare StreamResponses), not JSON-RPC.
    v03_rest: bool,
    binding: Binding,
    rpc_id: Option<Value>,
    differ: SnapshotDiffer,
}

/// An agent event that stands for no 1.0 event.
#[derive(Debug)]
pub enum Unread {
    /// Not JSON at all.
    NotJson(TranslateError),
    /// JSON, but no event of the agent's dialect.
    Invalid(TranslateError),
}

impl EventConverter {
    pub fn new(dialect: Dialect, call: &A2aCall) -> EventConverter {
        EventConverter::continuing(dialect, call, SnapshotDiffer::new())
    }

    pub(super) fn continuing(dialect: Dialect, call: &A2aCall, differ: SnapshotDiffer) -> EventConverter {
        EventConverter { dialect, v03_rest: false, binding: call.binding, rpc_id: call.rpc_id.clone(), differ }
    }

    /// The agent is a 0.3 agent that streams in its HTTP+JSON binding.
    pub fn v03_rest(mut self) -> EventConverter {
        self.v03_rest = true;
        self
    }

    /// The agent's dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn write(&self, event: &StreamResponse, out: Emit<'_>) {
        out(&success(self.binding, self.rpc_id.as_ref(), event));
    }

    fn write_error(&self, error: ErrorObject, out: Emit<'_>) {
        out(&failure(self.binding, self.rpc_id.as_ref(), error).1);
    }

    /// The data of the error event that stands for an agent event that could not be read.
    pub fn unread_event(&self, unread: Unread) -> Vec<u8> {
        let (Unread::NotJson(error) | Unread::Invalid(error)) = unread;
        failure(self.binding, self.rpc_id.as_ref(), invalid_answer(error)).1
    }

    /// One agent event's `data` as the 1.0 events it stands for, each event's data handed to `out`
    /// (an agent's error event as the 1.0 error event); nothing is handed on for an event that
    /// cannot be read.
    pub fn event(&mut self, data: &[u8], out: Emit<'_>) -> Result<(), Unread> {
        let unread = |error: TranslateError| {
            if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() {
                Unread::NotJson(error)
            } else {
                Unread::Invalid(error)
            }
        };
        match self.dialect {
            // The agent's other 1.0 binding: HTTP+JSON events are bare StreamResponses.
            Dialect::V1 if self.binding == Binding::JsonRpc => match serde_json::from_slice::<StreamResponse>(data) {
                Ok(event) => self.write(&event, out),
                Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() => {
                    return Err(Unread::NotJson(TranslateError::Json("an event that is not JSON".into())));
                }
                Err(_) => self.write_error(rest_error(StatusCode::INTERNAL_SERVER_ERROR, data), out),
            },
            Dialect::V1 => {
                let converted =
                    jsonrpc::Envelope::parse(data).and_then(|envelope| match (envelope.error, envelope.result) {
                        (Some(error), _) => serde_json::from_str::<ErrorObject>(error.get())
                            .map(Err)
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, Some(result)) => serde_json::from_str::<StreamResponse>(result.get())
                            .map(Ok)
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, None) => Err(TranslateError::Json("a stream event without a result".into())),
                    });
                match converted {
                    Ok(Ok(event)) => self.write(&event, out),
                    Ok(Err(error)) => self.write_error(error, out),
                    Err(error) => return Err(unread(error)),
                }
            }
            Dialect::Early => match serde_json::from_slice::<early::Task>(data) {
                Ok(task) => {
                    for event in self.differ.push(task) {
                        self.write(&event, out);
                    }
                }
                Err(e) => return Err(unread(TranslateError::Json(e.to_string()))),
            },
            _ if self.v03_rest => {
                let converted = serde_json::from_slice::<Value>(data)
                    .map_err(|e| TranslateError::Json(e.to_string()))
                    .and_then(v03::rest::event_to_rpc)
                    .and_then(|event| serde_json::to_vec(&event).map_err(|e| TranslateError::Json(e.to_string())))
                    .and_then(|event| v03::event_to_v1(&event));
                match converted {
                    Ok(event) => self.write(&event, out),
                    Err(error) => return Err(unread(error)),
                }
            }
            _ => {
                let converted =
                    jsonrpc::Envelope::parse(data).and_then(|envelope| match (envelope.error, envelope.result) {
                        (Some(error), _) => serde_json::from_str::<v03::Error03>(error.get())
                            .map(|e| Err(v03::error_to_v1(e)))
                            .map_err(|e| TranslateError::Json(e.to_string())),
                        (None, Some(result)) => v03::event_to_v1(result.get().as_bytes()).map(Ok),
                        (None, None) => Err(TranslateError::Json("a stream event without a result".into())),
                    });
                match converted {
                    Ok(Ok(event)) => self.write(&event, out),
                    Ok(Err(error)) => self.write_error(error, out),
                    Err(error) => return Err(unread(error)),
                }
            }
        }
        Ok(())
    }
}

/// Where a converter hands each 1.0 event's data.
pub type Emit<'a> = &'a mut dyn FnMut(&[u8]);

/// Why an agent's stream could not be relayed to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The connection broke (the agent died, or the network).
    Cut,
    /// An event larger than the stream's limit.
    TooLarge,
    /// An event that is not JSON.
    Malformed,
}

impl From<reqwest::Error> for Fault {
    fn from(error: reqwest::Error) -> Fault {
        tracing::debug!(%error, "agent stream broke off");
        Fault::Cut
    }
}
