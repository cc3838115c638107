//! The status page at `/admin/` in a real headless Chromium (Debian's `chromium`; installed by
//! tests/setup-browser.sh): it renders the fleet from the admin API and shows a backend going down.

use std::path::Path;
use std::time::Duration;

use a2a_e2e::{config, example_agent, repo_root, wait_for_skills};

use crate::BIN;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs headless Chromium on `url` with `output` (what to produce); virtual time lets the page's
/// fetches and a refresh complete first.
async fn chromium(url: &str, output: &[&str]) -> std::process::Output {
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
        ])
        .args(output)
        .arg(url)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), run).await.expect("chromium finished").unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(output.status.success(), "chromium: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// The page's DOM after its scripts ran.
async fn rendered(url: &str) -> String {
    let output = chromium(url, &["--dump-dom"]).await;
    let dom = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(dom.contains("</html>"), "chromium: {}", String::from_utf8_lossy(&output.stderr));
    dom
}

/// A PNG of the page as a 1280x1600 window shows it, written to `path`.
async fn screenshot(url: &str, path: &Path) {
    let _ = std::fs::remove_file(path);
    chromium(url, &["--window-size=1280,1600", "--hide-scrollbars", &format!("--screenshot={}", path.display())]).await;
    let png = std::fs::read(path).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot: {} bytes", png.len());
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

/// The demo starts the admin listener and prints the status page's URL; the walkthrough's denied call,
/// run as printed, shows up in the page's denials.
#[tokio::test]
async fn the_demo_prints_its_status_page_which_lists_the_walkthroughs_denial() {
    let demo = a2a_e2e::start_command("demo", BIN, &["demo", "--listen", "127.0.0.1:0"], "listening").await;
    wait_for_skills(&demo.url, &["echo", "review-pr", "clarify", "slow"]).await;
    let page = format!("{}/admin/", demo.admin.clone().expect("the demo starts the admin listener"));
    let printed =
        demo.banner.iter().find(|line| line.trim_start().starts_with("status page")).expect("a status page line");
    assert!(printed.contains(&page), "{printed} names {page}");

    // The walkthrough's denied call: the lines after its heading, up to the next blank line.
    let heading =
        demo.banner.iter().position(|line| line.contains("A call the guest may not make")).expect("a denied call");
    let command: Vec<&str> = demo.banner[heading + 2..]
        .iter()
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.trim().trim_end_matches('\\'))
        .collect();
    let command = format!("{} -s -o /dev/null -w '%{{http_code}}'", command.join(" "));
    let output = tokio::process::Command::new("sh").args(["-c", &command]).output().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "403", "{command}");

    let dom = rendered(&page).await;
    let denials = &dom[dom.find("id=\"denials\"").expect("the denials table")..];
    assert!(denials.contains("PERMISSION_DENIED") && denials.contains("review-pr"), "{dom}");
    let shot = repo_root().join("target/e2e-logs/status-page-demo.png");
    screenshot(&page, &shot).await;
    println!("screenshot: {}", shot.display());
}
