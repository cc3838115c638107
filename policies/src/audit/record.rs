//! One audit record: what the request path hands to the writer, and its JSON form. Building a
//! record only copies a few ids; the writer thread formats it, so JSON work stays off the request
//! path.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer as _};
use serde_json::value::RawValue;

use a2a_core::{ArtifactInfo, Binding, Operation, Source, TaskState};

/// The facts every event record carries, `null` when unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Common {
    pub caller: Option<Arc<str>>,
    pub tenant: Option<Arc<str>>,
    pub request_id: Option<Arc<str>>,
    pub trace_id: Option<Arc<str>>,
    pub skill: Option<Arc<str>>,
    pub backend: Option<Arc<str>>,
    pub task_id: Option<Arc<str>>,
    pub context_id: Option<Arc<str>>,
    pub binding: Option<Binding>,
    pub operation: Option<Operation>,
    /// How routing chose the skill when the call named none.
    pub routed_by: Option<Arc<str>>,
}

/// How a call ended, for `request` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// An answer with a 1xx-3xx status.
    Ok,
    /// An answer with a 4xx/5xx status, or a refusal that is not a denial.
    Error,
    /// The caller went away before the answer was ready.
    Abandoned,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Abandoned => "abandoned",
        }
    }
}

/// What a denial adds beyond its reason code; never anything the caller sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DenialExtra {
    None,
    RetryAfter(Duration),
    Tasks {
        held: usize,
        limit: usize,
    },
    /// JSON pointers of the failing places, without the descriptions (they may quote the input).
    Violations(Vec<String>),
}

/// The message parts of a send whose skill asks for content in the log, written from the checked
/// message as the body the agent gets writes them (compact JSON: one line).
#[derive(Debug, Clone)]
pub(crate) struct Content {
    pub parts: Box<RawValue>,
}

impl PartialEq for Content {
    fn eq(&self, other: &Content) -> bool {
        self.parts.get() == other.parts.get()
    }
}

/// An operator's change made through the admin API (or an agent's self-registration): who made it,
/// what it did, to what. Never carries a credential.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminChange {
    /// The admin's identity (`key:<caller>`, a token's subject, or `local:<address>` on an
    /// unauthenticated loopback listener; `agent:<credential id>` for self-registration).
    pub admin: String,
    /// How the admin was authenticated (`api_key`, `jwt`, `introspection`, `loopback`,
    /// `registration`).
    pub method: &'static str,
    /// `backend.register`, `backend.deregister`, `backend.drain`, `backend.undrain`,
    /// `backend.refresh`, `agent.register`, `agent.leave`, `agent.expire`.
    pub action: &'static str,
    /// The backend's name.
    pub target: String,
    /// The change's parameters (e.g. the URL registered), free of secrets.
    pub detail: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Received {
        content: Option<Content>,
    },
    Request {
        outcome: Outcome,
        status: Option<u16>,
        duration: Duration,
        reason: Option<&'static str>,
        detail: Option<String>,
    },
    Denied {
        category: &'static str,
        reason: &'static str,
        detail: Option<String>,
        duration: Duration,
        extra: DenialExtra,
    },
    State {
        state: TaskState,
        source: Source,
    },
    Artifact {
        artifact: ArtifactInfo,
        source: Source,
    },
    Ended {
        state: TaskState,
        duration: Duration,
    },
    /// Records lost since the last such report: `cause` `queue_full` (they did not fit in the
    /// queue) or `write_failed` (a target could not write them, under `on_write_failure:
    /// fail_open`); `first`/`last` are when the first and the last lost record were made, when known.
    Dropped {
        count: u64,
        cause: &'static str,
        first: Option<SystemTime>,
        last: Option<SystemTime>,
    },
    /// Calls refused under `fail_closed` while the log could not write, reported once it can:
    /// how many, when the first and the last were refused, and why the log could not write.
    Refused {
        count: u64,
        first: SystemTime,
        last: SystemTime,
        reasons: Vec<String>,
    },
    /// An operator's change to the running gateway through the admin API.
    Admin(Box<AdminChange>),
    /// A push notification to a caller's webhook: delivered, or given up on (`detail` says why).
    Push {
        delivered: bool,
        attempts: u32,
        state: Option<TaskState>,
        detail: Option<String>,
    },
    /// The first record of every chain segment: a new file, or a restart into an existing one.
    Anchor {
        reason: &'static str,
        prev_file: Option<String>,
        /// The chain is keyed (`verify` then needs the key).
        keyed: bool,
    },
    /// The last record of a rotated file, and of the active file at shutdown: vouches, with its
    /// `mac`, that nothing was cut off after it.
    Seal {
        reason: &'static str,
    },
}

impl Kind {
    pub fn event(&self) -> &'static str {
        match self {
            Kind::Received { .. } => "task.received",
            Kind::Request { .. } => "request",
            Kind::Denied { .. } => "denied",
            Kind::State { .. } => "task.state",
            Kind::Artifact { .. } => "artifact.delivered",
            Kind::Ended { .. } => "task.ended",
            Kind::Dropped { .. } => "audit.dropped",
            Kind::Refused { .. } => "audit.refused",
            Kind::Admin(_) => "admin.change",
            Kind::Push { delivered: true, .. } => "push.delivered",
            Kind::Push { delivered: false, .. } => "push.failed",
            Kind::Anchor { .. } => ANCHOR_EVENT,
            Kind::Seal { .. } => SEAL_EVENT,
        }
    }
}

pub(crate) const ANCHOR_EVENT: &str = "chain_anchor";
pub(crate) const SEAL_EVENT: &str = "chain_seal";

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub at: SystemTime,
    /// `None` for the log's own records (`audit.dropped`, `chain_anchor`).
    pub common: Option<Common>,
    pub kind: Kind,
}

/// A record as the writer thread takes it: its JSON object, written where the record was made (on the
/// worker that served the call). Every worker's records pass through that one thread, because the
/// chain links each line to the one before; what it does per record is what bounds the records per
/// second of the whole gateway, so it does only the linking (`seq`, `prev`, the line's hash) and the
/// writing, and the writing out of the record's facts is shared out among the workers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Written {
    pub at: SystemTime,
    /// One JSON object, no line break.
    pub json: Vec<u8>,
    /// A `chain_seal`: its line carries a `mac` over itself.
    pub seal: bool,
}

impl Record {
    /// The record written out: what the writer thread takes.
    pub fn written(&self) -> Written {
        let mut json = Vec::with_capacity(512);
        self.write_json(&mut json);
        Written { at: self.at, json, seal: self.kind.event() == SEAL_EVENT }
    }

    pub fn event(common: Common, kind: Kind) -> Record {
        Record { at: SystemTime::now(), common: Some(common), kind }
    }

    pub fn meta(kind: Kind) -> Record {
        Record { at: SystemTime::now(), common: None, kind }
    }

    /// Appends the record as one JSON object (no line break) to `out`: `ts` and `event`, the common
    /// facts, then what the kind adds. The records of one call share their common facts, so the
    /// writer thread keeps the last one written and copies it rather than escaping it again.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(b"{\"ts\":\"");
        push_timestamp(out, self.at);
        out.extend_from_slice(b"\",\"event\":\"");
        // Event names are ASCII identifiers: nothing to escape.
        out.extend_from_slice(self.kind.event().as_bytes());
        out.push(b'"');
        if let Some(common) = &self.common {
            LAST_COMMON.with_borrow_mut(|last| {
                if last.as_ref().is_none_or(|(seen, _)| seen != common) {
                    let mut fragment = Vec::with_capacity(256);
                    push_entries(&mut fragment, |map| serialize_common(common, map));
                    *last = Some((common.clone(), fragment));
                }
                if let Some((_, fragment)) = last {
                    out.extend_from_slice(fragment);
                }
            });
        }
        push_entries(out, |map| self.serialize_kind(map));
        out.push(b'}');
        escape_line_breakers(out, start);
    }

    fn serialize_kind(&self, map: &mut Map<'_>) -> serde_json::Result<()> {
        match &self.kind {
            Kind::Received { content } => {
                if let Some(content) = content {
                    map.serialize_entry("content", &ContentOut { parts: &content.parts })?;
                }
            }
            Kind::Request { outcome, status, duration, reason, detail } => {
                map.serialize_entry("outcome", outcome.as_str())?;
                map.serialize_entry("status", status)?;
                map.serialize_entry("duration_ms", &millis(*duration))?;
                if let Some(reason) = reason {
                    map.serialize_entry("reason", reason)?;
                }
                if let Some(detail) = detail {
                    map.serialize_entry("detail", detail)?;
                }
            }
            Kind::Denied { category, reason, detail, duration, extra } => {
                map.serialize_entry("category", category)?;
                map.serialize_entry("reason", reason)?;
                map.serialize_entry("detail", detail)?;
                map.serialize_entry("duration_ms", &millis(*duration))?;
                match extra {
                    DenialExtra::None => {}
                    DenialExtra::RetryAfter(after) => map.serialize_entry("retry_after_ms", &millis(*after))?,
                    DenialExtra::Tasks { held, limit } => {
                        map.serialize_entry("held", held)?;
                        map.serialize_entry("limit", limit)?;
                    }
                    DenialExtra::Violations(pointers) => map.serialize_entry("violations", pointers)?,
                }
            }
            Kind::State { state, source } => {
                map.serialize_entry("state", state.as_str())?;
                map.serialize_entry("source", source_name(*source))?;
            }
            Kind::Artifact { artifact, source } => {
                map.serialize_entry("artifact_id", &artifact.artifact_id)?;
                map.serialize_entry("name", &artifact.name)?;
                map.serialize_entry("part_count", &artifact.parts)?;
                map.serialize_entry("bytes", &artifact.bytes)?;
                map.serialize_entry("sha256", &artifact.sha256)?;
                map.serialize_entry("source", source_name(*source))?;
            }
            Kind::Ended { state, duration } => {
                map.serialize_entry("state", state.as_str())?;
                map.serialize_entry("duration_ms", &millis(*duration))?;
            }
            Kind::Dropped { count, cause, first, last } => {
                map.serialize_entry("count", count)?;
                map.serialize_entry("cause", cause)?;
                for (key, at) in [("first_ts", first), ("last_ts", last)] {
                    if let Some(at) = at {
                        map.serialize_entry(key, &humantime::format_rfc3339_millis(*at).to_string())?;
                    }
                }
            }
            Kind::Refused { count, first, last, reasons } => {
                map.serialize_entry("count", count)?;
                map.serialize_entry("first_ts", &humantime::format_rfc3339_millis(*first).to_string())?;
                map.serialize_entry("last_ts", &humantime::format_rfc3339_millis(*last).to_string())?;
                map.serialize_entry("reasons", reasons)?;
            }
            Kind::Admin(change) => {
                map.serialize_entry("admin", &change.admin)?;
                map.serialize_entry("admin_auth", &change.method)?;
                map.serialize_entry("action", &change.action)?;
                map.serialize_entry("target", &change.target)?;
                map.serialize_entry("detail", &change.detail)?;
            }
            Kind::Push { delivered: _, attempts, state, detail } => {
                map.serialize_entry("attempts", attempts)?;
                map.serialize_entry("state", &state.map(TaskState::as_str))?;
                map.serialize_entry("detail", detail)?;
            }
            Kind::Anchor { reason, prev_file, keyed } => {
                map.serialize_entry("reason", reason)?;
                map.serialize_entry("prev_file", prev_file)?;
                if *keyed {
                    map.serialize_entry("keyed", &true)?;
                }
            }
            Kind::Seal { reason } => map.serialize_entry("reason", reason)?,
        }
        Ok(())
    }
}

type Map<'a> = serde_json::ser::Compound<'a, &'a mut Vec<u8>, serde_json::ser::CompactFormatter>;

thread_local! {
    /// The common facts last written on this thread, and their JSON entries.
    static LAST_COMMON: std::cell::RefCell<Option<(Common, Vec<u8>)>> = const { std::cell::RefCell::new(None) };
    /// The millisecond last written on this thread, and its RFC 3339 form.
    static LAST_STAMP: std::cell::Cell<(u128, [u8; 24])> = const { std::cell::Cell::new((u128::MAX, [0; 24])) };
}

/// Appends the entries `write` makes, each after a comma, as they go inside an object.
fn push_entries(out: &mut Vec<u8>, write: impl FnOnce(&mut Map<'_>) -> serde_json::Result<()>) {
    let start = out.len();
    {
        let mut serializer = serde_json::Serializer::new(&mut *out);
        // Writing into a Vec with string keys cannot fail.
        if let Ok(mut map) = serializer.serialize_map(None) {
            let _ = write(&mut map);
            let _ = SerializeMap::end(map);
        }
    }
    // `{` + entries + `}` became `,` + entries; an empty map leaves nothing.
    if out.len() - start <= 2 {
        out.truncate(start);
    } else {
        out[start] = b',';
        out.pop();
    }
}

/// Appends `at` as RFC 3339 UTC with milliseconds (`2026-12-04T23:29:02.587Z`).
fn push_timestamp(out: &mut Vec<u8>, at: SystemTime) {
    let millis = at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let (seen, mut text) = LAST_STAMP.get();
    if seen != millis {
        let formatted = humantime::format_rfc3339_millis(at).to_string();
        text = [0; 24];
        let len = formatted.len().min(24);
        text[..len].copy_from_slice(&formatted.as_bytes()[..len]);
        LAST_STAMP.set((millis, text));
    }
    out.extend_from_slice(&text);
}

fn serialize_common(c: &Common, map: &mut Map<'_>) -> serde_json::Result<()> {
    map.serialize_entry("caller", &c.caller.as_deref())?;
    map.serialize_entry("tenant", &c.tenant.as_deref())?;
    map.serialize_entry("request_id", &c.request_id.as_deref())?;
    map.serialize_entry("trace_id", &c.trace_id.as_deref())?;
    map.serialize_entry("skill", &c.skill.as_deref())?;
    map.serialize_entry("backend", &c.backend.as_deref())?;
    map.serialize_entry("task_id", &c.task_id.as_deref())?;
    map.serialize_entry("context_id", &c.context_id.as_deref())?;
    map.serialize_entry("binding", &c.binding.map(Binding::as_str))?;
    map.serialize_entry("operation", &c.operation.map(Operation::method_name))?;
    if let Some(routed_by) = &c.routed_by {
        map.serialize_entry("routed_by", &**routed_by)?;
    }
    Ok(())
}

/// serde_json escapes C0 controls but writes DEL, the C1 controls (NEL among them) and the line and
/// paragraph separators U+2028/U+2029 raw; line-oriented readers split records at some of them.
/// They only occur inside JSON strings, where `\uXXXX` means the same character.
fn escape_line_breakers(out: &mut Vec<u8>, start: usize) {
    // DEL, and the lead bytes of C1 controls (0xc2) and of U+2028/U+2029 (0xe2): one vector scan
    // of the record, which almost never finds one.
    if memchr::memchr3(0x7f, 0xc2, 0xe2, &out[start..]).is_none() {
        return;
    }
    let tail = out.split_off(start);
    let text = String::from_utf8_lossy(&tail);
    for c in text.chars() {
        let code = u32::from(c);
        if code == 0x7f || (0x80..=0x9f).contains(&code) || code == 0x2028 || code == 0x2029 {
            out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::Response => "response",
        Source::Stream => "stream",
    }
}

#[derive(Serialize)]
struct ContentOut<'a> {
    /// The request's message parts.
    parts: &'a RawValue,
}

#[cfg(test)]
mod tests;
