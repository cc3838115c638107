//! The audit log: who asked which agent to do what, when, and what happened — one JSON line per
//! event, written off the request path, hash-chained so that changes show.
//!
//! It owns the records' shape, the [`AuditLayer`] that records each request's outcome, the
//! [`TaskObserver`](a2a_core::TaskObserver) implementation on [`Audit`] that records what answers say
//! about tasks, the sinks (stdout, a rotating file) behind a bounded queue, and [`verify_files`].
//!
//! # Events
//!
//! | `event` | when | own fields |
//! |---|---|---|
//! | `task.received` | a send (`SendMessage`, `SendStreamingMessage`) that a backend answered, before any task record of that answer | `content` (only for skills in `include_content_for_skills`) |
//! | `request` | every call that is not denied, when its answer head is ready (after the task records of a unary answer, before those of a stream) | `outcome` (`ok`, `error` for a 4xx/5xx answer or a refusal that is not a denial, `abandoned` when the caller left first), `status`, `duration_ms` (until the answer head), `reason`/`detail` on refusals |
//! | `denied` | a refusal by authentication, permissions, rate limit, concurrency limit or validation | `category` (`authentication`, `permission`, `rate`, `concurrency`, `validation`), `reason` ([`A2aError::reason`](a2a_core::A2aError::reason)), `detail` ([`RequestInfo::denial_detail`](a2a_core::RequestInfo::denial_detail)), `duration_ms`; `retry_after_ms`, `held`/`limit` or `violations` (JSON pointers only) |
//! | `task.state` | a task's state differs from the last one recorded for it | `state` (A2A wire name), `source` (`response` or `stream`) |
//! | `artifact.delivered` | an artifact (by id and content hash) not yet recorded for its task | `artifact_id`, `name`, `part_count`, `bytes`, `sha256` — never the content |
//! | `task.ended` | right after the `task.state` record of a terminal state | `state`, `duration_ms` since the task was first seen (the start of the request that first showed it) |
//! | `admin.change` | an operator's change through the admin API, or an agent's self-registration (no common fields) | `admin`, `admin_auth`, `action`, `target`, `detail` |
//! | `audit.dropped` | records were lost: the queue was full, or (under `on_write_failure: fail_open`) a target could not write them; written as soon as it can | `count` (exact), `cause` (`queue_full`, `write_failed`), `first_ts`/`last_ts` (when the first and last lost record were made; for `write_failed`) |
//! | `chain_anchor` | first record of each file and of each start | `reason` (`start`, `rotate`), `prev_file` |
//!
//! Each call yields exactly one `request` or `denied` record. Every event record carries `ts` (RFC
//! 3339, milliseconds, UTC), `event`, `caller`, `tenant`, `request_id`, `trace_id`, `skill`,
//! `backend`, `task_id`, `context_id`, `binding` (`JSONRPC`, `HTTP+JSON`) and `operation` (A2A
//! method name), `null` when unknown; every record ends with the chain fields `seq` and `prev`
//! (see [`chain`]). Error messages are never logged: they may quote what the caller sent.
//!
//! # Content
//!
//! Message text and data are never written, except for skills listed in
//! `audit.include_content_for_skills`: then the `task.received` record of a send routed to such a
//! skill carries `"content": {"parts": [...]}`, the request message's `parts` exactly as the caller
//! sent them (line breaks between tokens removed), or `null` when the body has none. Artifacts and
//! agent messages are never written.
//!
//! # Wiring
//!
//! ```no_run
//! # async fn wire(config: a2a_policies::audit::AuditConfig) -> Result<(), a2a_policies::audit::AuditError> {
//! use a2a_policies::audit::Audit;
//! let (audit, sink) = Audit::start(&config).await?;
//! let layer = audit.layer(); // right inside the decode layer
//! let observer: std::sync::Arc<dyn a2a_core::TaskObserver> = std::sync::Arc::new(audit.clone());
//! // ... serve; on graceful shutdown, after draining requests:
//! sink.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod chain;
mod config;
mod file;
mod layer;
mod observer;
mod record;
mod requests;
mod sink;
mod verify;

#[cfg(test)]
pub(crate) mod tests;

use std::sync::Arc;

pub use chain::ChainKey;
pub use config::{AuditConfig, ConfigError, FileConfig, OnWriteFailure};
pub use file::chain_files;
pub use layer::{AuditLayer, AuditService, ResponseFuture, TraceId};
pub use record::AdminChange;
pub use sink::{AuditError, AuditSink, SinkHandle};
pub use verify::{
    BrokenLink, ChainStart, FileSummary, Gap, Problem, VerifyOptions, VerifyReport, verify_files, verify_files_with,
};

/// What became of one push notification (see [`Audit::push`]).
#[derive(Debug, Clone)]
pub struct PushOutcome {
    pub delivered: bool,
    pub attempts: u32,
    pub state: Option<a2a_core::TaskState>,
    /// Why it was given up on (never the receiver's answer body).
    pub detail: Option<String>,
}

/// The recorder: the layer's and the observer's shared state. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    sink: SinkHandle,
    content_skills: Box<[Box<str>]>,
    requests: requests::Requests,
    tasks: observer::Tasks,
}

/// Numbers for the metrics endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditStats {
    /// Records waiting for the writer.
    pub queue_depth: usize,
    pub queue_capacity: usize,
    /// Records dropped since start because the queue was full (each drop is also reported in the
    /// log by an `audit.dropped` record).
    pub dropped_total: u64,
    /// Failed writes to a sink since start.
    pub write_errors_total: u64,
    /// Records lost since start because a target could not write them (`fail_open`): exactly the
    /// counts the `audit.dropped` records with cause `write_failed` report.
    pub lost_total: u64,
    /// Calls refused since start because a target could not write (`fail_closed`), reported by
    /// `audit.refused` records.
    pub refused_total: u64,
    /// Every target writes (see [`AuditConfig::on_write_failure`]).
    pub writable: bool,
}

/// Lets a periodic chore (pruning a map) run at most once per period, whichever thread asks.
#[derive(Debug)]
struct Throttle {
    epoch: std::time::Instant,
    last: std::sync::atomic::AtomicU64,
    period: std::time::Duration,
}

impl Throttle {
    fn new(period: std::time::Duration) -> Throttle {
        Throttle { epoch: std::time::Instant::now(), last: std::sync::atomic::AtomicU64::new(0), period }
    }

    /// Milliseconds since the throttle was made.
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// True for exactly one caller once per period.
    fn due(&self) -> bool {
        use std::sync::atomic::Ordering;
        let now = self.now();
        let last = self.last.load(Ordering::Relaxed);
        now.saturating_sub(last) >= self.period.as_millis() as u64
            && self.last.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }
}

impl Audit {
    /// Starts the sink described by `config` and a recorder writing to it.
    pub async fn start(config: &AuditConfig) -> Result<(Audit, AuditSink), AuditError> {
        let sink = AuditSink::start(config).await?;
        Ok((Audit::new(config, sink.handle()), sink))
    }

    /// A recorder writing to an already started sink.
    pub fn new(config: &AuditConfig, sink: SinkHandle) -> Audit {
        Audit {
            inner: Arc::new(Inner {
                sink,
                content_skills: config.include_content_for_skills.iter().map(|s| Box::from(s.as_str())).collect(),
                requests: requests::Requests::new(),
                tasks: observer::Tasks::new(),
            }),
        }
    }

    /// Records a push notification to `caller`'s webhook for `task_id`: delivered or given up on.
    pub fn push(&self, caller: Option<&a2a_core::Caller>, backend: &str, task_id: &str, outcome: PushOutcome) {
        let common = record::Common {
            caller: caller.map(|c| c.id.clone()),
            tenant: caller.and_then(a2a_core::Caller::qualified_tenant),
            backend: Some(Arc::from(backend)),
            task_id: Some(Arc::from(task_id)),
            ..record::Common::default()
        };
        let kind = record::Kind::Push {
            delivered: outcome.delivered,
            attempts: outcome.attempts,
            state: outcome.state,
            detail: outcome.detail,
        };
        self.inner.sink.send(record::Record::event(common, kind));
    }

    pub fn layer(&self) -> AuditLayer {
        AuditLayer::new(self.clone())
    }

    /// Records an operator's change to the running gateway.
    pub fn admin_change(&self, change: AdminChange) {
        self.inner.sink.send(record::Record::meta(record::Kind::Admin(Box::new(change))));
    }

    pub fn stats(&self) -> AuditStats {
        let sink = &self.inner.sink;
        AuditStats {
            queue_depth: sink.queue_depth(),
            queue_capacity: sink.queue_capacity(),
            dropped_total: sink.dropped(),
            write_errors_total: sink.write_errors(),
            lost_total: sink.lost(),
            refused_total: sink.refused_total(),
            writable: sink.writable(),
        }
    }
}
