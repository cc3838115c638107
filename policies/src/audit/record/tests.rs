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

/// A run of records of one call, records of another call between them, and a record without common
/// facts come out byte for byte as a thread that never wrote before writes them (each thread keeps
/// the common facts and the timestamp it wrote last), keys in their documented order.
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

/// Strings are written byte for byte as serde_json writes them, whether or not they need escaping;
/// numbers, `null` and nested values too, keys in the order written.
#[test]
fn entries_are_written_as_serde_json_writes_them() {
    let strings = [
        "",
        "alice",
        "urn:a2a:caller/7f3c-\u{e9}\u{1f600}",
        "say \"hi\"",
        "back\\slash",
        "line\nbreak\ttab\r\u{8}\u{c}",
        "\u{1}\u{1f}",
        "del\u{7f} nel\u{85} ls\u{2028}",
    ];
    for text in strings.into_iter().chain(["0123456\"", "01234567\\", "0123456789abcde\u{1f}", "0123456789abcdef"]) {
        let mut ours = Vec::new();
        push_str(&mut ours, text);
        assert_eq!(String::from_utf8_lossy(&ours), serde_json::to_string(text).unwrap(), "{text:?}");
    }
    // Every byte at every place of a word and of the tail, and next to bytes that borrow.
    for byte in 0..=255u8 {
        for at in 0..19 {
            for filler in [b'a', 0x21, 0xff] {
                let mut text = vec![filler; 19];
                text[at] = byte;
                let expected = text.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
                assert_eq!(needs_escape(&text), expected, "{byte:#x} at {at} among {filler:#x}");
            }
        }
    }
    let mut ours = Vec::new();
    let mut entries = Entries(&mut ours);
    entries.opt_str(key!("none"), None);
    entries.str(key!("quoted"), "a\"b");
    entries.number(key!("big"), u64::MAX);
    entries.number(key!("zero"), 0);
    entries.json(key!("list"), &vec!["x\ny", "z"]);
    let reference = format!(
        ",\"none\":null,\"quoted\":{},\"big\":{},\"zero\":0,\"list\":{}",
        serde_json::to_string("a\"b").unwrap(),
        u64::MAX,
        serde_json::to_string(&["x\ny", "z"]).unwrap()
    );
    assert_eq!(String::from_utf8_lossy(&ours), reference);
}
