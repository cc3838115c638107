//! Mutated requests through the real gateway: a few thousand requests bent out of valid ones of every
//! binding and dialect — bytes flipped, cut or spliced, JSON values swapped for odd ones, keys dropped
//! or added, versions, media types, paths and methods changed. Each is answered in time, never with a
//! 500, an error always as a JSON body (an event stream's every event JSON), none naming an agent's
//! address or the gateway's code; the gateway logs no panic and serves a plain call afterwards. The
//! same for gRPC calls bent in their frames, media types, deadlines and method names (a gRPC status
//! that is never INTERNAL, or whole uncompressed messages), and for an agent that answers in broken
//! ways (no caller ever gets bytes meant for another). The sequences are fixed (seeded generators),
//! so a failure replays; the message names the request.

use std::time::Duration;

use a2a_e2e::{client, config, example_agent, gateway, rpc, text_message, wait_for_skills};
use serde_json::{Value, json};

use crate::BIN;

/// xorshift64*: the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Clone, Debug)]
struct Call {
    method: String,
    path: String,
    version: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

fn call(method: &str, path: &str, version: Option<&str>, body: Option<Value>) -> Call {
    Call {
        method: method.into(),
        path: path.into(),
        version: version.map(Into::into),
        content_type: body.as_ref().map(|_| "application/json".into()),
        body: body.map(|b| serde_json::to_vec(&b).unwrap()).unwrap_or_default(),
    }
}

fn rpc_body(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn message03(text: &str, skill: &str) -> Value {
    json!({"kind": "message", "messageId": "m-03", "role": "user", "parts": [{"kind": "text", "text": text}],
           "metadata": {"skillId": skill}})
}

/// Valid calls of every binding and dialect, on tasks that exist.
fn seeds(task: &str, early_task: &str) -> Vec<Call> {
    let v1 = Some("1.0");
    let message = text_message("garbage in", Some("echo"));
    let early_send = json!({"id": early_task, "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]},
                             "metadata": {"skillId": "early-echo"}});
    vec![
        call("POST", "/", v1, Some(rpc_body("SendMessage", json!({"message": message})))),
        call("POST", "/agents/echo/", v1, Some(rpc_body("SendStreamingMessage", json!({"message": message})))),
        call("POST", "/", v1, Some(rpc_body("GetTask", json!({"id": task, "historyLength": 2})))),
        call("POST", "/", v1, Some(rpc_body("CancelTask", json!({"id": task})))),
        call("POST", "/", v1, Some(rpc_body("ListTasks", json!({"pageSize": 3})))),
        call(
            "POST",
            "/",
            v1,
            Some(rpc_body(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": "http://127.0.0.1:9/hook", "id": "p1"}),
            )),
        ),
        call("POST", "/", v1, Some(rpc_body("GetExtendedAgentCard", json!({})))),
        call("POST", "/message:send", v1, Some(json!({"message": message}))),
        call("POST", "/message:stream", v1, Some(json!({"message": message}))),
        call("GET", &format!("/tasks/{task}?historyLength=1"), v1, None),
        call("POST", &format!("/tasks/{task}:cancel"), v1, Some(json!({}))),
        call("GET", "/tasks?pageSize=2", v1, None),
        call("POST", "/", None, Some(rpc_body("message/send", json!({"message": message03("x", "echo")})))),
        call("POST", "/", None, Some(rpc_body("message/stream", json!({"message": message03("x", "echo")})))),
        call("POST", "/", None, Some(rpc_body("tasks/get", json!({"id": task})))),
        call("POST", "/v1/message:send", None, Some(json!({"message": message03("x", "echo")}))),
        call("GET", &format!("/v1/tasks/{task}"), None, None),
        call("POST", "/tasks/send", None, Some(early_send.clone())),
        call("POST", "/tasks/sendSubscribe", None, Some(early_send)),
        call("GET", &format!("/tasks/{early_task}"), None, None),
    ]
}

fn odd_value(rng: &mut Rng) -> Value {
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!([deep]);
    }
    let odd = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(2_147_483_648_u64),
        json!(1.5e300),
        json!(""),
        json!("x".repeat(70_000)),
        json!("\u{0}"),
        json!("\u{202e}rtl"),
        json!("../../etc/passwd"),
        json!("http://169.254.169.254/latest/meta-data/"),
        json!([]),
        json!({}),
        deep,
        json!({"kind": "data", "data": {}}),
        json!({"text": 5}),
        json!("TASK_STATE_COMPLETED"),
        json!("ROLE_AGENT"),
        json!([{"text": "a"}, {"data": {"x": 1}}, {"url": "file:///etc/passwd"}, {"raw": "AAAA"}]),
    ];
    rng.pick(&odd).clone()
}

/// A random node of `value` (objects and arrays only), to be bent.
fn random_node<'a>(value: &'a mut Value, rng: &mut Rng) -> &'a mut Value {
    let depth = rng.below(6);
    let mut node = value;
    for _ in 0..depth {
        let len = match &*node {
            Value::Object(map) if !map.is_empty() => map.len(),
            Value::Array(items) if !items.is_empty() => items.len(),
            _ => break,
        };
        let at = rng.below(len);
        let is_container = |v: &Value| matches!(v, Value::Object(_) | Value::Array(_));
        let child_is_container = match &*node {
            Value::Object(map) => map.values().nth(at).is_some_and(is_container),
            Value::Array(items) => is_container(&items[at]),
            _ => false,
        };
        if !child_is_container {
            break;
        }
        node = match node {
            Value::Object(map) => map.values_mut().nth(at).unwrap(),
            Value::Array(items) => &mut items[at],
            _ => unreachable!(),
        };
    }
    node
}

const SPLICES: [&str; 14] = [
    "{",
    "}",
    "]",
    ",",
    "\"",
    "\\u0000",
    "\\ud800",
    "1e999",
    "-",
    "NaN",
    "\"id\":1,\"id\":2",
    "\u{feff}",
    "\n",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

const VERSIONS: [&str; 9] = ["1.0", "0.3", "1.1", "2.0", "", ",", "1.0, 0.3", "abc", "0.2.6"];

const MEDIA_TYPES: [&str; 7] = [
    "application/json",
    "application/a2a+json",
    "APPLICATION/JSON; charset=latin1",
    "text/plain",
    "application/grpc",
    "multipart/form-data; boundary=x",
    "",
];

const SEGMENTS: [&str; 10] = ["%00", "%2F", "..", "x", ":cancel", "%ZZ", "tasks", "agents", "-", "é"];

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

fn mutate(call: &mut Call, rng: &mut Rng) {
    match rng.below(10) {
        0..=2 => {
            let Ok(mut body) = serde_json::from_slice::<Value>(&call.body) else { return };
            let node = random_node(&mut body, rng);
            match node {
                Value::Object(map) if !map.is_empty() && rng.below(3) == 0 => {
                    let key = map.keys().nth(rng.below(map.len())).unwrap().clone();
                    map.remove(&key);
                }
                Value::Object(map) if rng.below(2) == 0 => {
                    let key = rng.pick(&["id", "taskId", "contextId", "kind", "role", "parts", "metadata", "x-odd"]);
                    map.insert((*key).into(), odd_value(rng));
                }
                Value::Object(map) if !map.is_empty() => {
                    let key = map.keys().nth(rng.below(map.len())).unwrap().clone();
                    map.insert(key, odd_value(rng));
                }
                Value::Array(items) if !items.is_empty() => {
                    let at = rng.below(items.len());
                    items[at] = odd_value(rng);
                }
                node => *node = odd_value(rng),
            }
            call.body = serde_json::to_vec(&body).unwrap();
        }
        3 => {
            for _ in 0..=rng.below(4) {
                if !call.body.is_empty() {
                    let at = rng.below(call.body.len());
                    call.body[at] ^= 1 << rng.below(8);
                }
            }
        }
        4 => {
            let at = rng.below(call.body.len() + 1);
            call.body.truncate(at);
        }
        5 => {
            let at = rng.below(call.body.len() + 1);
            let splice = rng.pick(&SPLICES).as_bytes();
            call.body.splice(at..at, splice.iter().copied());
        }
        6 => call.version = (rng.below(4) != 0).then(|| (*rng.pick(&VERSIONS)).into()),
        7 => call.content_type = (rng.below(4) != 0).then(|| (*rng.pick(&MEDIA_TYPES)).into()),
        8 => {
            let segment = rng.pick(&SEGMENTS);
            let (path, query) = call.path.split_once('?').map_or((call.path.as_str(), None), |(p, q)| (p, Some(q)));
            let mut path = match rng.below(3) {
                0 => format!("{path}/{segment}"),
                1 => format!("{}/{segment}", path.rsplit_once('/').map_or("", |(head, _)| head)),
                _ => format!("{path}{segment}"),
            };
            if let Some(query) = query {
                path = format!("{path}?{query}");
            }
            call.path = path;
        }
        _ => call.method = (*rng.pick(&METHODS)).into(),
    }
}

/// Sends `call` and holds its answer to the rules; the status and body, or why it broke one.
async fn check(http: &reqwest::Client, base: &str, call: &Call, secrets: &[String]) -> Result<(u16, String), String> {
    let method = reqwest::Method::from_bytes(call.method.as_bytes()).unwrap();
    let mut request = http.request(method, format!("{base}{}", call.path)).body(call.body.clone());
    if let Some(version) = &call.version {
        request = request.header("A2A-Version", version);
    }
    if let Some(content_type) = &call.content_type {
        request = request.header("Content-Type", content_type);
    }
    let response = request.send().await.map_err(|e| format!("no answer: {e:?}"))?;
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = response.bytes().await.map_err(|e| format!("{status}, the body broke off: {e:?}"))?;
    let text = String::from_utf8_lossy(&body);
    if status == 500 {
        return Err(format!("500: {text}"));
    }
    for secret in secrets {
        if text.contains(secret.as_str()) {
            return Err(format!("{status} names {secret:?}: {text}"));
        }
    }
    if content_type.starts_with("text/event-stream") {
        for data in a2a_e2e::sse_data(&body) {
            serde_json::from_str::<Value>(&data)
                .map_err(|e| format!("{status}, an event that is not JSON ({e}): {data}"))?;
        }
    } else if (status >= 400 || !body.is_empty()) && serde_json::from_slice::<Value>(&body).is_err() {
        return Err(format!("{status} ({content_type}), a body that is not JSON: {text}"));
    }
    Ok((status, text.into_owned()))
}

#[tokio::test]
async fn thousands_of_bent_requests_get_clean_answers_in_time() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let early = example_agent(BIN, "early", &[]).await;
    let yaml = config(&[("echo", &echo.url)], "")
        + &format!("  - name: early\n    url: {}\n    card_path: /.well-known/agent.json\n", early.url);
    let gw = gateway(BIN, &yaml).await;
    wait_for_skills(&gw.url, &["early-clarify", "early-echo", "echo"]).await;
    let root = format!("{}/", gw.url);
    let sent = rpc(&root, "SendMessage", json!({"message": text_message("first", Some("echo"))})).await;
    let task = sent["result"]["task"]["id"].as_str().expect("a task").to_owned();
    let early_task = uuid::Uuid::new_v4().to_string();
    let first_early = json!({"id": early_task, "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]},
                              "metadata": {"skillId": "early-echo"}});
    let made = client().post(format!("{}/tasks/send", gw.url)).json(&first_early).send().await.unwrap();
    assert_eq!(made.status(), 200, "{}", made.text().await.unwrap());

    let seeds = seeds(&task, &early_task);
    // Agents' addresses (with and without the scheme), and what only the gateway's code would say.
    let mut secrets: Vec<String> = [&echo.url, &early.url]
        .iter()
        .flat_map(|url| [url.to_string(), url.trim_start_matches("http://").to_string()])
        .collect();
    secrets.extend(["panicked", "a2a_gateway", "a2a_model", "a2a_core", "src/", "RUST_BACKTRACE"].map(String::from));

    const WORKERS: u64 = 8;
    const PER_WORKER: usize = 300;
    let workers = (0..WORKERS).map(|worker| {
        let (seeds, secrets, base) = (seeds.clone(), secrets.clone(), gw.url.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (worker + 1));
            let mut statuses = Vec::with_capacity(PER_WORKER);
            for i in 0..PER_WORKER {
                let mut call = rng.pick(&seeds).clone();
                for _ in 0..=rng.below(3) {
                    mutate(&mut call, &mut rng);
                }
                match check(&http, &base, &call, &secrets).await {
                    Ok((status, _)) => statuses.push(status),
                    Err(why) => panic!(
                        "worker {worker}, request {i}: {} {} (A2A-Version {:?}, Content-Type {:?}) {}: {why}",
                        call.method,
                        call.path,
                        call.version,
                        call.content_type,
                        String::from_utf8_lossy(&call.body).chars().take(600).collect::<String>()
                    ),
                }
            }
            statuses
        })
    });
    let mut statuses = Vec::new();
    for worker in workers {
        statuses.extend(worker.await.expect("a worker"));
    }
    let ok = statuses.iter().filter(|s| (200..300).contains(*s)).count();
    let refused = statuses.iter().filter(|s| (400..500).contains(*s)).count();
    // Both kinds of answer are many: the bent requests reach past decoding, and are refused there.
    assert!(
        ok * 10 >= statuses.len() && refused * 5 >= statuses.len(),
        "{ok} ok, {refused} refused of {}",
        statuses.len()
    );

    let log = std::fs::read_to_string(&gw.log).unwrap();
    assert!(!log.contains("panicked"), "the gateway panicked:\n{log}");
    let after = rpc(&root, "SendMessage", json!({"message": text_message("still here", Some("echo"))})).await;
    assert_eq!(after["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{after}");
}

/// An agent that answers each call in one of many broken ways (bytes past its answer that look like
/// another answer, a length too short or too long, broken chunks, garbage, an answer to another id,
/// a close before answering, …) chosen by a seeded generator, spoken by hand over TCP so that the
/// framing itself can lie. It names, at most, the marker (`messageId`) of the call it answers — or
/// `SMUGGLED`, in bytes that no reader may take for an answer.
struct ChaosAgent {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ChaosAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const CHAOS_KINDS: usize = 13;

fn http(status: &str, headers: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}\r\n{body}")
}

/// The answer of `kind` to the call with JSON-RPC id `id` and marker `marker`; whether the agent then
/// closes the connection.
fn chaos_answer(kind: usize, id: &Value, marker: &str) -> (Vec<u8>, bool) {
    let task = json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
        "id": format!("t-{marker}"), "contextId": format!("c-{marker}"),
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": marker}]}]}}})
    .to_string();
    let smuggled =
        http("200 OK", "content-length: 60\r\n", &format!("{:<60}", r#"{"jsonrpc":"2.0","id":1,"result":"SMUGGLED"}"#));
    let length = |body: &str| format!("content-length: {}\r\n", body.len());
    let answer = match kind {
        0 => http("200 OK", &length(&task), &task),
        1 => {
            let (a, b) = task.split_at(task.len() / 2);
            http(
                "200 OK",
                "transfer-encoding: chunked\r\n",
                &format!("{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n", a.len(), b.len()),
            )
        }
        2 => http("200 OK", &length(&task), &task) + &smuggled,
        3 => return (http("200 OK", &format!("content-length: {}\r\n", task.len() + 50), &task).into_bytes(), true),
        4 => http("200 OK", &format!("content-length: {}\r\n", task.len() / 2), &task) + "SMUGGLED",
        5 => return (b"HTTP/1.1 2OO OK\r\n\x00\x01SMUGGLED\r\n\r\n".to_vec(), true),
        6 => http("200 OK", "content-length: 8\r\n", "SMUGGLED"),
        7 => {
            let other = task.replacen(&format!("\"id\":{id}"), "\"id\":\"not-yours\"", 1);
            http("200 OK", &length(&other), &other)
        }
        8 => return (Vec::new(), true),
        9 => "HTTP/1.1 100 Continue\r\n\r\n".to_string() + &http("200 OK", &length(&task), &task),
        10 => http("200 OK", &format!("content-length: {}\r\ncontent-length: 3\r\n", task.len()), &task) + "SMUGGLED",
        11 => http("200 OK", "transfer-encoding: chunked\r\n", "zz\r\nSMUGGLED\r\n0\r\n\r\n"),
        _ => {
            let error =
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "at 10.0.0.7:8080 SMUGGLED"}})
                    .to_string();
            http("200 OK", &length(&error), &error)
        }
    };
    (answer.into_bytes(), false)
}

async fn chaos_agent(seed: u64) -> ChaosAgent {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({
        "name": "chaos", "description": "answers in broken ways", "version": "1",
        "supportedInterfaces": [{"url": format!("{url}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chaos", "name": "chaos", "description": "breaks", "tags": []}],
    })
    .to_string();
    let rng = std::sync::Arc::new(std::sync::Mutex::new(Rng(seed)));
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (card, rng) = (card.clone(), rng.clone());
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                loop {
                    // A request: its head, then as many body bytes as it declares.
                    let (head, body) = loop {
                        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                            if buffer.len() >= end + 4 + length {
                                let body = buffer[end + 4..end + 4 + length].to_vec();
                                buffer.drain(..end + 4 + length);
                                break (head, body);
                            }
                        }
                        let mut chunk = [0; 8192];
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let (answer, close) = if head.starts_with("get ") {
                        (http("200 OK", &format!("content-length: {}\r\n", card.len()), &card).into_bytes(), false)
                    } else {
                        let call: Value = serde_json::from_slice(&body).unwrap_or_default();
                        let marker = call["params"]["message"]["messageId"].as_str().unwrap_or("none").to_owned();
                        let kind = rng.lock().unwrap().below(CHAOS_KINDS);
                        chaos_answer(kind, &call["id"], &marker)
                    };
                    if stream.write_all(&answer).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    ChaosAgent { url, task }
}

#[tokio::test]
async fn an_agent_answering_in_broken_ways_never_gives_one_caller_anothers_answer() {
    let agent = chaos_agent(0x5EED_0001).await;
    // No ejection: every call reaches the agent, however often it fails.
    let health = "health: {interval: 200ms, timeout: 1s, unhealthy_after: 100000, ejection_time: 1s}\n";
    let gw = gateway(BIN, &config(&[("chaos", &agent.url)], health)).await;
    wait_for_skills(&gw.url, &["chaos"]).await;
    let secrets =
        [agent.url.clone(), agent.url.trim_start_matches("http://").to_owned(), "10.0.0.7".into(), "SMUGGLED".into()];

    const WORKERS: usize = 8;
    const PER_WORKER: usize = 150;
    let workers = (0..WORKERS).map(|worker| {
        let (base, secrets) = (gw.url.clone(), secrets.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
            let mut statuses = Vec::new();
            for i in 0..PER_WORKER {
                let marker = format!("mark-{worker}-{i}-");
                let mut message = text_message("chaos", Some("chaos"));
                message["messageId"] = json!(marker);
                let call = Call {
                    method: "POST".into(),
                    path: "/".into(),
                    version: Some("1.0".into()),
                    content_type: Some("application/json".into()),
                    body: serde_json::to_vec(&rpc_body("SendMessage", json!({"message": message}))).unwrap(),
                };
                let (status, body) =
                    check(&http, &base, &call, &secrets).await.unwrap_or_else(|why| panic!("{marker}: {why}"));
                // Only its own marker: `mark-<worker>-<i>-` ends with a dash, so no marker is a
                // prefix of another.
                for found in body.match_indices("mark-").map(|(at, _)| &body[at..]) {
                    assert!(found.starts_with(&marker), "{marker} was answered with another call's: {body}");
                }
                let answer: Value = serde_json::from_str(&body).unwrap();
                statuses.push((status, answer.get("result").is_some()));
            }
            statuses
        })
    });
    let mut statuses = Vec::new();
    for worker in workers {
        statuses.extend(worker.await.expect("a worker"));
    }
    // JSON-RPC answers errors with HTTP 200: every call is answered, some with the task, many with
    // the gateway's error for what the agent did.
    assert!(statuses.iter().all(|(status, _)| *status == 200), "{statuses:?}");
    let answered = statuses.iter().filter(|(_, result)| *result).count();
    assert!(
        answered * 10 >= statuses.len() && answered * 10 <= statuses.len() * 6,
        "{answered} of {} answered",
        statuses.len()
    );
    let log = std::fs::read_to_string(&gw.log).unwrap();
    assert!(!log.contains("panicked"), "the gateway panicked:\n{log}");
}

/// A protobuf field: its tag, and the bytes of a length-delimited value or a varint.
fn field(number: u64, value: &[u8]) -> Vec<u8> {
    let mut out = varint(number << 3 | 2);
    out.extend(varint(value.len() as u64));
    out.extend_from_slice(value);
    out
}

fn varint_field(number: u64, value: u64) -> Vec<u8> {
    let mut out = varint(number << 3);
    out.extend(varint(value));
    out
}

fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
    out
}

/// A gRPC message: uncompressed, its length, its bytes.
fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend((message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Valid gRPC calls (method, request message): a send to the echo skill, a get and a cancel of a task
/// that exists, a list.
fn grpc_seeds(task: &str) -> Vec<(&'static str, Vec<u8>)> {
    let skill = field(1, &[field(1, b"skillId"), field(2, &field(3, b"echo"))].concat());
    let message = [field(1, b"m-grpc"), varint_field(4, 1), field(5, &field(1, b"hi")), field(6, &skill)].concat();
    vec![
        ("SendMessage", field(2, &message)),
        ("SendStreamingMessage", field(2, &message)),
        ("GetTask", [field(2, task.as_bytes()), varint_field(3, 1)].concat()),
        ("CancelTask", field(2, task.as_bytes())),
        ("ListTasks", varint_field(4, 3)),
    ]
}

const GRPC_TYPES: [&str; 5] =
    ["application/grpc", "application/grpc+proto", "application/grpc+json", "application/grpc-web", "application/json"];

const GRPC_TIMEOUTS: [&str; 5] = ["1n", "99999999S", "abc", "5m", "0S"];

#[tokio::test]
async fn bent_grpc_calls_get_a_grpc_status_or_well_framed_messages_in_time() {
    let echo = example_agent(BIN, "echo", &[]).await;
    let gw = gateway(BIN, &config(&[("echo", &echo.url)], "")).await;
    wait_for_skills(&gw.url, &["echo"]).await;
    let sent =
        rpc(&format!("{}/", gw.url), "SendMessage", json!({"message": text_message("first", Some("echo"))})).await;
    let task = sent["result"]["task"]["id"].as_str().expect("a task").to_owned();
    let seeds = grpc_seeds(&task);
    let secrets =
        [echo.url.clone(), echo.url.trim_start_matches("http://").to_owned(), "panicked".into(), "src/".into()];
    let http = reqwest::Client::builder().http2_prior_knowledge().timeout(Duration::from_secs(20)).build().unwrap();
    let mut rng = Rng(0x6A09_E667_F3BC_C908);
    let mut codes = std::collections::BTreeMap::new();
    for i in 0..600 {
        let (mut method, message) = rng.pick(&seeds).clone();
        let mut body = grpc_frame(&message);
        let mut content_type = "application/grpc";
        let mut timeout = None;
        for _ in 0..=rng.below(2) {
            match rng.below(8) {
                0 | 1 => {
                    for _ in 0..=rng.below(3) {
                        if body.len() > 5 {
                            let at = 5 + rng.below(body.len() - 5);
                            body[at] ^= 1 << rng.below(8);
                        }
                    }
                }
                2 => body.truncate(rng.below(body.len() + 1)),
                3 if body.len() >= 5 => {
                    let lie = (message.len() as u32).wrapping_add(rng.below(9) as u32).wrapping_sub(4);
                    body[1..5].copy_from_slice(&lie.to_be_bytes());
                }
                4 if !body.is_empty() => body[0] = 1,
                5 => body.extend(grpc_frame(&message)),
                6 => content_type = *rng.pick(&GRPC_TYPES),
                _ => match rng.below(3) {
                    0 => timeout = Some(*rng.pick(&GRPC_TIMEOUTS)),
                    1 => method = "NoSuchMethod",
                    _ => method = "sendmessage",
                },
            }
        }
        let mut request = http
            .post(format!("{}/lf.a2a.v1.A2AService/{method}", gw.url))
            .header("content-type", content_type)
            .header("te", "trailers")
            .body(body.clone());
        if let Some(timeout) = timeout {
            request = request.header("grpc-timeout", timeout);
        }
        let label = format!("call {i}: {method} ({content_type}, grpc-timeout {timeout:?}) {body:02x?}");
        let response = request.send().await.unwrap_or_else(|e| panic!("{label}: no answer: {e:?}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let answer = response.bytes().await.unwrap_or_else(|e| panic!("{label}: the body broke off: {e:?}"));
        let text = String::from_utf8_lossy(&answer);
        let named = format!("{headers:?} {text}");
        for secret in &secrets {
            assert!(!named.contains(secret.as_str()), "{label}: names {secret:?}: {named}");
        }
        let is_grpc =
            headers.get("content-type").is_some_and(|v| v.to_str().unwrap_or("").starts_with("application/grpc"));
        if !is_grpc {
            // Not a gRPC call to the gateway (another media type): its JSON answer.
            assert!(status != 500 && serde_json::from_slice::<Value>(&answer).is_ok(), "{label}: {status} {text}");
            *codes.entry(format!("http {status}")).or_insert(0) += 1;
            continue;
        }
        assert_eq!(status, 200, "{label}: {named}");
        match headers.get("grpc-status").map(|v| v.to_str().unwrap().parse::<u32>().unwrap()) {
            // Trailers-only: a refusal, never the gateway failing inside.
            Some(code) => {
                assert!(code <= 16 && code != 13, "{label}: grpc-status {code}: {named}");
                *codes.entry(format!("grpc {code}")).or_insert(0) += 1;
            }
            // Messages, each whole and uncompressed (the status follows in the trailers).
            None => {
                let mut rest = &answer[..];
                while !rest.is_empty() {
                    assert!(rest.len() >= 5 && rest[0] == 0, "{label}: a broken frame: {answer:02x?}");
                    let length = u32::from_be_bytes(rest[1..5].try_into().unwrap()) as usize;
                    assert!(rest.len() >= 5 + length, "{label}: a frame cut short: {answer:02x?}");
                    rest = &rest[5 + length..];
                }
                *codes.entry("messages".into()).or_insert(0) += 1;
            }
        }
    }
    // Both kinds of answer are many.
    let messages = codes.get("messages").copied().unwrap_or(0);
    assert!((30..=540).contains(&messages), "{codes:?}");
    let log = std::fs::read_to_string(&gw.log).unwrap();
    assert!(!log.contains("panicked"), "the gateway panicked:\n{log}");
}
