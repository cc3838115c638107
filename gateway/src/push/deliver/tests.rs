use a2a_core::Dialect;
use serde_json::json;

use super::*;

#[test]
fn backoff_doubles_with_jitter_below_one_base() {
    let base = Duration::from_millis(100);
    for attempt in 1..6 {
        let wait = backoff(base, attempt);
        let floor = base * (1 << (attempt - 1));
        assert!(wait >= floor && wait < floor + base, "attempt {attempt}: {wait:?}");
    }
}

#[test]
fn a_new_state_or_artifact_is_a_new_update() {
    let a = json!({"status": {"state": "TASK_STATE_WORKING", "timestamp": "1"}});
    let b = json!({"status": {"state": "TASK_STATE_WORKING", "timestamp": "1"}, "artifacts": [{}]});
    let c = json!({"status": {"state": "TASK_STATE_COMPLETED", "timestamp": "1"}, "artifacts": [{}]});
    assert_ne!(fingerprint(&a), fingerprint(&b));
    assert_ne!(fingerprint(&b), fingerprint(&c));
    assert_eq!(fingerprint(&c), fingerprint(&c.clone()));
}

#[test]
fn payloads_are_in_the_callers_dialect() {
    let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}});
    let v1: Value = serde_json::from_slice(&payload(Dialect::V1, &task)).unwrap();
    assert_eq!(v1["task"]["id"], "t");
    let v03: Value = serde_json::from_slice(&payload(Dialect::V03, &task)).unwrap();
    assert_eq!(v03["id"], "t");
    assert_eq!(v03["status"]["state"], "completed");
}
