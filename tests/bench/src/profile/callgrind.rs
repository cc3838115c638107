//! The profile under valgrind's callgrind: exact instruction counts, read from `callgrind_annotate`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::procs::{self, Ready};

use super::symbols::{by_crate, function_name, is_frame, is_own};
use super::{Entry, Profile, Setup, load};

pub(super) async fn callgrind(setup: &Setup<'_>) -> anyhow::Result<Profile> {
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
pub(super) fn parse_callgrind(text: &str) -> (u64, Vec<Entry>) {
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
