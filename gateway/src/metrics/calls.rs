//! The per-call series — `a2a_requests_total`, the request, overhead and backend durations and
//! `a2a_limits_hit_total` — kept per thread and summed when `/metrics` is scraped.
//!
//! Why not the `metrics` recorder's handles: one handle is shared by every thread, so each call
//! wrote four cache lines that all cores pass around; and a recorder histogram keeps every sample
//! until it is drained (the exporter's upkeep, which `install_recorder` leaves to its caller), so a
//! gateway nobody scraped grew by ~24 bytes per call without end. Here each thread owns its cells
//! (a plain load and store, no locked instruction), a histogram is its bucket counts, and memory is
//! fixed by the label sets.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::hashing::FastMap;

/// Bucket bounds, from 50 µs (a gateway hop) to a minute (a blocking task), as Prometheus `le`.
const BOUNDS: [(Duration, &str); 19] = [
    (Duration::from_micros(50), "0.00005"),
    (Duration::from_micros(100), "0.0001"),
    (Duration::from_micros(250), "0.00025"),
    (Duration::from_micros(500), "0.0005"),
    (Duration::from_millis(1), "0.001"),
    (Duration::from_micros(2_500), "0.0025"),
    (Duration::from_millis(5), "0.005"),
    (Duration::from_millis(10), "0.01"),
    (Duration::from_millis(25), "0.025"),
    (Duration::from_millis(50), "0.05"),
    (Duration::from_millis(100), "0.1"),
    (Duration::from_millis(250), "0.25"),
    (Duration::from_millis(500), "0.5"),
    (Duration::from_secs(1), "1"),
    (Duration::from_millis(2_500), "2.5"),
    (Duration::from_secs(5), "5"),
    (Duration::from_secs(10), "10"),
    (Duration::from_secs(30), "30"),
    (Duration::from_secs(60), "60"),
];

/// The policies whose refusals `a2a_limits_hit_total` counts, by its `kind` label.
pub const LIMIT_KINDS: [&str; 5] = ["authentication", "permission", "rate", "concurrency", "validation"];

/// A count only its own thread adds to (others read it): a load and a store, not a locked add.
#[derive(Default)]
struct Tally(AtomicU64);

impl Tally {
    fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One thread's share of a histogram: the count in each bucket (the last is `+Inf`) and the sum.
#[derive(Default)]
struct Histogram {
    buckets: [Tally; BOUNDS.len() + 1],
    sum_nanos: Tally,
}

impl Histogram {
    fn record(&self, value: Duration) {
        let bucket = BOUNDS.iter().position(|(bound, _)| value <= *bound).unwrap_or(BOUNDS.len());
        self.buckets[bucket].add(1);
        self.sum_nanos.add(u64::try_from(value.as_nanos()).unwrap_or(u64::MAX));
    }

    fn add_to(&self, total: &mut Totals) {
        for (sum, bucket) in total.buckets.iter_mut().zip(&self.buckets) {
            *sum += bucket.get();
        }
        total.sum_nanos += u128::from(self.sum_nanos.get());
    }
}

/// A histogram summed over threads.
#[derive(Default)]
struct Totals {
    buckets: [u64; BOUNDS.len() + 1],
    sum_nanos: u128,
}

/// The labels of one call's series.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallLabels<'a> {
    pub operation: &'static str,
    pub binding: &'static str,
    pub skill: &'a str,
    pub backend: &'a str,
    pub outcome: &'static str,
}

/// One thread's cells for one label set.
struct CallCells {
    operation: &'static str,
    binding: &'static str,
    outcome: &'static str,
    skill: Box<str>,
    backend: Box<str>,
    requests: Tally,
    duration: Histogram,
    overhead: Histogram,
}

impl CallCells {
    fn matches(&self, labels: &CallLabels<'_>) -> bool {
        self.operation == labels.operation
            && self.binding == labels.binding
            && self.outcome == labels.outcome
            && *self.skill == *labels.skill
            && *self.backend == *labels.backend
    }
}

struct BackendCells {
    backend: Box<str>,
    duration: Histogram,
}

/// Every thread's cells, for the scrape: appended to when a thread first meets a label set, and
/// kept when the thread ends (its counts stay in the totals).
#[derive(Default)]
struct All {
    calls: Vec<Arc<CallCells>>,
    backends: Vec<Arc<BackendCells>>,
    limits: Vec<Arc<[Tally; LIMIT_KINDS.len()]>>,
}

static ALL: Mutex<All> = Mutex::new(All { calls: Vec::new(), backends: Vec::new(), limits: Vec::new() });

fn all() -> std::sync::MutexGuard<'static, All> {
    ALL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This thread's cells.
#[derive(Default)]
struct Local {
    /// By the hash of their labels; a hash shared by two label sets holds both.
    calls: FastMap<u64, Vec<Arc<CallCells>>>,
    backends: FastMap<Box<str>, Arc<BackendCells>>,
    limits: Option<Arc<[Tally; LIMIT_KINDS.len()]>>,
}

thread_local! {
    static LOCAL: std::cell::RefCell<Local> = std::cell::RefCell::default();
}

/// Counts one finished call and its times (`overhead` is `None` when no backend was reached).
pub fn record_call(labels: CallLabels<'_>, elapsed: Duration, overhead: Option<Duration>) {
    with_cells(labels, |cells| {
        cells.requests.add(1);
        cells.duration.record(elapsed);
        if let Some(overhead) = overhead {
            cells.overhead.record(overhead);
        }
    });
}

/// Counts a request refused before it was read as a call (`operation="unknown"`, no times).
pub fn record_undecoded(outcome: &'static str) {
    let labels = CallLabels { operation: "unknown", binding: "", skill: "", backend: "", outcome };
    with_cells(labels, |cells| cells.requests.add(1));
}

/// This thread's cells for `labels`, made (and listed for the scrape) on their first use.
fn with_cells(labels: CallLabels<'_>, use_them: impl FnOnce(&CallCells)) {
    use std::hash::BuildHasher;
    // Fixed seed: the same labels must hash alike on every call of this thread.
    let hash = foldhash::fast::FixedState::default().hash_one(labels);
    LOCAL.with_borrow_mut(|local| {
        let same = local.calls.entry(hash).or_default();
        let cells = match same.iter().find(|cells| cells.matches(&labels)) {
            Some(cells) => cells,
            None => {
                let cells = Arc::new(CallCells {
                    operation: labels.operation,
                    binding: labels.binding,
                    outcome: labels.outcome,
                    skill: labels.skill.into(),
                    backend: labels.backend.into(),
                    requests: Tally::default(),
                    duration: Histogram::default(),
                    overhead: Histogram::default(),
                });
                all().calls.push(cells.clone());
                same.push(cells);
                same.last().expect("just pushed")
            }
        };
        use_them(cells);
    });
}

/// Records how long `backend` took to answer a call.
pub fn record_backend(backend: &str, waited: Duration) {
    LOCAL.with_borrow_mut(|local| {
        if let Some(cells) = local.backends.get(backend) {
            return cells.duration.record(waited);
        }
        let cells = Arc::new(BackendCells { backend: backend.into(), duration: Histogram::default() });
        cells.duration.record(waited);
        all().backends.push(cells.clone());
        local.backends.insert(backend.into(), cells);
    });
}

/// Counts a call a policy refused; `kind` is one of [`LIMIT_KINDS`].
pub fn record_limit_hit(kind: &'static str) {
    let Some(at) = LIMIT_KINDS.iter().position(|k| *k == kind) else { return };
    LOCAL.with_borrow_mut(|local| {
        let tallies = local.limits.get_or_insert_with(|| {
            let tallies: Arc<[Tally; LIMIT_KINDS.len()]> = Arc::default();
            all().limits.push(tallies.clone());
            tallies
        });
        tallies[at].add(1);
    });
}

/// Appends the series in Prometheus text format, summed over threads. Names and labels are the
/// ones the `metrics` recorder used for them before.
pub fn render(out: &mut String) {
    let (calls, backends, limits) = {
        let all = all();
        (all.calls.clone(), all.backends.clone(), all.limits.clone())
    };

    // Summed in sorted maps, so that a scrape reads the same from one time to the next.
    let mut requests: BTreeMap<(&str, &str, &str, &str, &str), u64> = BTreeMap::new();
    let mut durations: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut overheads: BTreeMap<&str, Totals> = BTreeMap::new();
    for cells in &calls {
        let key = (cells.operation, cells.binding, &*cells.skill, &*cells.backend, cells.outcome);
        *requests.entry(key).or_default() += cells.requests.get();
        cells.duration.add_to(durations.entry(cells.operation).or_default());
        cells.overhead.add_to(overheads.entry(cells.operation).or_default());
    }
    if !requests.is_empty() {
        type_line(out, super::REQUESTS, "counter");
        for ((operation, binding, skill, backend, outcome), count) in &requests {
            let labels = [
                ("operation", *operation),
                ("binding", *binding),
                ("skill", *skill),
                ("backend", *backend),
                ("outcome", *outcome),
            ];
            // An empty label is the same as none to Prometheus: a refused request shows only its
            // operation and outcome.
            let labels: Vec<_> = labels.into_iter().filter(|(_, value)| !value.is_empty()).collect();
            series(out, super::REQUESTS, "", &labels, None, count);
        }
        out.push('\n');
    }
    // Requests refused before they were read have no times; an operation that never reached a
    // backend has no overhead.
    durations.retain(|_, totals| totals.buckets.iter().any(|&n| n > 0));
    histograms(out, super::REQUEST_DURATION, "operation", durations);
    overheads.retain(|_, totals| totals.buckets.iter().any(|&n| n > 0));
    histograms(out, super::OVERHEAD, "operation", overheads);
    let mut by_backend: BTreeMap<&str, Totals> = BTreeMap::new();
    for cells in &backends {
        cells.duration.add_to(by_backend.entry(&cells.backend).or_default());
    }
    histograms(out, super::BACKEND_DURATION, "backend", by_backend);

    let mut hits = [0u64; LIMIT_KINDS.len()];
    for tallies in &limits {
        for (hit, tally) in hits.iter_mut().zip(tallies.iter()) {
            *hit += tally.get();
        }
    }
    if hits.iter().any(|&n| n > 0) {
        type_line(out, super::LIMITS_HIT, "counter");
        for (kind, count) in LIMIT_KINDS.iter().zip(hits).filter(|(_, n)| *n > 0) {
            series(out, super::LIMITS_HIT, "", &[("kind", kind)], None, count);
        }
        out.push('\n');
    }
}

fn histograms(out: &mut String, name: &str, label: &str, list: BTreeMap<&str, Totals>) {
    if list.is_empty() {
        return;
    }
    type_line(out, name, "histogram");
    for (value, totals) in &list {
        let labels = [(label, *value)];
        let mut cumulative = 0;
        for (count, (_, le)) in totals.buckets.iter().zip(BOUNDS) {
            cumulative += count;
            series(out, name, "_bucket", &labels, Some(le), cumulative);
        }
        let count = cumulative + totals.buckets[BOUNDS.len()];
        series(out, name, "_bucket", &labels, Some("+Inf"), count);
        series(out, name, "_sum", &labels, None, totals.sum_nanos as f64 / 1e9);
        series(out, name, "_count", &labels, None, count);
    }
    out.push('\n');
}

fn type_line(out: &mut String, name: &str, kind: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn series(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&str, &str)],
    le: Option<&str>,
    value: impl std::fmt::Display,
) {
    out.push_str(name);
    out.push_str(suffix);
    let le = le.map(|le| ("le", le));
    for (i, (label, value)) in labels.iter().chain(&le).enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        out.push_str(label);
        out.push_str("=\"");
        escape_into(out, value);
        out.push('"');
    }
    if !labels.is_empty() || le.is_some() {
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// A label value as the text format wants it: backslash, double quote and line feed escaped.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered() -> String {
        let mut out = String::new();
        render(&mut out);
        out
    }

    fn value(text: &str, line_start: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(line_start)).unwrap_or_else(|| panic!("{line_start}:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    /// Calls recorded on several threads are summed into one series per label set; a histogram's
    /// buckets are cumulative with `le` as the recorder wrote it, and its sum is in seconds.
    #[test]
    fn threads_are_summed_into_prometheus_series() {
        let labels = CallLabels {
            operation: "CountTestOp",
            binding: "JSONRPC",
            skill: "sk\"ill",
            backend: "count-test",
            outcome: "ok",
        };
        let threads: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || {
                    record_call(labels, Duration::from_micros(80), Some(Duration::from_micros(30)));
                    record_call(labels, Duration::from_secs(120), None);
                    record_backend("count-test", Duration::from_millis(3));
                    record_limit_hit("rate");
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let text = rendered();
        let series = r#"a2a_requests_total{operation="CountTestOp",binding="JSONRPC",skill="sk\"ill",backend="count-test",outcome="ok"}"#;
        assert_eq!(value(&text, series), 6.0, "{text}");
        let duration = r#"http_server_request_duration_seconds_bucket{operation="CountTestOp","#;
        assert_eq!(value(&text, &format!("{duration}le=\"0.00005\"}}")), 0.0);
        assert_eq!(value(&text, &format!("{duration}le=\"0.0001\"}}")), 3.0);
        assert_eq!(value(&text, &format!("{duration}le=\"60\"}}")), 3.0);
        assert_eq!(value(&text, &format!("{duration}le=\"+Inf\"}}")), 6.0);
        let sum = value(&text, r#"http_server_request_duration_seconds_sum{operation="CountTestOp"}"#);
        assert!((sum - (3.0 * 120.0 + 3.0 * 0.00008)).abs() < 1e-9, "{sum}");
        assert_eq!(value(&text, r#"a2a_gateway_overhead_seconds_count{operation="CountTestOp"}"#), 3.0);
        assert_eq!(
            value(&text, r#"a2a_backend_request_duration_seconds_bucket{backend="count-test",le="0.005"}"#),
            3.0
        );
        assert!(value(&text, r#"a2a_limits_hit_total{kind="rate"}"#) >= 3.0);
        for name in ["a2a_requests_total counter", "http_server_request_duration_seconds histogram"] {
            assert_eq!(text.matches(&format!("# TYPE {name}\n")).count(), 1, "{text}");
        }
    }

    /// A label set's cells are made once per thread: memory does not grow with calls.
    #[test]
    fn cells_do_not_grow_with_calls() {
        let labels = CallLabels { operation: "GrowTestOp", binding: "REST", skill: "", backend: "grow", outcome: "ok" };
        let mine = || all().calls.iter().filter(|c| c.operation == "GrowTestOp").count();
        for _ in 0..10_000 {
            record_call(labels, Duration::from_millis(1), Some(Duration::from_micros(10)));
        }
        assert_eq!(mine(), 1);
    }
}
