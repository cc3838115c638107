//! What shared state in Redis costs: the same gateway, config and backend with `state: memory` and
//! with `state: {redis: …}` (a real redis-server on loopback), side by side in one run, repetitions
//! interleaved. Two configs: no policies (the task directory's write is queued off the request path)
//! and limits (a rate quota and a live-task limit: each new task pays one Redis round trip for the
//! quota and one for the lease reservation). Every request is a blocking SendMessage that creates a
//! task (the bench backend answers a completed task at once).
//!
//! Two measurements per variant: one connection, requests back to back (latency without queueing:
//! what one request costs), and 32 connections back to back (throughput on this machine's cores).
//!
//! Run (after `cargo build --release -p a2a-gateway -p a2a-bench`; needs `redis-server`):
//! `target/release/state-cost [--seconds 5] [--repetitions 3] [--out tests/bench/results/shared-state.md]`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use hdrhistogram::Histogram;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[derive(Parser, Debug)]
struct Args {
    /// The gateway binary (default: target/release/a2a-gateway).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// The bench binary serving the backend (default: target/release/a2a-bench).
    #[arg(long)]
    bench_bin: Option<PathBuf>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Interleaved repetitions of every variant.
    #[arg(long, default_value_t = 3)]
    repetitions: usize,
    /// Connections of the throughput measurement.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Where the results go (Markdown); also printed.
    #[arg(long, default_value = "tests/bench/results/shared-state.md")]
    out: PathBuf,
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

/// Starts a process that prints `listening <url>` when it is ready; returns it and the URL.
async fn start(bin: &std::path::Path, args: &[String]) -> anyhow::Result<(Killed, String)> {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(url) = line.strip_prefix("listening ") {
                return Ok(url.trim().to_owned());
            }
        }
        bail!("{} exited before it listened", bin.display())
    })
    .await
    .context("waiting for a process to listen")??;
    // Keep reading its stdout so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((Killed(child), url))
}

/// A redis-server on a free loopback port, no persistence, killed on drop.
async fn redis_server() -> anyhow::Result<(Killed, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting redis-server (apt-get install redis-server)")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if Instant::now() > deadline {
            bail!("redis-server did not listen");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((Killed(child), format!("redis://127.0.0.1:{port}")))
}

#[derive(Clone, Copy, PartialEq)]
enum Policies {
    None,
    Limits,
}

fn config(backend: &str, redis: Option<&str>, policies: Policies, index: usize) -> String {
    let mut yaml = String::from("listeners:\n  public: 127.0.0.1:0\n  admin: null\n");
    yaml.push_str("health:\n  interval: 60s\n  timeout: 5s\n");
    if let Some(url) = redis {
        // A fresh prefix per gateway: no run sees another's keys.
        let prefix = format!("bench{}-{index}:", std::process::id());
        let _ = write!(
            yaml,
            "state:\n  redis:\n    url: {url}\n    key_prefix: \"{prefix}\"\n    page_token_secret: bench-secret-bench-secret-bench-secret\n"
        );
    }
    if policies == Policies::Limits {
        yaml.push_str("rate_limit:\n  default: {per_second: 1000000, burst: 1000000}\n");
        yaml.push_str("concurrency:\n  default_max_live_tasks: 100000\n");
    }
    let _ = write!(yaml, "routing:\n  default_skill: bench\nbackends:\n  - name: bench\n    url: {backend}\n");
    yaml
}

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}],"metadata":{"skillId":"bench"}}}}"#;

async fn send(client: &reqwest::Client, url: &str) -> anyhow::Result<()> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(BODY)
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() || !body.windows(6).any(|w| w == b"\"task\"") {
        bail!("unexpected answer {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}

/// One connection, back to back for `seconds`: latency percentiles (µs).
async fn latency(url: &str, seconds: u64) -> anyhow::Result<Histogram<u64>> {
    let client = reqwest::Client::builder().pool_max_idle_per_host(1).build()?;
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        let started = Instant::now();
        send(&client, url).await?;
        histogram.record(started.elapsed().as_micros() as u64)?;
    }
    Ok(histogram)
}

/// `connections` clients back to back for `seconds`: requests per second.
async fn throughput(url: &str, seconds: u64, connections: usize) -> anyhow::Result<f64> {
    let end = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..connections {
        let url = url.to_owned();
        workers.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().pool_max_idle_per_host(1).build()?;
            let mut done = 0u64;
            while Instant::now() < end {
                send(&client, &url).await?;
                done += 1;
            }
            anyhow::Ok(done)
        }));
    }
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

struct Variant {
    name: &'static str,
    url: String,
    _gateway: Killed,
    p50: Vec<f64>,
    p99: Vec<f64>,
    rps: Vec<f64>,
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn range(values: &[f64]) -> String {
    let (min, max) = values.iter().fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    format!("{:.0} ({:.0}–{:.0})", median(values), min, max)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let gateway_bin = args.gateway_bin.clone().unwrap_or_else(|| root.join("target/release/a2a-gateway"));
    let bench_bin = args.bench_bin.clone().unwrap_or_else(|| root.join("target/release/a2a-bench"));
    let started_at = std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output()?;
    let started_at = String::from_utf8_lossy(&started_at.stdout).trim().to_owned();
    let clock = Instant::now();

    let (_backend, backend) = start(&bench_bin, &["backend".into()]).await?;
    let (_redis, redis) = redis_server().await?;
    let dir = std::env::temp_dir().join(format!("a2a-state-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut variants = Vec::new();
    for (name, store, policies) in [
        ("memory, no policies", None, Policies::None),
        ("redis, no policies", Some(redis.as_str()), Policies::None),
        ("memory, rate limit + live-task limit", None, Policies::Limits),
        ("redis, rate limit + live-task limit", Some(redis.as_str()), Policies::Limits),
    ] {
        let path = dir.join(format!("{}.yaml", variants.len()));
        std::fs::write(&path, config(&backend, store, policies, variants.len()))?;
        let (gateway, url) =
            start(&gateway_bin, &["serve".into(), "--config".into(), path.display().to_string()]).await?;
        let url = format!("{url}/");
        // The gateway learns the backend's card at start: wait until a send goes through.
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while send(&client, &url).await.is_err() {
            if Instant::now() > deadline {
                bail!("{name}: the gateway never answered a send");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        variants.push(Variant { name, url, _gateway: gateway, p50: Vec::new(), p99: Vec::new(), rps: Vec::new() });
    }
    for repetition in 0..args.repetitions {
        for variant in &mut variants {
            eprintln!("repetition {} of {}: {}", repetition + 1, args.repetitions, variant.name);
            // Warm-up, then the two measurements.
            latency(&variant.url, 1).await?;
            let histogram = latency(&variant.url, args.seconds).await?;
            variant.p50.push(histogram.value_at_quantile(0.5) as f64);
            variant.p99.push(histogram.value_at_quantile(0.99) as f64);
            variant.rps.push(throughput(&variant.url, args.seconds, args.connections).await?);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "# Shared state: memory vs Redis\n");
    let _ = writeln!(
        out,
        "Command: `{command}` (binaries built beforehand with `cargo build [--release] -p a2a-gateway -p a2a-bench`)  "
    );
    let _ = writeln!(
        out,
        "Run: {started_at}, {:.0} s, {} cores (nproc), load average at the end {}",
        clock.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, usize::from),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let _ = writeln!(
        out,
        "\nGateway binary: `{}`. One gateway per variant, the bench backend and one redis-server on loopback, all on this \
         machine's cores. Every request is a blocking SendMessage creating a task. Latency: one connection, requests \
         back to back for {} s (µs, median of the repetitions with min–max). Throughput: {} connections back to back \
         for {} s. {} interleaved repetitions.\n",
        gateway_bin.display(),
        args.seconds,
        args.connections,
        args.seconds,
        args.repetitions
    );
    let _ = writeln!(out, "| variant | p50 µs | p99 µs | req/s ({} connections) |", args.connections);
    let _ = writeln!(out, "|---|---|---|---|");
    for variant in &variants {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            variant.name,
            range(&variant.p50),
            range(&variant.p99),
            range(&variant.rps)
        );
    }
    let _ = writeln!(out, "\nRedis minus memory (medians):\n");
    for pair in variants.chunks(2) {
        let (memory, redis) = (&pair[0], &pair[1]);
        let _ = writeln!(
            out,
            "- {}: p50 {:+.0} µs, p99 {:+.0} µs, throughput {:+.1} %",
            redis.name,
            median(&redis.p50) - median(&memory.p50),
            median(&redis.p99) - median(&memory.p99),
            (median(&redis.rps) / median(&memory.rps) - 1.0) * 100.0
        );
    }
    print!("{out}");
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.out, out)?;
    Ok(())
}
