//! The measured caller: its own thread and runtime, paced SendMessage calls (open loop, latency from
//! the intended send time).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::machine::pin_this_thread;

pub(crate) struct Phase {
    /// Latency of each request from its intended send time (errors at the time they failed).
    pub(crate) latencies: Vec<u64>,
    /// From the actual send (what the caller would see without its own queueing).
    pub(crate) service: Vec<u64>,
    pub(crate) errors: usize,
    /// Requests never sent because the phase ran over its deadline.
    pub(crate) unsent: usize,
}

pub(crate) struct Measure {
    pub(crate) n: usize,
    pub(crate) interval: Duration,
    pub(crate) reply: mpsc::Sender<anyhow::Result<Phase>>,
}

pub(crate) fn caller_thread(
    url: String,
    cpu: Option<usize>,
    timeout: Duration,
) -> anyhow::Result<mpsc::Sender<Measure>> {
    let (jobs, inbox) = mpsc::channel::<Measure>();
    std::thread::Builder::new().name("caller".into()).spawn(move || {
        if let Some(cpu) = cpu
            && let Err(error) = pin_this_thread(cpu)
        {
            eprintln!("caller not pinned: {error}");
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("caller runtime");
        let client =
            reqwest::Client::builder().no_proxy().pool_max_idle_per_host(4).timeout(timeout).build().expect("client");
        for job in inbox {
            let result = runtime.block_on(measure(&client, &url, job.n, job.interval, timeout));
            let _ = job.reply.send(result);
        }
    })?;
    Ok(jobs)
}

/// `n` SendMessage calls, one per `interval`, until done or the phase's deadline.
pub(crate) async fn measure(
    client: &reqwest::Client,
    url: &str,
    n: usize,
    interval: Duration,
    timeout: Duration,
) -> anyhow::Result<Phase> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello"}], "metadata": {"skillId": "echo"}}}});
    let body = bytes::Bytes::from(serde_json::to_vec(&body)?);
    let mut phase = Phase { latencies: Vec::with_capacity(n), service: Vec::with_capacity(n), errors: 0, unsent: 0 };
    let start = Instant::now();
    // A slow gateway may delay the calls, but never past this.
    let deadline = start + interval * n as u32 * 2 + timeout * 2;
    for i in 0..n {
        let due = start + interval * i as u32;
        if Instant::now() > deadline {
            phase.unsent = n - i;
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        let sent = Instant::now();
        let answer = async {
            let response = client
                .post(url)
                .header("a2a-version", "1.0")
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await?;
            let ok = response.status().is_success();
            response.bytes().await?;
            Ok::<_, reqwest::Error>(ok)
        };
        // reqwest's timeout covers the body too; this one is the backstop.
        let ok = matches!(tokio::time::timeout(timeout + Duration::from_secs(1), answer).await, Ok(Ok(true)));
        if !ok {
            phase.errors += 1;
        }
        phase.latencies.push(due.elapsed().as_micros() as u64);
        phase.service.push(sent.elapsed().as_micros() as u64);
    }
    phase.latencies.sort_unstable();
    phase.service.sort_unstable();
    Ok(phase)
}

pub(crate) fn pick(sorted: &[u64], q: f64) -> u64 {
    sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).copied().unwrap_or(0)
}
