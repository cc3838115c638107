//! The machine around a run: its load, waiting for a quiet machine or for descriptors to be let go,
//! and the facts the report states.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::procs;
use crate::report;

/// `/proc/loadavg`'s three load averages.
pub(super) fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Waits up to `secs` for other processes to leave the CPUs alone: under 0.15 of a core in each of
/// three 2-second windows in a row.
pub(super) async fn wait_quiet(secs: f64, ticks: u64) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut quiet_windows = 0;
    while quiet_windows < 3 {
        let (busy0, _) = procs::machine_ticks();
        let own0 = procs::own_ticks();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (busy1, _) = procs::machine_ticks();
        let other = (busy1 - busy0).saturating_sub(procs::own_ticks() - own0) as f64 / ticks as f64 / 2.0;
        if other < 0.15 {
            quiet_windows += 1;
            continue;
        }
        quiet_windows = 0;
        if Instant::now() > deadline {
            eprintln!("the machine is still busy (others use {other:.2} cores); starting anyway");
            return;
        }
        eprintln!("waiting for a quiet machine: other processes use {other:.2} cores");
    }
}

/// Waits (up to 10 s) until the streams of an earlier run have let go of their descriptors.
pub(super) async fn wait_for_descriptors(count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let (soft, _) = procs::open_files_limits();
    while procs::open_files() as u64 + count as u64 * 2 > soft && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) fn machine(root: &Path, gateway: &Path) -> report::Machine {
    let gateway = gateway.strip_prefix(root).unwrap_or(gateway).display().to_string();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default();
    let root = root.display().to_string();
    let commit = procs::command_output("git", &["-C", &root, "rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let dirty = procs::command_output("git", &["-C", &root, "status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    report::Machine {
        // The machine's, not this process's (which `--proxy-cpus` pins to some of them).
        cpus: online_cpus(),
        cpu_model: cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_default(),
        memory,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
        os,
        rustc: procs::command_output("rustc", &["-V"]).unwrap_or_default(),
        commit: if dirty { format!("{commit} (with uncommitted changes)") } else { commit },
        nginx: String::new(),
        peer: String::new(),
        gateway,
    }
}

/// CPUs online on the machine (`/sys/devices/system/cpu/online`, e.g. `0-1`), whatever this
/// process's affinity; the parallelism it may use when that cannot be read.
fn online_cpus() -> usize {
    let fallback = || std::thread::available_parallelism().map_or(0, |n| n.get());
    let Ok(list) = std::fs::read_to_string("/sys/devices/system/cpu/online") else { return fallback() };
    let mut count = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (low, high) = part.split_once('-').unwrap_or((part, part));
        match (low.parse::<usize>(), high.parse::<usize>()) {
            (Ok(low), Ok(high)) if high >= low => count += high - low + 1,
            _ => return fallback(),
        }
    }
    if count == 0 { fallback() } else { count }
}
