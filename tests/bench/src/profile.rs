//! Where the gateway's instructions go on the unary path: a short closed-loop run against a gateway
//! started under a profiler, then the functions that cost the most, self and inclusive, and the same
//! costs summed by crate. `perf` when the machine counts instructions (`perf stat -e instructions`
//! works), otherwise valgrind's callgrind (exact instruction counts, slowed down ~50×, so latency
//! under it means nothing — only the shares do).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::loadgen::{Pool, Target};
use crate::procs::{self, Ready};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tool {
    Perf,
    Callgrind,
}

/// Picks the profiler this machine supports, if any.
pub fn choose_tool() -> Option<Tool> {
    let perf = Command::new("perf").args(["stat", "-e", "instructions", "true"]).stdout(Stdio::null()).output();
    if let Ok(output) = perf {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() && !stderr.contains("not supported") && !stderr.contains("not counted") {
            return Some(Tool::Perf);
        }
    }
    let valgrind = Command::new("valgrind").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    valgrind.is_ok_and(|s| s.success()).then_some(Tool::Callgrind)
}

/// One function (or symbol) and its share.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub percent: f64,
    pub count: u64,
    pub name: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Profile {
    pub tool: String,
    pub scenario: String,
    pub requests: u64,
    /// Instructions (callgrind) or the approximate event count (perf) of the measured part.
    pub total: u64,
    pub self_top: Vec<Entry>,
    pub inclusive_top: Vec<Entry>,
    /// Inclusive cost of the gateway's own functions.
    pub own_inclusive: Vec<Entry>,
    pub by_crate: Vec<(String, f64)>,
    pub output: PathBuf,
    pub notes: Vec<String>,
}

/// What the profiled run needs to start a gateway and load it.
pub struct Setup<'a> {
    pub gateway_bin: &'a Path,
    pub config: &'a Path,
    pub env: &'a [(String, String)],
    pub work: &'a Path,
    /// Builds the request for a gateway at this address.
    pub target: &'a dyn Fn(std::net::SocketAddr) -> anyhow::Result<Target>,
    pub scenario: String,
    pub warmup: Duration,
    pub measure: Duration,
}

pub async fn run(tool: Tool, setup: &Setup<'_>) -> anyhow::Result<Profile> {
    match tool {
        Tool::Callgrind => callgrind(setup).await,
        Tool::Perf => perf(setup).await,
    }
}

async fn load(setup: &Setup<'_>, url: &str, after_warmup: impl FnOnce()) -> anyhow::Result<u64> {
    let addr = crate::addr_of(url)?;
    crate::wait_for_skill(addr, Duration::from_secs(120)).await?;
    let mut pool = Pool::connect((setup.target)(addr)?, 4).await?;
    let warm = pool.closed_loop(setup.warmup).await;
    if warm.ok == 0 {
        bail!("the profiled gateway answered nothing: {}", warm.first_error.unwrap_or_default());
    }
    after_warmup();
    let stats = pool.closed_loop(setup.measure).await;
    Ok(stats.ok)
}

async fn callgrind(setup: &Setup<'_>) -> anyhow::Result<Profile> {
    let output = setup.work.join("callgrind.out");
    let _ = std::fs::remove_file(&output);
    for part in 1..10 {
        let _ = std::fs::remove_file(setup.work.join(format!("callgrind.out.{part}")));
    }
    let args = vec![
        "--tool=callgrind".to_string(),
        format!("--callgrind-out-file={}", output.display()),
        setup.gateway_bin.display().to_string(),
        "serve".into(),
        "--config".into(),
        setup.config.display().to_string(),
    ];
    let log = setup.work.join("gateway-callgrind.log");
    let mut gateway = procs::start(
        "gateway under callgrind",
        Path::new("valgrind"),
        &args,
        setup.env,
        log,
        Ready::Announces("listening"),
    )?;
    let pid = gateway.pid();
    let mut notes = Vec::new();
    let url = gateway.url.clone();
    let zeroed = std::sync::atomic::AtomicBool::new(false);
    let requests = load(setup, &url, || {
        // Dumps start-up and warm-up into a file of their own; the measured part is written at exit.
        let ok = Command::new("callgrind_control")
            .args(["-d", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        zeroed.store(ok, std::sync::atomic::Ordering::Relaxed);
    })
    .await?;
    if !zeroed.load(std::sync::atomic::Ordering::Relaxed) {
        notes.push("callgrind_control -d failed: the counts include start-up and warm-up".into());
    }
    // Callgrind writes its file when the program exits; the gateway exits cleanly on SIGTERM.
    gateway.signal("TERM");
    if !gateway.wait_exit(Duration::from_secs(60)) {
        bail!("the gateway under callgrind did not exit after SIGTERM");
    }
    drop(gateway);
    let self_text = annotate(&output, false)?;
    let inclusive_text = annotate(&output, true)?;
    let (total, mut all_self) = parse_callgrind(&self_text);
    let (_, inclusive) = parse_callgrind(&inclusive_text);
    // Frames alive across the dump (thread entries, the runtime's poll) come out with their whole
    // inclusive cost as "self" in the later part: a callgrind artefact, left out.
    let before = all_self.len();
    all_self.retain(|e| e.percent <= 50.0 && !is_frame(&e.name));
    if all_self.len() < before {
        notes.push(format!(
            "{} thread-entry and runtime frames that callgrind reports with their inclusive cost as self (they were \
             active across the dump that separates warm-up from measurement) are left out of the self lists",
            before - all_self.len()
        ));
    }
    let version = procs::command_output("valgrind", &["--version"]).unwrap_or_else(|| "valgrind".into());
    Ok(Profile {
        tool: format!("callgrind ({version}), instruction counts (Ir)"),
        scenario: setup.scenario.clone(),
        requests,
        total,
        by_crate: by_crate(&all_self),
        self_top: all_self.into_iter().take(20).collect(),
        own_inclusive: inclusive.iter().filter(|e| is_own(&e.name)).take(20).cloned().collect(),
        inclusive_top: inclusive.into_iter().filter(|e| !is_frame(&e.name)).take(15).collect(),
        output,
        notes,
    })
}

fn annotate(file: &Path, inclusive: bool) -> anyhow::Result<String> {
    let output = Command::new("callgrind_annotate")
        .arg(format!("--inclusive={}", if inclusive { "yes" } else { "no" }))
        .args(["--threshold=100", "--auto=no"])
        .arg(file)
        .stderr(Stdio::null())
        .output()
        .context("running callgrind_annotate")?;
    if !output.status.success() {
        bail!("callgrind_annotate failed on {}", file.display());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Parses `callgrind_annotate` output: the program total and every function line, in order.
fn parse_callgrind(text: &str) -> (u64, Vec<Entry>) {
    let mut total = 0;
    let mut entries = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let digits: String = line.chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
        if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let Ok(count) = digits.replace(',', "").parse::<u64>() else { continue };
        let mut rest = line[digits.len()..].trim_start();
        if rest.starts_with('(')
            && let Some(close) = rest.find(')')
        {
            rest = rest[close + 1..].trim_start();
        }
        if rest.starts_with("PROGRAM TOTALS") {
            total = count;
            continue;
        }
        if rest.is_empty() {
            continue;
        }
        entries.push(Entry { percent: 0.0, count, name: function_name(rest) });
    }
    for entry in &mut entries {
        entry.percent = if total > 0 { entry.count as f64 * 100.0 / total as f64 } else { 0.0 };
    }
    (total, entries)
}

/// `file:function [object]` → `function` (or `function [object]` for code without symbols' crate).
fn function_name(text: &str) -> String {
    let (body, object) = match text.rfind(" [") {
        Some(at) if text.ends_with(']') => (&text[..at], Some(&text[at + 2..text.len() - 1])),
        _ => (text, None),
    };
    let bytes = body.as_bytes();
    // The file part ends at the first single ':' (Rust paths use '::').
    let mut split = None;
    for i in 0..bytes.len() {
        if bytes[i] == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':') {
            split = Some(i);
            break;
        }
    }
    let function = split.map_or(body, |i| &body[i + 1..]);
    let function = shorten(function);
    match object.and_then(|o| Path::new(o).file_name()).and_then(|o| o.to_str()) {
        Some(object) if !object.starts_with("a2a-gateway") => format!("{function} [{object}]"),
        _ => function,
    }
}

/// Keeps long generic names readable.
fn shorten(name: &str) -> String {
    const MAX: usize = 140;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let cut: String = name.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// Thread entry points and runtime frames that are ~100% inclusive and say nothing.
fn is_frame(name: &str) -> bool {
    ["start_thread", "clone", "_start", "main", "std::rt::", "std::sys::", "__libc_start", "0x"]
        .iter()
        .any(|p| name.starts_with(p))
        || name.contains("thread_start")
        || name.contains("thread::Builder::spawn_unchecked")
        || name.contains("tokio::runtime::blocking")
        || name.contains("tokio::runtime::scheduler::multi_thread::worker::run")
        || name.contains("tokio::runtime::context")
        || name.starts_with("tokio::runtime::task::raw::poll")
        || name.starts_with("tokio::runtime::task::harness::")
        || name.starts_with("tokio::runtime::task::core::")
        || name.starts_with("tokio::runtime::scheduler::")
        || name.contains("std::panicking")
        || name.contains("std::panic::catch_unwind")
        || name.contains("__rust_begin_short_backtrace")
        || name.contains("core::ops::function::FnOnce::call_once")
}

/// The gateway's and the policies' own code.
fn is_own(name: &str) -> bool {
    name.contains("a2a_gateway::") || name.contains("a2a_policies::")
}

/// The crate a function belongs to (`<hyper::proto::… as …>::poll` → `hyper`), or its object file.
fn crate_of(name: &str) -> String {
    if let Some(at) = name.rfind(" [") {
        return name[at + 2..].trim_end_matches(']').to_string();
    }
    let trimmed = name.trim_start_matches(['<', '&', '*']).trim_start_matches("dyn ").trim_start_matches("mut ");
    let end = trimmed.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(trimmed.len());
    let head = &trimmed[..end];
    if head.is_empty() { "other".into() } else { head.to_string() }
}

fn by_crate(entries: &[Entry]) -> Vec<(String, f64)> {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for entry in entries {
        let krate = crate_of(&entry.name);
        match sums.iter_mut().find(|(k, _)| *k == krate) {
            Some((_, sum)) => *sum += entry.percent,
            None => sums.push((krate, entry.percent)),
        }
    }
    sums.sort_by(|a, b| b.1.total_cmp(&a.1));
    sums.truncate(15);
    sums
}

async fn perf(setup: &Setup<'_>) -> anyhow::Result<Profile> {
    let output = setup.work.join("perf.data");
    let args = vec!["serve".to_string(), "--config".into(), setup.config.display().to_string()];
    let log = setup.work.join("gateway-perf.log");
    let gateway =
        procs::start("gateway (perf)", setup.gateway_bin, &args, setup.env, log, Ready::Announces("listening"))?;
    let pid = gateway.pid();
    let url = gateway.url.clone();
    let recorder: std::sync::Mutex<Option<procs::Proc>> = std::sync::Mutex::new(None);
    let requests = load(setup, &url, || {
        let args = vec![
            "record".to_string(),
            "-e".into(),
            "instructions".into(),
            "-p".into(),
            pid.to_string(),
            "-o".into(),
            output.display().to_string(),
        ];
        let log = setup.work.join("perf-record.log");
        if let Ok(proc) = procs::start_detached("perf record", Path::new("perf"), &args, log)
            && let Ok(mut slot) = recorder.lock()
        {
            *slot = Some(proc);
        }
    })
    .await?;
    let mut recorder = recorder.into_inner().ok().flatten().context("perf record did not start")?;
    // perf record writes its file on SIGINT.
    recorder.signal("INT");
    recorder.wait_exit(Duration::from_secs(30));
    drop(recorder);
    drop(gateway);
    let report = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--sort", "symbol", "-i"])
        .arg(&output)
        .stderr(Stdio::null())
        .output()
        .context("running perf report")?;
    let text = String::from_utf8_lossy(&report.stdout);
    let (total, entries) = parse_perf(&text);
    Ok(Profile {
        tool: "perf record -e instructions".into(),
        scenario: setup.scenario.clone(),
        requests,
        total,
        by_crate: by_crate(&entries),
        self_top: entries.into_iter().take(20).collect(),
        inclusive_top: Vec::new(),
        own_inclusive: Vec::new(),
        output,
        notes: vec!["perf samples (no call graph: release builds keep no frame pointers)".into()],
    })
}

/// Parses `perf report --stdio --sort symbol`: `  12.34%  [.] symbol` lines and the event count.
fn parse_perf(text: &str) -> (u64, Vec<Entry>) {
    let mut total = 0;
    let mut entries = Vec::new();
    for line in text.lines() {
        if let Some(count) = line.strip_prefix("# Event count (approx.): ") {
            total = count.trim().parse().unwrap_or(0);
            continue;
        }
        let line = line.trim_start();
        let Some((percent, rest)) = line.split_once('%') else { continue };
        let Ok(percent) = percent.trim().parse::<f64>() else { continue };
        let name = rest.trim_start().trim_start_matches("[.]").trim_start_matches("[k]").trim();
        entries.push(Entry { percent, count: (percent / 100.0 * total as f64) as u64, name: shorten(name) });
    }
    (total, entries)
}

impl Profile {
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Profile: {}\n", self.scenario);
        let per_request = self.total as f64 / self.requests.max(1) as f64;
        let _ = writeln!(
            out,
            "Tool: {}. {} requests measured after warm-up; {} counted in all, **{:.0} per request** \
             (all of the gateway's threads, idle work included). Raw profile: `{}`.\n",
            self.tool,
            self.requests,
            group(self.total),
            per_request,
            self.output.strip_prefix(crate::repo_root()).unwrap_or(&self.output).display()
        );
        for note in &self.notes {
            let _ = writeln!(out, "- {note}");
        }
        let _ = writeln!(out, "\nBy crate (self cost summed over all functions):\n");
        let _ = writeln!(out, "| crate / object | % |\n|---|---|");
        for (krate, percent) in &self.by_crate {
            let _ = writeln!(out, "| {krate} | {percent:.1} |");
        }
        let _ = writeln!(out, "\nTop functions by self cost:\n");
        entries_table(out, &self.self_top, per_request, self.requests);
        if !self.own_inclusive.is_empty() {
            let _ = writeln!(
                out,
                "\nThe gateway's own functions by inclusive cost (what each step costs with everything it calls):\n"
            );
            entries_table(out, &self.own_inclusive, per_request, self.requests);
        }
        if !self.inclusive_top.is_empty() {
            let _ = writeln!(out, "\nTop functions by inclusive cost (thread and runtime entry frames left out):\n");
            entries_table(out, &self.inclusive_top, per_request, self.requests);
        }
    }
}

fn entries_table(out: &mut String, entries: &[Entry], _per_request: f64, requests: u64) {
    let _ = writeln!(out, "| % | per request | function |\n|---|---|---|");
    for e in entries {
        let _ = writeln!(
            out,
            "| {:.2} | {:.0} | `{}` |",
            e.percent,
            e.count as f64 / requests.max(1) as f64,
            e.name.replace('|', "\\|").replace('`', "'")
        );
    }
}

fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANNOTATE: &str = "\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
  250,000 (25.00%)  ???:hyper::proto::h1::role::Server::parse [/x/target/release/a2a-gateway]
  100,000 (10.00%)  ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:__memmove_avx_unaligned_erms [/usr/lib/x86_64-linux-gnu/libc.so.6]
   50,000 ( 5.00%)  ???:<serde_json::de::Deserializer<R> as serde::Deserializer>::deserialize_any [/x/target/release/a2a-gateway]
";

    #[test]
    fn callgrind_annotate_output_is_parsed() {
        let (total, entries) = parse_callgrind(ANNOTATE);
        assert_eq!(total, 1_000_000);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].name, "hyper::proto::h1::role::Server::parse");
        assert!((entries[0].percent - 25.0).abs() < 1e-9);
        assert_eq!(entries[1].name, "__memmove_avx_unaligned_erms [libc.so.6]");
        let crates = by_crate(&entries);
        assert_eq!(crates[0].0, "hyper");
        assert!(crates.iter().any(|(k, _)| k == "serde_json"));
        assert!(crates.iter().any(|(k, _)| k == "libc.so.6"));
    }

    #[test]
    fn perf_report_output_is_parsed() {
        let text = "# Event count (approx.): 2000\n#\n    50.00%  [.] hyper::proto::h1::encode\n    10.00%  [k] do_syscall_64\n";
        let (total, entries) = parse_perf(text);
        assert_eq!(total, 2000);
        assert_eq!(entries[0].name, "hyper::proto::h1::encode");
        assert_eq!(entries[0].count, 1000);
        assert_eq!(entries[1].name, "do_syscall_64");
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(12), "12");
    }
}
