//! What waiting on the drain deadline costs a call when every worker's calls wait at once: each
//! call that waits for its agent also waits on the deadline (`tokio-util`'s `CancellationToken`),
//! polled once while the agent answers and dropped with the answer. The token answers
//! `is_cancelled` under its node's mutex and registers each waiter in its `Notify` under another;
//! one token shared by all workers makes those locks every core's.
//!
//! Prints ns per wait on each thread, from 1 to `--threads` threads, for one shared token and for a
//! child token per thread (what the gateway waits on: `Shared::drain_per_worker`).
//!
//! Run: `cargo run --release --locked -p a2a-bench --bin drain-wait [-- --waits 2000000 --threads 2]`

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Instant;

use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Waits on each thread.
    #[arg(long, default_value_t = 2_000_000)]
    waits: usize,
    /// The most threads waiting at once.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() {
    let args = Args::parse();
    for threads in 1..=args.threads {
        for per_thread in [false, true] {
            let deadline = CancellationToken::new();
            let tokens: Vec<CancellationToken> =
                (0..threads).map(|_| if per_thread { deadline.child_token() } else { deadline.clone() }).collect();
            let began = Instant::now();
            std::thread::scope(|scope| {
                for token in &tokens {
                    scope.spawn(move || waits(token, args.waits));
                }
            });
            let per_wait = began.elapsed().as_nanos() as f64 / args.waits as f64;
            let which = if per_thread { "a child token per thread" } else { "one shared token" };
            println!("{threads} thread(s), {which}: {per_wait:.0} ns per wait on each");
        }
    }
}

/// One thread's waits: each made, polled once (the deadline has not passed) and dropped.
fn waits(token: &CancellationToken, waits: usize) {
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..waits {
        let mut wait = pin!(token.cancelled());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
    }
}
