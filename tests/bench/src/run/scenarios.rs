//! The scenarios of a run, each in interleaved repetitions: saturation, unary at offered rates, the
//! card, SSE latency, idle streams and the profile.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use anyhow::bail;

use crate::backend::{self, Backend, Clock};
use crate::loadgen::{Pool, RunStats, Target};
use crate::procs;
use crate::report::{
    DIRECT, GATEWAY, IdleRun, NGINX, PEER, PEER_FULL, Quantiles, Series, SseLevel, SseRun, UnaryLevel, UnaryRun,
};
use crate::streams::{self, StreamTarget};
use crate::{Cli, addr_of, profile, wait_for_skill};

use super::machine::wait_for_descriptors;
use super::{Bench, Plan, Setup, saturation};

/// One offered rate and how long to measure at it.
pub(super) struct Level {
    label: String,
    rate: f64,
    reps: usize,
    duration: Duration,
}

/// Saturation probes, then the unary paths at each offered rate (when `measure`); returns the rates.
pub(super) async fn unary(bench: &mut Bench, cli: &Cli, measure: bool) -> anyhow::Result<Vec<Level>> {
    let mut pools = saturation::pools(bench, saturation::unary_paths(bench)?).await?;
    // Saturation, closed loop, in interleaved rounds: the first table, and the offered rates below.
    let closed_loop = saturation::measure(bench, &mut pools).await;
    let (plan, setup, results) = (&bench.plan, &bench.setup, &mut bench.results);
    results.saturation = closed_loop.iter().map(|row| (row.name.clone(), row.median_rate())).collect();
    results.closed_loop = closed_loop;
    let saturation = |name: &str| results.saturation.iter().find(|s| s.0 == name).map_or(0.0, |s| s.1);
    let (direct_saturation, gateway_saturation) = (saturation(DIRECT), saturation(GATEWAY));
    if direct_saturation < 1.0 || gateway_saturation < 1.0 {
        bail!("the saturation probe answered nothing");
    }
    // The target rate is the definition; where the gateway cannot sustain it, a second level
    // well inside the gateway's own capacity shows its cost when it keeps up (open-loop arrivals cost
    // more CPU per request than the batched closed-loop probe, so half its saturation is already
    // close to overload).
    let level = |label: &str, rate: f64| Level { label: label.into(), rate, reps: plan.reps, duration: plan.duration };
    let mut levels: Vec<Level> = if let Some(rate) = cli.rate {
        vec![level("the rate asked for (--rate)", rate)]
    } else if cli.smoke {
        vec![level("a gentle smoke rate", (direct_saturation / 4.0).min(500.0))]
    } else {
        // The lower rate first, so that the overload of the other cannot linger into it.
        vec![
            level("light load: a quarter of the no-policy gateway's saturation", gateway_saturation / 4.0),
            level("the target rate: half the direct saturation", direct_saturation / 2.0),
        ]
    };
    if levels.len() == 2 {
        if levels[0].rate >= levels[1].rate * 0.8 {
            levels.remove(0);
        } else {
            levels[1].reps = plan.overload_reps;
            levels[1].duration = plan.overload_duration;
        }
    }
    if !measure {
        return Ok(levels);
    }
    for level in &levels {
        let rate = level.rate;
        let mut series: Vec<Series> = pools
            .iter()
            .map(|(name, _, _)| Series { name: name.to_string(), runs: Vec::new(), skipped: None })
            .collect();
        // Absent reference rows say why, from the run's notes.
        for (name, keyword, absent) in [
            (NGINX, "nginx", bench.nginx.is_none()),
            (PEER, "agentgateway", bench.peer.is_none()),
            (PEER_FULL, "agentgateway", bench.peer_full.is_none()),
        ] {
            if absent {
                let reason = results.notes.iter().find(|n| n.contains(keyword)).cloned();
                series.push(Series { name: name.into(), runs: Vec::new(), skipped: reason });
            }
        }
        for rep in 0..level.reps {
            for (i, (name, pool, pid)) in pools.iter_mut().enumerate() {
                let run = open_loop(pool, *pid, rate, plan.warmup, level.duration, plan, setup.ticks).await;
                eprintln!(
                    "{rate:.0} req/s rep {} {name}: p50 {:.0} µs p99 {:.0} µs, {:.0} req/s, {} errors",
                    rep + 1,
                    run.q.p50,
                    run.q.p99,
                    run.rate,
                    run.errors
                );
                series[i].runs.push(run);
            }
        }
        let (label, reps, duration_secs) = (level.label.clone(), level.reps, level.duration.as_secs_f64());
        results.unary.push(UnaryLevel { label, rate, reps, duration_secs, series });
    }
    Ok(levels)
}

/// Agent card GET, at the lower of the offered rates (the one the gateway sustains).
pub(super) async fn card(bench: &mut Bench, levels: &[Level]) -> anyhow::Result<()> {
    let plain = bench.plain()?;
    let rate = levels.iter().map(|l| l.rate).fold(f64::INFINITY, f64::min);
    let connections = bench.plan.connections;
    let mut pools = [
        (Pool::connect(Target::get(bench.backend.addr, backend::CARD_PATH)?, connections).await?, None),
        (Pool::connect(Target::get(addr_of(&plain.url)?, backend::CARD_PATH)?, connections).await?, Some(plain.pid())),
    ];
    let mut series: Vec<Series> = ["direct to the backend's card", "gateway card"]
        .iter()
        .map(|name| Series { name: name.to_string(), runs: Vec::new(), skipped: None })
        .collect();
    for rep in 0..bench.plan.reps {
        for (i, (pool, pid)) in pools.iter_mut().enumerate() {
            let plan = &bench.plan;
            let run = open_loop(pool, *pid, rate, plan.warmup, plan.duration, plan, bench.setup.ticks).await;
            eprintln!("card rep {} {}: p50 {:.0} µs p99 {:.0} µs", rep + 1, series[i].name, run.q.p50, run.q.p99);
            series[i].runs.push(run);
        }
    }
    let (reps, duration_secs) = (bench.plan.reps, bench.plan.duration.as_secs_f64());
    bench.results.card = UnaryLevel { label: "card".into(), rate, reps, duration_secs, series };
    Ok(())
}

/// SSE per-event latency at each stream count, direct and through the gateway, interleaved.
pub(super) async fn sse(bench: &mut Bench) {
    let Ok(plain) = bench.plain() else { return };
    let Ok(gateway_addr) = addr_of(&plain.url) else { return };
    let pid = plain.pid();
    let direct = StreamTarget { addr: bench.backend.addr, path: backend::RPC_PATH.into() };
    let gateway = StreamTarget { addr: gateway_addr, path: "/".into() };
    // nginx passes the path on: the backend's own.
    let nginx = bench.nginx.as_ref().and_then(|n| Some((addr_of(&n.url).ok()?, n.pid())));
    let nginx = nginx.map(|(addr, pid)| (StreamTarget { addr, path: backend::RPC_PATH.into() }, pid));
    let (clock, ticks) = (bench.clock, bench.setup.ticks);
    let trace = bench.plan.sse_trace.as_deref();
    for &(streams, interval_ms, events) in &bench.plan.sse {
        let mut level =
            SseLevel { streams, interval_ms, events, direct: Vec::new(), gateway: Vec::new(), nginx: Vec::new() };
        let interval = Duration::from_millis(interval_ms);
        let runner = SseRunner { clock, ticks, trace, streams, events, interval };
        for _ in 0..bench.plan.reps {
            let d = runner.run("direct", &direct, None).await;
            let g = runner.run("gateway", &gateway, Some(pid)).await;
            eprintln!("sse {streams} streams: p99 direct {:.0} µs, gateway {:.0} µs", d.q.p99, g.q.p99);
            if let Some((target, nginx_pid)) = &nginx {
                // nginx's CPU is its master's and its workers' (the master's children).
                let n = runner.run("nginx", target, Some(*nginx_pid)).await;
                eprintln!("sse {streams} streams: p99 nginx {:.0} µs", n.q.p99);
                level.nginx.push(n);
            }
            level.direct.push(d);
            level.gateway.push(g);
        }
        bench.results.sse.push(level);
    }
}

/// Idle streams: a fresh gateway each repetition, so RSS starts from the same place.
pub(super) async fn idle(bench: &mut Bench) -> anyhow::Result<()> {
    let count = bench.plan.idle_streams;
    for _ in 0..bench.plan.idle_reps {
        wait_for_descriptors(count).await;
        let run = idle_run(&bench.setup, &bench.backend, count).await?;
        eprintln!("idle: {} open, {:.1} KiB per stream", run.opened, run.per_stream_kib());
        bench.results.idle.push(run);
    }
    Ok(())
}

pub(super) async fn profile(bench: &mut Bench) {
    let Some(tool) = profile::choose_tool() else {
        bench.results.notes.push("no profiler: perf cannot count instructions and valgrind is missing".into());
        return;
    };
    let setup = &bench.setup;
    let target = |addr| setup.full_target(addr);
    let profile_setup = profile::Setup {
        gateway_bin: &setup.gateway_bin,
        config: &setup.full_config,
        env: &setup.env,
        work: &setup.work,
        target: &target,
        scenario: "unary SendMessage through the full-stack gateway (closed loop, 4 connections)".into(),
        warmup: Duration::from_secs(3),
        measure: Duration::from_secs(12),
    };
    match profile::run(tool, &profile_setup).await {
        Ok(profile) => bench.results.profile = Some(profile),
        Err(error) => bench.results.notes.push(format!("profile failed: {error:#}")),
    }
}

async fn open_loop(
    pool: &mut Pool,
    pid: Option<u32>,
    rate: f64,
    warmup: Duration,
    duration: Duration,
    plan: &Plan,
    ticks: u64,
) -> UnaryRun {
    let _ = pool.open_loop(rate, warmup, plan.max_in_flight).await;
    let cpu0 = pid.map(|p| procs::cpu_split(p, ticks));
    let stats: RunStats = pool.open_loop(rate, duration, plan.max_in_flight).await;
    let cpu1 = pid.map(|p| procs::cpu_split(p, ticks));
    let used = cpu0.zip(cpu1).map(|(a, b)| (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)));
    let cpu_per_request = used.map(|(user, system)| (user + system) as f64 / stats.ok.max(1) as f64);
    let kernel_share = used.map(|(user, system)| system as f64 * 100.0 / (user + system).max(1) as f64);
    UnaryRun {
        q: Quantiles::of(&stats.latency),
        rate: stats.achieved_rate(),
        ok: stats.ok,
        errors: stats.errors(),
        cpu_per_request,
        kernel_share,
        lag_p99: Quantiles::of(&stats.lag).p99,
        first_error: stats.first_error.clone().or_else(|| {
            (stats.overflow > 0).then(|| format!("{} requests overflowed the in-flight bound", stats.overflow))
        }),
    }
}

/// One SSE level's runs: its shape, the clock both ends read, and where events are traced.
struct SseRunner<'a> {
    clock: Clock,
    ticks: u64,
    trace: Option<&'a Path>,
    streams: usize,
    events: u32,
    interval: Duration,
}

impl SseRunner<'_> {
    /// One run against `target` (`name` in trace files), with the CPU of `pid` when given.
    async fn run(&self, name: &str, target: &StreamTarget, pid: Option<u32>) -> SseRun {
        let cpu0 = pid.map(|p| procs::cpu_micros(p, self.ticks));
        let stats =
            streams::sse_latency(target, self.clock, self.streams, self.events, self.interval, self.trace.is_some())
                .await;
        let cpu1 = pid.map(|p| procs::cpu_micros(p, self.ticks));
        if let Some(dir) = self.trace {
            write_trace(dir, name, self.streams, &stats.trace);
        }
        SseRun {
            q: Quantiles::of(&stats.latency),
            events: stats.events,
            failed_streams: stats.failed_streams,
            cpu_per_event: cpu0.zip(cpu1).map(|(a, b)| b.saturating_sub(a) as f64 / stats.events.max(1) as f64),
            first_error: stats.first_error,
        }
    }
}

/// Appends one run's events (backend stamp and latency, ns) to `<dir>/sse-<target>-<streams>.tsv`, for
/// the shape of the tail (`tests/bench/sse-trace.py`).
fn write_trace(dir: &Path, name: &str, streams: usize, trace: &[(u64, u64)]) {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let mut out = String::with_capacity(trace.len() * 24);
    for (sent, latency) in trace {
        let _ = writeln!(out, "{sent}\t{latency}");
    }
    let path = dir.join(format!("sse-{name}-{streams}.tsv"));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(&path))
        .and_then(|mut file| file.write_all(out.as_bytes()));
    if let Err(error) = written {
        eprintln!("could not write {}: {error}", path.display());
    }
}

async fn idle_run(setup: &Setup, backend: &Backend, count: usize) -> anyhow::Result<IdleRun> {
    let gateway = setup.start_gateway("gateway-idle", &setup.plain_config)?;
    let addr = addr_of(&gateway.url)?;
    wait_for_skill(addr, Duration::from_secs(20)).await?;
    let target = StreamTarget { addr, path: "/".into() };
    // Several client addresses so that no one address runs short of ephemeral ports.
    let sources: Vec<Ipv4Addr> = (2..=5).map(|i| Ipv4Addr::new(127, 0, 0, i)).collect();
    let warm = streams::open_idle(&target, 100.min(count), &sources, 50).await;
    drop(warm);
    backend.release_held();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_base_kib = procs::rss_kib(gateway.pid());
    let idle = streams::open_idle(&target, count, &sources, 200).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_open_kib = procs::rss_kib(gateway.pid());
    let (opened, failed, first_error) = (idle.open.len(), idle.failed, idle.first_error.clone());
    drop(idle);
    backend.release_held();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_closed_kib = procs::rss_kib(gateway.pid());
    drop(gateway);
    Ok(IdleRun { opened, failed, rss_base_kib, rss_open_kib, rss_closed_kib, first_error })
}
