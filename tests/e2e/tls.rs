//! TLS end to end: the gateway's listeners over TLS (the a2a-sdk client in every binding, ALPN,
//! a certificate rotated on disk, `check`'s errors), client certificates as callers (mutual TLS).
//! Certificates are made per test with the openssl command line, in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_e2e::{Proc, TempFile, config, example_agent, gateway, python_agent, python_client};
use serde_json::{Value, json};

use crate::BIN;

/// A throwaway PKI in a temporary directory (removed on drop).
pub struct Pki {
    dir: PathBuf,
}

/// A certificate and its key, as PEM files.
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = std::env::temp_dir().join(format!("a2a-pki-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("pki dir");
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn openssl(&self, args: &[&str]) {
        let output = Command::new("openssl").args(args).current_dir(&self.dir).output().expect("openssl runs");
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }

    /// A self-signed CA named `name`.
    pub fn ca(&self, name: &str) -> Issued {
        let (cert, key) = (format!("{name}.crt"), format!("{name}.key"));
        self.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &cert,
            "-subj",
            &format!("/CN={name}"),
            "-days",
            "2",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        Issued { cert: self.path(&cert), key: self.path(&key) }
    }

    /// A certificate `name` for `subject` (`/O=Example/CN=x`) with subject alternative names `san`
    /// (`DNS:localhost,IP:127.0.0.1` or `URI:spiffe://…`), issued by `ca`, valid `days` (negative:
    /// expired).
    pub fn leaf(&self, ca: &Issued, name: &str, subject: &str, san: &str, days: i32) -> Issued {
        let (cert, key, csr, ext) =
            (format!("{name}.crt"), format!("{name}.key"), format!("{name}.csr"), format!("{name}.ext"));
        self.openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            subject,
        ]);
        std::fs::write(
            self.path(&ext),
            format!(
                "subjectAltName={san}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n"
            ),
        )
        .unwrap();
        let (ca_cert, ca_key) = (ca.cert.display().to_string(), ca.key.display().to_string());
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_cert,
            "-CAkey",
            &ca_key,
            "-out",
            &cert,
            "-days",
            &days.to_string(),
            "-extfile",
            &ext,
        ]);
        Issued { cert: self.path(&cert), key: self.path(&key) }
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    pub fn server(&self, ca: &Issued, name: &str) -> Issued {
        self.leaf(ca, name, &format!("/CN={name}"), "DNS:localhost,IP:127.0.0.1", 2)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `listeners.tls` section for `server` (and `extra` lines under it, indented 4).
pub fn tls_section(server: &Issued, extra: &str) -> String {
    format!("  tls:\n    cert: {}\n    key: {}\n{extra}", server.cert.display(), server.key.display())
}

/// A gateway config with `tls` under `listeners:` and `extra` top-level YAML.
pub fn tls_config(backends: &[(&str, &str)], tls: &str, extra: &str) -> String {
    config(backends, extra).replacen("  admin: 127.0.0.1:0\n", &format!("  admin: 127.0.0.1:0\n{tls}"), 1)
}

/// A client trusting only `ca` (and presenting `identity` when given), reporting the peer's
/// certificate; `http1` leaves h2 out of its ALPN offer.
pub fn tls_client(ca: &Path, identity: Option<&Issued>, http1: bool) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only([root])
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(30));
    if let Some(identity) = identity {
        let mut pem = std::fs::read(&identity.cert).unwrap();
        pem.extend(std::fs::read(&identity.key).unwrap());
        builder = builder.identity(reqwest::Identity::from_pem(&pem).unwrap());
    }
    if http1 {
        builder = builder.http1_only();
    }
    builder.build().unwrap()
}

/// The served certificate (DER) of a GET of `url`, with its status and JSON body.
pub async fn get_tls(client: &reqwest::Client, url: &str) -> Result<(u16, Vec<u8>, http::Version, Value), String> {
    let response = client.get(url).header("A2A-Version", "1.0").send().await.map_err(|e| error_chain(&e))?;
    let status = response.status().as_u16();
    let version = response.version();
    let peer = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate().map(<[u8]>::to_vec))
        .unwrap_or_default();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    Ok((status, peer, version, body))
}

/// An error with its causes (reqwest's own message hides the TLS reason).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Waits until the gateway's card over `client` lists `skills`.
pub async fn wait_for_skills_tls(client: &reqwest::Client, base: &str, skills: &[&str]) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok((200, _, _, card)) = get_tls(client, &format!("{base}/.well-known/agent-card.json")).await {
            let listed: Vec<&str> =
                card["skills"].as_array().into_iter().flatten().filter_map(|s| s["id"].as_str()).collect();
            if skills.iter().all(|s| listed.contains(s)) {
                return card;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "skills {skills:?} not on the card over TLS");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn sdk(args: &[&str]) {
    let (ok, lines, report) = python_client(args).await;
    assert!(ok, "sdk client {args:?} failed:\n{report}");
    assert!(!lines.is_empty() && lines.iter().all(|l| l["ok"] == true), "{report}");
}

async fn fleet() -> Vec<Proc> {
    vec![
        example_agent(BIN, "echo", &[]).await,
        example_agent(BIN, "clarify", &[]).await,
        example_agent(BIN, "slow", &["--slow-secs", "30"]).await,
    ]
}

fn backends(agents: &[Proc]) -> Vec<(&'static str, &str)> {
    ["echo", "clarify", "slow"].into_iter().zip(agents.iter().map(|a| a.url.as_str())).collect()
}

#[tokio::test]
async fn the_sdk_client_speaks_every_binding_over_https() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let server = pki.server(&ca, "gateway");
    let agents = fleet().await;
    let gw = gateway(BIN, &tls_config(&backends(&agents), &tls_section(&server, ""), "")).await;
    assert!(gw.url.starts_with("https://"), "{}", gw.url);
    let client = tls_client(&ca.cert, None, false);
    let card = wait_for_skills_tls(&client, &gw.url, &["echo", "clarify", "slow"]).await;
    // Every interface on the card is the https URL; gRPC rides the same TLS listener.
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        assert!(interface["url"].as_str().unwrap().starts_with("https://"), "{card}");
    }
    assert!(card["supportedInterfaces"].as_array().unwrap().iter().any(|i| i["protocolBinding"] == "GRPC"), "{card}");

    // ALPN: h2 when offered, HTTP/1.1 otherwise.
    let (_, _, version, _) = get_tls(&client, &format!("{}/.well-known/agent-card.json", gw.url)).await.unwrap();
    assert_eq!(version, http::Version::HTTP_2);
    let http1 = tls_client(&ca.cert, None, true);
    let (_, _, version, _) = get_tls(&http1, &format!("{}/.well-known/agent-card.json", gw.url)).await.unwrap();
    assert_eq!(version, http::Version::HTTP_11);

    let ca_file = ca.cert.display().to_string();
    for binding in ["jsonrpc", "rest", "grpc"] {
        sdk(&[
            "--base",
            &gw.url,
            "--binding",
            binding,
            "--ca",
            &ca_file,
            "--flow",
            "card",
            "--flow",
            "send",
            "--flow",
            "stream",
            "--flow",
            "get",
            "--flow",
            "cancel",
        ])
        .await;
    }
    // The admin listener is on TLS too.
    let admin = gw.admin.clone().expect("admin listener");
    assert!(admin.starts_with("https://"), "{admin}");
    let (status, _, _, body) = get_tls(&client, &format!("{admin}/healthz")).await.unwrap();
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    // A client that does not trust the gateway's CA learns it in the handshake.
    let stranger = tls_client(&pki.ca("stranger").cert, None, false);
    let error = get_tls(&stranger, &format!("{}/.well-known/agent-card.json", gw.url)).await.unwrap_err();
    assert!(error.contains("UnknownIssuer") || error.contains("unknown issuer"), "{error}");
    drop(agents);
}

#[tokio::test]
async fn a_certificate_rotated_on_disk_is_served_on_the_next_connection() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let first = pki.server(&ca, "first");
    // The gateway reads fixed paths; rotation replaces their content.
    let live = Issued { cert: pki.path("live.crt"), key: pki.path("live.key") };
    std::fs::copy(&first.cert, &live.cert).unwrap();
    std::fs::copy(&first.key, &live.key).unwrap();
    let agent = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &tls_config(&[("echo", &agent.url)], &tls_section(&live, ""), "")).await;
    let client = tls_client(&ca.cert, None, false);
    wait_for_skills_tls(&client, &gw.url, &["echo"]).await;
    let card_url = format!("{}/.well-known/agent-card.json", gw.url);
    let (_, before, _, _) = get_tls(&client, &card_url).await.unwrap();
    assert_eq!(before, pem_der(&first.cert));

    // A broken pair (the second key with the first certificate) is refused: the running one stays.
    let second = pki.server(&ca, "second");
    std::fs::copy(&second.key, &live.key).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (_, still, _, _) = get_tls(&client, &card_url).await.expect("the old certificate is still served");
    assert_eq!(still, pem_der(&first.cert));

    // The matching certificate completes the rotation: the next connection gets it, no restart.
    let pid = gw.pid();
    replace(&second.cert, &live.cert);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, now, _, _) = get_tls(&client, &card_url).await.unwrap();
        if now == pem_der(&second.cert) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the rotated certificate was not served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(gw.pid(), pid, "the same process serves it");
    drop(agent);
}

/// Replaces `to` by a copy of `from` in one rename, as deployment tools do.
fn replace(from: &Path, to: &Path) {
    let staged = to.with_extension("staged");
    std::fs::copy(from, &staged).unwrap();
    std::fs::rename(&staged, to).unwrap();
}

fn pem_der(path: &Path) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_file(path).unwrap().to_vec()
}

fn check(yaml: &str) -> (bool, String) {
    let path = std::env::temp_dir().join(format!("a2a-check-{}.yaml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, yaml).unwrap();
    let _cleanup = TempFile(path.clone());
    let output = Command::new(BIN).arg("check").arg(&path).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).to_string() + &String::from_utf8_lossy(&output.stdout),
    )
}

#[test]
fn check_names_unreadable_and_mismatched_tls_files() {
    let pki = Pki::new();
    let ca = pki.ca("ca");
    let server = pki.server(&ca, "gateway");
    let other = pki.server(&ca, "other");
    let backends = [("echo", "http://127.0.0.1:9001")];
    let (ok, text) = check(&tls_config(&backends, &tls_section(&server, ""), ""));
    assert!(ok, "{text}");

    let missing = Issued { cert: server.cert.clone(), key: pki.path("nowhere.key") };
    let (ok, text) = check(&tls_config(&backends, &tls_section(&missing, ""), ""));
    assert!(!ok && text.contains("listeners.tls.key: cannot read") && text.contains("nowhere.key"), "{text}");

    let mismatched = Issued { cert: server.cert.clone(), key: other.key.clone() };
    let (ok, text) = check(&tls_config(&backends, &tls_section(&mismatched, ""), ""));
    assert!(
        !ok && text.contains("listeners.tls.key: the private key in") && text.contains("does not belong"),
        "{text}"
    );

    let swapped = Issued { cert: server.key.clone(), key: server.cert.clone() };
    let (ok, text) = check(&tls_config(&backends, &tls_section(&swapped, ""), ""));
    assert!(!ok && text.contains("listeners.tls.cert:") && text.contains("no certificate"), "{text}");

    // Client CAs that identify no one, and mutual TLS without CAs, are mistakes.
    let cas = format!("    client_ca: [{}]\n", ca.cert.display());
    let (ok, text) = check(&tls_config(&backends, &tls_section(&server, &cas), ""));
    assert!(!ok && text.contains("listeners.tls.client_ca") && text.contains("auth.mtls"), "{text}");
    let (ok, text) = check(&tls_config(&backends, &tls_section(&server, ""), "auth:\n  mtls:\n    mode: required\n"));
    assert!(!ok && text.contains("auth.mtls: needs listeners.tls with client_ca"), "{text}");
}

/// `backends` (name, url, `tls:` flow mapping or "") as gateway config YAML with `extra`.
fn backends_with_tls(backends: &[(&str, &str, String)], extra: &str) -> String {
    let mut yaml = config(&[], extra);
    for (name, url, tls) in backends {
        yaml.push_str(&format!("  - name: {name}\n    url: {url}\n"));
        if !tls.is_empty() {
            yaml.push_str(&format!("    tls: {tls}\n"));
        }
    }
    yaml
}

#[tokio::test]
async fn the_gateway_reaches_sdk_agents_over_https_and_tls_grpc_with_mutual_tls() {
    let pki = Pki::new();
    let agents_ca = pki.ca("agents");
    let gateways_ca = pki.ca("gateways");
    let agent_cert = pki.server(&agents_ca, "agent");
    let gateway_client = pki.leaf(&gateways_ca, "gateway-client", "/CN=a2a-gateway", "DNS:a2a-gateway", 2);
    let (cert, key, client_ca) = (
        agent_cert.cert.display().to_string(),
        agent_cert.key.display().to_string(),
        gateways_ca.cert.display().to_string(),
    );
    let serve_tls = ["--tls-cert", cert.as_str(), "--tls-key", key.as_str(), "--tls-client-ca", client_ca.as_str()];
    let https = python_agent("echo", &serve_tls).await;
    let grpc = python_agent("clarify", &[&serve_tls[..], &["--grpc-only"]].concat()).await;
    assert!(https.url.starts_with("https://") && grpc.url.starts_with("https://"));
    let trust = format!(
        "{{ca: ['{}'], cert: '{}', key: '{}'}}",
        agents_ca.cert.display(),
        gateway_client.cert.display(),
        gateway_client.key.display()
    );
    // Without the gateway's client certificate the agent refuses it; with the platform's roots
    // the agent's certificate is unknown: both stay out of routing, with the reason shown.
    let no_client_cert = format!("{{ca: ['{}']}}", agents_ca.cert.display());
    let gw = a2a_e2e::gateway(
        BIN,
        &backends_with_tls(
            &[
                ("pyecho", &https.url, trust.clone()),
                ("pyclarify", &grpc.url, trust.clone()),
                ("nocert", &https.url, no_client_cert),
                ("platform", &https.url, String::new()),
            ],
            "",
        ),
    )
    .await;
    a2a_e2e::wait_for_skills(&gw.url, &["py-echo", "py-clarify"]).await;
    let root = format!("{}/", gw.url);
    let sent =
        a2a_e2e::rpc(&root, "SendMessage", json!({"message": a2a_e2e::text_message("over tls", Some("py-echo"))}))
            .await;
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(sent["result"]["task"]["artifacts"][0]["parts"][0]["text"], "over tls", "{sent}");
    // The gRPC agent over TLS, from the SDK client in every binding.
    for binding in ["jsonrpc", "rest", "grpc"] {
        sdk(&["--base", &gw.url, "--binding", binding, "--flow", "multiturn", "--clarify-skill", "py-clarify"]).await;
    }
    let admin = gw.admin.clone().unwrap();
    let (_, backends) = a2a_e2e::get_json(&format!("{admin}/admin/v1/backends")).await;
    let text = backends.to_string();
    // (The Python agent drops a gateway without a certificate without saying why; rustls names an
    // unknown issuer.)
    for (name, reason) in [("nocert", "card fetch failed"), ("platform", "invalid peer certificate: UnknownIssuer")] {
        let entry = backends["backends"].as_array().and_then(|list| list.iter().find(|b| b["name"] == name));
        let entry = entry.unwrap_or_else(|| panic!("{name} missing: {text}"));
        assert_eq!(entry["healthy"], false, "{entry}");
        assert!(entry["last_card_error"].as_str().unwrap_or("").contains(reason), "{name}: {entry}");
    }
}

#[test]
fn check_refuses_insecure_skip_verify_without_the_explicit_flag() {
    let tls = "backends:\n  - name: dev\n    url: https://127.0.0.1:9443\n    tls: {insecure_skip_verify: true}\n";
    let (ok, text) = check(tls);
    assert!(
        !ok && text.contains("backends[0].tls.insecure_skip_verify")
            && text.contains("A2A_GATEWAY_ALLOW_INSECURE_TLS=1"),
        "{text}"
    );
    let path = std::env::temp_dir().join(format!("a2a-check-{}.yaml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, tls).unwrap();
    let _cleanup = TempFile(path.clone());
    let output = Command::new(BIN).arg("check").arg(&path).env("A2A_GATEWAY_ALLOW_INSECURE_TLS", "1").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (ok, text) = check("backends:\n  - name: a\n    url: http://127.0.0.1:9\n    tls: {ca: [x.pem]}\n");
    assert!(!ok && text.contains("backends[0].tls: applies to an https:// url"), "{text}");
}

/// The README's TLS example passes `check` once its files exist (made here, beside the file).
#[test]
fn the_readme_tls_example_passes_check() {
    let readme = std::fs::read_to_string(a2a_e2e::repo_root().join("README.md")).unwrap();
    let block = readme.split("<!-- tls-example").nth(1).expect("the marked example");
    let yaml = block.split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("a yaml block");
    let pki = Pki::new();
    let ca = pki.ca("ca");
    std::fs::create_dir_all(pki.path("tls")).unwrap();
    for (name, issued) in [("gateway", pki.server(&ca, "gateway")), ("gateway-client", pki.server(&ca, "client"))] {
        std::fs::copy(&issued.cert, pki.path(&format!("tls/{name}.crt"))).unwrap();
        std::fs::copy(&issued.key, pki.path(&format!("tls/{name}.key"))).unwrap();
    }
    for name in ["callers-ca", "agents-ca"] {
        std::fs::copy(&ca.cert, pki.path(&format!("tls/{name}.crt"))).unwrap();
    }
    let path = pki.path("gateway.yaml");
    std::fs::write(&path, yaml).unwrap();
    let output = Command::new(BIN).arg("check").arg(&path).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
