//! The sections of `BENCHMARKS.md` besides its frame: the machine, the method, the targets, the
//! unary, SSE and idle-stream tables, and the tools' health.

use std::fmt::Write as _;

use super::results::{ClosedLoop, IdleRun, Machine, Results, Series};
use super::stats::{cell, int_cell, noisy_verdict, num, of_runs, paired, ratio, spread, verdict};
use super::{DIRECT, FULL, GATEWAY, PEER, PEER_FULL};

pub(super) fn unary_table(out: &mut String, series: &[Series], cpu_label: &str) {
    let _ = writeln!(
        out,
        "| path | p50 µs | p90 µs | p99 µs | p99.9 µs | achieved req/s | errors | {cpu_label} | of it in the kernel |\n|---|---|---|---|---|---|---|---|---|"
    );
    for s in series {
        if let Some(reason) = &s.skipped {
            let _ = writeln!(out, "| {} | skipped: {reason} | | | | | | | |", s.name);
            continue;
        }
        let r = &s.runs;
        let cpu = cell(of_runs(r, |x| x.cpu_per_request.unwrap_or(f64::NAN)));
        let kernel = match of_runs(r, |x| x.kernel_share.unwrap_or(f64::NAN)) {
            Some(share) => format!("{:.0} %", share.median),
            None => "–".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            cell(of_runs(r, |x| x.q.p50)),
            cell(of_runs(r, |x| x.q.p90)),
            cell(of_runs(r, |x| x.q.p99)),
            cell(of_runs(r, |x| x.q.p999)),
            cell(of_runs(r, |x| x.rate)),
            int_cell(of_runs(r, |x| x.errors as f64)),
            cpu,
            kernel,
        );
    }
}

pub(super) fn overhead_table(out: &mut String, series: &[Series]) {
    let Some(direct) = series.first().filter(|s| s.skipped.is_none()) else { return };
    let _ = writeln!(
        out,
        "\nAgainst {} at the same offered rate (per repetition, then median and min–max):\n",
        direct.name
    );
    let _ = writeln!(
        out,
        "| path | added p50 µs | added p90 µs | added p99 µs | added p99.9 µs | p50 ratio | p99 ratio |\n|---|---|---|---|---|---|---|"
    );
    for s in series.iter().skip(1).filter(|s| s.skipped.is_none()) {
        let (a, b) = (&s.runs, &direct.runs);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            cell(paired(a, b, |x| x.q.p50)),
            cell(paired(a, b, |x| x.q.p90)),
            cell(paired(a, b, |x| x.q.p99)),
            cell(paired(a, b, |x| x.q.p999)),
            cell(ratio(a, b, |x| x.q.p50)),
            cell(ratio(a, b, |x| x.q.p99)),
        );
    }
}

pub(super) fn first_errors(out: &mut String, series: &[Series]) {
    for s in series {
        if let Some(error) = s.runs.iter().find_map(|r| r.first_error.clone()) {
            let _ = writeln!(out, "- {}: first error: `{}`", s.name, error.replace('`', "'"));
        }
    }
}

pub(super) fn find<'a>(series: &'a [Series], name: &str) -> Option<&'a Series> {
    series.iter().find(|s| s.name == name && s.skipped.is_none())
}

/// Saturation rows: req/s, its share of direct, CPU per request; then a2a-gateway against agentgateway.
pub fn closed_loop_table(rows: &[ClosedLoop]) -> String {
    let mut out = String::new();
    let direct = rows.iter().find(|r| r.name == DIRECT);
    let _ = writeln!(out, "| path | req/s | of direct | proxy CPU µs/req | errors |\n|---|---|---|---|---|");
    for row in rows {
        let of_direct = match direct {
            Some(d) if d.name != row.name => cell(ratio(&row.rates, &d.rates, |x| *x)),
            _ => "–".into(),
        };
        let cpu = cell(spread(row.cpu_per_request.iter().copied()));
        let _ = writeln!(
            out,
            "| {} | {} | {of_direct} | {cpu} | {} |",
            row.name,
            cell(spread(row.rates.iter().copied())),
            row.errors
        );
    }
    for (ours, theirs) in [(GATEWAY, PEER), (FULL, PEER_FULL)] {
        if let Some((a, b)) = find_loop(rows, ours).zip(find_loop(rows, theirs)) {
            let _ = writeln!(
                out,
                "\n{ours} against {theirs}: {}× the throughput, {}× the CPU per request (per round, median (min–max)).",
                cell(ratio(&a.rates, &b.rates, |x| *x)),
                cell(ratio(&a.cpu_per_request, &b.cpu_per_request, |x| *x)),
            );
        }
    }
    out
}

fn find_loop<'a>(rows: &'a [ClosedLoop], name: &str) -> Option<&'a ClosedLoop> {
    rows.iter().find(|r| r.name == name)
}

/// The saturation targets: CPU per request, and throughput against agentgateway.
fn closed_loop_targets(out: &mut String, r: &Results) {
    // Issue #26: at most 25 µs plain and 40 µs with the full stack, on one pinned core.
    for (name, limit) in [(GATEWAY, 25.0), (FULL, 40.0)] {
        let cpu = find_loop(&r.closed_loop, name).and_then(|row| spread(row.cpu_per_request.iter().copied()));
        let _ = writeln!(
            out,
            "| proxy CPU per unary SendMessage at saturation, {name} | ≤ {limit} µs | {} µs | {} |",
            cell(cpu),
            verdict(cpu.map(|s| s.median), limit)
        );
    }
    for (ours, theirs) in [(GATEWAY, PEER), (FULL, PEER_FULL)] {
        let pair = find_loop(&r.closed_loop, ours).zip(find_loop(&r.closed_loop, theirs));
        let times = pair.and_then(|(a, b)| ratio(&a.rates, &b.rates, |x| *x));
        let status = match times {
            Some(t) if t.median >= 1.5 => "**met**".to_string(),
            Some(_) => "**not met**".to_string(),
            None => "not measured: no agentgateway binary (`--peer-bin`)".to_string(),
        };
        let measured = times.map_or("–".to_string(), |t| format!("{}×", cell(Some(t))));
        let _ = writeln!(out, "| throughput at saturation, {ours} over {theirs} | ≥ 1.5× | {measured} | {status} |");
    }
}

pub(super) fn targets(out: &mut String, r: &Results) {
    let _ = writeln!(out, "## Where we stand against the targets\n");
    let _ = writeln!(out, "| target | limit | measured: median (min–max) | status |\n|---|---|---|---|");
    closed_loop_targets(out, r);
    for level in &r.unary {
        let at = format!("at {} req/s ({})", num(level.rate), level.label);
        let direct = find(&level.series, DIRECT);
        let full = find(&level.series, FULL);
        let added = direct.zip(full).and_then(|(d, f)| paired(&f.runs, &d.runs, |x| x.q.p99));
        let _ = writeln!(
            out,
            "| full stack adds at p99 (unary, vs direct), {at} | ≤ 150 µs | {} µs | {} |",
            cell(added),
            noisy_verdict(added, 150.0)
        );
        let cpu = full.and_then(|f| of_runs(&f.runs, |x| x.cpu_per_request.unwrap_or(f64::NAN)));
        let _ = writeln!(
            out,
            "| gateway CPU per unary task, full stack, {at} | ≤ 20 µs | {} µs | {} |",
            cell(cpu),
            verdict(cpu.map(|s| s.median), 20.0)
        );
    }
    for level in &r.sse {
        let added = paired(&level.gateway, &level.direct, |x| x.q.p99);
        let _ = writeln!(
            out,
            "| SSE per-event added latency at p99, {} stream{} | ≤ 100 µs | {} µs | {} |",
            level.streams,
            if level.streams == 1 { "" } else { "s" },
            cell(added),
            noisy_verdict(added, 100.0)
        );
    }
    let rss = spread(r.idle.iter().map(IdleRun::per_stream_kib));
    let _ = writeln!(
        out,
        "| gateway RSS per idle stream ({} streams) | ≤ 16 KiB | {} KiB | {} |",
        r.idle_target,
        cell(rss),
        verdict(rss.map(|s| s.median), 16.0)
    );
    if r.full_stack_notes.iter().any(|n| n.contains("no policies")) || r.full_stack_notes.is_empty() {
        let _ = writeln!(
            out,
            "\nThe full-stack rows are only as full as `tests/bench/configs/full-stack.yaml`; see its notes above."
        );
    }
}

pub(super) fn machine(out: &mut String, m: &Machine) {
    let _ = writeln!(out, "## Machine\n");
    let _ = writeln!(out, "| | |\n|---|---|");
    let rows = [
        ("CPUs (nproc)", m.cpus.to_string()),
        ("CPU model", m.cpu_model.clone()),
        ("memory", m.memory.clone()),
        ("kernel", m.kernel.clone()),
        ("OS", m.os.clone()),
        ("rustc", m.rustc.clone()),
        ("commit", m.commit.clone()),
        ("gateway binary", m.gateway.clone()),
        ("nginx", m.nginx.clone()),
        ("agentgateway", m.peer.clone()),
    ];
    for (key, value) in rows {
        let _ = writeln!(out, "| {key} | {} |", if value.is_empty() { "–" } else { &value });
    }
    let _ = writeln!(out);
}

pub(super) fn method(out: &mut String, r: &Results) {
    let _ = writeln!(out, "## How it is measured\n");
    let saturation: Vec<String> =
        r.saturation.iter().map(|(name, rate)| format!("{name} {} req/s", num(*rate))).collect();
    let _ = writeln!(
        out,
        "- Saturation first, closed loop ({} connections back to back): {}. Offered rates of the open-loop \
         runs: {}.",
        r.connections,
        saturation.join("; "),
        r.unary.iter().map(|l| format!("**{} req/s** ({})", num(l.rate), l.label)).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        out,
        "- Open loop: request *i* is due at start + *i*/rate; a thread with a 1 µs timer slack releases \
         it on time and latency counts from that intended time (coordinated-omission safe). {} keep-alive \
         HTTP/1.1 connections (hyper client); at most {} requests queued or running, a due request beyond \
         that counts as an error. Latencies in an HDR histogram (3 significant figures).",
        r.connections, r.max_in_flight
    );
    let _ = writeln!(
        out,
        "- Repetitions are interleaved (direct, gateway, full stack, nginx, agentgateway, then again), each measured after a \
         warm-up at the same rate; tables show the median with min–max. Overheads pair each run with the direct \
         run of the same repetition. {}",
        r.unary
            .iter()
            .map(|l| ("Unary", l))
            .chain(std::iter::once(("Card", &r.card)))
            .filter(|(_, l)| !l.series.is_empty())
            .map(|(what, l)| format!("{what} at {} req/s: {} × {} s.", num(l.rate), l.reps, num(l.duration_secs)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(
        out,
        "- The backend is the benchmark's own minimal A2A 1.0 agent (card with skill `bench`; `SendMessage` \
         answers a completed Task at once; `SendStreamingMessage` streams events stamped with the send time). \
         The gateway is `{} serve` with a generated config (no policies) or \
         `tests/bench/configs/full-stack.yaml`.",
        if r.machine.gateway.is_empty() { "target/release/a2a-gateway" } else { &r.machine.gateway }
    );
    if let Some(i) = &r.interference {
        let _ = writeln!(
            out,
            "- Interference: while it ran, other processes on the machine used {:.2} cores on average (CPU \
             steal {:.2}); load average {} at the start, {} at the end. Other work on the shared cores shows \
             up as latency in every row alike.",
            i.other_cores, i.steal_cores, i.load_start, i.load_end
        );
    }
    if r.nice < 0 {
        let _ = writeln!(
            out,
            "- The benchmark and its children ran at nice {}, so that background work on shared cores yields to \
             them; unless the run pinned them apart (see the notes at the end), they share the machine's cores \
             with each other.",
            r.nice
        );
    }
    if !r.full_stack_notes.is_empty() {
        let _ = writeln!(out, "- Full-stack config notes (from the template):");
        for note in &r.full_stack_notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    let _ = writeln!(out);
}

pub(super) fn sse(out: &mut String, r: &Results) {
    if r.sse.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## SSE: per-event latency, backend write → client read\n");
    let _ = writeln!(
        out,
        "Each event carries the backend's clock reading taken as it hands the event to hyper; the client \
         (same process, same clock) subtracts it from the time the bytes arrived. Stream start times are \
         spread over one event interval. Added = gateway − direct, paired by repetition; nginx (a plain \
         reverse proxy, `proxy_buffering off`, its workers on the gateway's CPUs) shows what any proxy adds on \
         this machine. CPU per event is the process's (nginx: its master's and workers') user and system time \
         over the run, stream set-up included.\n"
    );
    let _ = writeln!(
        out,
        "| streams | interval | events per stream | events/run | direct p50 µs | direct p99 µs | gateway p50 µs | gateway p99 µs | gateway p99.9 µs | added p50 µs | added p99 µs | gateway CPU µs/event | nginx added p50 µs | nginx added p99 µs | nginx CPU µs/event | failed streams |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for level in &r.sse {
        let (d, g, n) = (&level.direct, &level.gateway, &level.nginx);
        let failed: u64 = d.iter().chain(g).chain(n).map(|x| x.failed_streams).sum();
        let _ = writeln!(
            out,
            "| {} | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            level.streams,
            level.interval_ms,
            level.events,
            int_cell(of_runs(g, |x| x.events as f64)),
            cell(of_runs(d, |x| x.q.p50)),
            cell(of_runs(d, |x| x.q.p99)),
            cell(of_runs(g, |x| x.q.p50)),
            cell(of_runs(g, |x| x.q.p99)),
            cell(of_runs(g, |x| x.q.p999)),
            cell(paired(g, d, |x| x.q.p50)),
            cell(paired(g, d, |x| x.q.p99)),
            cell(of_runs(g, |x| x.cpu_per_event.unwrap_or(f64::NAN))),
            cell(paired(n, d, |x| x.q.p50)),
            cell(paired(n, d, |x| x.q.p99)),
            cell(of_runs(n, |x| x.cpu_per_event.unwrap_or(f64::NAN))),
            failed
        );
    }
    for level in &r.sse {
        if let Some(error) =
            level.direct.iter().chain(&level.gateway).chain(&level.nginx).find_map(|x| x.first_error.clone())
        {
            let _ = writeln!(out, "- {} streams: first error: `{}`", level.streams, error.replace('`', "'"));
        }
    }
}

pub(super) fn idle(out: &mut String, r: &Results) {
    if r.idle.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Idle streams held open through the gateway\n");
    let _ = writeln!(
        out,
        "A fresh gateway per repetition; RSS (`VmRSS`) after a warm-up, with {} streams open (each has had \
         its first event and then stays quiet), and after they closed. Per stream = (with − before) / opened.\n",
        r.idle_target
    );
    let _ = writeln!(
        out,
        "| run | opened | failed | RSS before MiB | RSS with streams MiB | RSS after close MiB | KiB per stream |\n|---|---|---|---|---|---|---|"
    );
    let mib = |k: u64| format!("{:.1}", k as f64 / 1024.0);
    for (i, run) in r.idle.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            run.opened,
            run.failed,
            mib(run.rss_base_kib),
            mib(run.rss_open_kib),
            mib(run.rss_closed_kib),
            num(run.per_stream_kib())
        );
    }
    let _ = writeln!(out, "\nMedian per stream: {} KiB.", cell(spread(r.idle.iter().map(IdleRun::per_stream_kib))));
    if let Some(error) = r.idle.iter().find_map(|x| x.first_error.clone()) {
        let _ = writeln!(out, "- first error: `{}`", error.replace('`', "'"));
    }
}

pub(super) fn tool_health(out: &mut String, r: &Results) {
    let _ = writeln!(out, "\n## The load generator's own lateness\n");
    let _ = writeln!(
        out,
        "p99 of (moment a connection started sending − intended time), µs: it includes waiting for a free \
         connection, so it grows when the target falls behind; when it is small next to the latencies, \
         the tool kept its schedule.\n"
    );
    let _ = writeln!(out, "| path | offered req/s | lateness p99 µs |\n|---|---|---|");
    for level in r.unary.iter().chain(std::iter::once(&r.card)) {
        for s in level.series.iter().filter(|s| s.skipped.is_none()) {
            let _ = writeln!(out, "| {} | {} | {} |", s.name, num(level.rate), cell(of_runs(&s.runs, |x| x.lag_p99)));
        }
    }
}
