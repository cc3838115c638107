//! The profile under `perf record`: sampled instructions, read from `perf report`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use crate::procs::{self, Ready};

use super::symbols::{by_crate, shorten};
use super::{Entry, Profile, Setup, load};

pub(super) async fn perf(setup: &Setup<'_>) -> anyhow::Result<Profile> {
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
pub(super) fn parse_perf(text: &str) -> (u64, Vec<Entry>) {
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
