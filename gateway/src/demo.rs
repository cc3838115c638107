//! `a2a-gateway demo`: the four example agents on ephemeral loopback ports with the gateway in front
//! of them, the admin listener with the status page, and a banner with copy-paste examples (one of
//! them a call the guest token may not make, so the status page has a denial to show).

use std::net::SocketAddr;
use std::time::Duration;

use a2a_example_agents::{AgentKind, AgentOptions};
use a2a_policies::auth::{ApiKeyConfig, ApiKeysConfig, AuthConfig, hash_key};
use a2a_policies::authorize::{Effect, PermissionsConfig, RuleConfig};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{Backend, Config, Health};
use crate::server;

/// The demo's backends: (backend name, agent).
const AGENTS: [(&str, AgentKind); 4] = [
    ("echo", AgentKind::Echo),
    ("review", AgentKind::Review),
    ("clarify", AgentKind::Clarify),
    ("slow", AgentKind::Slow),
];

/// Runs the demo; the admin listener (health, metrics, the status page) on `admin`, by default an
/// ephemeral loopback port.
pub async fn run(listen: SocketAddr, admin: Option<SocketAddr>, stop: CancellationToken) -> anyhow::Result<()> {
    let admin = admin.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0)));
    let mut backends = Vec::new();
    for (name, kind) in AGENTS {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(a2a_example_agents::serve(
            kind,
            listener,
            AgentOptions::default(),
            stop.clone().cancelled_owned(),
        ));
        backends.push(Backend::at(name, url));
    }
    let config = Config {
        public_url: None,
        listeners: crate::config::Listeners { public: listen, admin: Some(admin), ..Default::default() },
        health: Health { interval: Duration::from_secs(5), ..Health::default() },
        routing: Default::default(),
        card: crate::config::CardInfo { name: "A2A Gateway (demo)".into(), ..Default::default() },
        limits: Default::default(),
        streams: Default::default(),
        shutdown: crate::config::Shutdown { unready_delay: Duration::ZERO, drain_timeout: Duration::from_secs(5) },
        auth: Some(demo_auth()),
        permissions: Some(demo_permissions()),
        gateway_identity: None,
        deadlines: Default::default(),
        audit: None,
        telemetry: Default::default(),
        push: None,
        state: Default::default(),
        rate_limit: None,
        concurrency: None,
        validation: None,
        admin: Default::default(),
        base_dir: Default::default(),
        document: None,
        backends,
    };
    config.validate()?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e} (pick another with --listen)"))?;
    let admin = TcpListener::bind(admin)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {admin}: {e} (pick another with --admin)"))?;
    let base = config.public_base(listener.local_addr()?);
    println!("{}", banner(&base, &format!("http://{}", admin.local_addr()?), &config));
    server::run_with_admin(config, listener, Some(admin), None, stop.into()).await
}

/// The demo's bearer token: an API key the demo accepts, printed in the banner.
pub const DEMO_TOKEN: &str = "demo-token";
/// A second key, whose caller may use only the echo skill: the banner's denied call uses it.
pub const GUEST_TOKEN: &str = "guest-token";

fn demo_auth() -> AuthConfig {
    let key = |id: &str, token: &str| ApiKeyConfig {
        id: id.into(),
        hash: hash_key(token).into(),
        caller: id.into(),
        tenant: None,
        scopes: Vec::new(),
        revoked: false,
        free_form: true,
    };
    AuthConfig {
        api_keys: Some(ApiKeysConfig {
            header: "X-API-Key".into(),
            keys: vec![key("demo", DEMO_TOKEN), key("guest", GUEST_TOKEN)],
        }),
        realm: "a2a-gateway-demo".into(),
        max_token_bytes: 8 * 1024,
        jwt: None,
        introspection: None,
        mtls: None,
        per_address: Default::default(),
    }
}

/// The demo caller may use every skill; the guest only echo.
fn demo_permissions() -> PermissionsConfig {
    let rule = |skills: &[&str], callers: Option<&[&str]>| RuleConfig {
        skills: skills.iter().map(|s| s.to_string()).collect(),
        any_scope: None,
        callers: callers.map(|ids| ids.iter().map(|s| s.to_string()).collect()),
        tenants: None,
        issuers: None,
        effect: Effect::Allow,
    };
    PermissionsConfig {
        default: Effect::Deny,
        require_known_skill: false,
        rules: vec![rule(&["*"], Some(&["key:demo"])), rule(&["echo"], None)],
    }
}

fn banner(base: &str, admin: &str, config: &Config) -> String {
    let mut out = format!(
        "a2a-gateway demo\n\n  gateway        {base}\n  gateway card   {base}/.well-known/agent-card.json\n  catalog        {base}/.well-known/ai-catalog.json   (what the caller may use)\n  status page    {admin}/admin/\n  bearer token   {DEMO_TOKEN}   (send 'Authorization: Bearer {DEMO_TOKEN}'; every skill)\n  guest token    {GUEST_TOKEN}  (the echo skill only)\n\n  agents (per-agent endpoint  <-  backend):\n"
    );
    for backend in &config.backends {
        out.push_str(&format!("    {base}/agents/{}/  <-  {}\n", backend.name, backend.url));
    }
    let data = r#"{"diff":"--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn a() {}\n+fn a() { x.unwrap(); }","title":"PR #123","focus":["correctness"]}"#;
    out.push_str(&format!(
        "\n  A streamed task (skill review-pr, chosen by metadata.skillId):\n\n    curl -N {base}/message:stream \\\n      -H 'Authorization: Bearer demo-token' -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \\\n      -d '{{\"message\":{{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[{{\"data\":{data}}}],\"metadata\":{{\"skillId\":\"review-pr\"}}}}}}'\n"
    ));
    out.push_str(&format!(
        "\n  The same over JSON-RPC, to one agent's own endpoint:\n\n    curl -N {base}/agents/review/ \\\n      -H 'Authorization: Bearer demo-token' -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \\\n      -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendStreamingMessage\",\"params\":{{\"message\":{{\"messageId\":\"m-2\",\"role\":\"ROLE_USER\",\"parts\":[{{\"data\":{data}}}]}}}}}}'\n"
    ));
    out.push_str(&format!(
        "\n  A call the guest may not make (403 PERMISSION_DENIED; the status page lists it under denials):\n\n    curl {base}/agents/review/ \\\n      -H 'Authorization: Bearer {GUEST_TOKEN}' -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \\\n      -d '{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"SendMessage\",\"params\":{{\"message\":{{\"messageId\":\"m-3\",\"role\":\"ROLE_USER\",\"parts\":[{{\"text\":\"review this\"}}],\"metadata\":{{\"skillId\":\"review-pr\"}}}}}}}}'\n\n  What the guest may use:\n\n    curl {base}/.well-known/ai-catalog.json -H 'Authorization: Bearer {GUEST_TOKEN}'\n\n  Ctrl-C stops everything.\n"
    ));
    out
}
