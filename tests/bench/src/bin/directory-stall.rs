//! How long a sweep of a full in-memory task directory holds up the calls that record tasks while it
//! runs. Every call that creates a task, and every event of a stream, records into the directory; a
//! sweep (every `routing.sweep_interval`, and at once whenever `routing.max_tasks` is passed) walks
//! every entry. A record that waits for the sweep is a call or an event that waits.
//!
//! Fills a directory to `--tasks` (its `max_tasks`), then sweeps it `--sweeps` times while another
//! thread keeps recording new tasks and times each record. Prints each sweep's duration and the
//! records' latency while the sweeps ran. Pin it to one CPU (`taskset -c 1`) to see a gateway pinned to
//! one core, where the sweep's thread and the runtime's share it.
//!
//! Run: `cargo run --release --locked -p a2a-bench --bin directory-stall [-- --tasks 1000000 --sweeps 3]`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use a2a_gateway::directory::{MemoryDirectory, Sighting, TaskDirectory};
use a2a_gateway::protocol::observe::{TaskFact, TaskState};
use clap::Parser;
use hdrhistogram::Histogram;

/// The gateway's allocator (`gateway/src/main.rs`): what a sweep frees, and when the allocator gives
/// it back, is part of what it costs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser, Debug)]
struct Args {
    /// Tasks recorded before the sweeps.
    #[arg(long, default_value_t = 1_000_000)]
    tasks: usize,
    /// The directory's `max_tasks` (default: `--tasks`, so that the first sweep also evicts a tenth).
    #[arg(long)]
    max_tasks: Option<usize>,
    /// Sweeps timed while the recording thread runs.
    #[arg(long, default_value_t = 3)]
    sweeps: usize,
}

fn record(directory: &MemoryDirectory, id: &str, state: TaskState) {
    let (backend, owner, skill): (Arc<str>, Arc<str>, Arc<str>) =
        (Arc::from("bench"), Arc::from("alice"), Arc::from("bench"));
    let fact = TaskFact {
        task_id: Some(id.to_owned()),
        context_id: Some(format!("c-{id}")),
        state: Some(state),
        artifacts: Vec::new(),
        message: false,
    };
    directory.record(&Sighting { backend: &backend, owner: Some(&owner), skill: Some(&skill), fact: &fact });
}

fn main() {
    let args = Args::parse();
    let directory =
        Arc::new(MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(args.max_tasks.unwrap_or(args.tasks)));
    let filling = Instant::now();
    for i in 0..args.tasks {
        // Every tenth still working, as a gateway's directory holds some live tasks among finished ones.
        let state = if i % 10 == 0 { TaskState::Working } else { TaskState::Completed };
        record(&directory, &format!("t{i}"), state);
    }
    println!("filled {} tasks in {:.2} s", directory.len(), filling.elapsed().as_secs_f64());

    let stop = Arc::new(AtomicBool::new(false));
    let recorder = {
        let (directory, stop) = (directory.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("histogram");
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("r{n}");
                let began = Instant::now();
                record(&directory, &id, TaskState::Completed);
                latency.saturating_record(began.elapsed().as_nanos() as u64);
                n += 1;
            }
            latency
        })
    };
    // Let the recorder settle before the first sweep.
    std::thread::sleep(Duration::from_millis(200));
    for sweep in 1..=args.sweeps {
        let began = Instant::now();
        directory.sweep();
        println!("sweep {sweep}: {:.1} ms, {} tasks left", began.elapsed().as_secs_f64() * 1e3, directory.len());
    }
    stop.store(true, Ordering::Relaxed);
    let latency = recorder.join().expect("the recording thread");
    let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
    println!(
        "records while sweeping: {} — µs p50 {:.2}, p99 {:.2}, p99.9 {:.1}, p99.99 {:.1}, max {:.1}",
        latency.len(),
        us(0.5),
        us(0.99),
        us(0.999),
        us(0.9999),
        latency.max() as f64 / 1e3
    );
}
