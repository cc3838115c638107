//! Where records go: a bounded queue filled from the request path with `try_send`, and one writer
//! thread, owned by [`AuditSink`], that formats records and writes them to every target (stdout,
//! the rotating file). A full queue never blocks a request: the record is counted as dropped and
//! the writer writes an `audit.dropped {count}` record as soon as it has taken the next message off
//! the queue, so a drop is never silent.
//!
//! The writer is a plain thread rather than a tokio task because file writes and fsync block; it
//! ends when [`AuditSink::shutdown`] tells it to (after draining the queue and syncing), or when
//! every handle is gone.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use super::chain::{Chain, ChainKey};
use super::config::{AuditConfig, ConfigError};
use super::file::FileTarget;
use super::record::{Kind, Record};

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
    fn write(&mut self, record: &Record) -> io::Result<()>;
    /// Hands buffered lines to the operating system; called when the queue runs empty.
    fn flush(&mut self) -> io::Result<()>;
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

// Records are nearly every message: kept inline, they cost no allocation on the request path.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Record(Record),
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
    /// Queues a record for the writer, or counts it as dropped when the queue is full.
    pub(crate) fn send(&self, record: Record) {
        match self.tx.try_send(Msg::Record(record)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                self.counters.unreported.fetch_add(1, Ordering::AcqRel);
                // The queue is full, so the writer is busy and will see the counter after its next
                // message; should it have emptied the queue meanwhile, this wakes it.
                let _ = self.tx.try_send(Msg::Wake);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
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
}

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
        if config.stdout {
            openers.push(Box::new(|| Ok(Box::new(StdoutTarget::open()?) as Box<dyn Target>)));
        }
        if let Some(file) = config.file.clone() {
            let key = ChainKey::new(config.chain_key.as_deref().map(str::as_bytes));
            openers.push(Box::new(move || Ok(Box::new(FileTarget::open(&file, key)?) as Box<dyn Target>)));
        }
        AuditSink::start_with(config.queue, openers).await
    }

    pub(crate) async fn start_with(queue: usize, openers: Vec<Opener>) -> Result<AuditSink, AuditError> {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let counters = Arc::new(Counters::default());
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
        while let Some(msg) = rx.blocking_recv() {
            match msg {
                Msg::Record(record) => self.write(&record),
                Msg::Wake => {}
                Msg::Flush(reply) => {
                    self.report_drops();
                    let _ = reply.send(self.sync());
                }
                Msg::Shutdown(reply) => {
                    rx.close();
                    while let Ok(msg) = rx.try_recv() {
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
                    for i in 0..self.targets.len() {
                        let sealed = self.targets[i].seal();
                        self.note(i, sealed);
                    }
                    let _ = reply.send(self.sync());
                    return;
                }
            }
            self.report_drops();
            if rx.is_empty() {
                self.flush();
            }
        }
        self.report_drops();
        let _ = self.sync();
    }

    fn report_drops(&mut self) {
        let count = self.counters.unreported.swap(0, Ordering::AcqRel);
        if count > 0 {
            tracing::warn!(count, "audit queue full: records dropped");
            self.write(&Record::meta(Kind::Dropped { count }));
        }
    }

    fn write(&mut self, record: &Record) {
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

    fn note(&mut self, i: usize, result: io::Result<()>) {
        let was_failing = self.failing.contains(&i);
        match result {
            Ok(()) if was_failing => {
                self.failing.retain(|&f| f != i);
                tracing::info!(target = %self.targets[i].describe(), "audit log writes again");
            }
            Ok(()) => {}
            Err(error) => {
                self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
                if !was_failing {
                    self.failing.push(i);
                    tracing::error!(target = %self.targets[i].describe(), %error, "audit log write failed");
                }
            }
        }
    }
}

/// Seals records into a chain and writes them as lines to `out`.
pub(crate) struct ChainWriter<W: Write> {
    pub out: W,
    chain: Chain,
    /// The prepared line (with its line break) and the chain after it.
    line: Vec<u8>,
    next: Option<Chain>,
}

impl<W: Write> ChainWriter<W> {
    pub fn new(out: W, chain: Chain) -> ChainWriter<W> {
        ChainWriter { out, chain, line: Vec::with_capacity(512), next: None }
    }

    /// Formats the line for `record` without writing it or moving the chain; returns its length
    /// including the line break.
    pub fn prepare(&mut self, record: &Record) -> usize {
        self.line.clear();
        let mut next = self.chain.clone();
        next.seal(record, &mut self.line);
        self.line.push(b'\n');
        self.next = Some(next);
        self.line.len()
    }

    /// Writes the prepared line and moves the chain past it.
    pub fn commit(&mut self) -> io::Result<()> {
        if let Some(next) = self.next.take() {
            self.chain = next;
        }
        self.out.write_all(&self.line)
    }

    pub fn key(&self) -> &ChainKey {
        self.chain.key()
    }

    /// Prepares and commits; returns the bytes written.
    pub fn write(&mut self, record: &Record) -> io::Result<usize> {
        let len = self.prepare(record);
        self.commit()?;
        Ok(len)
    }
}

/// Standard output as JSON lines; its chain starts at genesis on every start.
struct StdoutTarget {
    writer: ChainWriter<io::BufWriter<io::Stdout>>,
}

impl StdoutTarget {
    fn open() -> Result<StdoutTarget, AuditError> {
        let mut writer = ChainWriter::new(io::BufWriter::new(io::stdout()), Chain::genesis(ChainKey::default()));
        writer
            .write(&Record::meta(Kind::Anchor { reason: "start", prev_file: None, keyed: false }))
            .map_err(|source| AuditError::Write { target: "stdout".into(), source })?;
        Ok(StdoutTarget { writer })
    }
}

impl Target for StdoutTarget {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        self.writer.write(record).map(drop)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.out.flush()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.writer.out.flush()
    }

    fn describe(&self) -> String {
        "stdout".into()
    }
}
