//! The command line: `check` validates configs, `demo` runs the gateway with the example agents.

use std::process::Command;

use a2a_e2e::{TempFile, rpc_as, text_message, wait_for_skills};
use serde_json::json;

use crate::BIN;

pub fn check(yaml: &str) -> (bool, String) {
    let path = std::env::temp_dir().join(format!("a2a-check-{}.yaml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, yaml).unwrap();
    let _cleanup = TempFile(path.clone());
    let output = Command::new(BIN).arg("check").arg(&path).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

#[test]
fn check_accepts_a_good_config_and_names_the_bad_key() {
    let (ok, text) = check("backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n");
    assert!(ok, "{text}");
    let (ok, text) =
        check("backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n  - name: two\n    url: not a url\n");
    assert!(!ok);
    assert!(text.contains("backends[1].url"), "{text}");
    let (ok, text) = check("health:\n  interval: often\nbackends:\n  - {name: a, url: 'http://h:1'}\n");
    assert!(!ok);
    assert!(text.contains("health.interval"), "{text}");
    let (ok, text) = check("backends:\n  - name: a\n    url: http://h:1\n    secret: x\n");
    assert!(!ok);
    assert!(text.contains("backends[0]") && text.contains("secret"), "{text}");
    let (ok, text) = check("backends:\n  - name: a\n    url: 'http://${A2A_TEST_SURELY_UNSET}:1'\n");
    assert!(!ok);
    assert!(text.contains("backends[0].url") && text.contains("A2A_TEST_SURELY_UNSET"), "{text}");
}

#[tokio::test]
async fn demo_runs_the_example_agents_behind_the_gateway() {
    let args = ["demo", "--listen", "127.0.0.1:0"];
    let demo = a2a_e2e::start_command("demo", BIN, &args, "listening").await;
    wait_for_skills(&demo.url, &["echo", "review-pr", "clarify", "slow"]).await;
    let mut message = text_message("x", Some("review-pr"));
    message["parts"] = json!([{"data": {"diff": "+x.unwrap()", "title": "PR 9"}}]);
    // The demo asks for its bearer token.
    let (status, refused) =
        rpc_as(None, &format!("{}/", demo.url), "SendMessage", json!({"message": message.clone()})).await;
    assert_eq!(status, 401, "{refused}");
    let stream = format!("{}/message:stream", demo.url);
    let events = a2a_e2e::stream_events_as(Some("demo-token"), &stream, json!({"message": message})).await;
    let states: Vec<&str> = events.iter().filter_map(|e| e["statusUpdate"]["status"]["state"].as_str()).collect();
    assert_eq!(states, ["TASK_STATE_WORKING"; 3].iter().copied().chain(["TASK_STATE_COMPLETED"]).collect::<Vec<_>>());
    assert!(
        events.iter().any(|e| e["artifactUpdate"]["artifact"]["parts"][0]["data"]["findings"].is_array()),
        "{events:?}"
    );
    let echo = format!("{}/agents/echo/", demo.url);
    let (_, answer) =
        rpc_as(Some("demo-token"), &echo, "SendMessage", json!({"message": text_message("hi", None)})).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
}

#[test]
fn the_example_configs_in_deploy_pass_check() {
    let root = a2a_e2e::repo_root().join("deploy");
    for file in ["gateway.example.yaml", "compose-gateway.yaml"] {
        let output = Command::new(BIN)
            .arg("check")
            .arg(root.join(file))
            .env("A2A_GATEWAY_PUBLIC_URL", "https://agents.example.com")
            .env("A2A_API_KEY_HASH", "sha256$70825babdad230428a947bd57070a507$1c8a5024e69cefbe20061d584bb05797879b47ad509b3b00c21e45641c562738")
            .output()
            .unwrap();
        assert!(output.status.success(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
    }
}
