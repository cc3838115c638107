//! Over 400 lines on purpose: the one harness every e2e test imports, a flat list of helpers; kept
//! whole while branches in flight add to it (a split is a follow-up once they have merged).
//!
//! Harness for the end-to-end tests: starts real processes — the gateway binary, example agents,
//! a2a-sdk Python agents — on ephemeral loopback ports, talks HTTP to them, and stops every child
//! it started when its handle drops.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a started process may take to say it is listening.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The repository root (the harness crate sits in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// Where children's stderr goes, one file each, for reading after a failure.
fn log_dir() -> PathBuf {
    let dir = repo_root().join("target").join("e2e-logs");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A child process, killed (and reaped) when dropped.
pub struct Proc {
    child: Child,
    /// The base URL the process said it listens on, without a trailing slash.
    pub url: String,
    /// The admin listener's base URL, when the process printed `admin <url>` before it was ready.
    pub admin: Option<String>,
    /// What the process printed on stdout before it was ready (e.g. the demo's banner).
    pub banner: Vec<String>,
    pub log: PathBuf,
    _files: Vec<TempFile>,
}

impl Proc {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The process's log once it holds every one of `lines` (waiting up to 10 s: a process may
    /// log an event after its peer has already seen the effect, e.g. a refused handshake), or as it
    /// is then.
    pub async fn log_with(&self, lines: &[&str]) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if lines.iter().all(|line| log.contains(line)) || std::time::Instant::now() > deadline {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends a signal (e.g. `SIGTERM`, `SIGHUP`) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid().expect("process is running");
        let status = std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -{signal} {pid}");
    }

    /// Waits for the process to exit by itself; its exit code.
    pub async fn wait(&mut self, timeout: Duration) -> Option<i32> {
        let status = tokio::time::timeout(timeout, self.child.wait()).await.expect("process exits in time");
        status.ok().and_then(|s| s.code())
    }

    /// Stops the process now and waits for it to exit.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// The port of [`Proc::url`].
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("url has a port")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        // Reap it so no zombie outlives the test.
        let _ = self.child.try_wait();
    }
}

/// A file removed on drop.
pub struct TempFile(pub PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Starts `program args…` and waits for the stdout line `<marker> <url>`.
async fn start(
    name: &str,
    program: &Path,
    args: &[String],
    marker: &str,
    files: Vec<TempFile>,
) -> anyhow::Result<Proc> {
    start_with_env(name, program, args, &[], marker, files).await
}

/// [`start`] with `env` added to the inherited environment.
async fn start_with_env(
    name: &str,
    program: &Path,
    args: &[String],
    env: &[(&str, &str)],
    marker: &str,
    files: Vec<TempFile>,
) -> anyhow::Result<Proc> {
    let log = log_dir().join(format!("{name}-{}.log", uuid::Uuid::new_v4().simple()));
    let stderr = std::fs::File::create(&log)?;
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + START_TIMEOUT;
    let mut admin = None;
    let mut banner = Vec::new();
    let url = loop {
        let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
            .await
            .map_err(|_| anyhow!("{name} did not start within {START_TIMEOUT:?}; see {}", log.display()))??;
        match line {
            Some(line) => {
                if let Some(url) = line.strip_prefix(marker).map(str::trim) {
                    break url.trim_end_matches('/').to_string();
                }
                if let Some(url) = line.strip_prefix("admin ") {
                    admin = Some(url.trim().trim_end_matches('/').to_string());
                }
                banner.push(line);
            }
            None => bail!("{name} exited before it was ready; see {}", log.display()),
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Proc { child, url, admin, banner, log, _files: files })
}

/// Starts any command that prints `<marker> <url>` on stdout when it is ready.
pub async fn start_command(name: &str, program: &str, args: &[&str], marker: &str) -> Proc {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    start(name, Path::new(program), &args, marker, Vec::new()).await.expect("command starts")
}

/// Starts `a2a-gateway example-agent <kind>` on an ephemeral port. The binary has that command
/// because this crate depends on the gateway with its `demo` feature (tests/Cargo.toml).
pub async fn example_agent(bin: &str, kind: &str, extra: &[&str]) -> Proc {
    let mut args = vec!["example-agent".to_string(), kind.to_string()];
    if !extra.contains(&"--listen") {
        args.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    start(&format!("agent-{kind}"), Path::new(bin), &args, "listening", Vec::new()).await.expect("example agent starts")
}

/// Starts `a2a-gateway serve` with `yaml` (its public listener should be `127.0.0.1:0`).
pub async fn gateway(bin: &str, yaml: &str) -> Proc {
    let path = std::env::temp_dir().join(format!("a2a-gw-{}.yaml", uuid::Uuid::new_v4().simple()));
    gateway_with_file(bin, yaml, path).await
}

/// Starts `a2a-gateway serve` with `yaml` written to `path` (which the test may rewrite to reload).
pub async fn gateway_with_file(bin: &str, yaml: &str, path: PathBuf) -> Proc {
    std::fs::write(&path, yaml).expect("write config");
    let args = vec!["serve".to_string(), "--config".into(), path.display().to_string()];
    start("gateway", Path::new(bin), &args, "listening", vec![TempFile(path)]).await.expect("gateway starts")
}

/// Starts `a2a-gateway serve` with `yaml` and `env` added to its environment.
pub async fn gateway_with_env(bin: &str, yaml: &str, env: &[(&str, &str)]) -> Proc {
    let path = std::env::temp_dir().join(format!("a2a-gw-{}.yaml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, yaml).expect("write config");
    let args = vec!["serve".to_string(), "--config".into(), path.display().to_string()];
    start_with_env("gateway", Path::new(bin), &args, env, "listening", vec![TempFile(path)])
        .await
        .expect("gateway starts")
}

/// A gateway config for `backends` (name, url) with the public listener on an ephemeral port, fast
/// health checks (unless `extra` has its own `health:`), and `extra` YAML at the top level.
pub fn config(backends: &[(&str, &str)], extra: &str) -> String {
    let mut yaml = String::from("listeners:\n  public: 127.0.0.1:0\n  admin: 127.0.0.1:0\n");
    if !extra.contains("health:") {
        yaml.push_str("health:\n  interval: 200ms\n  timeout: 1s\n  unhealthy_after: 2\n");
    }
    yaml.push_str(extra);
    yaml.push_str("backends:\n");
    for (name, url) in backends {
        yaml.push_str(&format!("  - name: {name}\n    url: {url}\n"));
    }
    yaml
}

/// The Python interpreter of the test virtualenv made by `tests/setup-python.sh`.
pub fn python() -> PathBuf {
    let python = repo_root().join("tests/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash tests/setup-python.sh` (tests/run.sh does it for you)",
        python.display()
    );
    python
}

/// Starts `tests/python/sdk_agent.py --kind <kind>` (an a2a-sdk agent) on an ephemeral port.
pub async fn python_agent(kind: &str, extra: &[&str]) -> Proc {
    let script = repo_root().join("tests/python/sdk_agent.py");
    let mut args = vec![script.display().to_string(), "--port".into(), "0".into(), "--kind".into(), kind.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    start(&format!("py-{kind}"), &python(), &args, "READY", Vec::new()).await.expect("python agent starts")
}

/// Runs `tests/python/sdk_client.py` with `args`; returns (success, stdout lines as JSON).
pub async fn python_client(args: &[&str]) -> (bool, Vec<Value>, String) {
    let script = repo_root().join("tests/python/sdk_client.py");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(python()).arg(script).args(args).stdin(Stdio::null()).kill_on_drop(true).output(),
    )
    .await
    .expect("sdk client finishes within 120 s")
    .expect("sdk client runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let lines = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let report = format!("stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    (output.status.success(), lines, report)
}

/// A client whose connections come from `source` (any 127.x address works on loopback): a
/// different caller for a gateway that knows callers by address.
/// Built once per source, without idle pooling, for the same reason as [`client`]: bursts of
/// callers must reach the gateway as bursts, not spread out by client construction.
pub fn client_from(source: std::net::IpAddr) -> reqwest::Client {
    static CLIENTS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, reqwest::Client>>,
    > = std::sync::OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    let mut clients = clients.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    clients
        .entry(source)
        .or_insert_with(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .no_proxy()
                .local_address(source)
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client")
        })
        .clone()
}

pub fn client() -> reqwest::Client {
    // Built once: building one loads the TLS roots, which on a loaded CI machine took long enough
    // (on the test's one runtime thread) for 70 concurrent callers' connections to sit idle past the
    // gateway's header-read timeout. No idle connection is pooled, so every request still gets a
    // fresh connection, as it did with a client per call.
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // reqwest is built without a TLS provider; it wants one chosen even for plain HTTP.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client")
        })
        .clone()
}

/// GETs `url` and parses JSON.
pub async fn get_json(url: &str) -> (u16, Value) {
    let response = client().get(url).header("A2A-Version", "1.0").send().await.expect("GET");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A JSON-RPC 1.0 call; returns the whole response object.
pub async fn rpc(url: &str, method: &str, params: Value) -> Value {
    rpc_as(None, url, method, params).await.1
}

/// A JSON-RPC 1.0 call with `Authorization: Bearer <token>`; returns the HTTP status and the answer.
pub async fn rpc_as(token: Option<&str>, url: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": "t-1", "method": method, "params": params});
    let mut request = client().post(url).header("A2A-Version", "1.0").json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON-RPC answer is JSON"))
}

/// POSTs JSON to `url` (HTTP+JSON binding); returns status and JSON body.
pub async fn rest_post(url: &str, body: Value) -> (u16, Value) {
    let response = client().post(url).header("A2A-Version", "1.0").json(&body).send().await.expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A user message with one text part, optionally with a skill, task and context.
pub fn text_message(text: &str, skill: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(skill) = skill {
        message["metadata"] = json!({"skillId": skill});
    }
    message
}

/// Opens a stream (POST `body` to `url`) and returns every event's data, parsed, until the stream ends.
pub async fn stream_events(url: &str, body: Value) -> Vec<Value> {
    stream_events_as(None, url, body).await
}

/// [`stream_events`] with `Authorization: Bearer <token>`.
pub async fn stream_events_as(token: Option<&str>, url: &str, body: Value) -> Vec<Value> {
    let mut request = client().post(url).header("A2A-Version", "1.0").header("Accept", "text/event-stream").json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("stream request");
    let bytes = response.bytes().await.expect("stream body");
    sse_data(&bytes).iter().map(|d| serde_json::from_str(d).expect("event data is JSON")).collect()
}

/// The `data` of each event in an SSE byte stream.
pub fn sse_data(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> =
                event.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim_start()).collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

/// Polls the gateway card until its skill ids are exactly `skills` (in any order).
pub async fn wait_for_skills(gateway: &str, skills: &[&str]) -> Value {
    let mut want: Vec<&str> = skills.to_vec();
    want.sort_unstable();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, card) = get_json(&format!("{gateway}/.well-known/agent-card.json")).await;
        let mut have: Vec<&str> =
            card["skills"].as_array().map(|s| s.iter().filter_map(|s| s["id"].as_str()).collect()).unwrap_or_default();
        have.sort_unstable();
        if have == want {
            return card;
        }
        assert!(Instant::now() < deadline, "gateway card skills {have:?}, expected {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads a byte stream until `needle` has arrived (or panics after `timeout`), returning all bytes read.
pub async fn read_until<S>(stream: &mut S, buffer: &mut Vec<u8>, needle: &[u8], timeout: Duration)
where
    S: futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    let deadline = Instant::now() + timeout;
    while !buffer.windows(needle.len()).any(|w| w == needle) {
        let next = tokio::time::timeout_at(deadline.into(), stream.next())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {:?}", String::from_utf8_lossy(needle)));
        match next {
            Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
            Some(Err(e)) => panic!("stream failed: {e}"),
            None => panic!("stream ended before {:?}", String::from_utf8_lossy(needle)),
        }
    }
}

/// The raw response body of a wire capture in `tests/fixtures/wire-samples` (exactly the bytes the
/// reference SDK sent, CRLFs included).
pub fn capture_body(name: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/wire-samples").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = String::from_utf8_lossy(&bytes);
    let marker = "===== RESPONSE BODY: ";
    let at = text.find(marker).expect("body marker");
    let rest = &text[at + marker.len()..];
    let len: usize = rest.split(' ').next().and_then(|n| n.parse().ok()).expect("body length");
    let start = at + marker.len() + rest.find('\n').expect("marker line ends") + 1;
    bytes[start..start + len].to_vec()
}

/// Splits an SSE byte stream after each blank line (CRLF or LF framing), keeping every byte.
pub fn split_events(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        let end = if stream[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if stream[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        };
        match end {
            Some(end) => {
                events.push(stream[start..end].to_vec());
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if start < stream.len() {
        events.push(stream[start..].to_vec());
    }
    events
}

/// An HS256 JWT carrying `claims`, signed with `secret` (a development issuer's shared secret).
pub fn hs256_token(secret: &str, claims: &Value) -> String {
    let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).expect("HMAC key");
    jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), claims, &key).expect("sign")
}

/// Verifies `token` with the key of its `kid` in the JWKS document `jwks`; returns its claims.
pub fn verify_with_jwks(token: &str, jwks: &Value, audience: &str) -> Value {
    let header = jsonwebtoken::decode_header(token).expect("JWT header");
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_value(jwks.clone()).expect("a JWKS document");
    let jwk = set.find(header.kid.as_deref().expect("kid")).expect("the token's key is in the JWKS");
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).expect("usable key");
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&[audience]);
    jsonwebtoken::decode::<Value>(token, &key, &validation).expect("valid signature and claims").claims
}

/// A JWT-shaped ES256 token naming `issuer` and `kid`, with a meaningless signature: what an
/// attacker can make without any key.
pub fn unsigned_jwt(issuer: &str, kid: &str) -> String {
    use base64::Engine;
    let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let header = b64(json!({"alg": "ES256", "typ": "JWT", "kid": kid}));
    let payload = b64(json!({"iss": issuer, "aud": "a2a-gateway", "sub": "x", "exp": 4_000_000_000u64}));
    format!("{header}.{payload}.c2ln")
}

/// A real `redis-server` on a free loopback port with its own empty data directory, killed (and
/// its directory removed) on drop. `tests/setup-redis.sh` installs Debian's `redis-server`.
pub struct RedisServer {
    child: Option<std::process::Child>,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one; panics with what to do when `redis-server` is not installed.
    pub async fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port();
        let dir = std::env::temp_dir().join(format!("a2a-redis-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("redis data dir");
        let mut server = RedisServer { child: None, port, dir };
        server.resume().await;
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (as a crash would: SIGKILL); [`RedisServer::resume`] starts it again.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server (again) on the same port and waits until it answers.
    pub async fn resume(&mut self) {
        let log = std::fs::File::create(self.dir.join("redis.log")).expect("redis log");
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): run tests/setup-redis.sh (apt-get install -y redis-server)")
            });
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await {
                use tokio::io::AsyncWriteExt;
                let mut reply = [0u8; 7];
                if stream.write_all(b"PING\r\n").await.is_ok()
                    && tokio::io::AsyncReadExt::read_exact(&mut stream, &mut reply).await.is_ok()
                    && &reply == b"+PONG\r\n"
                {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not answer on port {}", self.port);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
