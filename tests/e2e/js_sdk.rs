//! Interop with the official JavaScript SDK, @a2a-js/sdk 1.3.0 (installed by `tests/setup-js.sh`):
//! its client, through the gateway, over JSON-RPC and HTTP+JSON, on the unified endpoint and on one
//! agent's path, `getAgentCard()` included (it must read the card of the address it was given).

use a2a_e2e::{config, example_agent, gateway, repo_root, wait_for_skills};
use serde_json::Value;
use tokio::process::Command;

use crate::BIN;

/// Runs `tests/js/client.mjs BASE BINDING SKILL`; every flow must report ok.
async fn js(base: &str, binding: &str, skill: &str) -> Vec<Value> {
    let dir = repo_root().join("tests/js");
    assert!(dir.join("node_modules/@a2a-js/sdk").exists(), "run `bash tests/setup-js.sh` (tests/run.sh does it)");
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(90),
        Command::new("node")
            .arg("client.mjs")
            .args([base, binding, skill])
            .current_dir(&dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the JS client finishes")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(output.status.success() && lines.len() == 4, "js client {base} {binding}:\n{report}");
    assert!(lines.iter().all(|l| l["ok"] == true), "{report}");
    lines
}

#[tokio::test]
async fn js_sdk_client_uses_the_gateway_in_both_json_bindings() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    // The JS card resolver resolves `.well-known/agent-card.json` against the base as a URL: a base
    // with a path needs its trailing slash.
    let agent = format!("{}/agents/echo/", gw.url);
    for binding in ["jsonrpc", "rest"] {
        let lines = js(&gw.url, binding, "echo").await;
        assert_eq!(lines[0]["detail"]["name"], "A2A Gateway", "{lines:?}");
        let lines = js(&agent, binding, "echo").await;
        // getAgentCard() on an agent's path is that agent's card, not the fleet's.
        assert_eq!(lines[0]["detail"]["name"], "Echo Agent", "{lines:?}");
    }
    drop(echo);
}
