//! What keeping a full in-memory task directory within its limit costs the calls that record into
//! it, and how long it holds them up. Every call that creates a task, and every event of a stream,
//! records into the directory; once it holds `routing.max_tasks`, every new task makes room for
//! itself. A record that waits for that work is a call or an event that waits.
//!
//! Fills a directory to `--tasks` (by default also its `max_tasks`), then for `--seconds` one thread
//! keeps recording new tasks and times each record, while the main thread sweeps every second (as
//! the gateway's sweeper does, every `routing.sweep_interval`). Prints the records' rate and latency, the
//! sweeps, and the process's CPU time per record (the recorder's and the sweeps' together). Pin it
//! to one CPU (`taskset -c 1`) to see a gateway pinned to one core, where the sweep's thread and the
//! runtime's share it.
//!
//! Run: `cargo run --release --locked -p a2a-bench --bin directory-stall [-- --tasks 1000000 --seconds 5]`

#[allow(dead_code)]
#[path = "../procs.rs"]
mod procs;

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
    /// Seconds of recording into the full directory.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
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
    let cpu_before = process_cpu();
    let began = Instant::now();
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
    // The gateway's sweeper, on its tick (`routing.sweep_interval`, a minute by default; here a
    // second, so that a run sees some): with the directory within its limit and its tasks younger
    // than `task_ttl`, a sweep finds nothing to walk.
    let (mut sweeps, mut swept) = (0, Duration::ZERO);
    let window = Duration::from_secs_f64(args.seconds);
    while began.elapsed() < window {
        std::thread::sleep(Duration::from_secs(1).min(window.saturating_sub(began.elapsed())));
        let sweep = Instant::now();
        directory.sweep();
        swept += sweep.elapsed();
        sweeps += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let latency = recorder.join().expect("the recording thread");
    let (elapsed, cpu) = (began.elapsed(), process_cpu() - cpu_before);
    let records = latency.len();
    let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
    println!(
        "{records} records in {:.2} s with the directory full ({} tasks at the end): {:.2} µs each, {:.2} µs of CPU each (recording and sweeps)",
        elapsed.as_secs_f64(),
        directory.len(),
        elapsed.as_secs_f64() * 1e6 / records as f64,
        cpu.as_secs_f64() * 1e6 / records as f64,
    );
    println!("sweeps: {sweeps}, {:.1} ms in all", swept.as_secs_f64() * 1e3);
    println!(
        "records' latency: µs p50 {:.2}, p99 {:.2}, p99.9 {:.1}, p99.99 {:.1}, max {:.1}",
        us(0.5),
        us(0.99),
        us(0.999),
        us(0.9999),
        latency.max() as f64 / 1e3
    );
}

/// This process's CPU time so far (user and system, every thread).
fn process_cpu() -> Duration {
    Duration::from_micros(procs::cpu_micros(std::process::id(), procs::clock_ticks()))
}
