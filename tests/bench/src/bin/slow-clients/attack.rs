//! The attackers: their own thread and runtime, holding N slow connections for a whole phase and
//! recording how the gateway shed them.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::machine::pin_this_thread;

/// What the slow connections of one attack phase met.
#[derive(Default)]
pub(crate) struct Shedding {
    /// Connections the gateway closed, and after how long.
    pub(crate) closed: Vec<Duration>,
    /// Connections still open when the phase ended though older than the timeout + slack (or
    /// given up on): not shed in time.
    pub(crate) late: usize,
    /// Connections still open at the phase's end but younger than the timeout (no verdict).
    pub(crate) censored: usize,
    pub(crate) connect_failures: usize,
    /// 503 answers (the listener's caps).
    pub(crate) refused: usize,
}

pub(crate) struct Attack {
    pub(crate) until: Instant,
    pub(crate) reply: mpsc::Sender<anyhow::Result<Shedding>>,
}

pub(crate) struct Target {
    pub(crate) gateway: SocketAddr,
    pub(crate) slow: usize,
    pub(crate) sources: usize,
    pub(crate) timeout: Duration,
    pub(crate) slack: Duration,
}

pub(crate) fn attacker_thread(target: Target, cpu: Option<usize>) -> anyhow::Result<mpsc::Sender<Attack>> {
    let (jobs, inbox) = mpsc::channel::<Attack>();
    std::thread::Builder::new().name("attackers".into()).spawn(move || {
        if let Some(cpu) = cpu
            && let Err(error) = pin_this_thread(cpu)
        {
            eprintln!("attackers not pinned: {error}");
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("attacker runtime");
        for job in inbox {
            let result = runtime.block_on(attack(&target, job.until));
            let _ = job.reply.send(result);
        }
    })?;
    Ok(jobs)
}

/// Holds `target.slow` slow connections until `until`: each attacker reconnects as soon as the
/// gateway closes its connection. At `until` every attacker hangs up.
pub(crate) async fn attack(target: &Target, until: Instant) -> anyhow::Result<Shedding> {
    let tasks: Vec<_> = (0..target.slow)
        .map(|i| {
            let source = [127, 0, 0, 2 + (i % target.sources.max(1)) as u8];
            tokio::spawn(attacker(target.gateway, source, i % 2 == 0, until, target.timeout, target.slack))
        })
        .collect();
    let mut all = Shedding::default();
    for task in tasks {
        let one = task.await?;
        all.closed.extend(one.closed);
        all.late += one.late;
        all.censored += one.censored;
        all.connect_failures += one.connect_failures;
        all.refused += one.refused;
    }
    Ok(all)
}

pub(crate) async fn attacker(
    gateway: SocketAddr,
    source: [u8; 4],
    trickle: bool,
    until: Instant,
    timeout: Duration,
    slack: Duration,
) -> Shedding {
    let mut out = Shedding::default();
    let until = tokio::time::Instant::from_std(until);
    let give_up = timeout * 3 + slack;
    let head = b"POST / HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    while tokio::time::Instant::now() < until {
        let connect = async {
            let socket = TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((source, 0)))?;
            socket.connect(gateway).await
        };
        let mut stream = match tokio::time::timeout(Duration::from_secs(3), connect).await {
            Ok(Ok(stream)) => stream,
            _ => {
                out.connect_failures += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let opened = Instant::now();
        let mut buffer = [0u8; 512];
        let mut next = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.tick().await;
        let hold = tokio::time::sleep(give_up);
        tokio::pin!(hold);
        loop {
            tokio::select! {
                read = stream.read(&mut buffer) => match read {
                    Ok(0) | Err(_) => {
                        out.closed.push(opened.elapsed());
                        break;
                    }
                    // A 503 from a full listener: the close follows.
                    Ok(_) => out.refused += 1,
                },
                _ = tick.tick(), if trickle => {
                    let byte = next % head.len();
                    if stream.write_all(&head[byte..byte + 1]).await.is_err() {
                        out.closed.push(opened.elapsed());
                        break;
                    }
                    next += 1;
                }
                _ = tokio::time::sleep_until(until) => {
                    if opened.elapsed() > timeout + slack {
                        out.late += 1;
                    } else {
                        out.censored += 1;
                    }
                    break;
                }
                _ = &mut hold => {
                    out.late += 1;
                    break;
                }
            }
        }
    }
    out
}
