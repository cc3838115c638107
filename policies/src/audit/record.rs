//! One audit record: what the request path hands to the writer, and its JSON form, written where
//! the record is made ([`Record::written`]) so that the one writer thread only links and writes
//! lines.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::value::RawValue;

use super::chain::{Begun, ChainKey};
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
#[derive(Debug)]
pub(crate) struct Written {
    pub at: SystemTime,
    /// One JSON object, no line break.
    pub json: Vec<u8>,
    /// A `chain_seal`: its line carries a `mac` over itself.
    pub seal: bool,
    /// The hash of its line, begun on the worker ([`Written::begin_hash`]).
    pub begun: Option<Begun>,
}

impl Written {
    /// Hashes the head of the record's line here, on the worker, so that the writer thread need
    /// only hash its tail ([`Begun`]). Seals are made by the writer thread itself.
    pub fn begin_hash(&mut self, key: &ChainKey) {
        if !self.seal {
            self.begun = Some(key.begin(&self.json));
        }
    }
}

impl Record {
    /// The record written out: what the writer thread takes.
    pub fn written(&self) -> Written {
        let mut json = Vec::with_capacity(512);
        self.write_json(&mut json);
        Written { at: self.at, json, seal: self.kind.event() == SEAL_EVENT, begun: None }
    }

    pub fn event(common: Common, kind: Kind) -> Record {
        Record { at: SystemTime::now(), common: Some(common), kind }
    }

    pub fn meta(kind: Kind) -> Record {
        Record { at: SystemTime::now(), common: None, kind }
    }

    /// Appends the record as one JSON object (no line break) to `out`: `ts` and `event`, the common
    /// facts, then what the kind adds.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(b"{\"ts\":\"");
        push_timestamp(out, self.at);
        out.extend_from_slice(b"\",\"event\":\"");
        // Event names are ASCII identifiers: nothing to escape.
        out.extend_from_slice(self.kind.event().as_bytes());
        out.push(b'"');
        if let Some(common) = &self.common {
            // The records of one call share their common facts (the same `Arc`s, compared by
            // address first): each thread keeps the last ones it wrote and copies them.
            LAST_COMMON.with_borrow_mut(|last| match last {
                Some((seen, fragment)) if seen == common => out.extend_from_slice(fragment),
                _ => {
                    let mut fragment = Vec::with_capacity(256);
                    Entries(&mut fragment).common(common);
                    out.extend_from_slice(&fragment);
                    *last = Some((common.clone(), fragment));
                }
            });
        }
        Entries(out).kind(&self.kind);
        out.push(b'}');
        escape_line_breakers(out, start);
    }
}

/// Writes `,"key":value` entries into a record's line, as serde_json's compact form writes them:
/// the keys are ASCII identifiers, written as they are; a string is copied between its quotes
/// unless a byte of it needs escaping, and then serde_json writes it. (Through serde_json's map
/// serializer every entry cost ~400 instructions; the writing of records was most of what the
/// audit log costs a call.)
struct Entries<'a>(&'a mut Vec<u8>);

/// An entry's start, `,"name":`, made at compile time.
macro_rules! key {
    ($name:literal) => {
        concat!(",\"", $name, "\":")
    };
}

impl Entries<'_> {
    /// `key` is the entry's start as written, `,"name":` ([`key!`]): one copy, no escaping.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.0.extend_from_slice(key.as_bytes());
        self.0
    }

    fn str(&mut self, key: &str, value: &str) {
        push_str(self.key(key), value);
    }

    /// A string, or `null`.
    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.str(key, value),
            None => self.key(key).extend_from_slice(b"null"),
        }
    }

    fn number(&mut self, key: &str, value: u64) {
        super::chain::push_decimal(self.key(key), value);
    }

    /// Anything else, as serde_json writes it (rare records, the request's content).
    fn json(&mut self, key: &str, value: &impl Serialize) {
        let out = self.key(key);
        if serde_json::to_writer(&mut *out, value).is_err() {
            // Only a map with non-string keys fails, and no record holds one.
            out.extend_from_slice(b"null");
        }
    }

    fn common(&mut self, c: &Common) {
        self.opt_str(key!("caller"), c.caller.as_deref());
        self.opt_str(key!("tenant"), c.tenant.as_deref());
        self.opt_str(key!("request_id"), c.request_id.as_deref());
        self.opt_str(key!("trace_id"), c.trace_id.as_deref());
        self.opt_str(key!("skill"), c.skill.as_deref());
        self.opt_str(key!("backend"), c.backend.as_deref());
        self.opt_str(key!("task_id"), c.task_id.as_deref());
        self.opt_str(key!("context_id"), c.context_id.as_deref());
        self.opt_str(key!("binding"), c.binding.map(Binding::as_str));
        self.opt_str(key!("operation"), c.operation.map(Operation::method_name));
        if let Some(routed_by) = &c.routed_by {
            self.str(key!("routed_by"), routed_by);
        }
    }

    fn kind(&mut self, kind: &Kind) {
        match kind {
            Kind::Received { content } => {
                if let Some(content) = content {
                    self.json(key!("content"), &ContentOut { parts: &content.parts });
                }
            }
            Kind::Request { outcome, status, duration, reason, detail } => {
                self.str(key!("outcome"), outcome.as_str());
                match status {
                    Some(status) => self.number(key!("status"), u64::from(*status)),
                    None => self.key(key!("status")).extend_from_slice(b"null"),
                }
                self.number(key!("duration_ms"), millis(*duration));
                if let Some(reason) = reason {
                    self.str(key!("reason"), reason);
                }
                if let Some(detail) = detail {
                    self.str(key!("detail"), detail);
                }
            }
            Kind::Denied { category, reason, detail, duration, extra } => {
                self.str(key!("category"), category);
                self.str(key!("reason"), reason);
                self.opt_str(key!("detail"), detail.as_deref());
                self.number(key!("duration_ms"), millis(*duration));
                match extra {
                    DenialExtra::None => {}
                    DenialExtra::RetryAfter(after) => self.number(key!("retry_after_ms"), millis(*after)),
                    DenialExtra::Tasks { held, limit } => {
                        self.number(key!("held"), *held as u64);
                        self.number(key!("limit"), *limit as u64);
                    }
                    DenialExtra::Violations(pointers) => self.json(key!("violations"), pointers),
                }
            }
            Kind::State { state, source } => {
                self.str(key!("state"), state.as_str());
                self.str(key!("source"), source_name(*source));
            }
            Kind::Artifact { artifact, source } => {
                self.opt_str(key!("artifact_id"), artifact.artifact_id.as_deref());
                self.opt_str(key!("name"), artifact.name.as_deref());
                self.number(key!("part_count"), artifact.parts as u64);
                self.number(key!("bytes"), artifact.bytes as u64);
                self.str(key!("sha256"), &artifact.sha256);
                self.str(key!("source"), source_name(*source));
            }
            Kind::Ended { state, duration } => {
                self.str(key!("state"), state.as_str());
                self.number(key!("duration_ms"), millis(*duration));
            }
            Kind::Dropped { count, cause, first, last } => {
                self.number(key!("count"), *count);
                self.str(key!("cause"), cause);
                for (key, at) in [(key!("first_ts"), first), (key!("last_ts"), last)] {
                    if let Some(at) = at {
                        self.str(key, &humantime::format_rfc3339_millis(*at).to_string());
                    }
                }
            }
            Kind::Refused { count, first, last, reasons } => {
                self.number(key!("count"), *count);
                self.str(key!("first_ts"), &humantime::format_rfc3339_millis(*first).to_string());
                self.str(key!("last_ts"), &humantime::format_rfc3339_millis(*last).to_string());
                self.json(key!("reasons"), reasons);
            }
            Kind::Admin(change) => {
                self.str(key!("admin"), &change.admin);
                self.str(key!("admin_auth"), change.method);
                self.str(key!("action"), change.action);
                self.str(key!("target"), &change.target);
                self.json(key!("detail"), &change.detail);
            }
            Kind::Push { delivered: _, attempts, state, detail } => {
                self.number(key!("attempts"), u64::from(*attempts));
                self.opt_str(key!("state"), state.map(TaskState::as_str));
                self.opt_str(key!("detail"), detail.as_deref());
            }
            Kind::Anchor { reason, prev_file, keyed } => {
                self.str(key!("reason"), reason);
                self.opt_str(key!("prev_file"), prev_file.as_deref());
                if *keyed {
                    self.key(key!("keyed")).extend_from_slice(b"true");
                }
            }
            Kind::Seal { reason } => self.str(key!("reason"), reason),
        }
    }
}

/// Appends `text` as a JSON string: as it is between quotes when no byte of it needs escaping (what
/// serde_json escapes: `"`, `\\` and the C0 controls), else as serde_json writes it.
fn push_str(out: &mut Vec<u8>, text: &str) {
    if !needs_escape(text.as_bytes()) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, text).is_err() {
        // Writing a string into a Vec cannot fail.
        out.extend_from_slice(b"null");
    }
}

/// Whether a byte of `text` is one a JSON string must escape (`"`, `\\`, a C0 control), eight
/// bytes at a time: a word has a byte below `n` when `(x - 0x01..01 * n) & !x & 0x80..80` is not
/// zero, and a byte equal to `c` when `x ^ 0x01..01 * c` has a byte below 1.
fn needs_escape(text: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS;
    let mut words = text.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        if below(x, 0x20) | below(x ^ (ONES * u64::from(b'"')), 1) | below(x ^ (ONES * u64::from(b'\\')), 1) != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

thread_local! {
    /// The common facts last written on this thread, and their entries.
    static LAST_COMMON: std::cell::RefCell<Option<(Common, Vec<u8>)>> = const { std::cell::RefCell::new(None) };
    /// The millisecond last written on this thread, and its RFC 3339 form.
    static LAST_STAMP: std::cell::Cell<(u128, [u8; 24])> = const { std::cell::Cell::new((u128::MAX, [0; 24])) };
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
