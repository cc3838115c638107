//! The Redis stores one by one against a real redis-server, each used through two instances as two
//! replicas would: what one writes, the other reads; what one counts, the other counts too.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, Source, TaskEvent, TaskObserver};
use a2a_e2e::RedisServer;
use a2a_gateway::directory::{Sighting, TaskDirectory};
use a2a_gateway::protocol::early_ids::{AgentTask, EarlyIds};
use a2a_gateway::protocol::observe::{TaskFact, TaskState};
use a2a_gateway::state::{OnUnavailable, Redis, RedisConfig};
use a2a_policies::concurrency::{ConcurrencyConfig, LiveTasks, Reservation, Reserving};
use a2a_policies::rate_limit::{Check, QuotaConfig, RateLimitConfig, RateLimits};

fn redis(server: &RedisServer) -> Redis {
    Redis::new(&RedisConfig {
        url: server.url(),
        username: None,
        password: None,
        tls: false,
        key_prefix: format!("t{}:", uuid::Uuid::new_v4().simple()),
        timeout: Duration::from_millis(500),
        on_unavailable: OnUnavailable::FailClosed,
        page_token_secret: None,
    })
    .expect("redis client")
}

/// Two handles on one Redis under one prefix: two replicas.
fn pair(server: &RedisServer) -> (Redis, Redis) {
    let a = redis(server);
    let b = a.clone();
    (a, b)
}

async fn checked(check: Check) -> Result<(), A2aError> {
    match check {
        Check::Now(result) => result,
        Check::Shared(future) => future.await,
    }
}

#[tokio::test]
async fn two_replicas_grant_one_rate_quota_between_them() {
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let config = RateLimitConfig {
        default: QuotaConfig::per_minute(4, 4),
        skills: [("echo".to_owned(), QuotaConfig::per_minute(1, 1))].into(),
        ..RateLimitConfig::default()
    };
    let limits = |redis: Redis| {
        Arc::new(
            RateLimits::new(&config).unwrap().with_shared(a2a_gateway::state::redis_quotas::RedisQuotas::new(redis)),
        )
    };
    let (on_a, on_b) = (limits(a), limits(b));
    let alice: Arc<str> = Arc::from("alice");
    for replica in [&on_a, &on_b, &on_a, &on_b] {
        checked(replica.check_caller_any(&alice)).await.expect("within the quota");
    }
    for replica in [&on_a, &on_b] {
        match checked(replica.check_caller_any(&alice)).await {
            Err(A2aError::RateLimited { retry_after, .. }) => {
                assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_secs(15), "{retry_after:?}");
            }
            other => panic!("the fifth request is over the one shared quota: {other:?}"),
        }
    }
    let bob: Arc<str> = Arc::from("bob");
    checked(on_b.check_caller_any(&bob)).await.expect("another caller has his own quota");
    checked(on_a.check_skill_any(&bob, "echo")).await.expect("one send to echo");
    let refused = checked(on_b.check_skill_any(&bob, "echo")).await;
    assert!(matches!(refused, Err(A2aError::RateLimited { .. })), "the skill's quota is shared too: {refused:?}");
}

fn event<'a>(request_id: Option<&'a str>, task_id: &'a str, state: TaskState) -> TaskEvent<'a> {
    TaskEvent {
        caller: None,
        request_id,
        backend: "echo",
        skill: None,
        task_id: Some(task_id),
        context_id: None,
        state: Some(state),
        artifact: None,
        source: Source::Response,
        at: std::time::Instant::now(),
    }
}

async fn reserve(live: &Arc<LiveTasks>, caller: &Arc<str>, request_id: &str) -> Result<Reservation, A2aError> {
    match live.reserve_any(caller, request_id) {
        Reserving::Now(result) => result,
        Reserving::Shared(future) => future.await,
    }
}

/// Retries a reservation while the other replica's queued writes land (bounded, not timed).
async fn reserve_eventually(live: &Arc<LiveTasks>, caller: &Arc<str>, request_id: &str) -> Reservation {
    for _ in 0..100 {
        if let Ok(reservation) = reserve(live, caller, request_id).await {
            return reservation;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the slot was never freed");
}

#[tokio::test]
async fn two_replicas_hold_one_live_task_limit_between_them() {
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let config = ConcurrencyConfig { default_max_live_tasks: 2, ..ConcurrencyConfig::default() };
    let table = |redis: Redis| {
        let store = a2a_gateway::state::redis_leases::RedisLeases::new(redis, config.lease_ttl);
        LiveTasks::with_store(&config, Some(store)).unwrap()
    };
    let (on_a, on_b) = (table(a), table(b));
    let alice: Arc<str> = Arc::from("alice");

    // A task through A, one through B: both live, leased.
    let first = reserve(&on_a, &alice, "r1").await.expect("first slot");
    on_a.observe(&event(Some("r1"), "t1", TaskState::Working));
    drop(first);
    let second = reserve(&on_b, &alice, "r2").await.expect("second slot");
    on_b.observe(&event(Some("r2"), "t2", TaskState::Working));
    drop(second);
    // Wait for both replicas' binds to land: a third reservation stays refused throughout.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (replica, id) in [(&on_a, "r3"), (&on_b, "r4")] {
        match reserve(replica, &alice, id).await {
            Err(A2aError::TooManyTasks { held: 2, limit: 2 }) => {}
            other => panic!("the limit holds across replicas: {other:?}"),
        }
    }
    // The task leased through A ends as seen through B: the slot is free for either.
    on_b.observe(&event(None, "t1", TaskState::Canceled));
    let third = reserve_eventually(&on_a, &alice, "r5").await;
    // A reservation that ends without a task frees its slot (released through the queue).
    drop(third);
    let _fourth = reserve_eventually(&on_b, &alice, "r6").await;

    // A task ended through one replica before the other bound it is not leased afterwards.
    let bob: Arc<str> = Arc::from("bob");
    let late = reserve(&on_a, &bob, "b1").await.expect("slot");
    on_b.observe(&event(None, "tb", TaskState::Completed));
    tokio::time::sleep(Duration::from_millis(200)).await;
    on_a.observe(&event(Some("b1"), "tb", TaskState::Working));
    drop(late);
    let _one = reserve_eventually(&on_a, &bob, "b2").await;
    let _two = reserve_eventually(&on_b, &bob, "b3").await;
}

#[tokio::test]
async fn early_ids_and_context_skills_written_by_one_replica_are_read_by_the_other() {
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let ttl = Duration::from_secs(60);
    let (ids_a, ids_b) = (
        a2a_gateway::state::redis_early_ids::RedisEarlyIds::new(a.clone(), ttl),
        a2a_gateway::state::redis_early_ids::RedisEarlyIds::new(b.clone(), ttl),
    );
    ids_a.insert("alice", "e1", AgentTask { task_id: "t1".into(), context_id: Some("c1".into()) });
    let mut seen = None;
    for _ in 0..100 {
        seen = ids_b.get("alice", "e1").await.expect("redis answers");
        if seen.is_some() {
            break;
        }
    }
    assert_eq!(seen, Some(AgentTask { task_id: "t1".into(), context_id: Some("c1".into()) }));
    assert_eq!(ids_b.get("mallory", "e1").await.unwrap(), None, "another owner's id is not visible");
    assert!(ids_b.contains("alice", "e1").await.unwrap());
    ids_b.insert("alice", "e2", AgentTask { task_id: "t2".into(), context_id: None });
    ids_a.insert("alice", "e2", AgentTask { task_id: "other".into(), context_id: None });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fresh = a2a_gateway::state::redis_early_ids::RedisEarlyIds::new(b.clone(), ttl);
    assert_eq!(fresh.get("alice", "e2").await.unwrap().map(|t| t.task_id), Some("t2".into()), "first claim wins");

    let (dir_a, dir_b) = (
        a2a_gateway::state::redis_directory::RedisDirectory::new(a, ttl, usize::MAX),
        a2a_gateway::state::redis_directory::RedisDirectory::new(b, ttl, usize::MAX),
    );
    let backend: Arc<str> = Arc::from("lab");
    let owner: Arc<str> = Arc::from("alice");
    let fact = TaskFact {
        task_id: Some("t9".into()),
        context_id: Some("c9".into()),
        state: Some(TaskState::Working),
        artifacts: Vec::new(),
        message: false,
    };
    let skill: Arc<str> = Arc::from("rec-a");
    dir_a.record(&Sighting { backend: &backend, owner: Some(&owner), skill: Some(&skill), fact: &fact });
    let mut context = None;
    for _ in 0..100 {
        context = dir_b.context("c9").await.expect("redis answers");
        if context.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let context = context.expect("the context is shared");
    assert_eq!((context.backend, context.owner), (backend, Some(owner)));
    assert_eq!(context.skill.as_deref(), Some("rec-a"), "a follow-up in the context keeps to its skill");
}

/// A client-chosen context is claimed once across replicas: the first caller to name it through
/// either replica owns it, and another caller naming it through the other replica is told no.
#[tokio::test]
async fn a_context_claimed_through_one_replica_is_that_callers_through_the_other() {
    use a2a_gateway::directory::ContextEntry;
    use a2a_gateway::state::redis_directory::RedisDirectory;
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let ttl = Duration::from_secs(60);
    let (dir_a, dir_b) = (RedisDirectory::new(a, ttl, usize::MAX), RedisDirectory::new(b, ttl, usize::MAX));
    let claim = |owner: &str| ContextEntry { backend: Arc::from("lab"), owner: Some(Arc::from(owner)), skill: None };
    assert!(dir_a.claim_context("my-conversation", claim("alice")).await.unwrap());
    assert!(!dir_b.claim_context("my-conversation", claim("bob")).await.unwrap(), "bob joined alice's context");
    assert!(dir_b.claim_context("my-conversation", claim("alice")).await.unwrap());
    let seen = dir_b.context("my-conversation").await.unwrap().and_then(|c| c.owner);
    assert_eq!(seen.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_backend_ejected_by_one_replica_is_out_for_the_other_until_its_time_is_up() {
    use a2a_gateway::registry::SharedEjections;
    use a2a_gateway::state::redis_ejections::RedisEjections;
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let (on_a, on_b) = (RedisEjections::new(a), RedisEjections::new(b));
    assert_eq!(on_b.ejected_for("lab").await.expect("redis answers"), None);
    on_a.eject("lab", Duration::from_secs(60));
    let mut seen = None;
    for _ in 0..100 {
        seen = on_b.ejected_for("lab").await.expect("redis answers");
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = seen.expect("the other replica sees the ejection");
    assert!(left > Duration::ZERO && left <= Duration::from_secs(60), "{left:?}");
    assert_eq!(on_b.ejected_for("other").await.unwrap(), None, "only that backend");
    // A probe that succeeds anywhere re-admits it everywhere.
    on_b.readmit("lab");
    for _ in 0..100 {
        if on_a.ejected_for("lab").await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the re-admission was never shared");
}

#[tokio::test]
async fn push_configs_written_by_one_replica_are_read_by_the_other_and_delivered_once() {
    use a2a_gateway::push::store::{PushStore, StoreError, StoredConfig};
    use a2a_gateway::state::redis_push::RedisPushStore;
    use a2a_model::TaskPushNotificationConfig;
    let server = RedisServer::start().await;
    let (a, b) = pair(&server);
    let ttl = Duration::from_secs(60);
    let (on_a, on_b) = (RedisPushStore::new(a, ttl), RedisPushStore::new(b, ttl));
    let stored = |id: &str, url: &str| StoredConfig {
        config: TaskPushNotificationConfig {
            id: Some(id.into()),
            task_id: Some("t".into()),
            url: url.into(),
            ..Default::default()
        },
        caller: None,
        backend: Arc::from("lab"),
        dialect: a2a_core::Dialect::V03,
    };
    on_a.put("alice", "t", stored("c1", "https://a.example/1"), 2).await.unwrap();
    on_a.put("alice", "t", stored("c1", "https://a.example/2"), 2).await.unwrap();
    on_a.put("alice", "t", stored("c2", "https://a.example/3"), 2).await.unwrap();
    assert_eq!(on_b.put("alice", "t", stored("c3", "https://a.example/4"), 2).await, Err(StoreError::TooMany(2)));
    on_b.put("bob", "t", stored("c3", "https://b.example/"), 2).await.expect("bob's own count");
    let got = on_b.get("alice", "t", Some("c1")).await.unwrap().expect("shared");
    assert_eq!((got.config.url.as_str(), got.dialect), ("https://a.example/2", a2a_core::Dialect::V03));
    assert_eq!(on_b.list("alice", "t").await.unwrap().len(), 2);
    assert!(on_b.get("mallory", "t", Some("c1")).await.unwrap().is_none(), "another owner's is missing");
    assert!(!on_b.delete("mallory", "t", Some("c1")).await.unwrap());
    assert_eq!(on_a.of_task("t").await.unwrap().len(), 3);
    assert!(on_b.delete("alice", "t", Some("c1")).await.unwrap());
    assert_eq!(on_a.list("alice", "t").await.unwrap().len(), 1);
    // One update is delivered by exactly one of the replicas following the task.
    assert!(on_a.claim_delivery("t", "d1").await.unwrap());
    assert!(!on_b.claim_delivery("t", "d1").await.unwrap());
    assert!(on_b.claim_delivery("t", "d2").await.unwrap());
    // Redis gone: a clear error, no hang.
    drop(server);
    assert!(matches!(on_b.list("alice", "t").await, Err(StoreError::Unavailable(_))));
}
