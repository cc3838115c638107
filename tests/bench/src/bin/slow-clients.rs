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

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

#[derive(Parser, Debug, Clone)]
struct Args {
    /// The gateway binary (default: target/release/a2a-gateway).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// Slow connections held at once during an attack phase.
    #[arg(long, default_value_t = 1000)]
    slow: usize,
    /// Source addresses (127.0.0.2, …) the slow connections come from, round robin.
    #[arg(long, default_value_t = 10)]
    sources: usize,
    /// The gateway's `listeners.protection.header_read_timeout`, in ms.
    #[arg(long, default_value_t = 2000)]
    header_timeout_ms: u64,
    /// Repetitions of the pair (idle phase, attack phase).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Requests of the normal caller per phase.
    #[arg(long, default_value_t = 4000)]
    requests: usize,
    /// The normal caller's pace: one request every this many µs (open loop, latency from the
    /// intended send time). Keep it well above the idle latency, or the caller queues behind itself.
    #[arg(long, default_value_t = 2000)]
    interval_us: u64,
    /// A request not answered within this many ms counts as an error (at this latency).
    #[arg(long, default_value_t = 5000)]
    request_timeout_ms: u64,
    /// Worker threads of the gateway's runtime (`TOKIO_WORKER_THREADS`); default: one per CPU.
    #[arg(long)]
    gateway_threads: Option<usize>,
    /// CPU of the measured caller's thread, and of the attackers' thread (default: 0 and 1 when
    /// there are two or more CPUs).
    #[arg(long)]
    caller_cpu: Option<usize>,
    #[arg(long)]
    attacker_cpu: Option<usize>,
    /// Do not pin the caller and the attackers.
    #[arg(long)]
    no_pin: bool,
    /// Before each repetition, wait (up to `--load-wait-s` in all) until the 1-minute load average
    /// is at most this.
    #[arg(long)]
    max_load: Option<f64>,
    #[arg(long, default_value_t = 300)]
    load_wait_s: u64,
    /// Finished tasks the echo agent keeps (`example-agent --max-tasks`). Its default, 10 000, is
    /// reached within a run, and from then on every SendMessage makes the agent sort its whole
    /// store to forget one task: milliseconds per call, and the caller falls behind for good.
    #[arg(long, default_value_t = 1_000_000)]
    agent_max_tasks: usize,
}

// ---------------------------------------------------------------------------------------------
// Children: registered here so that every way out of the benchmark can kill them.

static CHILDREN: Mutex<Vec<(String, Child)>> = Mutex::new(Vec::new());

fn kill_children() {
    let mut children = match CHILDREN.try_lock() {
        Ok(children) => children,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        // Held by a thread that is registering a child: wait for it.
        Err(std::sync::TryLockError::WouldBlock) => CHILDREN.lock().unwrap_or_else(|e| e.into_inner()),
    };
    for (_, child) in children.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    children.clear();
}

fn exit(code: i32) -> ! {
    kill_children();
    std::process::exit(code);
}

/// Starts `bin args…`, registered for killing, and waits for its `listening <url>` line.
fn start(name: &str, bin: &Path, args: &[&str], env: &[(&str, String)], log: &Path) -> anyhow::Result<(u32, String)> {
    // setpriv: the child dies with the benchmark even if the benchmark is SIGKILLed. Spawned from
    // the main thread, which lives as long as the process (the death signal follows the thread).
    let mut command = Command::new("setpriv");
    command
        .arg("--pdeathsig")
        .arg("KILL")
        .arg("--")
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?);
    for (key, value) in env {
        command.env(key, value);
    }
    let (pid, stdout) = {
        let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = command.spawn().with_context(|| format!("starting {} under setpriv", bin.display()))?;
        let stdout = child.stdout.take().context("stdout")?;
        let pid = child.id();
        children.push((name.to_string(), child));
        (pid, stdout)
    };
    let (tx, rx) = mpsc::channel();
    // Reads the announcement, then keeps draining so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening ") {
                let _ = tx.send(url.trim().trim_end_matches('/').to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(url) => Ok((pid, url)),
        Err(_) => bail!("{name} did not announce its address within 60 s; see {}", log.display()),
    }
}

/// SIGINT, SIGTERM, SIGHUP: kill the children, then exit. Installed before any child starts.
fn install_signal_thread() -> anyhow::Result<()> {
    let (ready, installed) = mpsc::channel::<anyhow::Result<()>>();
    std::thread::spawn(move || {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => {
                let _ = ready.send(Err(error.into()));
                return;
            }
        };
        runtime.block_on(async move {
            let streams =
                (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()));
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
                let _ = ready.send(Err(anyhow!("cannot install signal handlers")));
                return;
            };
            let _ = ready.send(Ok(()));
            let (name, code) = tokio::select! {
                _ = int.recv() => ("SIGINT", 130),
                _ = term.recv() => ("SIGTERM", 143),
                _ = hup.recv() => ("SIGHUP", 129),
            };
            eprintln!("{name}: killing the gateway and the agent");
            exit(code);
        });
    });
    installed.recv().map_err(|_| anyhow!("the signal thread died"))?
}

// ---------------------------------------------------------------------------------------------
// Machine facts.

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn load1() -> f64 {
    load_average().split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

/// User + system CPU time of `pid` (all its threads), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    field(14) + field(15)
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// The threads of `pid`, counted by name (names are cut at 15 bytes), e.g. `tokio-runtime-w ×2`.
fn threads_by_name(pid: u32) -> String {
    let mut names = std::collections::BTreeMap::<String, usize>::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(name) = std::fs::read_to_string(task.path().join("comm")) {
                *names.entry(name.trim().to_string()).or_default() += 1;
            }
        }
    }
    names.iter().map(|(name, n)| format!("{name} ×{n}")).collect::<Vec<_>>().join(", ")
}

/// Pins the calling thread to `cpu` (`taskset` on its thread id: no unsafe code needed).
fn pin_this_thread(cpu: usize) -> anyhow::Result<()> {
    let link = std::fs::read_link("/proc/thread-self")?;
    let tid = link.file_name().and_then(|n| n.to_str()).context("thread id")?.to_string();
    let status = Command::new("taskset")
        .args(["-p", "-c", &cpu.to_string(), &tid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("taskset -p -c {cpu} {tid} failed");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The measured caller: its own thread and runtime.

struct Phase {
    /// Latency of each request from its intended send time (errors at the time they failed).
    latencies: Vec<u64>,
    /// From the actual send (what the caller would see without its own queueing).
    service: Vec<u64>,
    errors: usize,
    /// Requests never sent because the phase ran over its deadline.
    unsent: usize,
}

struct Measure {
    n: usize,
    interval: Duration,
    reply: mpsc::Sender<anyhow::Result<Phase>>,
}

fn caller_thread(url: String, cpu: Option<usize>, timeout: Duration) -> anyhow::Result<mpsc::Sender<Measure>> {
    let (jobs, inbox) = mpsc::channel::<Measure>();
    std::thread::Builder::new().name("caller".into()).spawn(move || {
        if let Some(cpu) = cpu
            && let Err(error) = pin_this_thread(cpu)
        {
            eprintln!("caller not pinned: {error}");
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("caller runtime");
        let client =
            reqwest::Client::builder().no_proxy().pool_max_idle_per_host(4).timeout(timeout).build().expect("client");
        for job in inbox {
            let result = runtime.block_on(measure(&client, &url, job.n, job.interval, timeout));
            let _ = job.reply.send(result);
        }
    })?;
    Ok(jobs)
}

/// `n` SendMessage calls, one per `interval`, until done or the phase's deadline.
async fn measure(
    client: &reqwest::Client,
    url: &str,
    n: usize,
    interval: Duration,
    timeout: Duration,
) -> anyhow::Result<Phase> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello"}], "metadata": {"skillId": "echo"}}}});
    let body = bytes::Bytes::from(serde_json::to_vec(&body)?);
    let mut phase = Phase { latencies: Vec::with_capacity(n), service: Vec::with_capacity(n), errors: 0, unsent: 0 };
    let start = Instant::now();
    // A slow gateway may delay the calls, but never past this.
    let deadline = start + interval * n as u32 * 2 + timeout * 2;
    for i in 0..n {
        let due = start + interval * i as u32;
        if Instant::now() > deadline {
            phase.unsent = n - i;
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        let sent = Instant::now();
        let answer = async {
            let response = client
                .post(url)
                .header("a2a-version", "1.0")
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await?;
            let ok = response.status().is_success();
            response.bytes().await?;
            Ok::<_, reqwest::Error>(ok)
        };
        // reqwest's timeout covers the body too; this one is the backstop.
        let ok = matches!(tokio::time::timeout(timeout + Duration::from_secs(1), answer).await, Ok(Ok(true)));
        if !ok {
            phase.errors += 1;
        }
        phase.latencies.push(due.elapsed().as_micros() as u64);
        phase.service.push(sent.elapsed().as_micros() as u64);
    }
    phase.latencies.sort_unstable();
    phase.service.sort_unstable();
    Ok(phase)
}

fn pick(sorted: &[u64], q: f64) -> u64 {
    sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).copied().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The attackers: their own thread and runtime.

/// What the slow connections of one attack phase met.
#[derive(Default)]
struct Shedding {
    /// Connections the gateway closed, and after how long.
    closed: Vec<Duration>,
    /// Connections still open when the phase ended though older than the timeout + slack (or
    /// given up on): not shed in time.
    late: usize,
    /// Connections still open at the phase's end but younger than the timeout (no verdict).
    censored: usize,
    connect_failures: usize,
    /// 503 answers (the listener's caps).
    refused: usize,
}

struct Attack {
    until: Instant,
    reply: mpsc::Sender<anyhow::Result<Shedding>>,
}

struct Target {
    gateway: SocketAddr,
    slow: usize,
    sources: usize,
    timeout: Duration,
    slack: Duration,
}

fn attacker_thread(target: Target, cpu: Option<usize>) -> anyhow::Result<mpsc::Sender<Attack>> {
    let (jobs, inbox) = mpsc::channel::<Attack>();
    std::thread::Builder::new().name("attackers".into()).spawn(move || {
        if let Some(cpu) = cpu
            && let Err(error) = pin_this_thread(cpu)
        {
            eprintln!("attackers not pinned: {error}");
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("attacker runtime");
        for job in inbox {
            let result = runtime.block_on(attack(&target, job.until));
            let _ = job.reply.send(result);
        }
    })?;
    Ok(jobs)
}

/// Holds `target.slow` slow connections until `until`: each attacker reconnects as soon as the
/// gateway closes its connection. At `until` every attacker hangs up.
async fn attack(target: &Target, until: Instant) -> anyhow::Result<Shedding> {
    let tasks: Vec<_> = (0..target.slow)
        .map(|i| {
            let source = [127, 0, 0, 2 + (i % target.sources.max(1)) as u8];
            tokio::spawn(attacker(target.gateway, source, i % 2 == 0, until, target.timeout, target.slack))
        })
        .collect();
    let mut all = Shedding::default();
    for task in tasks {
        let one = task.await?;
        all.closed.extend(one.closed);
        all.late += one.late;
        all.censored += one.censored;
        all.connect_failures += one.connect_failures;
        all.refused += one.refused;
    }
    Ok(all)
}

async fn attacker(
    gateway: SocketAddr,
    source: [u8; 4],
    trickle: bool,
    until: Instant,
    timeout: Duration,
    slack: Duration,
) -> Shedding {
    let mut out = Shedding::default();
    let until = tokio::time::Instant::from_std(until);
    let give_up = timeout * 3 + slack;
    let head = b"POST / HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    while tokio::time::Instant::now() < until {
        let connect = async {
            let socket = TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((source, 0)))?;
            socket.connect(gateway).await
        };
        let mut stream = match tokio::time::timeout(Duration::from_secs(3), connect).await {
            Ok(Ok(stream)) => stream,
            _ => {
                out.connect_failures += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let opened = Instant::now();
        let mut buffer = [0u8; 512];
        let mut next = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.tick().await;
        let hold = tokio::time::sleep(give_up);
        tokio::pin!(hold);
        loop {
            tokio::select! {
                read = stream.read(&mut buffer) => match read {
                    Ok(0) | Err(_) => {
                        out.closed.push(opened.elapsed());
                        break;
                    }
                    // A 503 from a full listener: the close follows.
                    Ok(_) => out.refused += 1,
                },
                _ = tick.tick(), if trickle => {
                    let byte = next % head.len();
                    if stream.write_all(&head[byte..byte + 1]).await.is_err() {
                        out.closed.push(opened.elapsed());
                        break;
                    }
                    next += 1;
                }
                _ = tokio::time::sleep_until(until) => {
                    if opened.elapsed() > timeout + slack {
                        out.late += 1;
                    } else {
                        out.censored += 1;
                    }
                    break;
                }
                _ = &mut hold => {
                    out.late += 1;
                    break;
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------

struct Rep {
    load_idle: String,
    load_attack: String,
    idle: Phase,
    attacked: Phase,
    shedding: Shedding,
    /// Gateway CPU (cores busy on average) during each phase.
    cpu_idle: f64,
    cpu_attack: f64,
}

fn main() {
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

fn run(args: &Args) -> anyhow::Result<()> {
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
fn wait_for_echo(gateway_url: &str) -> anyhow::Result<()> {
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

struct Report {
    reps: Vec<Rep>,
    started_at: String,
    started_load: String,
    ended_load: String,
    workers: String,
    cpus: usize,
    caller_cpu: Option<usize>,
    attacker_cpu: Option<usize>,
    agent_cpu: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn report(args: &Args, r: &Report) {
    let cpu = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    println!("started {} (load average {}); ended with load average {}", r.started_at, r.started_load, r.ended_load);
    println!(
        "machine: {} CPUs; gateway threads: {}{}; caller thread: {}; attacker thread: {}; agent: unpinned ({:.1} CPU s in all)",
        r.cpus,
        r.workers,
        args.gateway_threads.map_or(" (runtime workers: default, one per CPU)".to_string(), |n| format!(
            " (runtime workers: {n}, --gateway-threads)"
        )),
        cpu(r.caller_cpu),
        cpu(r.attacker_cpu),
        r.agent_cpu,
    );
    println!(
        "normal caller: {} SendMessage per phase, one per {} µs (open loop; latency from the intended send time); {} repetitions of (idle, attack)",
        args.requests, args.interval_us, args.reps
    );
    println!(
        "attack: {} slow connections held for the whole phase ({} trickling one header byte per 250 ms, {} silent; each reconnects when shed) from {} addresses; header_read_timeout {} ms",
        args.slow,
        args.slow.div_ceil(2),
        args.slow / 2,
        args.sources,
        args.header_timeout_ms
    );
    println!();
    println!(
        "| rep | load (idle / attack) | idle p50 / p99 / max µs | attack p50 / p99 / max µs | p99 ratio | service p99 idle / attack µs | errors | gateway CPU idle / attack | slow conns shed | shed ≤ timeout + 500 ms | not shed in time | close time p50 / p99 / max ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    let (mut all_idle, mut all_attack) = (Vec::new(), Vec::new());
    let (mut shed_total, mut shed_within, mut late_total) = (0, 0, 0);
    let mut close_all = Vec::new();
    for (i, rep) in r.reps.iter().enumerate() {
        let (idle, attack) = (&rep.idle.latencies, &rep.attacked.latencies);
        let ratio = pick(attack, 0.99) as f64 / pick(idle, 0.99).max(1) as f64;
        ratios.push(ratio);
        all_idle.extend_from_slice(idle);
        all_attack.extend_from_slice(attack);
        let mut closed = rep.shedding.closed.clone();
        closed.sort_unstable();
        let within = closed.iter().filter(|d| **d <= Duration::from_millis(args.header_timeout_ms + 500)).count();
        shed_total += closed.len();
        shed_within += within;
        late_total += rep.shedding.late;
        close_all.extend_from_slice(&closed);
        let ms = |q: f64| {
            closed
                .get(((closed.len() as f64 * q) as usize).min(closed.len().saturating_sub(1)))
                .map_or(0, |d| d.as_millis())
        };
        println!(
            "| {} | {} / {} | {} / {} / {} | {} / {} / {} | {:.2} | {} / {} | {} / {} | {:.2} / {:.2} | {} | {} | {} | {} / {} / {} |",
            i + 1,
            rep.load_idle.split_whitespace().next().unwrap_or(""),
            rep.load_attack.split_whitespace().next().unwrap_or(""),
            pick(idle, 0.5),
            pick(idle, 0.99),
            idle.last().unwrap_or(&0),
            pick(attack, 0.5),
            pick(attack, 0.99),
            attack.last().unwrap_or(&0),
            ratio,
            pick(&rep.idle.service, 0.99),
            pick(&rep.attacked.service, 0.99),
            rep.idle.errors + rep.idle.unsent,
            rep.attacked.errors + rep.attacked.unsent,
            rep.cpu_idle,
            rep.cpu_attack,
            closed.len(),
            within,
            rep.shedding.late,
            ms(0.5),
            ms(0.99),
            ms(1.0),
        );
    }
    let spread = {
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        (sorted.first().copied().unwrap_or(0.0), sorted.last().copied().unwrap_or(0.0))
    };
    all_idle.sort_unstable();
    all_attack.sort_unstable();
    close_all.sort_unstable();
    let connect_failures: usize = r.reps.iter().map(|rep| rep.shedding.connect_failures).sum();
    let refused: usize = r.reps.iter().map(|rep| rep.shedding.refused).sum();
    println!();
    println!(
        "p99 ratio (attack / idle), median of {} repetitions: **{:.2}** (min {:.2}, max {:.2}); pooled p99 idle {} µs, attack {} µs (ratio {:.2})",
        ratios.len(),
        median(&mut ratios),
        spread.0,
        spread.1,
        pick(&all_idle, 0.99),
        pick(&all_attack, 0.99),
        pick(&all_attack, 0.99) as f64 / pick(&all_idle, 0.99).max(1) as f64,
    );
    println!(
        "slow connections: {shed_total} shed by the gateway, {shed_within} of them within header_read_timeout + 500 ms; {late_total} not shed in time; close time p50 {} ms, p99 {} ms, max {} ms; connect failures {connect_failures}; 503 answers {refused}",
        pick_duration(&close_all, 0.5),
        pick_duration(&close_all, 0.99),
        close_all.last().map_or(0, |d| d.as_millis()),
    );
}

fn pick_duration(sorted: &[Duration], q: f64) -> u128 {
    sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).map_or(0, |d| d.as_millis())
}
