//! `a2a-bench`: measures what the gateway costs next to a direct call and a plain reverse proxy, on
//! loopback, in one run, and writes `BENCHMARKS.md`. `bash tests/bench/run.sh` builds and runs it;
//! `--smoke` runs tiny counts in a few seconds to keep it compiling and working.

mod backend;
mod loadgen;
mod nginx;
mod peer;
mod procs;
mod profile;
mod report;
mod run;
mod streams;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "a2a-bench", about = "Benchmarks of a2a-gateway against direct calls and nginx")]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    /// Tiny counts, one repetition, no profile: finishes in seconds (for CI).
    #[arg(long)]
    pub smoke: bool,
    /// The gateway binary (default: target/release/a2a-gateway).
    #[arg(long)]
    pub gateway_bin: Option<PathBuf>,
    /// Gateway config template for the full-stack scenario (default: tests/bench/configs/full-stack.yaml).
    #[arg(long)]
    pub full_stack_config: Option<PathBuf>,
    /// File holding the bearer token the full-stack requests carry (default:
    /// tests/bench/configs/full-stack.token, if present).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// File holding the JSON-RPC body of the full-stack requests (default:
    /// tests/bench/configs/full-stack.body.json, if present; else the plain SendMessage body).
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Where to write the report (default: BENCHMARKS.md; with --smoke: target/bench/smoke.md; with
    /// --only: target/bench/partial.md, so that a partial run never replaces the full report).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Repetitions of every scenario.
    #[arg(long)]
    pub reps: Option<usize>,
    /// Measured seconds of each open-loop run.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Offered rate (req/s) instead of half the direct saturation.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Idle streams held open at once.
    #[arg(long)]
    pub idle_streams: Option<usize>,
    /// Write the report again from the measurements of an earlier run (target/bench/results.json)
    /// instead of measuring.
    #[arg(long)]
    pub render: Option<PathBuf>,
    /// Run only these scenario groups (comma-separated); all by default.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<run::Part>,
    /// Skip the profile.
    #[arg(long)]
    pub no_profile: bool,
    /// Also write every SSE event's backend stamp and latency (ns), one run after another, to
    /// `<DIR>/sse-<direct|gateway|nginx>-<streams>.tsv` (appended): read with `tests/bench/sse-trace.py`.
    #[arg(long, value_name = "DIR")]
    pub sse_trace: Option<PathBuf>,
    /// agentgateway's binary: adds its rows (its `a2a` route policy alone, and with JWT,
    /// authorization and a local rate limit) to the saturation and unary tables.
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    /// Skip nginx even when it is installed.
    #[arg(long)]
    pub no_nginx: bool,
    /// Before starting, wait up to this many seconds for other processes to leave the CPUs idle.
    #[arg(long, default_value_t = 0.0)]
    pub wait_quiet: f64,
    /// Extra environment of the gateways only (KEY=VALUE, repeatable), e.g.
    /// `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2` to try another allocator.
    #[arg(long)]
    pub gateway_env: Vec<String>,
    /// Pin the proxies under test (gateway, nginx, agentgateway) to these CPUs (a `taskset` list such
    /// as `1`), and the benchmark's own load generator and backend to the others.
    #[arg(long)]
    pub proxy_cpus: Option<String>,
    /// The command line to print in the report as the one that reproduces it.
    #[arg(long, default_value = "")]
    pub command_line: String,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Run only the bench backend, until Ctrl-C.
    Backend,
}

/// The repository root (this crate is `tests/bench`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(raw) = &cli.render {
        return match run::render_again(&cli, raw) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("a2a-bench: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    // Before any thread starts, so that every thread of the benchmark inherits its CPUs.
    if let Some(cpus) = &cli.proxy_cpus
        && let Err(error) = procs::pin(cpus)
    {
        eprintln!("a2a-bench: {error:#}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("a2a-bench: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        if let Some(Sub::Backend) = cli.command {
            return backend::serve_forever().await;
        }
        // Dropping the run on Ctrl-C or SIGTERM drops every child handle, which stops each child by
        // its PID (a plain `kill` of the benchmark left its gateways, nginx and agentgateway running).
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            result = run::run(&cli) => result,
            _ = tokio::signal::ctrl_c() => bail!("interrupted"),
            _ = terminate.recv() => bail!("terminated"),
        }
    });
    // Connection tasks still parked on the runtime go with it.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2a-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `http://127.0.0.1:1234` → its socket address.
pub fn addr_of(url: &str) -> anyhow::Result<SocketAddr> {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap_or_default();
    authority.parse().with_context(|| format!("'{url}' is not http://<ip>:<port>"))
}

pub use loadgen::get;

/// Waits until the agent card at `addr` lists the bench skill (the gateway has seen the backend).
pub async fn wait_for_skill(addr: SocketAddr, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let needle = format!("\"id\":\"{}\"", backend::SKILL);
    loop {
        if let Ok((200, body)) = get(addr, backend::CARD_PATH).await
            && loadgen::contains(&body, needle.as_bytes())
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the card at {addr} did not list the skill '{}' within {timeout:?}", backend::SKILL);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
