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
