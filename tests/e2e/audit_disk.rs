//! The audit log on a full disk, on a small tmpfs the test mounts (skipped, saying so, where
//! mounting is not permitted): `fail_closed` refuses calls with a retryable error and loses no
//! record; `fail_open` serves, and writes an `audit.dropped` record whose count is the exact loss;
//! `audit verify` after recovery finds the chain whole and names the gap; and the log never says
//! that writing resumed while the disk is still full. The refusals of `fail_closed` are reported
//! in one `audit.refused` record once the log writes again, and `fail_open`'s loss is counted
//! exactly by `a2a_audit_lost_total`.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use a2a_e2e::{client, config, example_agent, gateway, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

/// A tmpfs of `size` mounted on a fresh directory; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = std::env::temp_dir().join(format!("a2a-tmpfs-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .is_ok_and(|o| o.status.success());
        if !mounted {
            let _ = std::fs::remove_dir(&dir);
            eprintln!(
                "SKIPPED: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN); the full-disk audit test did not run"
            );
            return None;
        }
        Some(Tmpfs(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Takes every free byte.
    fn fill(&self) {
        let mut filler = std::fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while filler.write_all(&block).is_ok() {}
        // The last partial block, byte by byte.
        while filler.write_all(&[0]).is_ok() {}
    }

    fn free(&self) {
        std::fs::remove_file(self.0.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A send through the gateway: status, `Retry-After`, the request id and the answer.
async fn send(base: &str, text: &str) -> (u16, Option<String>, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": text_message(text, Some("echo"))}});
    let response = client().post(format!("{base}/")).header("A2A-Version", "1.0").json(&body).send().await.unwrap();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (status, retry, id) = (response.status().as_u16(), header("retry-after"), header("x-request-id"));
    (status, retry, id.unwrap_or_default(), response.json().await.unwrap_or(Value::Null))
}

fn served(answer: &Value) -> bool {
    answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).expect("whole lines")).collect()
}

/// Waits until the last records of each of the calls `ids` are in the file (its request record and
/// its task's end; the writer writes in the order records are queued).
async fn written_through(path: &Path, ids: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let written = records(path);
        let has = |id: &str, event: &str| written.iter().any(|r| r["request_id"] == id && r["event"] == event);
        if ids.iter().all(|id| has(id, "request") && has(id, "task.ended")) {
            return;
        }
        assert!(Instant::now() < deadline, "the records of {ids:?} were written");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `a2a-gateway audit verify`: whether it passed, and what it printed.
fn verify(path: &Path) -> (bool, String) {
    let output = Command::new(BIN).args(["audit", "verify"]).arg(path).output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A gauge of the gateway's `/metrics` (on the admin listener).
async fn metric(admin: &str, name: &str) -> Option<u64> {
    let text = client().get(format!("{admin}/metrics")).send().await.ok()?.text().await.ok()?;
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok()).map(|v| v as u64)
}

fn log_says_writes_again(log: &Path) -> bool {
    std::fs::read_to_string(log).unwrap_or_default().contains("audit log writes again")
}

#[tokio::test]
async fn fail_closed_refuses_while_the_disk_is_full_and_loses_no_record() {
    let Some(disk) = Tmpfs::mount("512k") else { return };
    let audit = disk.path().join("audit.jsonl");
    let echo = example_agent(BIN, "echo", &[]).await;
    // fail_closed is the default: not named here.
    let extra = format!("audit:\n  file: {{path: '{}'}}\n", audit.display());
    let mut gw = gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let mut answered = Vec::new();
    for i in 0..3 {
        let (status, _, id, answer) = send(&gw.url, &format!("before {i}")).await;
        assert!(status == 200 && served(&answer), "{answer}");
        answered.push(id);
    }

    disk.fill();
    let deadline = Instant::now() + Duration::from_secs(30);
    let refused = loop {
        let (status, retry, id, answer) = send(&gw.url, "while full").await;
        if served(&answer) {
            // Served before the writer noticed: its records wait in memory.
            answered.push(id);
        } else {
            break (status, retry, answer);
        }
        assert!(Instant::now() < deadline, "calls are refused once the log cannot write");
    };
    let (status, retry, answer) = refused;
    let mut refusals = 1;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{answer}");
    assert_eq!(answer["error"]["code"], -32033, "{answer}");
    assert_eq!(answer["error"]["data"][0]["reason"], "AUDIT_UNAVAILABLE", "{answer}");
    // Retried several times (every half second) while still full: never announced as resumed.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!log_says_writes_again(&gw.log), "the log claims writes resumed while the disk is full");
    assert!(!served(&send(&gw.url, "still full").await.3), "still refused");
    refusals += 1;

    disk.free();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, _, id, answer) = send(&gw.url, "after").await;
        if served(&answer) {
            answered.push(id);
            break;
        }
        refusals += 1;
        assert!(Instant::now() < deadline, "calls are served again once the log writes");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(log_says_writes_again(&gw.log));
    let admin = gw.admin.clone().expect("admin listener");
    assert_eq!(metric(&admin, "a2a_audit_refused_total").await, Some(refusals), "refusals are counted");
    gw.signal("TERM");
    assert_eq!(gw.wait(Duration::from_secs(30)).await, Some(0));

    let written = records(&audit);
    let recorded: HashSet<&str> =
        written.iter().filter(|r| r["event"] == "request").filter_map(|r| r["request_id"].as_str()).collect();
    for id in &answered {
        assert!(recorded.contains(id.as_str()), "the request record of served call {id} was kept and written");
    }
    assert!(written.iter().all(|r| r["event"] != "audit.dropped"), "nothing was lost");
    // The refusals left evidence: one `audit.refused` record (or one per outage) counting them,
    // with when and why.
    let reports: Vec<&Value> = written.iter().filter(|r| r["event"] == "audit.refused").collect();
    let reported: u64 = reports.iter().map(|r| r["count"].as_u64().unwrap_or(0)).sum();
    assert_eq!(reported, refusals, "every refused call is counted: {reports:?}");
    let first = reports[0];
    assert!(first["first_ts"].is_string() && first["last_ts"].is_string(), "{first}");
    assert!(first["reasons"].to_string().contains("audit.jsonl"), "the failing target is named: {first}");
    let (ok, report) = verify(&audit);
    assert!(ok && report.starts_with("OK") && !report.contains("lost"), "{report}");
}

#[tokio::test]
async fn fail_open_serves_and_reports_the_exact_loss_which_verify_names() {
    let Some(disk) = Tmpfs::mount("512k") else { return };
    let audit = disk.path().join("audit.jsonl");
    let echo = example_agent(BIN, "echo", &[]).await;
    let extra = format!("audit:\n  on_write_failure: fail_open\n  file: {{path: '{}'}}\n", audit.display());
    let mut gw = gateway(BIN, &config(&[("echo", &echo.url)], &extra)).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let mut before = Vec::new();
    for i in 0..3 {
        let (_, _, id, answer) = send(&gw.url, &format!("before {i}")).await;
        assert!(served(&answer), "{answer}");
        before.push(id);
    }
    // The writer may still hold the records of the calls before (it lags under load): the disk
    // fills once they are written, or they would count as lost although they came first.
    written_through(&audit, &before).await;

    disk.fill();
    let mut during = Vec::new();
    for i in 0..40 {
        let (status, _, id, answer) = send(&gw.url, &format!("while full {i}")).await;
        assert!(status == 200 && served(&answer), "fail_open serves: {answer}");
        during.push(id);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!log_says_writes_again(&gw.log), "the log claims writes resumed while the disk is full");

    disk.free();
    // The loss is reported as soon as a write succeeds, whether or not a call comes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log_says_writes_again(&gw.log) {
        assert!(Instant::now() < deadline, "the log writes again once the disk has room");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, _, after, answer) = send(&gw.url, "after").await;
    assert!(served(&answer));
    let lost_metric = metric(&gw.admin.clone().expect("admin listener"), "a2a_audit_lost_total").await;
    gw.signal("TERM");
    assert_eq!(gw.wait(Duration::from_secs(30)).await, Some(0));

    let written = records(&audit);
    let of = |id: &str| written.iter().filter(|r| r["request_id"] == id).count();
    // Each call leaves the same records (task received, states, artifact, end, request).
    let per_call = of(&before[0]);
    assert!(per_call > 0 && before.iter().chain([&after]).all(|id| of(id) == per_call), "{per_call}");
    let kept: usize = during.iter().map(|id| of(id)).sum();
    let lost = (per_call * during.len() - kept) as u64;
    assert!(lost > 0, "the disk was full for some records");
    let drops: Vec<&Value> = written.iter().filter(|r| r["event"] == "audit.dropped").collect();
    assert!(drops.iter().all(|d| d["cause"] == "write_failed" && d["first_ts"].is_string()), "{drops:?}");
    let reported: u64 = drops.iter().map(|d| d["count"].as_u64().unwrap()).sum();
    assert_eq!(reported, lost, "the drop records count exactly the records that are missing");
    assert_eq!(lost_metric, Some(lost), "a2a_audit_lost_total counts exactly the lost records");

    let (ok, report) = verify(&audit);
    assert!(ok, "the chain is whole: {report}");
    assert!(report.contains(&format!("the log records {lost} lost record(s)")), "{report}");
    assert!(report.contains("(write_failed), made from "), "{report}");
}
