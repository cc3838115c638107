//! Thread per core. With more than one CPU the gateway runs `n` worker threads, each with its own
//! current-thread runtime; the public listener hands every accepted connection to one of them
//! (round robin), and that connection, its requests and the agent connections they use stay on
//! that thread: every worker has its own pools to agents ([`PerWorker`]). A multi-thread runtime
//! instead lets a request's task, the caller's connection and the pooled agent connection run on
//! different workers, waking one another across threads on every request.
//!
//! The main thread keeps its own runtime for the accept loop, the admin listener and background
//! work (health checks, sweepers, the audit writer). Started once per process, by `main`.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The worker threads: a queue of tasks to spawn for each.
pub struct Workers {
    queues: Box<[UnboundedSender<Job>]>,
    next: AtomicUsize,
}

static WORKERS: OnceLock<Workers> = OnceLock::new();

thread_local! {
    /// This thread's slot in a [`PerWorker`]: 1..=n on worker `n - 1`, 0 on every other thread.
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// Starts `n` worker threads; they live as long as the process. Called once, before anything is
/// built per worker (a second call keeps the first set).
pub fn start(n: usize) -> std::io::Result<&'static Workers> {
    if let Some(workers) = WORKERS.get() {
        return Ok(workers);
    }
    let workers = Workers::new(n)?;
    Ok(WORKERS.get_or_init(|| workers))
}

/// The worker threads, when the process runs them.
pub fn get() -> Option<&'static Workers> {
    WORKERS.get()
}

impl Workers {
    pub(crate) fn new(n: usize) -> std::io::Result<Workers> {
        let mut queues = Vec::with_capacity(n);
        for index in 0..n {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let (queue, mut jobs) = unbounded_channel::<Job>();
            std::thread::Builder::new().name(format!("a2a-worker-{index}")).spawn(move || {
                SLOT.set(index + 1);
                runtime.block_on(async move {
                    while let Some(job) = jobs.recv().await {
                        tokio::spawn(job);
                    }
                });
            })?;
            queues.push(queue);
        }
        Ok(Workers { queues: queues.into_boxed_slice(), next: AtomicUsize::new(0) })
    }

    /// Runs `job` on the next worker. A socket it uses must be registered there (made from a
    /// `std` socket inside `job`), or its readiness is still reported by the thread that made it.
    pub fn spawn(&self, job: impl Future<Output = ()> + Send + 'static) {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.queues.len();
        // A worker's receiver lives as long as the process.
        let _ = self.queues[index].send(Box::pin(job));
    }

    pub fn len(&self) -> usize {
        self.queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }
}

/// The executor of the public listener's HTTP/2 streams: each stream's task goes to the next worker
/// (on the current runtime when there are none). HTTP/1 connections serve their requests in their
/// own task, on their worker; an HTTP/2 connection carries many calls at once (a gRPC channel, a
/// proxy in front of the gateway), which would otherwise all be served by the one worker that
/// accepted it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpreadStreams;

impl<F> hyper::rt::Executor<F> for SpreadStreams
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, stream: F) {
        match get() {
            Some(workers) => workers.spawn(async move {
                stream.await;
            }),
            None => {
                tokio::spawn(stream);
            }
        }
    }
}

/// One value per worker thread (and one for every other thread), each built separately: a client
/// whose pool is the worker's own, so a request never takes a connection another thread serves; an
/// index each worker writes alone, so that no lock or cache line is shared by every request. Each
/// value has cache lines of its own (two workers' writes to neighbours would move one line between
/// their cores).
pub struct PerWorker<C>(Arc<[Lane<C>]>);

/// A value aligned to its own cache lines (128 bytes: the pair that adjacent-line prefetchers fetch
/// together).
#[repr(align(128))]
struct Lane<C>(C);

impl<C> Clone for PerWorker<C> {
    fn clone(&self) -> Self {
        PerWorker(self.0.clone())
    }
}

impl<C> PerWorker<C> {
    /// One value for every worker started so far, and one for the other threads.
    pub fn new(mut make: impl FnMut() -> C) -> PerWorker<C> {
        PerWorker::build(|| Ok::<C, std::convert::Infallible>(make())).unwrap_or_else(|never| match never {})
    }

    /// [`PerWorker::new`] with a maker that can fail.
    pub fn build<E>(make: impl FnMut() -> Result<C, E>) -> Result<PerWorker<C>, E> {
        PerWorker::build_for(get().map_or(0, Workers::len), make)
    }

    pub(crate) fn build_for<E>(workers: usize, mut make: impl FnMut() -> Result<C, E>) -> Result<PerWorker<C>, E> {
        (0..=workers)
            .map(|_| make().map(Lane))
            .collect::<Result<Vec<Lane<C>>, E>>()
            .map(|lanes| PerWorker(lanes.into()))
    }

    /// The calling thread's value.
    pub fn get(&self) -> &C {
        self.at(self.slot())
    }

    /// Where the calling thread's value is: what [`PerWorker::at`] takes to find it again from
    /// another thread.
    pub fn slot(&self) -> usize {
        let slot = SLOT.get();
        if slot < self.0.len() { slot } else { 0 }
    }

    /// The value at `slot` (the other threads' for a slot out of range).
    pub fn at(&self, slot: usize) -> &C {
        &self.0.get(slot).unwrap_or(&self.0[0]).0
    }

    /// Every thread's value (the other threads' first).
    pub fn all(&self) -> impl Iterator<Item = &C> {
        self.0.iter().map(|lane| &lane.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_worker_has_its_own_value_and_connections_are_spread_round_robin() {
        // Not the process's set: other tests must not find workers.
        let workers = Workers::new(2).unwrap();
        let built = AtomicUsize::new(0);
        let values =
            PerWorker::build_for(workers.len(), || Ok::<_, ()>(built.fetch_add(1, Ordering::Relaxed))).unwrap();
        assert_eq!(built.load(Ordering::Relaxed), workers.len() + 1);
        assert_eq!(*values.get(), 0, "a thread that is no worker has slot 0");
        let (seen, mut slots) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..4 {
            let (values, seen) = (values.clone(), seen.clone());
            workers.spawn(async move {
                let _ = seen.send((std::thread::current().name().map(str::to_owned), *values.get()));
            });
        }
        let mut got: Vec<_> = (0..4).map(|_| slots.blocking_recv().unwrap()).collect();
        got.sort();
        let expected = |i: usize| (Some(format!("a2a-worker-{i}")), i + 1);
        assert_eq!(got, vec![expected(0), expected(0), expected(1), expected(1)]);
    }
}
