//! The bounded queue: overflow counted and reported, shutdown and flush drain it.

use super::*;

#[tokio::test]
async fn overflow_is_counted_and_reported_in_the_log() {
    let dir = TempDir::new("overflow");
    let file = FileConfig { path: dir.path().join("audit.jsonl"), max_bytes: 1 << 20, max_files: 10 };
    let (open_gate, gate) = std::sync::mpsc::channel();
    let opener: Opener =
        Box::new(move || {
            Ok(Box::new(Gated {
                inner: FileTarget::open(&file, Default::default(), Default::default())?,
                gate: Some(gate),
            }) as Box<dyn Target>)
        });
    let sink = AuditSink::start_with(1, vec![opener], Default::default(), Default::default()).await.unwrap();
    let audit = Audit::new(&AuditConfig::default(), sink.handle());

    audit.inner.sink.send(numbered(1));
    // The writer holds record 1 at the gate; record 2 fills the queue of one; 3 to 5 overflow.
    wait_for("the writer to take record 1", || audit.stats().queue_depth == 0).await;
    for i in 2..=5 {
        audit.inner.sink.send(numbered(i));
    }
    assert_eq!(
        audit.stats(),
        AuditStats {
            queue_depth: 1,
            queue_capacity: 1,
            dropped_total: 3,
            write_errors_total: 0,
            lost_total: 0,
            refused_total: 0,
            writable: true
        }
    );
    drop(open_gate);
    sink.shutdown().await.unwrap();

    let records = events(&dir.path().join("audit.jsonl"));
    let summary: Vec<_> = records.iter().map(|r| (r["event"].as_str().unwrap(), r.get("count").cloned())).collect();
    assert_eq!(
        summary,
        [("task.state", None), ("audit.dropped", Some(json!(3))), ("task.state", None)],
        "{records:#?}"
    );
    assert_eq!((&records[0]["request_id"], &records[2]["request_id"]), (&json!("n1"), &json!("n2")));
    assert!(verify_files(&[dir.path().join("audit.jsonl")]).is_ok());
}

#[tokio::test]
async fn shutdown_flushes_everything_and_later_records_count_as_dropped() {
    let dir = TempDir::new("shutdown");
    let mut config = file_config(&dir, 1 << 30, 10);
    config.queue = 10_000;
    let (audit, sink) = Audit::start(&config).await.unwrap();
    for i in 0..5000 {
        audit.inner.sink.send(numbered(i));
    }
    sink.shutdown().await.unwrap();
    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    assert_eq!(records.len(), 5000);
    assert!(records.iter().enumerate().all(|(i, r)| r["request_id"] == format!("n{i}")));
    assert_eq!(audit.stats().dropped_total, 0);
    assert!(verify_files(&[active]).is_ok());

    audit.inner.sink.send(numbered(5000));
    assert_eq!(audit.stats().dropped_total, 1);
}

/// Workers still sending while the log shuts down: every record is in the log or counted as
/// dropped, none vanishes (a worker may hold a place in the queue when the writer closes it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_sent_during_shutdown_are_written_or_counted() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let dir = TempDir::new("shutdown-race");
    let mut config = file_config(&dir, 1 << 30, 10);
    config.queue = 1 << 16;
    for round in 0..10 {
        let (audit, sink) = Audit::start(&config).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let (audit, stop, sent) = (audit.clone(), stop.clone(), sent.clone());
                std::thread::spawn(move || {
                    // Long records: a sender spends most of its time holding a place while it
                    // writes one out, where the close can catch it.
                    let long = "x".repeat(16 * 1024);
                    while !stop.load(Ordering::Relaxed) {
                        let i = sent.fetch_add(1, Ordering::Relaxed);
                        let common = Common { request_id: Some(Arc::from(format!("n{i}{long}"))), ..Common::default() };
                        audit.inner.sink.send(Record::event(
                            common,
                            Kind::State { state: TaskState::Working, source: Source::Stream },
                        ));
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        sink.shutdown().await.unwrap();
        stop.store(true, Ordering::Relaxed);
        senders.into_iter().for_each(|sender| sender.join().unwrap());
        let active = dir.path().join("audit.jsonl");
        let written = events(&active).iter().filter(|r| r["event"] == "task.state").count() as u64;
        let sent = sent.load(Ordering::Relaxed);
        assert_eq!(written + audit.stats().dropped_total, sent, "round {round}: {written} written of {sent}");
        assert!(written > 0 && verify_files(std::slice::from_ref(&active)).is_ok());
        std::fs::remove_file(&active).unwrap();
    }
}

#[tokio::test]
async fn flush_makes_queued_records_readable() {
    let dir = TempDir::new("flush");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    for i in 0..3 {
        audit.inner.sink.send(numbered(i));
    }
    sink.flush().await.unwrap();
    assert_eq!(events(&dir.path().join("audit.jsonl")).len(), 3);
    sink.shutdown().await.unwrap();
}
