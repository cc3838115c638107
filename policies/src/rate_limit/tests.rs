use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use tower::{Layer, Service, ServiceExt, service_fn};

use super::*;
use a2a_core::CallContext;
use a2a_core::{A2aCall, Binding, Caller, Operation, RouteHint};
use http::Request;

fn caller(id: &str) -> Caller {
    Caller { id: Arc::from(id), ..Caller::anonymous(IpAddr::V4(Ipv4Addr::LOCALHOST)) }
}

fn request(who: &str, operation: Operation, skill: Option<&str>) -> CallRequest {
    let mut context = CallContext::for_test(A2aCall::new(Binding::JsonRpc, operation), "r");
    context.caller = caller(who);
    context.info.set_route(RouteHint {
        backend: Arc::from("backend"),
        skill: skill.map(str::to_owned),
        skills: skill.map(str::to_owned).into_iter().collect(),
    });
    Request::new(Box::new(context))
}

fn layer(config: RateLimitConfig) -> RateLimitLayer {
    RateLimitLayer::new(Arc::new(RateLimits::new(&config).expect("valid config")))
}

/// Sends one request through the layer around a backend that always answers.
async fn send(layer: &RateLimitLayer, request: CallRequest) -> Result<&'static str, A2aError> {
    let backend = service_fn(|_: CallRequest| async { Ok::<_, A2aError>("answered") });
    layer.layer(backend).oneshot(request).await
}

async fn message(layer: &RateLimitLayer, who: &str) -> Result<&'static str, A2aError> {
    send(layer, request(who, Operation::SendMessage, None)).await
}

fn retry_after(result: Result<&'static str, A2aError>) -> Duration {
    match result {
        Err(A2aError::RateLimited { retry_after, .. }) => retry_after,
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

fn only_default(quota: QuotaConfig) -> RateLimitConfig {
    RateLimitConfig { default: quota, ..RateLimitConfig::default() }
}

#[tokio::test(start_paused = true)]
async fn a_burst_over_quota_is_refused_with_the_right_retry_time_and_recovers() {
    let layer = layer(only_default(QuotaConfig::per_second(2, 2)));
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_ok());
    let wait = retry_after(message(&layer, "alice").await);
    // Two per second: one request's worth of quota comes back every 500 ms.
    assert_eq!(wait, Duration::from_millis(500));

    tokio::time::advance(wait - Duration::from_millis(1)).await;
    let almost = retry_after(message(&layer, "alice").await);
    assert_eq!(almost, Duration::from_millis(1), "the retry time counts down with the clock");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(message(&layer, "alice").await, Ok("answered"));

    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(message(&layer, "alice").await.is_ok(), "the full burst is back after a second");
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_err());
}

#[tokio::test(start_paused = true)]
async fn the_refusal_says_what_to_do() {
    let layer = layer(only_default(QuotaConfig::per_minute(1, 1)));
    assert!(message(&layer, "alice").await.is_ok());
    let Err(A2aError::RateLimited { message, retry_after }) = message(&layer, "alice").await else {
        panic!("expected a refusal");
    };
    assert_eq!(retry_after, Duration::from_secs(60));
    assert_eq!(message, "you are over your request rate limit; retry after 60 s");
}

#[tokio::test(start_paused = true)]
async fn two_callers_do_not_share_a_quota() {
    let layer = layer(only_default(QuotaConfig::per_minute(1, 1)));
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_err());
    assert!(message(&layer, "bob").await.is_ok(), "bob has his own quota");
    assert!(message(&layer, "bob").await.is_err());
}

#[tokio::test(start_paused = true)]
async fn a_caller_override_replaces_the_default_quota() {
    let mut config = only_default(QuotaConfig::per_minute(1, 1));
    config.callers.insert("apikey:ci".into(), QuotaConfig::per_minute(5, 5));
    let layer = layer(config);
    for _ in 0..5 {
        assert!(message(&layer, "apikey:ci").await.is_ok());
    }
    assert!(retry_after(message(&layer, "apikey:ci").await) <= Duration::from_secs(12));
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_err(), "others keep the default");
}

#[tokio::test(start_paused = true)]
async fn a_skill_quota_counts_sends_to_that_skill_per_caller() {
    let mut config = only_default(QuotaConfig::per_second(100, 100));
    config.skills.insert("review-pr".into(), QuotaConfig::per_minute(2, 2));
    let layer = layer(config);
    let review = |who| request(who, Operation::SendMessage, Some("review-pr"));
    assert!(send(&layer, review("alice")).await.is_ok());
    assert!(send(&layer, review("alice")).await.is_ok());
    let Err(A2aError::RateLimited { message, retry_after }) = send(&layer, review("alice")).await else {
        panic!("expected the skill quota to refuse");
    };
    assert!(message.contains("'review-pr'"), "{message}");
    assert_eq!(retry_after, Duration::from_secs(30));

    assert!(send(&layer, review("bob")).await.is_ok(), "per caller and skill");
    let echo = request("alice", Operation::SendStreamingMessage, Some("echo"));
    assert!(send(&layer, echo).await.is_ok(), "other skills are not affected");
    let poll = request("alice", Operation::GetTask, Some("review-pr"));
    assert!(send(&layer, poll).await.is_ok(), "polling a task does not count against the skill");
}

#[tokio::test(start_paused = true)]
async fn the_global_ceiling_applies_across_callers() {
    let config = RateLimitConfig {
        global: Some(QuotaConfig::per_second(3, 3)),
        ..only_default(QuotaConfig::per_second(100, 100))
    };
    let layer = layer(config);
    for who in ["a", "b", "c"] {
        assert!(message(&layer, who).await.is_ok());
    }
    let Err(A2aError::RateLimited { message, retry_after }) = super::tests::message(&layer, "d").await else {
        panic!("expected the global ceiling to refuse");
    };
    assert!(message.starts_with("the gateway is over"), "{message}");
    assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_millis(334), "{retry_after:?}");
}

#[tokio::test(start_paused = true)]
async fn a_caller_over_its_own_quota_does_not_use_up_the_global_one() {
    let config =
        RateLimitConfig { global: Some(QuotaConfig::per_minute(3, 3)), ..only_default(QuotaConfig::per_minute(1, 1)) };
    let layer = layer(config);
    assert!(message(&layer, "greedy").await.is_ok());
    for _ in 0..20 {
        assert!(message(&layer, "greedy").await.is_err());
    }
    assert!(message(&layer, "b").await.is_ok());
    assert!(message(&layer, "c").await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn memory_stays_bounded_and_idle_callers_are_evicted() {
    let config = RateLimitConfig { max_tracked_keys: 200, ..only_default(QuotaConfig::per_second(10, 1)) };
    let limits = Arc::new(RateLimits::new(&config).expect("valid"));
    let layer = RateLimitLayer::new(limits.clone());
    let mut refused = 0;
    for i in 0..5_000 {
        refused += usize::from(message(&layer, &format!("ip:10.0.{}.{}", i / 256, i % 256)).await.is_err());
    }
    assert!(limits.tracked_keys() <= 200, "tracked {}", limits.tracked_keys());
    // Past the bound, new callers share one bucket instead of each getting a fresh quota.
    assert!(refused >= 4_000, "refused only {refused}");

    // Once their buckets refill, old callers are indistinguishable from new ones and make room.
    tokio::time::advance(Duration::from_secs(1)).await;
    for i in 0..200 {
        assert!(message(&layer, &format!("new-{i}")).await.is_ok(), "new caller {i} has its own quota");
    }
    for i in 0..200 {
        assert!(message(&layer, &format!("new-{i}")).await.is_err(), "new caller {i} used its own quota");
    }
    assert!(limits.tracked_keys() <= 200, "tracked {}", limits.tracked_keys());

    tokio::time::advance(Duration::from_secs(1)).await;
    limits.sweep();
    assert_eq!(limits.tracked_keys(), 0, "an explicit sweep evicts every idle caller");
}

#[test]
fn the_service_is_generic_over_the_inner_response() {
    fn assert_service<S: Service<CallRequest, Response = u8, Error = A2aError>>(_: &S) {}
    let inner = service_fn(|_: CallRequest| async { Ok::<u8, A2aError>(1) });
    assert_service(&layer(RateLimitConfig::default()).layer(inner));
    let _: Option<Infallible> = None;
}

/// A shared store answering every check with what the test says, recording what it was asked.
struct FakeShared {
    verdict: Verdict,
    asked: std::sync::Mutex<Vec<Vec<SharedCheck>>>,
}

impl SharedQuotas for FakeShared {
    fn check(&self, checks: Vec<SharedCheck>) -> BoxFuture<'static, Result<Verdict, A2aError>> {
        self.asked.lock().unwrap().push(checks);
        let verdict = self.verdict.clone();
        Box::pin(async move { Ok(verdict) })
    }
}

fn shared_layer(config: &RateLimitConfig, verdict: Verdict) -> (RateLimitLayer, Arc<FakeShared>) {
    let store = Arc::new(FakeShared { verdict, asked: Default::default() });
    let limits = RateLimits::new(config).expect("valid").with_shared(store.clone());
    (RateLimitLayer::new(Arc::new(limits)), store)
}

#[tokio::test(start_paused = true)]
async fn a_shared_store_is_asked_for_the_caller_and_global_buckets_in_one_check() {
    let config = RateLimitConfig {
        global: Some(QuotaConfig::per_second(100, 200)),
        skills: [("review".to_owned(), QuotaConfig::per_minute(6, 2))].into(),
        ..only_default(QuotaConfig::per_second(2, 4))
    };
    let (layer, store) = shared_layer(&config, Verdict::Admitted);
    for _ in 0..10 {
        assert!(send(&layer, request("alice", Operation::SendMessage, Some("review"))).await.is_ok());
    }
    let asked = store.asked.lock().unwrap();
    assert_eq!(asked.len(), 20, "the caller's check and the skill's, per request; the in-process buckets are not used");
    assert_eq!(
        asked[0],
        vec![
            SharedCheck { key: "c\nalice".into(), interval: Duration::from_millis(500), burst: 4 },
            SharedCheck { key: "g".into(), interval: Duration::from_millis(10), burst: 200 },
        ]
    );
    assert_eq!(
        asked[1],
        vec![SharedCheck { key: "s\nreview\nalice".into(), interval: Duration::from_secs(10), burst: 2 }]
    );
}

#[tokio::test(start_paused = true)]
async fn a_shared_refusal_names_the_quota_that_refused() {
    let config = RateLimitConfig { global: Some(QuotaConfig::per_second(100, 200)), ..RateLimitConfig::default() };
    let (layer, _) = shared_layer(&config, Verdict::Refused { index: 1, retry_after: Duration::from_millis(300) });
    match message(&layer, "alice").await {
        Err(A2aError::RateLimited { message, retry_after }) => {
            assert_eq!(retry_after, Duration::from_millis(300));
            assert!(message.contains("overall"), "{message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_says_local_leaves_metering_to_this_process() {
    let (layer, _) = shared_layer(&only_default(QuotaConfig::per_second(1, 2)), Verdict::Local);
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_ok());
    assert!(message(&layer, "alice").await.is_err(), "the in-process bucket meters meanwhile");
}
