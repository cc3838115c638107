use super::*;

fn json(record: &Record) -> serde_json::Value {
    let mut out = Vec::new();
    record.write_json(&mut out);
    assert!(!out.contains(&b'\n'));
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn event_records_carry_every_common_field() {
    let common = Common {
        caller: Some("c1".into()),
        binding: Some(Binding::Rest),
        operation: Some(Operation::GetTask),
        ..Common::default()
    };
    let value = json(&Record::event(common, Kind::State { state: TaskState::Working, source: Source::Stream }));
    for key in [
        "ts",
        "event",
        "caller",
        "tenant",
        "request_id",
        "trace_id",
        "skill",
        "backend",
        "task_id",
        "context_id",
        "binding",
        "operation",
    ] {
        assert!(value.get(key).is_some(), "{key} missing in {value}");
    }
    assert_eq!(value["event"], "task.state");
    assert_eq!(value["binding"], "HTTP+JSON");
    assert_eq!(value["operation"], "GetTask");
    assert_eq!(value["state"], "TASK_STATE_WORKING");
    assert_eq!(value["tenant"], serde_json::Value::Null);
    // RFC 3339 with milliseconds, UTC.
    let ts = value["ts"].as_str().unwrap();
    assert_eq!(ts.len(), "2026-12-02T10:21:20.834Z".len(), "{ts}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.');
}

#[test]
fn admin_changes_name_the_admin_and_the_change() {
    let change = AdminChange {
        admin: "key:ops".into(),
        method: "api_key",
        action: "backend.drain",
        target: "echo".into(),
        detail: Some(serde_json::json!({"draining": true})),
    };
    let value = json(&Record::meta(Kind::Admin(Box::new(change))));
    assert_eq!(value["event"], "admin.change");
    assert_eq!(value["admin"], "key:ops");
    assert_eq!(value["admin_auth"], "api_key");
    assert_eq!(value["action"], "backend.drain");
    assert_eq!(value["target"], "echo");
    assert_eq!(value["detail"]["draining"], true);
}

#[test]
fn meta_records_carry_only_their_own_fields() {
    let value = json(&Record::meta(Kind::Dropped { count: 3, cause: "queue_full", first: None, last: None }));
    assert_eq!(
        value,
        serde_json::json!({"ts": value["ts"], "event": "audit.dropped", "count": 3, "cause": "queue_full"})
    );
}

/// The parts as the checked message writes them: compact, so a record stays one line however
/// the caller spread its JSON.
#[test]
fn content_is_the_message_parts_on_one_line() {
    let params = "{\"message\":{\"messageId\":\"m\",\"parts\":[\r\n  {\"text\":\"a\\nb\"}\n]}}";
    let params = serde_json::value::RawValue::from_string(params.into()).unwrap();
    let request = a2a_model::Request::parse(Operation::SendMessage, Some(&params)).unwrap();
    let a2a_model::Request::SendMessage(send) = request else { panic!("a send") };
    let content = Content { parts: serde_json::value::to_raw_value(&send.message.parts).unwrap() };
    let record = Record::event(Common::default(), Kind::Received { content: Some(content) });
    let mut line = Vec::new();
    record.write_json(&mut line);
    assert!(!line.contains(&b'\n'), "{}", String::from_utf8_lossy(&line));
    let value = json(&record);
    assert_eq!(value["content"]["parts"], serde_json::json!([{"text": "a\nb"}]));
}

/// The writer thread copies the common facts it wrote last: a run of records of one call, records
/// of another call between them, and a record without common facts come out byte for byte as a
/// thread that never wrote before writes them, keys in their documented order.
#[test]
fn records_read_the_same_whichever_records_came_before() {
    let common = |caller: &str, task: &str| Common {
        caller: Some(caller.into()),
        task_id: Some(task.into()),
        request_id: Some("r-\u{2028}".into()),
        binding: Some(Binding::JsonRpc),
        operation: Some(Operation::SendMessage),
        ..Common::default()
    };
    let records = vec![
        Record::event(common("alice", "t1"), Kind::State { state: TaskState::Working, source: Source::Stream }),
        Record::event(common("alice", "t1"), Kind::Ended { state: TaskState::Completed, duration: Duration::ZERO }),
        Record::meta(Kind::Seal { reason: "rotate" }),
        Record::event(common("bob", "t2"), Kind::State { state: TaskState::Failed, source: Source::Response }),
        Record::event(common("alice", "t1"), Kind::Received { content: None }),
    ];
    let fresh = |record: Record| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            record.write_json(&mut out);
            out
        })
        .join()
        .unwrap()
    };
    for record in &records {
        let mut out = Vec::new();
        record.write_json(&mut out);
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&fresh(record.clone())));
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("{\"ts\":\"") && text[31..].starts_with("\",\"event\":\""), "{text}");
        assert_eq!(value["ts"].as_str().unwrap().len(), 24, "{value}");
        if record.common.is_some() {
            let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap();
            let order = ["event", "caller", "tenant", "request_id", "trace_id", "skill", "backend", "task_id"];
            assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
            assert!(at("context_id") < at("binding") && at("binding") < at("operation"), "{text}");
            assert_eq!(value["request_id"], "r-\u{2028}");
            assert!(text.contains("r-\\u2028"), "line separators stay escaped");
        }
    }
}
