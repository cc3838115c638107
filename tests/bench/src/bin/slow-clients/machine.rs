//! Machine facts: load average, CPU time and threads of a process, and pinning a thread to a CPU.

use std::process::{Command, Stdio};

use anyhow::{Context, bail};

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub(crate) fn load1() -> f64 {
    load_average().split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

/// User + system CPU time of `pid` (all its threads), in clock ticks.
pub(crate) fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    field(14) + field(15)
}

pub(crate) fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// The threads of `pid`, counted by name (names are cut at 15 bytes), e.g. `tokio-runtime-w ×2`.
pub(crate) fn threads_by_name(pid: u32) -> String {
    let mut names = std::collections::BTreeMap::<String, usize>::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(name) = std::fs::read_to_string(task.path().join("comm")) {
                *names.entry(name.trim().to_string()).or_default() += 1;
            }
        }
    }
    names.iter().map(|(name, n)| format!("{name} ×{n}")).collect::<Vec<_>>().join(", ")
}

/// Pins the calling thread to `cpu` (`taskset` on its thread id: no unsafe code needed).
pub(crate) fn pin_this_thread(cpu: usize) -> anyhow::Result<()> {
    let link = std::fs::read_link("/proc/thread-self")?;
    let tid = link.file_name().and_then(|n| n.to_str()).context("thread id")?.to_string();
    let status = Command::new("taskset")
        .args(["-p", "-c", &cpu.to_string(), &tid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("taskset -p -c {cpu} {tid} failed");
    }
    Ok(())
}
