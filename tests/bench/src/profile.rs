//! Where the gateway's instructions go on the unary path: a short closed-loop run against a gateway
//! started under a profiler, then the functions that cost the most, self and inclusive, and the same
//! costs summed by crate. `perf` when the machine counts instructions (`perf stat -e instructions`
//! works), otherwise valgrind's callgrind (exact instruction counts, slowed down ~50×, so latency
//! under it means nothing — only the shares do).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use crate::loadgen::{Pool, Target};

mod callgrind;
mod perf;
mod render;
mod symbols;
#[cfg(test)]
mod tests;

use callgrind::callgrind;
use perf::perf;

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
