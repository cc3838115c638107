//! What a run measured, as written to `results.json` (and read again by `--render`).

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
    /// The same streams through nginx (none with `--no-nginx`): what any proxy adds on this machine.
    #[serde(default)]
    pub nginx: Vec<SseRun>,
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
    /// agentgateway's version, when `--peer-bin` gave it.
    #[serde(default)]
    pub peer: String,
    /// The gateway binary measured, relative to the repository when inside it.
    #[serde(default)]
    pub gateway: String,
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
    /// Closed-loop saturation of each path, requests/s (the median of `closed_loop`).
    pub saturation: Vec<(String, f64)>,
    /// The closed-loop rounds behind it.
    #[serde(default)]
    pub closed_loop: Vec<ClosedLoop>,
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

/// Closed-loop rounds of one path: achieved req/s and the proxy's CPU per request of each round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClosedLoop {
    pub name: String,
    pub rates: Vec<f64>,
    pub cpu_per_request: Vec<f64>,
    pub errors: u64,
}

impl ClosedLoop {
    pub fn median_rate(&self) -> f64 {
        super::stats::spread(self.rates.iter().copied()).map_or(0.0, |s| s.median)
    }
}
