//! The cost of each policy layer per request, in µs: every layer of `policies/` wrapped around an
//! inner service that answers at once, driven in-process with a realistic request (a `review-pr`
//! SendMessage with a data part, an authenticated caller, a resolved route). Each layer is measured
//! alone against the bare inner service, and the full policy stack together. Authentication is
//! measured with an HS256 token (verified on every call) and with the benchmark's own RS256 token and
//! JWKS (tests/bench/configs; after the first call, served from the verified-token cache, as in the
//! benchmark's full stack).
//!
//! With `--threads N` each layer (and the stack without the audit log, whose writer is one task
//! of the main thread) is also driven from N threads at once, each with its own runtime, sharing
//! the layer's state as the gateway's workers do: a cost that grows with N is state the threads
//! contend for (a lock, a counter, a cache line every call writes).
//!
//! Run: `cargo run --release -p a2a-bench --bin policy-cost [-- --iterations 200000] [--threads 2]`

#[allow(dead_code)]
#[path = "../procs.rs"]
mod procs;

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::{
    A2aCall, A2aError, AuthMethod, Binding, CallContext, CallRequest, Caller, Checked, Operation, RequestInfo,
    RouteHint,
};
use a2a_policies::audit::{Audit, AuditConfig};
use a2a_policies::auth::{AuthConfig, AuthLayer, Authenticator, hash_key};
use a2a_policies::authorize::{AuthorizeLayer, Permissions, PermissionsConfig};
use a2a_policies::concurrency::{ConcurrencyConfig, ConcurrencyLayer, LiveTasks};
use a2a_policies::rate_limit::{RateLimitConfig, RateLimitLayer, RateLimits};
use a2a_policies::validate::{InputValidation, SkillCatalog, SkillSpec, ValidateLayer, ValidationConfig};
use http::{Request, Response};
use serde_json::{Value, json};
use tower::{Layer, Service, ServiceExt};

const SECRET: &str = "policy-cost-hs256-secret-0123456789";
const ISSUER: &str = "https://idp.bench/";

/// The benchmark's full-stack token (RS256, kid bench-1) and the JWKS with its key.
const BENCH_TOKEN: &str = include_str!("../../configs/full-stack.token");
const BENCH_JWKS: &str = include_str!("../../configs/jwks.json");

/// The gateway's allocator (`gateway/src/main.rs`): the audit writer frees on its thread what the
/// calls allocated on theirs, which glibc's allocator serializes on an arena lock.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Serves [`BENCH_JWKS`] on loopback from a thread of its own (the main thread blocks while other
/// threads measure), as the bench backend serves it to the gateway; its URL.
fn serve_bench_jwks() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let jwks = || async { ([(http::header::CONTENT_TYPE, "application/json")], BENCH_JWKS) };
            let _ = axum::serve(listener, axum::Router::new().route("/jwks.json", axum::routing::get(jwks))).await;
        });
    });
    url
}

/// Answers every request at once: what remains is the layer's own cost.
#[derive(Clone)]
struct Immediate;

impl Service<CallRequest> for Immediate {
    type Response = Response<String>;
    type Error = A2aError;
    type Future = std::future::Ready<Result<Response<String>, A2aError>>;
    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), A2aError>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: CallRequest) -> Self::Future {
        std::future::ready(Ok(Response::new(String::new())))
    }
}

struct Catalog(Arc<SkillSpec>);

impl SkillCatalog for Catalog {
    fn skill(&self, _backend: &str, _skill: &str) -> Option<Arc<SkillSpec>> {
        Some(self.0.clone())
    }
}

fn review_schema() -> Value {
    json!({"type": "object", "required": ["diff"], "additionalProperties": false, "properties": {
        "diff": {"type": "string", "minLength": 1, "maxLength": 1000000},
        "title": {"type": "string", "maxLength": 300},
        "focus": {"type": "array", "uniqueItems": true, "items": {"enum": ["security", "correctness", "performance", "style"]}},
        "language": {"type": "string"}}})
}

/// The decoded send: the checked model, as the decoder hands it on.
fn body() -> Checked {
    let message = json!({"messageId": "m-1", "role": "ROLE_USER", "metadata": {"skillId": "review-pr"},
        "parts": [{"data": {"diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn a() {}\n+fn a() { x.unwrap(); }", "title": "PR 1", "focus": ["correctness"]}}]});
    let params = serde_json::value::RawValue::from_string(json!({"message": message}).to_string()).unwrap();
    let request = a2a_model::Request::parse(Operation::SendMessage, Some(&params)).unwrap();
    Checked { request, early: None }
}

/// A fresh request as the gateway hands it to the policies (one per call: ids are per request).
fn request(checked: &Checked, authorization: Option<&str>, n: u64) -> CallRequest {
    let mut call = A2aCall::new(Binding::JsonRpc, Operation::SendMessage);
    call.skill_id = Some("review-pr".into());
    let info = RequestInfo::new(format!("req-{n}"));
    let caller = Caller {
        id: Arc::from("jwt:https://idp.bench/|alice"),
        tenant: None,
        scopes: Arc::from(vec!["agents".to_string()]),
        auth: AuthMethod::Jwt { issuer: Arc::from(ISSUER) },
    };
    info.set_caller(caller.clone());
    let route =
        RouteHint { backend: Arc::from("review"), skill: Some("review-pr".into()), skills: vec!["review-pr".into()] };
    info.set_route(route);
    let mut context = CallContext::new(call, checked.clone(), info, None);
    context.caller = caller;
    let mut request = Request::post("/").body(Box::new(context)).unwrap();
    if let Some(authorization) = authorization {
        request.headers_mut().insert("authorization", authorization.parse().unwrap());
    }
    request
}

async fn time<S, B>(service: S, iterations: u64, authorization: Option<&str>) -> Duration
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError> + Clone,
{
    time_from(service, 0, iterations, authorization).await
}

/// [`time`], with request ids counted from `first` (ids must not repeat while in flight: the
/// concurrency layer refuses a second request under one id).
async fn time_from<S, B>(service: S, first: u64, iterations: u64, authorization: Option<&str>) -> Duration
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError> + Clone,
{
    let body = body();
    // Warm up caches (JWT verification, compiled schemas) before timing.
    for n in 0..1000 {
        let _ = service.clone().oneshot(request(&body, authorization, first + n)).await;
    }
    let mut refused = 0u64;
    let started = Instant::now();
    for n in 0..iterations {
        let answer = service.clone().oneshot(request(&body, authorization, first + 1000 + n)).await;
        if let Err(error) = black_box(answer) {
            refused += 1;
            if refused == 1 {
                eprintln!("refused: {error}");
            }
        }
    }
    let elapsed = started.elapsed();
    // A layer that refuses measures its refusal, not its pass: such a number would be meaningless.
    assert_eq!(refused, 0, "requests were refused");
    elapsed
}

/// CPU time (user + system) of the audit log's writer thread so far, in µs (clock ticks of 10 ms: a
/// row of 100 000 records keeps that to a few percent). A thread's own figures are in
/// `/proc/self/task/<tid>/stat`; `/proc/<tid>/stat` sums the whole process.
fn audit_writer_cpu_micros(ticks: u64) -> u64 {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    let writer = tasks
        .filter_map(Result::ok)
        .find(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|c| "a2a-audit-writer".starts_with(c.trim()))
        })
        .expect("the audit writer thread (its name cut to 15 bytes in comm)");
    let stat = std::fs::read_to_string(writer.path().join("stat")).expect("the writer's stat");
    let (user, system) = procs::stat_cpu_split(&stat, ticks);
    user + system
}

fn per_request(total: Duration, iterations: u64) -> f64 {
    total.as_secs_f64() * 1e6 / iterations as f64
}

/// Prints a layer's cost from one thread and from `threads` at once, each baseline taken off.
struct Contended {
    threads: usize,
    iterations: u64,
    /// The bare inner service's µs per request from one thread and from `threads`.
    base: (f64, f64),
}

impl Contended {
    fn row<S, B>(&self, name: &str, service: S, authorization: Option<&str>)
    where
        S: Service<CallRequest, Response = Response<B>, Error = A2aError> + Clone + Send + 'static,
        S::Future: Send,
    {
        let one = per_request_on_threads(service.clone(), 1, self.iterations, authorization) - self.base.0;
        let many = per_request_on_threads(service, self.threads, self.iterations, authorization) - self.base.1;
        println!("{name:<44} {one:>10.2} {many:>10.2}");
    }
}

/// µs per request on each of `threads` threads driving `service` at once (the mean of their
/// times), every thread with its own current-thread runtime, as a gateway worker.
fn per_request_on_threads<S, B>(service: S, threads: usize, iterations: u64, authorization: Option<&str>) -> f64
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
{
    let start = Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads as u64)
        .map(|thread| {
            let (service, start, authorization) = (service.clone(), start.clone(), authorization.map(str::to_owned));
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                start.wait();
                let first = thread * (iterations + 1000);
                runtime.block_on(time_from(service, first, iterations, authorization.as_deref()))
            })
        })
        .collect();
    let total: Duration = handles.into_iter().map(|h| h.join().unwrap()).sum();
    per_request(total / threads as u32, iterations)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Infallible> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let iterations: u64 =
        std::env::args().skip_while(|a| a != "--iterations").nth(1).and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let threads: usize =
        std::env::args().skip_while(|a| a != "--threads").nth(1).and_then(|n| n.parse().ok()).unwrap_or(1);
    let stop = tokio_util::sync::CancellationToken::new();
    let http = reqwest::Client::new();

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": ISSUER, "aud": "gw", "sub": "alice", "scope": "agents", "iat": now, "exp": now + 3600});
    let jwt = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap();
    let bearer_jwt = format!("Bearer {jwt}");
    let hs256: AuthConfig = serde_json::from_value(
        json!({"jwt": {"issuers": [{"issuer": ISSUER, "audiences": ["gw"], "hs256_secret": SECRET}]}}),
    )
    .unwrap();
    let api_key = "a2a_bench_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let keys: AuthConfig = serde_json::from_value(
        json!({"api_keys": {"keys": [{"id": "bench", "hash": hash_key(api_key), "caller": "bench"}]}}),
    )
    .unwrap();
    let bearer_key = format!("Bearer {api_key}");
    let permissions: PermissionsConfig =
        serde_json::from_value(json!({"default": "deny", "rules": [{"skills": ["echo"], "any_scope": ["echo"]}, {"skills": ["*"], "any_scope": ["agents"]}]})).unwrap();
    let quotas: RateLimitConfig =
        serde_json::from_value(json!({"default": {"per_second": 100000000, "burst": 100000000}})).unwrap();
    let concurrency: ConcurrencyConfig = serde_json::from_value(json!({"default_max_live_tasks": 100000000})).unwrap();
    let validation: ValidationConfig = serde_json::from_value(json!({})).unwrap();
    let spec = Arc::new(SkillSpec {
        version: 1,
        input_schema: Some(Arc::new(review_schema())),
        input_modes: vec!["application/json".into()],
    });
    let dir = std::env::temp_dir().join(format!("a2a-policy-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A queue that holds every record of a row: none is dropped, so the writer's time is all of theirs.
    let audit_config: AuditConfig =
        serde_json::from_value(json!({"file": {"path": dir.join("audit.jsonl")}, "queue": iterations + 10_000}))
            .unwrap();

    let rs256: AuthConfig = serde_json::from_value(json!({"jwt": {"issuers": [{"issuer": ISSUER,
        "audiences": ["a2a-gateway"], "jwks_url": serve_bench_jwks(), "algorithms": ["RS256"]}]}}))
    .unwrap();
    let bearer_rs256 = format!("Bearer {}", BENCH_TOKEN.trim());
    let rs256_auth = Arc::new(Authenticator::new(&rs256, http.clone(), &stop).unwrap());
    assert!(rs256_auth.refresh_jwks().await, "the bench JWKS is served");
    let jwt_auth = Arc::new(Authenticator::new(&hs256, http.clone(), &stop).unwrap());
    let key_auth = Arc::new(Authenticator::new(&keys, http.clone(), &stop).unwrap());
    let permissions = Arc::new(Permissions::new(&permissions).unwrap());
    let limits = Arc::new(RateLimits::new(&quotas).unwrap());
    let live = LiveTasks::new(&concurrency).unwrap();
    let validate = Arc::new(InputValidation::new(&validation, &dir, Arc::new(Catalog(spec))).unwrap());
    let (audit, sink) = Audit::start(&audit_config).await.unwrap();
    let (jwt_auth_shared, permissions_shared, limits_shared, live_shared, validate_shared) =
        (jwt_auth.clone(), permissions.clone(), limits.clone(), live.clone(), validate.clone());

    let baseline = per_request(time(Immediate, iterations, None).await, iterations);
    println!(
        "policy cost per request (µs, {iterations} requests each, inner service answers at once; baseline {baseline:.2} µs)"
    );
    println!("{:<44} {:>10}", "layer", "µs");
    let audit_writer;
    let rows: Vec<(&str, f64)> = vec![
        (
            "authenticate: HS256 JWT",
            per_request(
                time(AuthLayer::new(jwt_auth.clone()).layer(Immediate), iterations, Some(&bearer_jwt)).await,
                iterations,
            ),
        ),
        (
            "authenticate: RS256 JWT (verified-token cache)",
            per_request(
                time(AuthLayer::new(rs256_auth.clone()).layer(Immediate), iterations, Some(&bearer_rs256)).await,
                iterations,
            ),
        ),
        (
            "authenticate: API key (salted SHA-256)",
            per_request(
                time(AuthLayer::new(key_auth).layer(Immediate), iterations, Some(&bearer_key)).await,
                iterations,
            ),
        ),
        (
            "authorize: skill permissions",
            per_request(
                time(AuthorizeLayer::new(permissions.clone()).layer(Immediate), iterations, None).await,
                iterations,
            ),
        ),
        (
            "rate limit: caller + global GCRA",
            per_request(time(RateLimitLayer::new(limits.clone()).layer(Immediate), iterations, None).await, iterations),
        ),
        (
            "concurrency: live-task reservation",
            per_request(time(ConcurrencyLayer::new(live.clone()).layer(Immediate), iterations, None).await, iterations),
        ),
        (
            "validate: review-pr inputSchema + limits",
            per_request(
                time(ValidateLayer::new(validate.clone()).layer(Immediate), iterations, None).await,
                iterations,
            ),
        ),
        ("audit: request record to a file", {
            let ticks = procs::clock_ticks();
            let writer_before = audit_writer_cpu_micros(ticks);
            let cost = per_request(time(audit.layer().layer(Immediate), iterations, None).await, iterations);
            let _ = sink.flush().await;
            audit_writer = (audit_writer_cpu_micros(ticks) - writer_before) as f64 / (iterations + 1000) as f64;
            cost
        }),
    ];
    for (name, cost) in &rows {
        println!("{name:<44} {:>10.2}", cost - baseline);
    }
    // The audit chain is sequential (each record's seal covers the one before), so one thread writes
    // every worker's records: its time per record bounds the records per second of the whole gateway.
    println!(
        "{:<44} {:>10.2}   (one thread for all workers: at most {:.0}k records/s)",
        "audit: the writer thread, per record",
        audit_writer,
        1e3 / audit_writer
    );
    let full = tower::ServiceBuilder::new()
        .layer(audit.layer())
        .layer(AuthLayer::new(jwt_auth))
        .layer(AuthorizeLayer::new(permissions))
        .layer(RateLimitLayer::new(limits))
        .layer(ConcurrencyLayer::new(live))
        .layer(ValidateLayer::new(validate))
        .service(Immediate);
    let full = per_request(time(full, iterations, Some(&bearer_jwt)).await, iterations);
    println!("{:<44} {:>10.2}", "full policy stack (HS256)", full - baseline);
    if threads > 1 {
        let base = (
            per_request_on_threads(Immediate, 1, iterations, None),
            per_request_on_threads(Immediate, threads, iterations, None),
        );
        println!("\nthe same from 1 and from {threads} threads at once (µs per request on each, baseline taken off)");
        println!("{:<44} {:>10} {:>10}", "layer", "1", threads);
        let jwt = Some(bearer_jwt.as_str());
        let contended = Contended { threads, iterations, base };
        contended.row("authenticate: HS256 JWT", AuthLayer::new(jwt_auth_shared.clone()).layer(Immediate), jwt);
        contended.row(
            "authenticate: RS256 JWT (verified-token cache)",
            AuthLayer::new(rs256_auth.clone()).layer(Immediate),
            Some(&bearer_rs256),
        );
        contended.row(
            "authorize: skill permissions",
            AuthorizeLayer::new(permissions_shared.clone()).layer(Immediate),
            None,
        );
        contended.row(
            "rate limit: caller + global GCRA",
            RateLimitLayer::new(limits_shared.clone()).layer(Immediate),
            None,
        );
        contended.row(
            "concurrency: live-task reservation",
            ConcurrencyLayer::new(live_shared.clone()).layer(Immediate),
            None,
        );
        contended.row(
            "validate: review-pr inputSchema + limits",
            ValidateLayer::new(validate_shared.clone()).layer(Immediate),
            None,
        );
        let stack = tower::ServiceBuilder::new()
            .layer(AuthLayer::new(jwt_auth_shared))
            .layer(AuthorizeLayer::new(permissions_shared))
            .layer(RateLimitLayer::new(limits_shared))
            .layer(ConcurrencyLayer::new(live_shared))
            .layer(ValidateLayer::new(validate_shared))
            .service(Immediate);
        contended.row("policy stack without the audit log", stack, jwt);
    }
    let _ = sink.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    stop.cancel();
    Ok(())
}
