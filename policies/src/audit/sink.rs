//! Over 400 lines on purpose: the queue, the writer thread and the chained batch writer share one
//! protocol for losses and retries; apart they would each need the others' internals.
//!
//! Where records go: a bounded queue filled from the request path with `try_send` (each record
//! already written out as JSON, its line's hash begun, [`Written`]), and one writer thread, owned
//! by [`AuditSink`], that links each into the chain and writes it to every target (stdout, the
//! rotating file). A full queue never blocks a request: the record is counted as dropped and the
//! writer writes an `audit.dropped {count}` record as soon as it has taken the next message off
//! the queue, so a drop is never silent.
//!
//! A target that cannot write (a full disk) follows `audit.on_write_failure`. Lines reach the chain
//! only once they reached the file: a line torn by a failed write is cut off, and the chain never
//! links to a line that is not there. `fail_closed` keeps unwritten lines in memory and retries
//! them in order (the request path meanwhile refuses new calls: [`SinkHandle::refusing`]);
//! `fail_open` counts them and writes an `audit.dropped` record with the count and time range in
//! their place as soon as a write succeeds. Either way the log says it writes again only when a
//! line really went out.
//!
//! The writer is a plain thread rather than a tokio task because file writes and fsync block; it
//! ends when [`AuditSink::shutdown`] tells it to (after draining the queue and syncing), or when
//! every handle is gone.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use std::time::{Duration, SystemTime};

use super::chain::{Chain, ChainKey};
use super::config::{AuditConfig, ConfigError, OnWriteFailure};
use super::file::FileTarget;
use super::record::{Kind, Record, Written};

/// Why the audit log could not start or write.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot open the audit file {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot write the audit log to {target}: {source}")]
    Write { target: String, source: io::Error },
    #[error("the audit writer has stopped")]
    Stopped,
}

/// One destination of records. Implementations keep their own hash chain.
pub(crate) trait Target: Send {
    /// Writes one record (possibly into a buffer).
    fn write(&mut self, record: &Written) -> io::Result<()>;
    /// Hands buffered lines to the operating system (and retries what could not be written);
    /// called when the queue runs empty and while the target is failing.
    fn flush(&mut self) -> io::Result<()>;
    /// Whether the target holds records it could not write, or owes a report of lost ones.
    fn failing(&self) -> bool;
    /// Records this target lost since it was opened (`fail_open`).
    fn lost(&self) -> u64;
    /// Writes the closing seal (at shutdown); targets without one do nothing.
    fn seal(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Flushes and makes the lines durable.
    fn sync(&mut self) -> io::Result<()>;
    /// For error messages: `stdout` or the file's path.
    fn describe(&self) -> String;
}

/// Opens a target on the writer thread, so that file access never runs on the runtime.
pub(crate) type Opener = Box<dyn FnOnce() -> Result<Box<dyn Target>, AuditError> + Send>;

enum Msg {
    Record(Written),
    /// Sent after a drop, in case the writer went idle before it could see the drop counter.
    Wake,
    Flush(oneshot::Sender<Result<(), AuditError>>),
    Shutdown(oneshot::Sender<Result<(), AuditError>>),
}

#[derive(Debug, Default)]
struct Counters {
    /// Records that never reached the writer, since start.
    dropped: AtomicU64,
    /// Dropped records not yet reported by an `audit.dropped` record.
    unreported: AtomicU64,
    /// Failed writes to a target, since start.
    write_errors: AtomicU64,
    /// Some target cannot write right now.
    unwritable: std::sync::atomic::AtomicBool,
    /// `on_write_failure: fail_closed`: refuse calls while unwritable.
    fail_closed: bool,
    /// Records lost to failing targets (`fail_open`), since start: the sum of the counts the
    /// `audit.dropped` records with cause `write_failed` state (or will, once written).
    lost: AtomicU64,
    /// Calls refused (`fail_closed`) since start.
    refused_total: AtomicU64,
    /// Refusals not yet reported by an `audit.refused` record.
    refused: std::sync::Mutex<Option<Refusals>>,
    /// The chain key workers begin each record's line hash under: the file's (stdout's chain, when
    /// the file's is keyed, hashes its lines whole).
    begin_with: ChainKey,
}

/// Calls refused while the log could not write, waiting to be reported.
#[derive(Debug, Clone)]
struct Refusals {
    count: u64,
    first: SystemTime,
    last: SystemTime,
    reasons: Vec<String>,
}

/// The request path's side of the sink: cheap to clone, never blocks.
#[derive(Clone)]
pub struct SinkHandle {
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SinkHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkHandle").field("queue_depth", &self.queue_depth()).finish_non_exhaustive()
    }
}

impl SinkHandle {
    /// Queues a record for the writer, or counts it as dropped when the queue is full. Its place is
    /// taken before the record is written out: a writer that cannot keep up costs the workers
    /// nothing for the records it would drop.
    pub(crate) fn send(&self, record: Record) {
        match self.tx.try_reserve() {
            Ok(place) => {
                let mut written = record.written();
                written.begin_hash(&self.counters.begin_with);
                place.send(Msg::Record(written));
            }
            Err(mpsc::error::TrySendError::Full(())) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                self.counters.unreported.fetch_add(1, Ordering::AcqRel);
                // The queue is full, so the writer is busy and will see the counter after its next
                // message; should it have emptied the queue meanwhile, this wakes it.
                let _ = self.tx.try_send(Msg::Wake);
            }
            Err(mpsc::error::TrySendError::Closed(())) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Messages waiting for the writer.
    pub fn queue_depth(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    pub fn queue_capacity(&self) -> usize {
        self.tx.max_capacity()
    }

    /// Records dropped since start because the queue was full (or the writer had stopped).
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Failed writes since start (each also logged when a target starts or stops failing).
    pub fn write_errors(&self) -> u64 {
        self.counters.write_errors.load(Ordering::Relaxed)
    }

    /// Whether every target writes (no records waiting for a failing one, no loss unreported).
    pub fn writable(&self) -> bool {
        !self.counters.unwritable.load(Ordering::Relaxed)
    }

    /// Whether new calls must be refused: a target cannot write and the policy is `fail_closed`.
    pub fn refusing(&self) -> bool {
        self.counters.fail_closed && !self.writable()
    }

    /// Counts a call refused because the log cannot write; the writer reports the refusals in one
    /// `audit.refused` record once it writes again.
    pub fn refused(&self) {
        self.counters.refused_total.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now();
        let mut pending = self.counters.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let refusals = pending.get_or_insert_with(|| Refusals { count: 0, first: now, last: now, reasons: Vec::new() });
        if refusals.count == 0 {
            // The entry may hold only the reasons the writer noted so far.
            refusals.first = now;
        }
        refusals.count += 1;
        refusals.last = now;
    }

    /// Calls refused since start because the log could not write (`fail_closed`).
    pub fn refused_total(&self) -> u64 {
        self.counters.refused_total.load(Ordering::Relaxed)
    }

    /// Records lost since start because a target could not write them (`fail_open`).
    pub fn lost(&self) -> u64 {
        self.counters.lost.load(Ordering::Relaxed)
    }
}

/// How often a failing target is retried when no record comes to trigger it.
const RETRY_EVERY: Duration = Duration::from_millis(500);

/// How long a busy writer waits after writing a batch before it takes the next: records reach their
/// targets at most this much later, in batches, instead of waking the writer one by one.
const LINGER: Duration = Duration::from_millis(2);

/// Owns the writer thread. Call [`AuditSink::shutdown`] on graceful shutdown.
pub struct AuditSink {
    handle: SinkHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditSink").field("handle", &self.handle).finish_non_exhaustive()
    }
}

impl AuditSink {
    /// Validates the configuration, opens the targets (resuming an existing file's chain) and
    /// starts the writer.
    pub async fn start(config: &AuditConfig) -> Result<AuditSink, AuditError> {
        config.validate()?;
        let mut openers: Vec<Opener> = Vec::new();
        let policy = config.on_write_failure;
        let key = ChainKey::new(config.chain_key.as_ref().map(|k| k.expose().as_bytes()));
        if config.stdout {
            openers.push(Box::new(move || Ok(Box::new(StdoutTarget::open(policy)?) as Box<dyn Target>)));
        }
        let begin_with = if config.file.is_some() { key.clone() } else { ChainKey::default() };
        if let Some(file) = config.file.clone() {
            openers.push(Box::new(move || Ok(Box::new(FileTarget::open(&file, key, policy)?) as Box<dyn Target>)));
        }
        AuditSink::start_with(config.queue, openers, policy, begin_with).await
    }

    pub(crate) async fn start_with(
        queue: usize,
        openers: Vec<Opener>,
        policy: OnWriteFailure,
        begin_with: ChainKey,
    ) -> Result<AuditSink, AuditError> {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let counters =
            Arc::new(Counters { fail_closed: policy == OnWriteFailure::FailClosed, begin_with, ..Counters::default() });
        spawn_retry_ticker(tx.downgrade(), counters.clone());
        let (opened_tx, opened_rx) = oneshot::channel();
        let writer_counters = counters.clone();
        let thread = std::thread::Builder::new()
            .name("a2a-audit-writer".into())
            .spawn(move || {
                let mut targets = Vec::with_capacity(openers.len());
                for open in openers {
                    match open() {
                        Ok(target) => targets.push(target),
                        Err(error) => {
                            let _ = opened_tx.send(Err(error));
                            return;
                        }
                    }
                }
                let _ = opened_tx.send(Ok(()));
                Writer { targets, failing: Vec::new(), counters: writer_counters }.run(rx);
            })
            .map_err(|source| AuditError::Write { target: "the audit writer thread".into(), source })?;
        match opened_rx.await {
            Ok(Ok(())) => Ok(AuditSink { handle: SinkHandle { tx, counters }, thread: Some(thread) }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(AuditError::Stopped),
        }
    }

    pub fn handle(&self) -> SinkHandle {
        self.handle.clone()
    }

    /// Waits until every record queued before this call is written and synced to disk.
    pub async fn flush(&self) -> Result<(), AuditError> {
        let (reply, done) = oneshot::channel();
        self.handle.tx.send(Msg::Flush(reply)).await.map_err(|_| AuditError::Stopped)?;
        done.await.map_err(|_| AuditError::Stopped)?
    }

    /// Drains the queue, writes any pending `audit.dropped` record, syncs every target and stops
    /// the writer. Records sent afterwards are counted as dropped. Bound it with the gateway's
    /// shutdown deadline (`tokio::time::timeout`): a hung disk would otherwise hold it.
    pub async fn shutdown(mut self) -> Result<(), AuditError> {
        let (reply, done) = oneshot::channel();
        self.handle.tx.send(Msg::Shutdown(reply)).await.map_err(|_| AuditError::Stopped)?;
        let result = done.await.map_err(|_| AuditError::Stopped)?;
        if let Some(thread) = self.thread.take() {
            // The writer has answered and is returning; joining takes no time, but off the runtime.
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        result
    }
}

/// Wakes the writer while a target is failing, so that it retries even when no record comes. Ends
/// with the queue.
fn spawn_retry_ticker(tx: mpsc::WeakSender<Msg>, counters: Arc<Counters>) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(RETRY_EVERY);
        loop {
            ticker.tick().await;
            let Some(tx) = tx.upgrade() else { return };
            if counters.unwritable.load(Ordering::Relaxed)
                && let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(Msg::Wake)
            {
                return;
            }
        }
    });
}

impl Drop for AuditSink {
    fn drop(&mut self) {
        // Without shutdown, still ask the writer to drain and stop (best effort, never waiting).
        if self.thread.is_some() {
            let (reply, _) = oneshot::channel();
            let _ = self.handle.tx.try_send(Msg::Shutdown(reply));
        }
    }
}

struct Writer {
    targets: Vec<Box<dyn Target>>,
    /// Indexes of targets whose last write failed, so an outage is logged once, not per record.
    failing: Vec<usize>,
    counters: Arc<Counters>,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        // An idle writer blocks until the next message; a busy one takes what is queued, writes it
        // out, and lets `LINGER` pass before it looks again, so that a busy request path does not
        // wake it (a futex wake and two context switches, on a shared core) for every record.
        while let Some(first) = rx.blocking_recv() {
            let mut next = Some(first);
            while let Some(msg) = next.take() {
                if let Some(reply) = self.take(msg) {
                    return self.shut_down(rx, reply);
                }
                self.report_drops();
                self.report_refusals();
                next = match rx.try_recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => {
                        self.flush();
                        // The flush may be the write that ended an outage: report its refusals
                        // now, not with the next record, which may be long in coming.
                        if self.report_refusals() {
                            self.flush();
                        }
                        std::thread::sleep(LINGER);
                        rx.try_recv().ok()
                    }
                };
            }
        }
        self.report_drops();
        let _ = self.sync();
    }

    /// Handles one message; a shutdown is handed back with its reply.
    fn take(&mut self, msg: Msg) -> Option<oneshot::Sender<Result<(), AuditError>>> {
        match msg {
            Msg::Record(record) => self.write(&record),
            Msg::Wake => {}
            Msg::Flush(reply) => {
                self.report_drops();
                self.report_refusals();
                let _ = reply.send(self.sync());
            }
            Msg::Shutdown(reply) => return Some(reply),
        }
        None
    }

    /// Drains the queue, seals and syncs every target, then answers the shutdown.
    fn shut_down(mut self, mut rx: mpsc::Receiver<Msg>, reply: oneshot::Sender<Result<(), AuditError>>) {
        rx.close();
        // Until `None`, not until the queue looks empty: a worker that took a place before the
        // close is still writing its record out, and it must reach the log.
        while let Some(msg) = rx.blocking_recv() {
            match msg {
                Msg::Record(record) => self.write(&record),
                Msg::Wake => {}
                Msg::Flush(other) | Msg::Shutdown(other) => {
                    self.report_drops();
                    let _ = other.send(self.sync());
                }
            }
            self.report_drops();
        }
        self.report_drops();
        self.report_refusals();
        for i in 0..self.targets.len() {
            let sealed = self.targets[i].seal();
            self.note(i, sealed);
        }
        let _ = reply.send(self.sync());
    }

    fn report_drops(&mut self) {
        let count = self.counters.unreported.swap(0, Ordering::AcqRel);
        if count > 0 {
            tracing::warn!(count, "audit queue full: records dropped");
            self.write(&Record::meta(Kind::Dropped { count, cause: "queue_full", first: None, last: None }).written());
        }
    }

    /// Writes the `audit.refused` record once every target writes again; whether it did.
    fn report_refusals(&mut self) -> bool {
        if self.counters.unwritable.load(Ordering::Relaxed) {
            return false;
        }
        let taken = self.counters.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(refusals) = taken.filter(|r| r.count > 0) else { return false };
        tracing::warn!(count = refusals.count, "calls were refused while the audit log could not write");
        let Refusals { count, first, last, reasons } = refusals;
        self.write(&Record::meta(Kind::Refused { count, first, last, reasons }).written());
        true
    }

    fn write(&mut self, record: &Written) {
        for i in 0..self.targets.len() {
            let result = self.targets[i].write(record);
            self.note(i, result);
        }
    }

    fn flush(&mut self) {
        for i in 0..self.targets.len() {
            let result = self.targets[i].flush();
            self.note(i, result);
        }
    }

    fn sync(&mut self) -> Result<(), AuditError> {
        let mut first = Ok(());
        for i in 0..self.targets.len() {
            let result = self.targets[i].sync();
            if let Err(error) = &result
                && first.is_ok()
            {
                let source = io::Error::new(error.kind(), error.to_string());
                first = Err(AuditError::Write { target: self.targets[i].describe(), source });
            }
            self.note(i, result);
        }
        first
    }

    /// Counts a failed write, and logs when a target starts failing and when it truly writes again
    /// (a line reached it, nothing waits, no loss is unreported) — never on a write that was only
    /// kept in memory.
    fn note(&mut self, i: usize, result: io::Result<()>) {
        let was_failing = self.failing.contains(&i);
        match result {
            Err(error) => {
                self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
                if self.counters.fail_closed {
                    // Why calls are being refused, for the `audit.refused` record.
                    let reason = format!("{}: {error}", self.targets[i].describe());
                    let mut pending = self.counters.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let now = SystemTime::now();
                    let refusals = pending.get_or_insert_with(|| Refusals {
                        count: 0,
                        first: now,
                        last: now,
                        reasons: Vec::new(),
                    });
                    if !refusals.reasons.contains(&reason) && refusals.reasons.len() < 8 {
                        refusals.reasons.push(reason);
                    }
                }
                if !was_failing {
                    self.failing.push(i);
                    tracing::error!(target = %self.targets[i].describe(), %error, "audit log write failed");
                }
            }
            Ok(()) if was_failing && !self.targets[i].failing() => {
                self.failing.retain(|&f| f != i);
                tracing::info!(target = %self.targets[i].describe(), "audit log writes again");
            }
            Ok(()) => {}
        }
        let unwritable = self.targets.iter().any(|t| t.failing());
        self.counters.unwritable.store(unwritable, Ordering::Relaxed);
        self.counters.lost.store(self.targets.iter().map(|t| t.lost()).sum(), Ordering::Relaxed);
    }
}

/// Where a chain's lines go.
pub(crate) trait LineOut: Write {
    /// Cuts the output back to `len` bytes, so that a line torn by a failed write does not stay
    /// (the next line would follow it and break the chain). A stream cannot, and does nothing.
    fn cut(&mut self, _len: u64) -> io::Result<()> {
        Ok(())
    }
    /// Makes what was written durable.
    fn sync(&mut self) -> io::Result<()> {
        self.flush()
    }
}

impl LineOut for std::fs::File {
    fn cut(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

impl LineOut for io::Stdout {}

/// Lines are handed to the operating system in batches of about this size. Larger writes cost the
/// kernel less per page: a write's new page-cache folios are as large as its length and alignment
/// allow (on this machine's ext4, 1.47 µs per 4 KiB page written 65,000 bytes at a time, ~1.0 at
/// 262,000; the writer thread 0.90× per record at 256 KiB than at 64 KiB). A busy writer fills a
/// batch in well under a millisecond; an idle one writes what it has at once.
const BATCH_BYTES: usize = 256 * 1024;

/// Records lost to a failing target (`fail_open`) and not yet reported.
#[derive(Debug, Clone, Copy)]
struct Loss {
    count: u64,
    first: SystemTime,
    last: SystemTime,
}

/// Seals records into a chain and writes them as lines to `out`. The chain moves past a line only
/// once the line is in `out`; lines not yet there wait in `pending`.
pub(crate) struct ChainWriter<W: LineOut> {
    pub out: W,
    /// After the last line made (written or pending).
    chain: Chain,
    /// After the last line that reached `out`.
    written: Chain,
    /// Lines made but not in `out` yet, in chain order; where each ends, and when its record was
    /// made (`None` for a loss report, which is not itself a lost record).
    pending: Vec<u8>,
    ends: Vec<(usize, Option<SystemTime>)>,
    /// Bytes of whole lines in `out`.
    out_len: u64,
    /// `fail_closed`: unwritten lines wait; `fail_open`: they are counted as lost.
    keep: bool,
    /// A write failed and lines wait (`fail_closed`).
    stalled: bool,
    lost: Option<Loss>,
    /// Records lost since this writer was made.
    lost_total: u64,
    /// The prepared line (with its line break) and the chain after it.
    line: Vec<u8>,
    next: Option<Chain>,
}

impl<W: LineOut> ChainWriter<W> {
    /// Continues `chain` in `out`, which already holds `out_len` bytes.
    pub fn new(out: W, chain: Chain, out_len: u64, policy: OnWriteFailure) -> ChainWriter<W> {
        ChainWriter {
            out,
            written: chain.clone(),
            chain,
            pending: Vec::new(),
            ends: Vec::new(),
            out_len,
            keep: policy == OnWriteFailure::FailClosed,
            stalled: false,
            lost: None,
            lost_total: 0,
            line: Vec::with_capacity(512),
            next: None,
        }
    }

    /// Formats the line for `record` without writing it or moving the chain; returns its length
    /// including the line break.
    pub fn prepare(&mut self, record: &Written) -> usize {
        self.line.clear();
        let mut next = self.chain.clone();
        next.seal(record, &mut self.line);
        self.line.push(b'\n');
        self.next = Some(next);
        self.line.len()
    }

    /// Adds the prepared line (for `record`) to the chain; it goes out with the next batch.
    pub fn commit(&mut self, record: &Written) -> io::Result<()> {
        let Some(next) = self.next.take() else { return Ok(()) };
        if self.lost.is_some() {
            // Rolled back to the last line written: the loss report goes first, then this record.
            return self.recover(Some(record));
        }
        self.pending.extend_from_slice(&self.line);
        self.ends.push((self.pending.len(), Some(record.at)));
        self.chain = next;
        if self.pending.len() >= BATCH_BYTES && !self.stalled { self.flush() } else { Ok(()) }
    }

    pub fn key(&self) -> &ChainKey {
        self.chain.key()
    }

    /// Prepares and commits.
    pub fn write(&mut self, record: &Written) -> io::Result<()> {
        self.prepare(record);
        self.commit(record)
    }

    /// Bytes in `out` plus bytes waiting.
    pub fn len(&self) -> u64 {
        self.out_len + self.pending.len() as u64
    }

    /// Records lost since this writer was made (each counted once, when it is given up).
    pub fn lost_total(&self) -> u64 {
        self.lost_total
    }

    /// Whether lines wait for a failing `out`, or a loss is not reported yet.
    pub fn failing(&self) -> bool {
        self.stalled || self.lost.is_some()
    }

    /// Writes what waits (first the report of a loss); under `fail_open` what cannot be written
    /// is counted as lost.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.lost.is_some() {
            return self.recover(None);
        }
        let result = self.push_out();
        self.stalled = result.is_err() && !self.pending.is_empty();
        if result.is_err() && !self.keep {
            self.discard();
        }
        result
    }

    /// Flushes and makes the lines durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.out.sync()
    }

    /// Swaps in a new, empty `out` (after a rotation); nothing may be waiting.
    pub fn replace_out(&mut self, out: W) {
        debug_assert!(self.pending.is_empty());
        self.out = out;
        self.out_len = 0;
    }

    fn push_pending(&mut self, record: &Written, at: Option<SystemTime>) {
        self.chain.seal(record, &mut self.pending);
        self.pending.push(b'\n');
        self.ends.push((self.pending.len(), at));
    }

    /// Tries the report of the loss, followed by `record`, behind the last line written.
    fn recover(&mut self, record: Option<&Written>) -> io::Result<()> {
        let Some(loss) = self.lost.take() else { return self.flush() };
        debug_assert!(self.pending.is_empty() && self.chain == self.written);
        let report =
            Kind::Dropped { count: loss.count, cause: "write_failed", first: Some(loss.first), last: Some(loss.last) };
        self.push_pending(&Record::meta(report).written(), None);
        if let Some(record) = record {
            self.push_pending(record, Some(record.at));
        }
        let result = self.push_out();
        if result.is_err() {
            if self.ends.first().is_some_and(|(_, at)| at.is_none()) {
                // The report itself did not go out: the loss is still owed.
                self.lost = Some(loss);
            }
            self.discard();
        } else {
            tracing::warn!(
                count = loss.count,
                "audit log writes again; the records it could not write are reported lost"
            );
        }
        result
    }

    /// Counts every waiting record as lost and rolls the chain back to the last line written.
    fn discard(&mut self) {
        for &(_, at) in &self.ends {
            let Some(at) = at else { continue };
            let loss = self.lost.get_or_insert(Loss { count: 0, first: at, last: at });
            loss.count += 1;
            self.lost_total += 1;
            loss.first = loss.first.min(at);
            loss.last = loss.last.max(at);
        }
        self.pending.clear();
        self.ends.clear();
        self.chain = self.written.clone();
        self.stalled = false;
    }

    /// Hands waiting lines to `out`. The chain's written position moves past each whole line that
    /// went out; a torn tail is cut off; what did not go out keeps waiting.
    fn push_out(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut sent = 0;
        let result = loop {
            if sent == self.pending.len() {
                break self.out.flush();
            }
            match self.out.write(&self.pending[sent..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => sent += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => break Err(error),
            }
        };
        let whole = match result {
            Ok(()) => self.pending.len(),
            Err(_) => self.pending[..sent].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1),
        };
        if sent > whole
            && let Err(error) = self.out.cut(self.out_len + whole as u64)
        {
            tracing::error!(%error, "cannot cut a torn line off the audit log");
        }
        if whole > 0 {
            let done = self.ends.partition_point(|&(end, _)| end <= whole);
            self.written = if whole == self.pending.len() {
                self.chain.clone()
            } else {
                let start = if done >= 2 { self.ends[done - 2].0 } else { 0 };
                Chain::after(&self.pending[start..whole - 1], self.chain.key().clone())
            };
            self.out_len += whole as u64;
            self.pending.drain(..whole);
            self.ends.drain(..done);
            self.ends.iter_mut().for_each(|(end, _)| *end -= whole);
        }
        result
    }
}

/// Standard output as JSON lines; its chain starts at genesis on every start.
struct StdoutTarget {
    writer: ChainWriter<io::Stdout>,
}

impl StdoutTarget {
    fn open(policy: OnWriteFailure) -> Result<StdoutTarget, AuditError> {
        let mut writer = ChainWriter::new(io::stdout(), Chain::genesis(ChainKey::default()), 0, policy);
        writer
            .write(&Record::meta(Kind::Anchor { reason: "start", prev_file: None, keyed: false }).written())
            .and_then(|()| writer.flush())
            .map_err(|source| AuditError::Write { target: "stdout".into(), source })?;
        Ok(StdoutTarget { writer })
    }
}

impl Target for StdoutTarget {
    fn write(&mut self, record: &Written) -> io::Result<()> {
        self.writer.write(record)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    fn failing(&self) -> bool {
        self.writer.failing()
    }

    fn lost(&self) -> u64 {
        self.writer.lost_total()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.writer.sync()
    }

    fn describe(&self) -> String {
        "stdout".into()
    }
}
