//! What the in-memory task directory's write costs when every worker thread records at once: each
//! gateway call that creates a task records it (its entry, its context's, its place in its owner's
//! list). One owner for every task, as with a single client, a service account or anonymous callers
//! — the case where anything the workers share per owner is written by all of them.
//!
//! Runs the gateway's own worker threads (`a2a_gateway::workers`, one per CPU) and records from one
//! of them alone, then from all at once; prints nanoseconds per record and records per second. On a
//! machine with more cores the "all" row shows what the workers' shared writes cost.
//!
//! Run: `cargo run --release --locked -p a2a-bench --bin directory-cost [-- --records 300000 --rounds 3]`

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use a2a_gateway::directory::{MemoryDirectory, Sighting, TaskDirectory};
use a2a_gateway::protocol::observe::{TaskFact, TaskState};
use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Tasks each recording thread records per round.
    #[arg(long, default_value_t = 300_000)]
    records: usize,
    /// Rounds of each measurement (the median is printed).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let workers = a2a_gateway::workers::start(cpus)?;
    println!("| recording threads | ns per record (per thread) | records/s (all threads) |");
    println!("|---|---|---|");
    for threads in [1, workers.len()] {
        let mut rounds: Vec<(f64, f64)> = (0..args.rounds).map(|_| round(workers, threads, args.records)).collect();
        rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ns, rate) = rounds[rounds.len() / 2];
        println!("| {threads} | {ns:.0} | {rate:.0} |");
    }
    Ok(())
}

/// One round on a new directory: `threads` workers each record `records` new tasks of one owner at
/// the same time. Returns the mean ns per record of a thread and the records per second of all.
fn round(workers: &a2a_gateway::workers::Workers, threads: usize, records: usize) -> (f64, f64) {
    // Built after the workers started: one owner index per worker.
    let directory = Arc::new(MemoryDirectory::new(Duration::from_secs(3600)));
    let (done, finished) = mpsc::channel::<Duration>();
    let start = Instant::now();
    // Round robin: `threads` jobs in a row land on as many workers (at most one per worker).
    for thread in 0..threads {
        let (directory, done) = (directory.clone(), done.clone());
        workers.spawn(async move {
            let (backend, owner, skill): (Arc<str>, Arc<str>, Arc<str>) =
                (Arc::from("bench"), Arc::from("alice"), Arc::from("bench"));
            let began = Instant::now();
            for i in 0..records {
                let fact = TaskFact {
                    task_id: Some(format!("t{thread}-{i}")),
                    context_id: Some(format!("c{thread}-{i}")),
                    state: Some(TaskState::Completed),
                    artifacts: Vec::new(),
                    message: false,
                };
                let sighting = Sighting { backend: &backend, owner: Some(&owner), skill: Some(&skill), fact: &fact };
                directory.record(&sighting);
            }
            let _ = done.send(began.elapsed());
        });
    }
    let per_thread: Vec<Duration> = (0..threads).map(|_| finished.recv().expect("a recording thread")).collect();
    let wall = start.elapsed();
    let mean = per_thread.iter().sum::<Duration>().as_nanos() as f64 / threads as f64;
    // Dropping a directory of this size takes a while: not on the clock, and not on a worker.
    drop(directory);
    (mean / records as f64, (threads * records) as f64 / wall.as_secs_f64())
}
