//! Slow clients against the gateway's public listener: does a normal caller's latency hold while
//! N slow connections (half sending their headers one byte per 250 ms, half silent) sit on the
//! listener, and does the gateway shed every slow connection within `header_read_timeout`?
//!
//! Method (see `tests/bench/slow-clients.md`):
//! - idle and attack phases alternate over several repetitions (idle, attack, idle, attack, …), so
//!   that other work on the shared machine falls on both alike; each phase has thousands of paced
//!   calls (open loop, latency from the intended send time) so that its p99 is not a handful of
//!   samples; the verdict is the median over the repetitions of attack p99 / idle p99, with spread;
//! - the attack is sustained: each of the N attackers reconnects as soon as the gateway sheds it, so
//!   N slow connections are held for the whole attack phase (not only its first timeout);
//! - the measured caller and the attackers each run on their own thread and single-threaded
//!   runtime, pinned to different CPUs when there are two or more (`taskset` on the thread);
//! - the gateway's runtime gets `--gateway-threads` workers (`TOKIO_WORKER_THREADS`);
//! - the load average is recorded at each phase (`--max-load` waits for a quieter machine).
//!
//! Never hangs, never leaks: every request, connect, phase and the whole run have time limits, and
//! the children (gateway, agent) are killed on every exit — normal, error, panic, SIGINT/SIGTERM/
//! SIGHUP (a signal thread), the run's own watchdog, and even SIGKILL of the benchmark
//! (`setpriv --pdeathsig KILL`).
//!
//! Run (after `cargo build --release -p a2a-gateway -p a2a-bench`):
//! `target/release/slow-clients [--slow 1000] [--reps 5] [--requests 4000] [--interval-us 2000]`

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use clap::Parser;

mod attack;
mod caller;
mod children;
mod machine;
mod report;

use attack::{Attack, Shedding, Target, attacker_thread};
use caller::{Measure, Phase, caller_thread, pick};
use children::{exit, install_signal_thread, kill_children, start};
use machine::{clock_ticks, cpu_ticks, load_average, load1, threads_by_name};
use report::{Report, report};

#[derive(Parser, Debug, Clone)]
pub(crate) struct Args {
    /// The gateway binary (default: target/release/a2a-gateway).
    #[arg(long)]
    pub(crate) gateway_bin: Option<PathBuf>,
    /// Slow connections held at once during an attack phase.
    #[arg(long, default_value_t = 1000)]
    pub(crate) slow: usize,
    /// Source addresses (127.0.0.2, …) the slow connections come from, round robin.
    #[arg(long, default_value_t = 10)]
    pub(crate) sources: usize,
    /// The gateway's `listeners.protection.header_read_timeout`, in ms.
    #[arg(long, default_value_t = 2000)]
    pub(crate) header_timeout_ms: u64,
    /// Repetitions of the pair (idle phase, attack phase).
    #[arg(long, default_value_t = 5)]
    pub(crate) reps: usize,
    /// Requests of the normal caller per phase.
    #[arg(long, default_value_t = 4000)]
    pub(crate) requests: usize,
    /// The normal caller's pace: one request every this many µs (open loop, latency from the
    /// intended send time). Keep it well above the idle latency, or the caller queues behind itself.
    #[arg(long, default_value_t = 2000)]
    pub(crate) interval_us: u64,
    /// A request not answered within this many ms counts as an error (at this latency).
    #[arg(long, default_value_t = 5000)]
    pub(crate) request_timeout_ms: u64,
    /// Worker threads of the gateway's runtime (`TOKIO_WORKER_THREADS`); default: one per CPU.
    #[arg(long)]
    pub(crate) gateway_threads: Option<usize>,
    /// CPU of the measured caller's thread, and of the attackers' thread (default: 0 and 1 when
    /// there are two or more CPUs).
    #[arg(long)]
    pub(crate) caller_cpu: Option<usize>,
    #[arg(long)]
    pub(crate) attacker_cpu: Option<usize>,
    /// Do not pin the caller and the attackers.
    #[arg(long)]
    pub(crate) no_pin: bool,
    /// Before each repetition, wait (up to `--load-wait-s` in all) until the 1-minute load average
    /// is at most this.
    #[arg(long)]
    pub(crate) max_load: Option<f64>,
    #[arg(long, default_value_t = 300)]
    pub(crate) load_wait_s: u64,
    /// Finished tasks the echo agent keeps (`example-agent --max-tasks`). Its default, 10 000, is
    /// reached within a run, and from then on every SendMessage makes the agent sort its whole
    /// store to forget one task: milliseconds per call, and the caller falls behind for good.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) agent_max_tasks: usize,
}

pub(crate) struct Rep {
    pub(crate) load_idle: String,
    pub(crate) load_attack: String,
    pub(crate) idle: Phase,
    pub(crate) attacked: Phase,
    pub(crate) shedding: Shedding,
    /// Gateway CPU (cores busy on average) during each phase.
    pub(crate) cpu_idle: f64,
    pub(crate) cpu_attack: f64,
}

pub(crate) fn main() {
    let args = Args::parse();
    if let Err(error) = install_signal_thread() {
        eprintln!("{error:#}");
        std::process::exit(2);
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        exit(101);
    }));
    // The whole run's limit: phases are bounded, this catches whatever is not.
    let phase = Duration::from_micros(args.interval_us) * args.requests as u32;
    let limit = Duration::from_secs(120 + args.load_wait_s * u64::from(args.max_load.is_some()))
        + (phase * 2 + Duration::from_secs(30)) * 2 * args.reps as u32;
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("the benchmark ran over its limit of {} s: killing it and its children", limit.as_secs());
        exit(3);
    });
    let code = match run(&args) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error: {error:#}");
            1
        }
    };
    exit(code);
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let bin = args.gateway_bin.clone().unwrap_or_else(|| root.join("target/release/a2a-gateway"));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (caller_cpu, attacker_cpu) = match (args.no_pin, cpus) {
        (true, _) => (None, None),
        (false, 1) => (args.caller_cpu, args.attacker_cpu),
        (false, _) => (args.caller_cpu.or(Some(0)), args.attacker_cpu.or(Some(1))),
    };
    let dir = std::env::temp_dir().join(format!("slow-clients-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let started_load = load_average();
    let started_at =
        Command::new("date").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())?;

    let (agent_pid, agent_url) = start(
        "agent",
        &bin,
        &["example-agent", "echo", "--listen", "127.0.0.1:0", "--max-tasks", &args.agent_max_tasks.to_string()],
        &[],
        &dir.join("agent.log"),
    )?;
    let config = format!(
        "listeners:\n  public: 127.0.0.1:0\n  admin: null\n  protection:\n    header_read_timeout: {}ms\nhealth:\n  interval: 30s\nbackends:\n  - name: echo\n    url: {agent_url}\n",
        args.header_timeout_ms
    );
    let config_path = dir.join("gateway.yaml");
    std::fs::write(&config_path, config)?;
    let mut env = Vec::new();
    if let Some(threads) = args.gateway_threads {
        env.push(("TOKIO_WORKER_THREADS", threads.to_string()));
    }
    let (gateway_pid, gateway_url) = start(
        "gateway",
        &bin,
        &["serve", "--config", &config_path.display().to_string()],
        &env,
        &dir.join("gateway.log"),
    )?;
    let gateway: SocketAddr = gateway_url.trim_start_matches("http://").parse()?;
    wait_for_echo(&gateway_url)?;
    let workers = threads_by_name(gateway_pid);

    let timeout = Duration::from_millis(args.header_timeout_ms);
    let slack = Duration::from_millis(500);
    let request_timeout = Duration::from_millis(args.request_timeout_ms);
    let caller = caller_thread(format!("{gateway_url}/"), caller_cpu, request_timeout)?;
    let attackers =
        attacker_thread(Target { gateway, slow: args.slow, sources: args.sources, timeout, slack }, attacker_cpu)?;
    let interval = Duration::from_micros(args.interval_us);
    let phase = interval * args.requests as u32;
    let phase_limit = phase * 2 + request_timeout * 2 + Duration::from_secs(30);
    let run_phase = |n: usize| -> anyhow::Result<mpsc::Receiver<anyhow::Result<Phase>>> {
        let (reply, answer) = mpsc::channel();
        caller.send(Measure { n, interval, reply }).map_err(|_| anyhow!("the caller thread died"))?;
        Ok(answer)
    };
    let wait = |answer: mpsc::Receiver<anyhow::Result<Phase>>| -> anyhow::Result<Phase> {
        answer.recv_timeout(phase_limit).map_err(|_| anyhow!("a phase took over {} s", phase_limit.as_secs()))?
    };
    // Warm-up: connections, the agent's and the gateway's caches.
    wait(run_phase((args.requests / 4).max(100))?)?;

    let ticks = clock_ticks() as f64;
    let settle = Duration::from_millis(500);
    let mut reps = Vec::new();
    let mut load_waited = Duration::ZERO;
    for rep in 0..args.reps {
        if let Some(max) = args.max_load {
            let began = Instant::now();
            while load1() > max && load_waited + began.elapsed() < Duration::from_secs(args.load_wait_s) {
                std::thread::sleep(Duration::from_secs(5));
            }
            load_waited += began.elapsed();
        }
        let load_idle = load_average();
        let cpu0 = cpu_ticks(gateway_pid);
        let began = Instant::now();
        let idle = wait(run_phase(args.requests)?)?;
        let cpu_idle = cpu_ticks(gateway_pid).saturating_sub(cpu0) as f64 / ticks / began.elapsed().as_secs_f64();
        std::thread::sleep(settle);

        let load_attack = load_average();
        let cpu0 = cpu_ticks(gateway_pid);
        let began = Instant::now();
        let (reply, shed) = mpsc::channel();
        attackers.send(Attack { until: began + phase, reply }).map_err(|_| anyhow!("the attacker thread died"))?;
        let attacked = wait(run_phase(args.requests)?)?;
        let shedding =
            shed.recv_timeout(phase_limit).map_err(|_| anyhow!("the attackers did not finish their phase"))??;
        let cpu_attack = cpu_ticks(gateway_pid).saturating_sub(cpu0) as f64 / ticks / began.elapsed().as_secs_f64();
        eprintln!(
            "rep {}: idle p99 {} µs, attack p99 {} µs, ratio {:.2}; load {load_attack}",
            rep + 1,
            pick(&idle.latencies, 0.99),
            pick(&attacked.latencies, 0.99),
            pick(&attacked.latencies, 0.99) as f64 / pick(&idle.latencies, 0.99).max(1) as f64
        );
        reps.push(Rep { load_idle, load_attack, idle, attacked, shedding, cpu_idle, cpu_attack });
        // Attackers hung up at the phase's end; let the gateway drop their connections.
        std::thread::sleep(settle);
    }
    let ended_load = load_average();
    let agent_cpu = cpu_ticks(agent_pid) as f64 / ticks;
    kill_children();
    let _ = std::fs::remove_dir_all(&dir);
    report(
        args,
        &Report { reps, started_at, started_load, ended_load, workers, cpus, caller_cpu, attacker_cpu, agent_cpu },
    );
    Ok(())
}

/// Waits until the gateway lists the echo skill on its card.
pub(crate) fn wait_for_echo(gateway_url: &str) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build()?;
        let card = format!("{gateway_url}/.well-known/agent-card.json");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = client.get(&card).send().await
                && response.status().is_success()
                && response.text().await.is_ok_and(|text| text.contains("\"echo\""))
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the gateway never listed the echo skill");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}
