//! A scripted run (blocking, streamed, canceled and multi-turn tasks, each denial) read back from
//! the file: one record per event, in order, with the right fields, and no message content.

use super::*;

const SECRETS: [&str; 6] =
    ["blocking secret", "streamed secret", "cancel secret", "first turn secret", "second turn secret", "denied secret"];

/// The scripted run of the acceptance criteria: a blocking task, a streamed task with artifacts,
/// a canceled task, a multi-turn task, each kind of denial and a failed request.
async fn scripted_run(audit: &Audit) {
    use TaskState::*;
    // Blocking send: the unary answer shows the artifact and the final state.
    let mut done = obs("t-block", Some(Completed));
    done.artifact = Some(artifact("echo", "blocking secret"));
    run(audit, "r1", send(Operation::SendMessage, SECRETS[0], None), ok("alice", "echo", "echo", vec![done])).await;

    // Streamed send: the events flow after the answer head.
    let mut stream = send(Operation::SendStreamingMessage, SECRETS[1], None);
    stream.call.context_id = Some("ctx-1".into());
    let (mut req, info) = request("r2", stream, ok("alice", "writer", "write", vec![]));
    req.headers_mut().insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
    audit.layer().layer(inner(audit.clone())).oneshot(req).await.unwrap();
    let mut part1 = obs("t-stream", None);
    part1.artifact = Some(artifact("draft", "part one"));
    let mut part2 = obs("t-stream", None);
    part2.artifact = Some(artifact("final", "part two"));
    for o in [obs("t-stream", Some(Submitted)), obs("t-stream", Some(Working)), obs("t-stream", Some(Working))] {
        observe(audit, &info, &o, Source::Stream);
    }
    for o in [part1, part2, obs("t-stream", Some(Completed))] {
        observe(audit, &info, &o, Source::Stream);
    }

    // A task sent without waiting, then canceled, then read again (nothing new to record).
    run(
        audit,
        "r3",
        send(Operation::SendMessage, SECRETS[2], None),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Working))]),
    )
    .await;
    run(
        audit,
        "r4",
        task_call(Operation::CancelTask, "t-cancel"),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Canceled))]),
    )
    .await;
    run(
        audit,
        "r5",
        task_call(Operation::GetTask, "t-cancel"),
        ok("bob", "echo", "echo", vec![obs("t-cancel", Some(Canceled))]),
    )
    .await;

    // Multi-turn: input required, then the continuation completes the same task.
    let turn1 = vec![obs("t-multi", Some(InputRequired))];
    run(audit, "r6", send(Operation::SendMessage, SECRETS[3], None), ok("carol", "echo", "echo", turn1)).await;
    let turn2 = vec![obs("t-multi", Some(Working)), obs("t-multi", Some(Completed))];
    run(audit, "r7", send(Operation::SendMessage, SECRETS[4], Some("t-multi")), ok("carol", "echo", "echo", turn2))
        .await;

    // Each kind of denial, and one failure that is not a denial.
    let denials = [
        refused(
            None,
            "jwt: bad signature",
            A2aError::Unauthenticated { message: "no".into(), challenge: "Bearer".into() },
        ),
        refused(Some("dave"), "skill admin needs scope admin", A2aError::PermissionDenied("no".into())),
        refused(
            Some("dave"),
            "quota 10/min",
            A2aError::RateLimited { message: "slow".into(), retry_after: Duration::from_secs(2) },
        ),
        refused(Some("dave"), "3 live tasks", A2aError::TooManyTasks { held: 3, limit: 3 }),
        refused(
            Some("dave"),
            "schema of skill echo",
            A2aError::Validation {
                message: "denied secret is not an integer".into(),
                violations: vec![Violation {
                    pointer: "/diff".into(),
                    description: "'denied secret' is not an integer".into(),
                }],
            },
        ),
    ];
    for (i, step) in denials.into_iter().enumerate() {
        run(audit, &format!("d{i}"), send(Operation::SendMessage, SECRETS[5], None), step).await;
    }
    let mut unavailable = ok("erin", "echo", "echo", vec![]);
    unavailable.outcome = Err(A2aError::BackendUnavailable("down".into()));
    run(audit, "f1", send(Operation::SendMessage, "unavailable", None), unavailable).await;
}

/// `(event, request_id, task_id)` of every event record the scripted run must write, in order.
const EXPECTED: [(&str, &str, Option<&str>); 30] = [
    ("task.received", "r1", Some("t-block")),
    ("artifact.delivered", "r1", Some("t-block")),
    ("task.state", "r1", Some("t-block")),
    ("task.ended", "r1", Some("t-block")),
    ("request", "r1", Some("t-block")),
    ("task.received", "r2", None),
    ("request", "r2", None),
    ("task.state", "r2", Some("t-stream")),
    ("task.state", "r2", Some("t-stream")),
    ("artifact.delivered", "r2", Some("t-stream")),
    ("artifact.delivered", "r2", Some("t-stream")),
    ("task.state", "r2", Some("t-stream")),
    ("task.ended", "r2", Some("t-stream")),
    ("task.received", "r3", Some("t-cancel")),
    ("task.state", "r3", Some("t-cancel")),
    ("request", "r3", Some("t-cancel")),
    ("task.state", "r4", Some("t-cancel")),
    ("task.ended", "r4", Some("t-cancel")),
    ("request", "r4", Some("t-cancel")),
    ("request", "r5", Some("t-cancel")),
    ("task.received", "r6", Some("t-multi")),
    ("task.state", "r6", Some("t-multi")),
    ("request", "r6", Some("t-multi")),
    ("task.received", "r7", Some("t-multi")),
    ("task.state", "r7", Some("t-multi")),
    ("task.state", "r7", Some("t-multi")),
    ("task.ended", "r7", Some("t-multi")),
    ("request", "r7", Some("t-multi")),
    // The five denials and the failure follow; checked one by one below.
    ("denied", "d0", None),
    ("denied", "d1", None),
];

#[tokio::test]
async fn a_scripted_run_writes_one_record_per_event_in_order() {
    let dir = TempDir::new("scripted");
    let config = file_config(&dir, 100 * 1024 * 1024, 10);
    let (audit, sink) = Audit::start(&config).await.unwrap();
    scripted_run(&audit).await;
    sink.shutdown().await.unwrap();

    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    assert_eq!(records.len(), EXPECTED.len() + 4, "{records:#?}");
    for (i, (event, request_id, task_id)) in EXPECTED.iter().enumerate() {
        let r = &records[i];
        assert_eq!((r["event"].as_str(), r["request_id"].as_str()), (Some(*event), Some(*request_id)), "#{i}: {r}");
        assert_eq!(r["task_id"].as_str(), *task_id, "#{i}: {r}");
        assert!(r["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')), "#{i}: {r}");
    }

    // Blocking task: every field of the first records.
    let received = &records[0];
    assert_eq!(
        (&received["caller"], &received["tenant"], &received["backend"], &received["skill"]),
        (&json!("alice"), &json!("api-key|acme"), &json!("echo"), &json!("echo"))
    );
    assert_eq!((&received["binding"], &received["operation"]), (&json!("JSONRPC"), &json!("SendMessage")));
    assert_eq!(received["context_id"], "ctx-1");
    assert!(received.get("content").is_none(), "no content unless configured");
    let delivered = &records[1];
    let expected = artifact("echo", "blocking secret");
    assert_eq!(delivered["name"], "echo");
    assert_eq!(delivered["artifact_id"], "art-echo");
    assert_eq!((&delivered["part_count"], &delivered["bytes"]), (&json!(1), &json!(15)));
    assert_eq!(delivered["sha256"], expected.sha256);
    assert_eq!((&records[2]["state"], &records[2]["source"]), (&json!("TASK_STATE_COMPLETED"), &json!("response")));
    assert_eq!(records[3]["state"], "TASK_STATE_COMPLETED");
    assert!(records[3]["duration_ms"].is_u64());
    assert_eq!((&records[4]["outcome"], &records[4]["status"]), (&json!("ok"), &json!(200)));

    // Streamed task: trace id from traceparent, the stream's states deduplicated.
    let trace = json!("4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(records[5..13].iter().all(|r| r["trace_id"] == trace), "{:#?}", &records[5..13]);
    assert_eq!(records[6]["operation"], "SendStreamingMessage");
    let states: Vec<_> = records[5..13].iter().filter(|r| r["event"] == "task.state").map(|r| &r["state"]).collect();
    assert_eq!(states, [&json!("TASK_STATE_SUBMITTED"), &json!("TASK_STATE_WORKING"), &json!("TASK_STATE_COMPLETED")]);
    assert!(records[7..13].iter().all(|r| r["source"] == "stream" || r["event"] == "task.ended"));
    assert_eq!((&records[9]["name"], &records[10]["name"]), (&json!("draft"), &json!("final")));
    assert_eq!(records[7]["binding"], "JSONRPC");

    // Canceled task: the cancel's own records, and nothing new from the later read.
    assert_eq!(
        (&records[16]["state"], &records[16]["operation"]),
        (&json!("TASK_STATE_CANCELED"), &json!("CancelTask"))
    );
    assert_eq!((&records[17]["state"], &records[19]["operation"]), (&json!("TASK_STATE_CANCELED"), &json!("GetTask")));
    assert_eq!(records[19]["binding"], "HTTP+JSON");

    // Multi-turn: the second turn continues the task, which ends after both turns.
    assert_eq!(records[21]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(records[26]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(records[23]["caller"], "carol");

    // Denials, with reason codes and details, never the caller-facing messages.
    let denied = &records[28..33];
    let kinds: Vec<_> =
        denied.iter().map(|r| (r["category"].as_str().unwrap(), r["reason"].as_str().unwrap())).collect();
    assert_eq!(
        kinds,
        [
            ("authentication", "UNAUTHENTICATED"),
            ("permission", "PERMISSION_DENIED"),
            ("rate", "RATE_LIMITED"),
            ("concurrency", "TOO_MANY_TASKS"),
            ("validation", "VALIDATION_FAILED"),
        ]
    );
    assert!(denied.iter().all(|r| r["event"] == "denied" && r["operation"] == "SendMessage"));
    assert_eq!((&denied[0]["caller"], &denied[0]["detail"]), (&Value::Null, &json!("jwt: bad signature")));
    assert_eq!((&denied[1]["caller"], &denied[1]["detail"]), (&json!("dave"), &json!("skill admin needs scope admin")));
    assert_eq!(denied[2]["retry_after_ms"], 2000);
    assert_eq!((&denied[3]["held"], &denied[3]["limit"]), (&json!(3), &json!(3)));
    assert_eq!(denied[4]["violations"], json!(["/diff"]));
    let failed = &records[33];
    assert_eq!(
        (&failed["event"], &failed["outcome"], &failed["reason"]),
        (&json!("request"), &json!("error"), &json!("BACKEND_UNAVAILABLE"))
    );
    assert_eq!(failed["backend"], "echo");

    // No message content anywhere, and nothing left behind in memory for finished requests.
    let text = std::fs::read_to_string(&active).unwrap();
    for secret in SECRETS {
        assert!(!text.contains(secret), "'{secret}' leaked into the audit log");
    }
    assert_eq!(audit.inner.requests.len(), 0);
    assert_eq!(audit.inner.tasks.len(), 4);
    let report = verify_files(&[active]);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.start, Some(ChainStart::Genesis));
}

#[tokio::test]
async fn content_is_logged_only_for_configured_skills() {
    let dir = TempDir::new("content");
    let mut config = file_config(&dir, 100 * 1024 * 1024, 10);
    config.include_content_for_skills = vec!["write".into()];
    let (audit, sink) = Audit::start(&config).await.unwrap();
    scripted_run(&audit).await;
    sink.shutdown().await.unwrap();

    let active = dir.path().join("audit.jsonl");
    let records = events(&active);
    let with_content: Vec<_> = records.iter().filter(|r| r.get("content").is_some()).collect();
    assert_eq!(with_content.len(), 1, "{with_content:#?}");
    assert_eq!((&with_content[0]["event"], &with_content[0]["skill"]), (&json!("task.received"), &json!("write")));
    assert_eq!(
        with_content[0]["content"]["parts"],
        json!([{"text": "streamed secret"}, {"data": {"note": "streamed secret"}}])
    );
    let text = std::fs::read_to_string(&active).unwrap();
    for secret in SECRETS.iter().filter(|s| **s != "streamed secret") {
        assert!(!text.contains(secret), "'{secret}' leaked into the audit log");
    }
    assert!(verify_files(&[active]).is_ok());
}

#[tokio::test]
async fn an_abandoned_request_is_recorded_and_forgotten() {
    let dir = TempDir::new("abandoned");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let never = tower::service_fn(|_: CallRequest| std::future::pending::<Result<Response<()>, A2aError>>());
    let mut service = audit.layer().layer(never);
    let (request, _) = request("r-gone", send(Operation::SendMessage, "x", None), ok("alice", "echo", "echo", vec![]));
    let future = service.ready().await.unwrap().call(request);
    assert_eq!(audit.inner.requests.len(), 1);
    drop(future);
    assert_eq!(audit.inner.requests.len(), 0);
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    assert_eq!(records.len(), 1);
    assert_eq!((&records[0]["event"], &records[0]["outcome"]), (&json!("request"), &json!("abandoned")));
}

#[tokio::test]
async fn a_trace_id_extension_wins_over_the_header() {
    let dir = TempDir::new("trace");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let (mut req, _) = request("r1", task_call(Operation::GetTask, "t"), ok("alice", "echo", "echo", vec![]));
    req.headers_mut().insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
    req.extensions_mut().insert(TraceId(Arc::from("0af7651916cd43dd8448eb211c80319c")));
    audit.layer().layer(inner(audit.clone())).oneshot(req).await.unwrap();
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    assert_eq!(records[0]["trace_id"], "0af7651916cd43dd8448eb211c80319c");
}

#[tokio::test]
async fn a_task_ends_with_its_duration_since_the_first_request() {
    let dir = TempDir::new("duration");
    let (audit, sink) = Audit::start(&file_config(&dir, 1 << 20, 10)).await.unwrap();
    let turn1 = vec![obs("t", Some(TaskState::InputRequired))];
    run(&audit, "r1", send(Operation::SendMessage, "one", None), ok("carol", "echo", "echo", turn1)).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let turn2 = vec![obs("t", Some(TaskState::Completed))];
    run(&audit, "r2", send(Operation::SendMessage, "two", Some("t")), ok("carol", "echo", "echo", turn2)).await;
    sink.shutdown().await.unwrap();
    let records = events(&dir.path().join("audit.jsonl"));
    let ended: Vec<_> = records.iter().filter(|r| r["event"] == "task.ended").collect();
    assert_eq!(ended.len(), 1);
    let duration = ended[0]["duration_ms"].as_u64().unwrap();
    assert!((60..5000).contains(&duration), "{duration} ms");
}

/// Not a test: what the layer and the observer add per request on the request path, against the
/// same dummy stack without them, with a real file sink behind — once with the writer running
/// beside the requests, once with it held (no wake-ups, no competition for the CPU).
/// `cargo test --release -p a2a-policies --lib audit::tests::cost -- --ignored --nocapture`
#[tokio::test]
#[ignore]
async fn cost_per_request() {
    const N: usize = 50_000;
    fn requests(prefix: &str) -> Vec<CallRequest> {
        (0..N)
            .map(|i| {
                // Every request completes a task of its own: four records each.
                let task: &'static str = Box::leak(format!("t{prefix}{i}").into_boxed_str());
                let step = ok("alice", "echo", "echo", vec![obs(task, Some(TaskState::Completed))]);
                request(&format!("{prefix}{i}"), send(Operation::SendMessage, "x", None), step).0
            })
            .collect()
    }
    async fn per_request(audit: Option<&Audit>, requests: Vec<CallRequest>) -> f64 {
        let started = Instant::now();
        for request in requests {
            match audit {
                Some(audit) => audit.layer().layer(inner(audit.clone())).oneshot(request).await.unwrap(),
                None => inner_with(None).oneshot(request).await.unwrap(),
            };
        }
        started.elapsed().as_secs_f64() * 1e6 / N as f64
    }
    let dir = TempDir::new("cost");
    let file = FileConfig { path: dir.path().join("audit.jsonl"), max_bytes: 1 << 30, max_files: 10 };
    let mut config = file_config(&dir, 1 << 30, 10);
    config.queue = 1 << 20;

    let baseline = per_request(None, requests("p")).await;
    let (audit, sink) = Audit::start(&config).await.unwrap();
    let started = Instant::now();
    let live = per_request(Some(&audit), requests("a")).await;
    sink.shutdown().await.unwrap();
    let drained = started.elapsed().as_secs_f64() * 1e6 / N as f64;
    assert_eq!(audit.stats().dropped_total, 0);

    let held_file = FileConfig { path: dir.path().join("held.jsonl"), ..file };
    let (open_gate, gate) = std::sync::mpsc::channel();
    let opener: Opener = Box::new(move || {
        Ok(Box::new(Gated {
            inner: FileTarget::open(&held_file, Default::default(), Default::default())?,
            gate: Some(gate),
        }) as Box<dyn Target>)
    });
    let sink = AuditSink::start_with(1 << 20, vec![opener], Default::default(), Default::default()).await.unwrap();
    let held_audit = Audit::new(&AuditConfig::default(), sink.handle());
    let held = per_request(Some(&held_audit), requests("h")).await;
    drop(open_gate);
    sink.shutdown().await.unwrap();

    eprintln!(
        "{N} requests, 4 records each: dummy stack {baseline:.2} us/request; with audit {live:.2} \
         (writer running), {held:.2} (writer held); all written and synced after {drained:.2} us/request"
    );
}
