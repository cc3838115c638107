//! The status page at `/admin/` in a real headless Chromium (Debian's `chromium`; installed by
//! tests/setup-browser.sh): it renders the fleet from the admin API and shows a backend going down.

use std::path::Path;
use std::time::Duration;

use a2a_e2e::{config, example_agent, wait_for_skills};

use crate::BIN;

const CHROMIUM: &str = "/usr/bin/chromium";

/// The page's DOM after its scripts ran (virtual time lets the fetches and a refresh complete).
async fn rendered(url: &str) -> String {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the status page test needs Debian's chromium (run tests/setup-browser.sh)"
    );
    let profile = std::env::temp_dir().join(format!("a2a-chromium-{}", uuid::Uuid::new_v4().simple()));
    let run = tokio::process::Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
            "--virtual-time-budget=8000",
            "--dump-dom",
            url,
        ])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), run).await.expect("chromium finished").unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success() && dom.contains("</html>"),
        "chromium: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    dom
}

#[tokio::test]
async fn the_status_page_shows_the_fleet_and_a_backend_going_down() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let mut review = example_agent(BIN, "review", &[]).await;
    let gw = a2a_e2e::gateway(BIN, &config(&[("echo", &echo.url), ("review", &review.url)], "")).await;
    wait_for_skills(&gw.url, &["echo", "review-pr"]).await;
    let page = format!("{}/admin/", gw.admin.clone().unwrap());

    let dom = rendered(&page).await;
    assert!(dom.contains(r#"data-backend="echo" data-health="healthy""#), "{dom}");
    assert!(dom.contains(r#"data-backend="review" data-health="healthy""#), "{dom}");
    assert!(dom.contains("review-pr") && dom.contains("updated "), "the page rendered skills and its refresh: {dom}");

    review.kill().await;
    // Failed health checks take its skills out of the routing table.
    wait_for_skills(&gw.url, &["echo"]).await;
    let dom = rendered(&page).await;
    assert!(dom.contains(r#"data-backend="review" data-health="unhealthy""#), "{dom}");
    assert!(dom.contains(r#"data-backend="echo" data-health="healthy""#), "{dom}");
}
