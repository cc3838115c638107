//! The printed report: the machine, the method, each repetition and the verdict (median ratio of
//! attack p99 to idle p99, with spread).

use std::time::Duration;

use crate::caller::pick;
use crate::{Args, Rep};

pub(crate) struct Report {
    pub(crate) reps: Vec<Rep>,
    pub(crate) started_at: String,
    pub(crate) started_load: String,
    pub(crate) ended_load: String,
    pub(crate) workers: String,
    pub(crate) cpus: usize,
    pub(crate) caller_cpu: Option<usize>,
    pub(crate) attacker_cpu: Option<usize>,
    pub(crate) agent_cpu: f64,
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

pub(crate) fn report(args: &Args, r: &Report) {
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

pub(crate) fn pick_duration(sorted: &[Duration], q: f64) -> u128 {
    sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).map_or(0, |d| d.as_millis())
}
