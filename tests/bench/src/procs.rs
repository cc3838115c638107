//! Child processes the benchmark starts (the gateway, nginx, profilers) and what `/proc` says about
//! them. Every child runs in its own process group, so a Ctrl-C reaches only the benchmark, which
//! then stops each child by its PID: SIGTERM, a short grace, SIGKILL for it and any descendant left.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

/// How long a child may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a child gets to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A started child, stopped by PID when dropped.
pub struct Proc {
    pub name: String,
    child: Child,
    /// The URL the child announced (or the one it was given), without a trailing slash.
    pub url: String,
    pub log: PathBuf,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, wait up to the grace period, then SIGKILL whatever of its tree is left.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = self.pid();
        let tree = descendants(pid);
        signal(pid, "TERM");
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            eprintln!("{} (pid {pid}) did not stop on SIGTERM within {STOP_GRACE:?}: killing it", self.name);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Workers (nginx) that outlived their parent.
        for pid in tree {
            if Path::new(&format!("/proc/{pid}")).exists() {
                signal(pid, "KILL");
            }
        }
    }

    /// Waits for the child to exit by itself (after a signal sent elsewhere), up to `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    pub fn signal(&self, name: &str) {
        signal(self.pid(), name);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The CPUs the proxies under test (gateway, nginx, agentgateway) are pinned to, when the run pins
/// them (`--proxy-cpus`); the benchmark itself (load generator and backend) then runs on the others.
static PROXY_CPUS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Pins this process (every thread it has and will start) to the CPUs not in `proxy`, and every
/// proxy started afterwards to `proxy` (a `taskset` CPU list such as `1` or `1-3`), so that the
/// proxy never shares a core with the load it serves.
pub fn pin(proxy: &str) -> anyhow::Result<()> {
    let wanted = cpu_list(proxy).with_context(|| format!("--proxy-cpus {proxy}"))?;
    let online = cpu_list(std::fs::read_to_string("/sys/devices/system/cpu/online")?.trim())?;
    let rest: Vec<String> = online.iter().filter(|c| !wanted.contains(c)).map(|c| c.to_string()).collect();
    if rest.is_empty() || wanted.iter().any(|c| !online.contains(c)) {
        bail!("--proxy-cpus {proxy}: leave at least one online CPU for the load (online: {online:?})");
    }
    let status = Command::new("taskset")
        .args(["-a", "-cp", &rest.join(","), &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .context("running taskset")?;
    if !status.success() {
        bail!("taskset could not pin the benchmark to CPUs {}", rest.join(","));
    }
    PROXY_CPUS.set(proxy.to_string()).map_err(|_| anyhow!("pinned twice"))?;
    Ok(())
}

/// How many CPUs the proxies get: the pinned ones, else every CPU of the machine.
pub fn proxy_cpu_count() -> usize {
    match PROXY_CPUS.get() {
        Some(list) => cpu_list(list).map_or(1, |c| c.len()),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// The pinned proxy CPU list, if the run pins.
pub fn proxy_cpus() -> Option<&'static str> {
    PROXY_CPUS.get().map(String::as_str)
}

/// `0,2-3` → `[0, 2, 3]`.
fn cpu_list(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (low, high) = part.split_once('-').unwrap_or((part, part));
        let (low, high): (usize, usize) = (low.parse()?, high.parse()?);
        out.extend(low..=high);
    }
    if out.is_empty() {
        bail!("no CPU in '{list}'");
    }
    Ok(out)
}

/// `program args…` as a command, under `taskset` to the proxy CPUs when the run pins.
fn command(program: &Path, args: &[String]) -> Command {
    match PROXY_CPUS.get() {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cpus).arg(program).args(args);
            command
        }
        None => {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    }
}

/// How a child tells it is ready.
pub enum Ready {
    /// It prints `<marker> <url>` on stdout.
    Announces(&'static str),
    /// It listens on this address (known beforehand).
    Listens(std::net::SocketAddr),
}

/// Starts `program args…` with `env`, stderr to `log`, and waits until it is ready.
pub fn start(
    name: &str,
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    log: PathBuf,
    ready: Ready,
) -> anyhow::Result<Proc> {
    let stderr = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = command(program, args);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
    for (key, value) in env {
        command.env(key, value);
    }
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().with_context(|| format!("starting {}", program.display()))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let (tx, rx) = mpsc::channel();
    let marker = match &ready {
        Ready::Announces(marker) => Some(*marker),
        Ready::Listens(_) => None,
    };
    // Reads the announcement, then keeps draining so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = marker.and_then(|m| line.strip_prefix(m)) {
                let _ = tx.send(url.trim().trim_end_matches('/').to_string());
            }
        }
    });
    let mut proc = Proc { name: name.to_string(), child, url: String::new(), log };
    let deadline = Instant::now() + START_TIMEOUT;
    proc.url = match ready {
        Ready::Announces(_) => loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(url) => break url,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("{name} exited before it was ready; see {}", proc.log.display())
                }
            }
            if let Ok(Some(status)) = proc.child.try_wait() {
                bail!("{name} exited ({status}) before it was ready; see {}", proc.log.display());
            }
            if Instant::now() > deadline {
                bail!("{name} did not start within {START_TIMEOUT:?}; see {}", proc.log.display());
            }
        },
        Ready::Listens(addr) => loop {
            if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break format!("http://{addr}");
            }
            if let Ok(Some(status)) = proc.child.try_wait() {
                bail!("{name} exited ({status}) before it was ready; see {}", proc.log.display());
            }
            if Instant::now() > deadline {
                bail!("{name} did not listen on {addr} within {START_TIMEOUT:?}; see {}", proc.log.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        },
    };
    Ok(proc)
}

/// Starts `program args…` with stdout and stderr to `log`, without waiting for anything.
pub fn start_detached(name: &str, program: &Path, args: &[String], log: PathBuf) -> anyhow::Result<Proc> {
    let file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = command(program, args);
    command.stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn().with_context(|| format!("starting {}", program.display()))?;
    Ok(Proc { name: name.to_string(), child, url: String::new(), log })
}

/// The PIDs of every descendant of `pid` (children's children too).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for task in tasks.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
                if !out.contains(&child) {
                    out.push(child);
                    queue.push(child);
                }
            }
        }
    }
    out
}

/// Clock ticks per second of `/proc/<pid>/stat` times.
pub fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// CPU time of `pid` and its descendants, in microseconds: (user, system).
pub fn cpu_split(pid: u32, ticks: u64) -> (u64, u64) {
    let (mut user, mut system) = (0, 0);
    for pid in std::iter::once(pid).chain(descendants(pid)) {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let (u, s) = stat_cpu_split(&stat, ticks);
        user += u;
        system += s;
    }
    (user, system)
}

/// The CPU time in a `stat` line (a process's `/proc/<pid>/stat`, or one thread's
/// `/proc/<pid>/task/<tid>/stat`), in microseconds: (user, system).
pub fn stat_cpu_split(stat: &str, ticks: u64) -> (u64, u64) {
    // Fields after the command name, which is in parentheses and may hold spaces.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return (0, 0) };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; field 3 (state) is fields[0] here.
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (field(11) * 1_000_000 / ticks, field(12) * 1_000_000 / ticks)
}

/// CPU time (user + system) of `pid` and its descendants, in microseconds.
pub fn cpu_micros(pid: u32, ticks: u64) -> u64 {
    let (user, system) = cpu_split(pid, ticks);
    user + system
}

/// Resident set size of `pid` in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The soft and hard limits on open files of this process.
pub fn open_files_limits() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or_default();
    let mut fields = line.split_whitespace().skip(3).map(|f| f.parse().unwrap_or(u64::MAX));
    let soft = fields.next().unwrap_or(1024);
    (soft, fields.next().unwrap_or(soft))
}

/// Raises this process's open-file limit towards `want` with `prlimit` (the hard limit too when the
/// benchmark may, else the soft one up to the hard one). Children started later inherit it.
/// Returns the soft limit in force afterwards.
pub fn raise_open_files(want: u64) -> u64 {
    let pid = std::process::id().to_string();
    let set = |soft: u64, hard: u64| {
        let _ = Command::new("prlimit")
            .args(["--pid", &pid, &format!("--nofile={soft}:{hard}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    if open_files_limits().0 < want {
        set(want, want);
    }
    let (soft, hard) = open_files_limits();
    if soft < want && soft < hard {
        set(hard.min(want), hard);
    }
    open_files_limits().0
}

/// Descriptors this process has open.
pub fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// CPU ticks used by this process and the children it has reaped (`/proc/self/stat` fields 14-17).
pub fn own_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return 0 };
    rest.split_whitespace().skip(11).take(4).filter_map(|f| f.parse::<u64>().ok()).sum()
}

/// This process's nice value (`/proc/self/stat` field 19).
pub fn niceness() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return 0 };
    rest.split_whitespace().nth(16).and_then(|f| f.parse().ok()).unwrap_or(0)
}

/// Busy and stolen CPU ticks of the whole machine (`/proc/stat`).
pub fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else { return (0, 0) };
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    (at(0) + at(1) + at(2) + at(5) + at(6), at(7))
}

/// A free loopback port (bound and released; a small race is acceptable on a quiet machine).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// Output of a short command, trimmed, or `None` when it fails.
pub fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).stderr(Stdio::null()).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_and_rss_are_readable() {
        let pid = std::process::id();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(rss_kib(pid) > 0);
        // Busy work above is small; this only checks the parse does not fall over.
        let _ = cpu_micros(pid, clock_ticks());
        assert!(open_files_limits().0 > 0);
        assert!(open_files() > 0);
        assert!(machine_ticks().0 > 0);
        assert!((-20..=19).contains(&niceness()));
    }

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(cpu_list("1").unwrap(), vec![1]);
        assert_eq!(cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert!(cpu_list("").is_err());
        assert!(cpu_list("x").is_err());
    }
}
