//! The children (gateway, agent): registered so that every way out of the benchmark kills them —
//! normal exit, error, panic, and SIGINT/SIGTERM/SIGHUP through a signal thread.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

pub(crate) static CHILDREN: Mutex<Vec<(String, Child)>> = Mutex::new(Vec::new());

pub(crate) fn kill_children() {
    let mut children = match CHILDREN.try_lock() {
        Ok(children) => children,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        // Held by a thread that is registering a child: wait for it.
        Err(std::sync::TryLockError::WouldBlock) => CHILDREN.lock().unwrap_or_else(|e| e.into_inner()),
    };
    for (_, child) in children.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    children.clear();
}

pub(crate) fn exit(code: i32) -> ! {
    kill_children();
    std::process::exit(code);
}

/// Starts `bin args…`, registered for killing, and waits for its `listening <url>` line.
pub(crate) fn start(
    name: &str,
    bin: &Path,
    args: &[&str],
    env: &[(&str, String)],
    log: &Path,
) -> anyhow::Result<(u32, String)> {
    // setpriv: the child dies with the benchmark even if the benchmark is SIGKILLed. Spawned from
    // the main thread, which lives as long as the process (the death signal follows the thread).
    let mut command = Command::new("setpriv");
    command
        .arg("--pdeathsig")
        .arg("KILL")
        .arg("--")
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?);
    for (key, value) in env {
        command.env(key, value);
    }
    let (pid, stdout) = {
        let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = command.spawn().with_context(|| format!("starting {} under setpriv", bin.display()))?;
        let stdout = child.stdout.take().context("stdout")?;
        let pid = child.id();
        children.push((name.to_string(), child));
        (pid, stdout)
    };
    let (tx, rx) = mpsc::channel();
    // Reads the announcement, then keeps draining so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening ") {
                let _ = tx.send(url.trim().trim_end_matches('/').to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(url) => Ok((pid, url)),
        Err(_) => bail!("{name} did not announce its address within 60 s; see {}", log.display()),
    }
}

/// SIGINT, SIGTERM, SIGHUP: kill the children, then exit. Installed before any child starts.
pub(crate) fn install_signal_thread() -> anyhow::Result<()> {
    let (ready, installed) = mpsc::channel::<anyhow::Result<()>>();
    std::thread::spawn(move || {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => {
                let _ = ready.send(Err(error.into()));
                return;
            }
        };
        runtime.block_on(async move {
            let streams =
                (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()));
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
                let _ = ready.send(Err(anyhow!("cannot install signal handlers")));
                return;
            };
            let _ = ready.send(Ok(()));
            let (name, code) = tokio::select! {
                _ = int.recv() => ("SIGINT", 130),
                _ = term.recv() => ("SIGTERM", 143),
                _ = hup.recv() => ("SIGHUP", 129),
            };
            eprintln!("{name}: killing the gateway and the agent");
            exit(code);
        });
    });
    installed.recv().map_err(|_| anyhow!("the signal thread died"))?
}
