//! What the runs measured, summarised (median with min–max over repetitions) and written as
//! `BENCHMARKS.md`: the tables, the machine, the command, the targets and the profile.

use std::fmt::Write as _;

mod results;
mod sections;
mod stats;
#[cfg(test)]
mod tests;

pub use results::{
    ClosedLoop, IdleRun, Interference, Machine, Quantiles, Results, Series, SseLevel, SseRun, UnaryLevel, UnaryRun,
};
pub use sections::closed_loop_table;
use sections::{first_errors, idle, machine, method, overhead_table, sse, targets, tool_health, unary_table};
use stats::num;

pub const DIRECT: &str = "direct to the backend";
pub const GATEWAY: &str = "gateway, no policies";
pub const FULL: &str = "gateway, full stack";
pub const NGINX: &str = "nginx reverse proxy";
pub const PEER: &str = "agentgateway, A2A policy";
pub const PEER_FULL: &str = "agentgateway, JWT + authorization + rate limit";

const FINDINGS_BEGIN: &str = "<!-- findings:begin (kept when the file is regenerated) -->";
const FINDINGS_END: &str = "<!-- findings:end -->";

/// The hand-written findings of an earlier `BENCHMARKS.md`, kept across regenerations.
pub fn kept_findings(previous: &str) -> Option<String> {
    let start = previous.find(FINDINGS_BEGIN)? + FINDINGS_BEGIN.len();
    let end = previous[start..].find(FINDINGS_END)? + start;
    Some(previous[start..end].trim().to_string())
}

pub fn render(r: &Results, findings: Option<&str>) -> String {
    let mut out = String::new();
    let title = if r.smoke { "Benchmarks (smoke run: tiny counts, numbers mean nothing)" } else { "Benchmarks" };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "Written by the benchmark itself (`tests/bench`); every number below comes from one run of\n\n```\n{}\n```\n\nstarted {} and taking {:.0} s. Everything runs on loopback on this one machine: the load \
         generator and the backend (one process, separate threads and runtimes), the gateway and nginx \
         share its cores, so the numbers include their contention for them.\n",
        r.command, r.started, r.wall_secs
    );
    machine(&mut out, &r.machine);
    method(&mut out, r);
    targets(&mut out, r);
    if !r.closed_loop.is_empty() {
        let _ = writeln!(
            out,
            "\n## Saturation: closed loop, {} connections\n\nEach connection sends its next request as soon as \
             the answer is read; rounds interleaved across the paths. CPU is the proxy process's own user + \
             system time per answered request.\n",
            r.connections
        );
        out.push_str(&closed_loop_table(&r.closed_loop));
    }
    for level in &r.unary {
        let _ = writeln!(out, "\n## Unary SendMessage, open loop at {} req/s ({})\n", num(level.rate), level.label);
        let _ = writeln!(
            out,
            "Latency from each request's intended send time to its whole answer read. CPU is the proxy \
             process's own user + system time over the measured run (from `/proc/<pid>/stat`; for nginx its \
             master and workers) divided by the requests answered.\n"
        );
        unary_table(&mut out, &level.series, "proxy CPU µs/req");
        overhead_table(&mut out, &level.series);
        let _ = writeln!(out);
        first_errors(&mut out, &level.series);
    }
    let _ = writeln!(out, "\n## Agent card GET, open loop at {} req/s\n", num(r.card.rate));
    unary_table(&mut out, &r.card.series, "gateway CPU µs/req");
    overhead_table(&mut out, &r.card.series);
    let _ = writeln!(out);
    first_errors(&mut out, &r.card.series);
    sse(&mut out, r);
    idle(&mut out, r);
    tool_health(&mut out, r);
    if let Some(profile) = &r.profile {
        profile.render(&mut out);
    }
    let _ = writeln!(out, "\n## Findings\n\n{FINDINGS_BEGIN}\n");
    let _ = writeln!(out, "{}", findings.unwrap_or("(none written yet)"));
    let _ = writeln!(out, "\n{FINDINGS_END}");
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\n## Notes from this run\n");
        for note in &r.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}
