//! What the live-task lease table costs per task-creating call when every worker reserves for one
//! caller at once (the benchmark's full stack has one token; so does a service account): each thread
//! reserves a slot, reports the answer's task (completed at once, as the bench backend answers) and
//! drops its reservation, back to back, all for the same caller.
//!
//! Prints ns per call on each thread from 1 to `--threads` threads. On one thread this is the table's
//! own work; with more, what sharing the caller's state between cores adds.
//!
//! Run: `cargo run --release --locked -p a2a-bench --bin lease-table [-- --calls 1000000 --threads 2]`

use std::sync::Arc;
use std::time::Instant;

use a2a_core::{Source, TaskEvent, TaskObserver, TaskState};
use a2a_policies::concurrency::{ConcurrencyConfig, LiveTasks};
use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Calls on each thread.
    #[arg(long, default_value_t = 1_000_000)]
    calls: usize,
    /// The most threads calling at once.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() {
    let args = Args::parse();
    let config = ConcurrencyConfig { default_max_live_tasks: usize::MAX, ..ConcurrencyConfig::default() };
    for threads in 1..=args.threads {
        let live = LiveTasks::new(&config).expect("a valid config");
        let began = Instant::now();
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let live = &live;
                scope.spawn(move || calls(live, thread, args.calls));
            }
        });
        let per_call = began.elapsed().as_nanos() as f64 / args.calls as f64;
        println!("{threads} thread(s): {per_call:.0} ns per call on each");
    }
}

/// One thread's calls: ids made as the gateway makes them (one request id and one task id per call).
fn calls(live: &Arc<LiveTasks>, thread: usize, calls: usize) {
    let caller: Arc<str> = Arc::from("jwt:https://idp.bench/|bench");
    for call in 0..calls {
        let (request_id, task_id) = (format!("r{thread}-{call}"), format!("t{thread}-{call}"));
        let reservation = live.reserve(&caller, &request_id).expect("no limit");
        live.observe(&TaskEvent {
            caller: None,
            request_id: Some(&request_id),
            backend: "bench",
            skill: None,
            task_id: Some(&task_id),
            context_id: None,
            state: Some(TaskState::Completed),
            artifact: None,
            source: Source::Response,
            at: Instant::now(),
        });
        drop(reservation);
    }
}
