//! Closed-loop saturation of every path in interleaved rounds: req/s and the proxy's CPU per request
//! of each round. The full run records it (the first table of the report, and the offered rates of
//! the open-loop runs); `--only saturation` prints it.

use anyhow::Context;

use crate::backend;
use crate::loadgen::{Pool, Target, send_message_body};
use crate::procs;
use crate::report::{ClosedLoop, DIRECT, FULL, GATEWAY, NGINX, PEER, PEER_FULL};
use crate::{Cli, addr_of};

use super::Bench;

/// The proxied paths of the unary scenarios: name, target, the proxy process (for its CPU).
pub(super) fn unary_paths(bench: &Bench) -> anyhow::Result<Vec<(&'static str, Target, Option<u32>)>> {
    let plain = bench.plain()?;
    let mut paths = vec![
        (DIRECT, Target::rpc(bench.backend.addr, backend::RPC_PATH, send_message_body(), None)?, None),
        (GATEWAY, Target::rpc(addr_of(&plain.url)?, "/", send_message_body(), None)?, Some(plain.pid())),
        (FULL, bench.setup.full_target(addr_of(&bench.full.url)?)?, Some(bench.full.pid())),
    ];
    // The plain proxies forward the path as it is, so they are called on the backend's own path.
    if let Some(nginx) = &bench.nginx {
        let target = Target::rpc(addr_of(&nginx.url)?, backend::RPC_PATH, send_message_body(), None)?;
        paths.push((NGINX, target, Some(nginx.pid())));
    }
    if let Some(peer) = &bench.peer {
        let target = Target::rpc(addr_of(&peer.url)?, backend::RPC_PATH, send_message_body(), None)?;
        paths.push((PEER, target, Some(peer.pid())));
    }
    if let Some(peer) = &bench.peer_full {
        let setup = &bench.setup;
        let target =
            Target::rpc(addr_of(&peer.url)?, backend::RPC_PATH, setup.full_body.clone(), setup.full_token.as_deref())?;
        paths.push((PEER_FULL, target, Some(peer.pid())));
    }
    Ok(paths)
}

/// Connects a pool of the plan's size to every path.
pub(super) async fn pools(
    bench: &Bench,
    paths: Vec<(&'static str, Target, Option<u32>)>,
) -> anyhow::Result<Vec<(&'static str, Pool, Option<u32>)>> {
    let mut pools = Vec::new();
    for (name, target, pid) in paths {
        let pool = Pool::connect(target, bench.plan.connections).await.with_context(|| name.to_string())?;
        pools.push((name, pool, pid));
    }
    Ok(pools)
}

/// A warm-up of every path, then `plan.reps` rounds of one probe per path, interleaved.
pub(super) async fn measure(bench: &Bench, pools: &mut [(&'static str, Pool, Option<u32>)]) -> Vec<ClosedLoop> {
    let plan = &bench.plan;
    for (_, pool, _) in pools.iter_mut() {
        pool.closed_loop(plan.warmup).await;
    }
    let mut rows: Vec<ClosedLoop> =
        pools.iter().map(|(name, _, _)| ClosedLoop { name: name.to_string(), ..ClosedLoop::default() }).collect();
    for round in 0..plan.reps {
        for (row, (name, pool, pid)) in rows.iter_mut().zip(pools.iter_mut()) {
            let cpu0 = pid.map(|p| procs::cpu_micros(p, bench.setup.ticks));
            let stats = pool.closed_loop(plan.probe).await;
            let cpu1 = pid.map(|p| procs::cpu_micros(p, bench.setup.ticks));
            let cpu = cpu0.zip(cpu1).map(|(a, b)| b.saturating_sub(a) as f64 / stats.ok.max(1) as f64);
            eprintln!(
                "saturation round {round}: {name}: {:.0} req/s, {} errors{}",
                stats.achieved_rate(),
                stats.errors(),
                cpu.map(|c| format!(", {c:.1} µs CPU per request")).unwrap_or_default()
            );
            row.rates.push(stats.achieved_rate());
            row.errors += stats.errors();
            row.cpu_per_request.extend(cpu);
        }
    }
    rows
}

/// `--only saturation`: the rounds, printed as a table.
pub(super) async fn print(bench: &Bench, cli: &Cli) -> anyhow::Result<()> {
    let mut pools = pools(bench, unary_paths(bench)?).await?;
    let rows = measure(bench, &mut pools).await;
    let plan = &bench.plan;
    println!(
        "closed loop, {} connections, {} rounds of {:?} ({})",
        plan.connections, plan.reps, plan.probe, cli.command_line
    );
    print!("{}", crate::report::closed_loop_table(&rows));
    Ok(())
}
