//! Slow clients against the gateway's public listener: a normal caller's latency while idle, then
//! while 1000 slow connections (half sending their headers one byte at a time, half silent) sit on
//! the listener; and how soon the gateway sheds the slow connections (they must be closed within
//! the configured `header_read_timeout`, plus scheduling slack).
//!
//! Run (after `cargo build --release -p a2a-gateway -p a2a-bench`):
//! `target/release/slow-clients [--slow 1000] [--sources 10] [--header-timeout-ms 2000] [--requests 3000]`

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpSocket;
use tokio::process::{Child, Command};

#[derive(Parser, Debug)]
struct Args {
    /// The gateway binary (default: target/release/a2a-gateway).
    #[arg(long)]
    gateway_bin: Option<std::path::PathBuf>,
    /// Slow connections opened at once.
    #[arg(long, default_value_t = 1000)]
    slow: usize,
    /// Source addresses (127.0.0.2, …) the slow connections come from, round robin.
    #[arg(long, default_value_t = 10)]
    sources: usize,
    /// The gateway's `listeners.protection.header_read_timeout`, in ms.
    #[arg(long, default_value_t = 2000)]
    header_timeout_ms: u64,
    /// Requests of the normal caller per phase.
    #[arg(long, default_value_t = 3000)]
    requests: usize,
    /// The normal caller's pace: one request every this many µs (open loop, latency from the
    /// intended send time).
    #[arg(long, default_value_t = 1000)]
    interval_us: u64,
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

async fn start(bin: &std::path::Path, args: &[&str]) -> anyhow::Result<(Killed, String)> {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await??;
        match line {
            Some(line) => {
                if let Some(url) = line.strip_prefix("listening ") {
                    break url.trim().trim_end_matches('/').to_string();
                }
            }
            None => bail!("{} exited before it was ready", bin.display()),
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((Killed(child), url))
}

/// The normal caller: `n` SendMessage calls, paced; latency percentiles in µs.
async fn measure(client: &reqwest::Client, url: &str, n: usize, interval: Duration) -> anyhow::Result<Stats> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello"}], "metadata": {"skillId": "echo"}}}});
    let body = bytes::Bytes::from(serde_json::to_vec(&body)?);
    let mut latencies = Vec::with_capacity(n);
    let mut errors = 0;
    let start = Instant::now();
    for i in 0..n {
        let due = start + interval * i as u32;
        tokio::time::sleep_until(due.into()).await;
        let response = client
            .post(url)
            .header("a2a-version", "1.0")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await;
        match response {
            Ok(r) if r.status().is_success() => {
                let _ = r.bytes().await;
                latencies.push(due.elapsed().as_micros() as u64);
            }
            _ => errors += 1,
        }
    }
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Ok(Stats { p50: pick(0.50), p99: pick(0.99), max: latencies.last().copied().unwrap_or(0), errors })
}

struct Stats {
    p50: u64,
    p99: u64,
    max: u64,
    errors: usize,
}

/// One slow connection: connects from `source`, then trickles header bytes (or stays silent) until
/// the gateway closes it; how long that took, or `None` if it was refused at once.
async fn slow_connection(gateway: SocketAddr, source: [u8; 4], trickle: bool, give_up: Duration) -> Option<Duration> {
    let socket = TcpSocket::new_v4().ok()?;
    socket.bind(SocketAddr::from((source, 0))).ok()?;
    let mut stream = socket.connect(gateway).await.ok()?;
    let opened = Instant::now();
    let head = b"POST / HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let mut buffer = [0u8; 256];
    let mut next = 0;
    loop {
        if opened.elapsed() > give_up {
            return Some(give_up);
        }
        tokio::select! {
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return Some(opened.elapsed()),
                // A 503 from a full listener: the close follows.
                Ok(_) => continue,
            },
            _ = tokio::time::sleep(Duration::from_millis(250)), if trickle => {
                if stream.write_all(&head[next % head.len()..next % head.len() + 1]).await.is_err() {
                    return Some(opened.elapsed());
                }
                next += 1;
            }
            _ = tokio::time::sleep(give_up), if !trickle => {}
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let bin = args.gateway_bin.clone().unwrap_or_else(|| root.join("target/release/a2a-gateway"));
    let _ = rustls::crypto::ring::default_provider().install_default();

    let (_agent, agent_url) = start(&bin, &["example-agent", "echo", "--listen", "127.0.0.1:0"]).await?;
    let config = format!(
        "listeners:\n  public: 127.0.0.1:0\n  admin: null\n  protection:\n    header_read_timeout: {}ms\nhealth:\n  interval: 30s\nbackends:\n  - name: echo\n    url: {agent_url}\n",
        args.header_timeout_ms
    );
    let path = std::env::temp_dir().join(format!("slow-clients-{}.yaml", std::process::id()));
    std::fs::write(&path, config)?;
    let (_gateway, gateway_url) = start(&bin, &["serve", "--config", &path.display().to_string()]).await?;
    let gateway: SocketAddr = gateway_url.trim_start_matches("http://").parse()?;
    let client = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(4).build()?;
    let card = format!("{gateway_url}/.well-known/agent-card.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.get(&card).send().await.map(|r| r.status().is_success()).unwrap_or(false)
        || !client.get(&card).send().await?.text().await?.contains("\"echo\"")
    {
        if Instant::now() > deadline {
            bail!("the gateway never listed the echo skill");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = format!("{gateway_url}/");
    let interval = Duration::from_micros(args.interval_us);
    measure(&client, &url, args.requests / 10, interval).await?; // warm-up
    let idle = measure(&client, &url, args.requests, interval).await?;

    let timeout = Duration::from_millis(args.header_timeout_ms);
    let give_up = timeout * 5 + Duration::from_secs(5);
    // The attackers run on their own thread and runtime, as they would on other machines: opening
    // 1000 connections on the normal caller's runtime delayed its sends by tens of ms, which the
    // caller's latency (counted from the intended send time) then charged to the gateway.
    let (slow_count, sources) = (args.slow, args.sources.max(1));
    let attackers = std::thread::spawn(move || -> anyhow::Result<Vec<Option<Duration>>> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async move {
            let tasks: Vec<_> = (0..slow_count)
                .map(|i| {
                    let source = [127, 0, 0, 2 + (i % sources) as u8];
                    tokio::spawn(slow_connection(gateway, source, i % 2 == 0, give_up))
                })
                .collect();
            let mut outcomes = Vec::with_capacity(tasks.len());
            for task in tasks {
                outcomes.push(task.await?);
            }
            Ok(outcomes)
        })
    });
    let attacked = measure(&client, &url, args.requests, interval).await?;
    let outcomes =
        tokio::task::spawn_blocking(move || attackers.join().map_err(|_| anyhow::anyhow!("attackers panicked")))
            .await???;
    let mut closed = Vec::new();
    let mut failed = 0;
    for outcome in outcomes {
        match outcome {
            Some(after) => closed.push(after),
            None => failed += 1,
        }
    }
    closed.sort_unstable();
    let within = closed.iter().filter(|d| **d <= timeout + Duration::from_millis(500)).count();
    let still_open = closed.iter().filter(|d| **d >= give_up).count();
    let _ = std::fs::remove_file(&path);

    println!(
        "slow connections: {} ({} trickling one header byte per 250 ms, {} silent) from {} addresses",
        args.slow,
        args.slow.div_ceil(2),
        args.slow / 2,
        args.sources
    );
    println!("header_read_timeout: {} ms", args.header_timeout_ms);
    println!();
    println!(
        "| normal caller ({} SendMessage, one per {} µs) | p50 µs | p99 µs | max µs | errors |",
        args.requests, args.interval_us
    );
    println!("|---|---|---|---|---|");
    println!("| idle | {} | {} | {} | {} |", idle.p50, idle.p99, idle.max, idle.errors);
    println!(
        "| during the slow connections | {} | {} | {} | {} |",
        attacked.p50, attacked.p99, attacked.max, attacked.errors
    );
    println!();
    println!("p99 ratio (attack / idle): {:.2}", attacked.p99 as f64 / idle.p99.max(1) as f64);
    let pct = |q: f64| {
        closed
            .get(((closed.len() as f64 * q) as usize).min(closed.len().saturating_sub(1)))
            .map_or(0, |d| d.as_millis())
    };
    println!(
        "slow connections closed by the gateway: {} of {} (connect failures {failed}); within timeout + 500 ms: {within}; still open after {} s: {still_open}; close time p50 {} ms, p99 {} ms, max {} ms",
        closed.len() - still_open,
        args.slow,
        give_up.as_secs(),
        pct(0.5),
        pct(0.99),
        closed.last().map_or(0, |d| d.as_millis()),
    );
    Ok(())
}
