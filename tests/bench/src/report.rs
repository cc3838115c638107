//! What the runs measured, summarised (median with min–max over repetitions) and written as
//! `BENCHMARKS.md`: the tables, the machine, the command, the targets and the profile.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::profile::Profile;

/// Latency quantiles in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
}

impl Quantiles {
    pub fn of(h: &Histogram<u64>) -> Quantiles {
        let at = |q: f64| if h.is_empty() { f64::NAN } else { h.value_at_quantile(q) as f64 / 1000.0 };
        Quantiles { p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999) }
    }
}

/// One open-loop run of one path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnaryRun {
    pub q: Quantiles,
    pub rate: f64,
    pub ok: u64,
    pub errors: u64,
    /// CPU time of the proxy in front of the backend per successful request.
    pub cpu_per_request: Option<f64>,
    /// The part of that CPU time spent in the kernel, %.
    pub kernel_share: Option<f64>,
    /// p99 of the load generator's own lateness (intended → sent), µs.
    pub lag_p99: f64,
    pub first_error: Option<String>,
}

/// Repetitions of one path, or why it was skipped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub runs: Vec<UnaryRun>,
    pub skipped: Option<String>,
}

/// The unary paths at one offered rate.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UnaryLevel {
    pub label: String,
    pub rate: f64,
    pub reps: usize,
    pub duration_secs: f64,
    pub series: Vec<Series>,
}

/// How much else ran on the machine while the benchmark did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Interference {
    /// CPU used by processes other than the benchmark and its children, in cores, on average.
    pub other_cores: f64,
    pub steal_cores: f64,
    pub load_start: String,
    pub load_end: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SseRun {
    pub q: Quantiles,
    pub events: u64,
    pub failed_streams: u64,
    pub cpu_per_event: Option<f64>,
    pub first_error: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SseLevel {
    pub streams: usize,
    pub interval_ms: u64,
    pub events: u32,
    pub direct: Vec<SseRun>,
    pub gateway: Vec<SseRun>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdleRun {
    pub opened: usize,
    pub failed: usize,
    pub rss_base_kib: u64,
    pub rss_open_kib: u64,
    pub rss_closed_kib: u64,
    pub first_error: Option<String>,
}

impl IdleRun {
    pub fn per_stream_kib(&self) -> f64 {
        self.rss_open_kib.saturating_sub(self.rss_base_kib) as f64 / self.opened.max(1) as f64
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory: String,
    pub kernel: String,
    pub os: String,
    pub rustc: String,
    pub commit: String,
    pub nginx: String,
}

/// Everything one invocation measured.
#[derive(Default, Serialize, Deserialize)]
pub struct Results {
    pub machine: Machine,
    pub command: String,
    pub smoke: bool,
    pub started: String,
    pub wall_secs: f64,
    pub connections: usize,
    pub max_in_flight: usize,
    /// Nice value the benchmark (and so its children) ran at.
    pub nice: i64,
    /// Closed-loop saturation of each path, requests/s.
    pub saturation: Vec<(String, f64)>,
    pub unary: Vec<UnaryLevel>,
    pub card: UnaryLevel,
    pub interference: Option<Interference>,
    pub sse: Vec<SseLevel>,
    pub idle_target: usize,
    pub idle: Vec<IdleRun>,
    pub profile: Option<Profile>,
    pub full_stack_notes: Vec<String>,
    pub notes: Vec<String>,
}

/// Median, min and max.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub fn spread(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
    let mut values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    Some(Spread { median, min: values[0], max: values[n - 1] })
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `median (min–max)`, or `median` alone for a single run.
fn cell(s: Option<Spread>) -> String {
    match s {
        None => "–".into(),
        Some(s) if s.min == s.max => num(s.median),
        Some(s) => format!("{} ({}–{})", num(s.median), num(s.min), num(s.max)),
    }
}

/// Like [`cell`] for counts.
fn int_cell(s: Option<Spread>) -> String {
    match s {
        None => "–".into(),
        Some(s) if s.min == s.max => format!("{:.0}", s.median),
        Some(s) => format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max),
    }
}

fn of_runs<T>(runs: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(runs.iter().map(f))
}

/// Per-repetition differences `a − b` (paired by repetition).
fn paired<T>(a: &[T], b: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(a.iter().zip(b).map(|(x, y)| f(x) - f(y)))
}

fn ratio<T>(a: &[T], b: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(a.iter().zip(b).map(|(x, y)| f(x) / f(y)))
}

fn unary_table(out: &mut String, series: &[Series], cpu_label: &str) {
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

fn overhead_table(out: &mut String, series: &[Series]) {
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

fn first_errors(out: &mut String, series: &[Series]) {
    for s in series {
        if let Some(error) = s.runs.iter().find_map(|r| r.first_error.clone()) {
            let _ = writeln!(out, "- {}: first error: `{}`", s.name, error.replace('`', "'"));
        }
    }
}

/// Whether a measured value is within its limit.
fn verdict(value: Option<f64>, limit: f64) -> &'static str {
    match value {
        Some(v) if v <= limit => "**met**",
        Some(_) => "**not met**",
        None => "not measured",
    }
}

/// Like [`verdict`] for a difference of two noisy runs: when the repetitions disagree by more than
/// twice the limit, the median decides nothing.
fn noisy_verdict(value: Option<Spread>, limit: f64) -> String {
    match value {
        // Every repetition on one side of the limit decides, however far apart they are.
        Some(s) if s.min > limit => "**not met**".into(),
        Some(s) if s.max <= limit => "**met**".into(),
        Some(s) if s.max - s.min > 2.0 * limit => {
            format!("**undecided**: the repetitions straddle the limit and differ by {} µs", num(s.max - s.min))
        }
        other => verdict(other.map(|s| s.median), limit).to_string(),
    }
}

fn find<'a>(series: &'a [Series], name: &str) -> Option<&'a Series> {
    series.iter().find(|s| s.name == name && s.skipped.is_none())
}

pub const DIRECT: &str = "direct to the backend";
pub const GATEWAY: &str = "gateway, no policies";
pub const FULL: &str = "gateway, full stack";
pub const NGINX: &str = "nginx reverse proxy";

const FINDINGS_BEGIN: &str = "<!-- findings:begin (kept when the file is regenerated) -->";
const FINDINGS_END: &str = "<!-- findings:end -->";

/// The hand-written findings of an earlier `BENCHMARKS.md`, kept across regenerations.
pub fn kept_findings(previous: &str) -> Option<String> {
    let start = previous.find(FINDINGS_BEGIN)? + FINDINGS_BEGIN.len();
    let end = previous[start..].find(FINDINGS_END)? + start;
    Some(previous[start..end].trim().to_string())
}

fn targets(out: &mut String, r: &Results) {
    let _ = writeln!(out, "## Where we stand against the targets\n");
    let _ = writeln!(out, "| target | limit | measured: median (min–max) | status |\n|---|---|---|---|");
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

fn machine(out: &mut String, m: &Machine) {
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
        ("nginx", m.nginx.clone()),
    ];
    for (key, value) in rows {
        let _ = writeln!(out, "| {key} | {} |", if value.is_empty() { "–" } else { &value });
    }
    let _ = writeln!(out);
}

fn method(out: &mut String, r: &Results) {
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
        "- Repetitions are interleaved (direct, gateway, full stack, nginx, then again), each measured after a \
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
         The gateway is the release binary `a2a-gateway serve` with a generated config (no policies) or \
         `tests/bench/configs/full-stack.yaml`."
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
             them; they still share the two cores with each other.",
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

fn sse(out: &mut String, r: &Results) {
    if r.sse.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## SSE: per-event latency, backend write → client read\n");
    let _ = writeln!(
        out,
        "Each event carries the backend's clock reading taken as it hands the event to hyper; the client \
         (same process, same clock) subtracts it from the time the bytes arrived. Stream start times are \
         spread over one event interval. Added = gateway − direct, paired by repetition.\n"
    );
    let _ = writeln!(
        out,
        "| streams | interval | events per stream | events/run | direct p50 µs | direct p99 µs | gateway p50 µs | gateway p99 µs | gateway p99.9 µs | added p50 µs | added p99 µs | gateway CPU µs/event | failed streams |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for level in &r.sse {
        let (d, g) = (&level.direct, &level.gateway);
        let failed: u64 = d.iter().chain(g).map(|x| x.failed_streams).sum();
        let _ = writeln!(
            out,
            "| {} | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
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
            failed
        );
    }
    for level in &r.sse {
        if let Some(error) = level.direct.iter().chain(&level.gateway).find_map(|x| x.first_error.clone()) {
            let _ = writeln!(out, "- {} streams: first error: `{}`", level.streams, error.replace('`', "'"));
        }
    }
}

fn idle(out: &mut String, r: &Results) {
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

fn tool_health(out: &mut String, r: &Results) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noisy_difference_decides_nothing() {
        let tight = spread([120.0, 130.0, 140.0]);
        assert_eq!(noisy_verdict(tight, 150.0), "**met**");
        let wide = spread([-300.0, 100.0, 2000.0]);
        assert!(noisy_verdict(wide, 150.0).starts_with("**undecided**"));
        assert_eq!(noisy_verdict(spread([400.0, 450.0]), 150.0), "**not met**");
        assert_eq!(noisy_verdict(spread([200.0, 5000.0]), 150.0), "**not met**", "all above the limit");
        assert_eq!(noisy_verdict(spread([100.0, 140.0, 90.0]), 150.0), "**met**");
    }

    #[test]
    fn spread_takes_median_min_and_max() {
        let s = spread([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = spread([4.0, 1.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert!(spread([f64::NAN]).is_none());
    }

    #[test]
    fn findings_survive_regeneration() {
        let old = format!("x\n{FINDINGS_BEGIN}\nkeep me\n{FINDINGS_END}\ny");
        assert_eq!(kept_findings(&old).as_deref(), Some("keep me"));
        assert!(render(&Results::default(), Some("keep me")).contains("keep me"));
    }

    #[test]
    fn quantiles_are_in_microseconds() {
        let mut h = crate::loadgen::histogram();
        for v in [10_000u64, 20_000, 30_000] {
            h.record(v).unwrap();
        }
        let q = Quantiles::of(&h);
        assert!((q.p50 - 20.0).abs() < 0.1, "{q:?}");
    }
}
