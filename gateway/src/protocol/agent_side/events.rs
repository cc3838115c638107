//! An agent's answer stream, converted event by event to the 1.0 form, and the copy of it the
//! gateway observes.

use super::*;

pub(super) struct Converter {
    dialect: Dialect,
    /// A 0.3 agent's events in its HTTP+JSON binding (bare StreamResponses), not JSON-RPC.
    v03_rest: bool,
    binding: Binding,
    rpc_id: Option<Value>,
    differ: SnapshotDiffer,
}

impl Converter {
    pub(super) fn new(dialect: Dialect, call: &A2aCall, differ: SnapshotDiffer) -> Converter {
        Converter { dialect, v03_rest: false, binding: call.binding, rpc_id: call.rpc_id.clone(), differ }
    }

    fn write(&self, event: &StreamResponse, out: Emit<'_>) -> bool {
        out(&success(self.binding, self.rpc_id.as_ref(), event));
        true
    }

    fn write_error(&self, error: ErrorObject, out: Emit<'_>) -> bool {
        out(&failure(self.binding, self.rpc_id.as_ref(), error).1);
        true
    }

    /// The agent's event could not be read: an invalid-answer error event; `false`.
    fn not_understood(&self, error: TranslateError, out: Emit<'_>) -> bool {
        self.write_error(invalid_answer(error), out);
        false
    }

    /// One agent event's `data` as the 1.0 events it stands for (each event's data handed to `out`);
    /// `false` when the agent's event could not be read (an invalid-answer error event stands for it).
    pub(super) fn event(&mut self, data: &[u8], out: Emit<'_>) -> bool {
        match self.dialect {
            // The agent's other 1.0 binding: HTTP+JSON events are bare StreamResponses.
            Dialect::V1 if self.binding == Binding::JsonRpc => match serde_json::from_slice::<StreamResponse>(data) {
                Ok(event) => self.write(&event, out),
                Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() => {
                    self.not_understood(TranslateError::Json("an event that is not JSON".into()), out)
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
                    Err(error) => self.not_understood(error, out),
                }
            }
            Dialect::Early => match serde_json::from_slice::<early::Task>(data) {
                Ok(task) => {
                    for event in self.differ.push(task) {
                        self.write(&event, out);
                    }
                    true
                }
                Err(e) => self.not_understood(TranslateError::Json(e.to_string()), out),
            },
            _ if self.v03_rest => {
                let converted = serde_json::from_slice::<Value>(data)
                    .map_err(|e| TranslateError::Json(e.to_string()))
                    .and_then(v03::rest::event_to_rpc)
                    .and_then(|event| serde_json::to_vec(&event).map_err(|e| TranslateError::Json(e.to_string())))
                    .and_then(|event| v03::event_to_v1(&event));
                match converted {
                    Ok(event) => self.write(&event, out),
                    Err(error) => self.not_understood(error, out),
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
                    Err(error) => self.not_understood(error, out),
                }
            }
        }
    }
}

/// Where a converter hands each 1.0 event's data.
type Emit<'a> = &'a mut dyn FnMut(&[u8]);

/// An agent's SSE stream, event by event in 1.0 (caller's binding); what the relay then relays. An
/// event that is not JSON, or one larger than the stream's limit, ends it with a [`Fault`].
pub struct AgentEvents {
    inner: BoxStream<'static, Result<Bytes, Fault>>,
    parser: SseParser,
    converter: Converter,
    /// The stream ended with this fault, after the events before it were handed on.
    fault: Option<Fault>,
    done: bool,
}

impl AgentEvents {
    pub fn new(
        dialect: Dialect,
        call: &A2aCall,
        inner: BoxStream<'static, Result<Bytes, Fault>>,
        max_event_bytes: usize,
    ) -> AgentEvents {
        AgentEvents {
            inner,
            parser: SseParser::with_limit(max_event_bytes),
            converter: Converter::new(dialect, call, SnapshotDiffer::new()),
            fault: None,
            done: false,
        }
    }

    /// The agent is a 0.3 agent that streams in its HTTP+JSON binding.
    pub fn v03_rest(mut self) -> AgentEvents {
        self.converter.v03_rest = true;
        self
    }
}

impl Stream for AgentEvents {
    type Item = Result<Bytes, Fault>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(fault) = this.fault.take() {
                this.done = true;
                return Poll::Ready(Some(Err(fault)));
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let mut out = Vec::new();
                    let mut malformed = false;
                    let converter = &mut this.converter;
                    this.parser.feed(&chunk, &mut |data| {
                        if malformed {
                            return;
                        }
                        let mut events = Vec::new();
                        let understood = converter.event(data, &mut |event| events.extend_from_slice(&frame(event)));
                        malformed = !understood && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err();
                        if !malformed {
                            out.extend_from_slice(&events);
                        }
                    });
                    let fault = if this.parser.overflowed() {
                        Some(Fault::TooLarge)
                    } else if malformed {
                        Some(Fault::Malformed)
                    } else {
                        None
                    };
                    // The events before a bad one go first; the fault ends the stream after them.
                    this.fault = fault;
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                other => return other,
            }
        }
    }
}

/// For a pass-through stream (caller and agent share a dialect): the relay hands the agent's bytes
/// on unchanged and gives the tap this 1.0 copy of each event.
pub struct ObservedCopy {
    dialect: Dialect,
    converter: Converter,
}

impl ObservedCopy {
    pub fn new(dialect: Dialect, call: &A2aCall) -> ObservedCopy {
        ObservedCopy { dialect, converter: Converter::new(dialect, call, SnapshotDiffer::new()) }
    }

    /// The agent's (and the caller's) dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Hands the 1.0 data of the events one agent event stands for to `out`; `false` when the
    /// agent's event could not be read (nothing is handed on then).
    pub fn translate(&mut self, data: &[u8], out: Emit<'_>) -> bool {
        let mut events: Vec<Vec<u8>> = Vec::new();
        let understood = self.converter.event(data, &mut |event| events.push(event.to_vec()));
        if understood {
            events.iter().for_each(|event| out(event));
        }
        understood
    }
}

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
