use super::*;
use a2a_core::{Source, TaskState};

fn table(limit: usize) -> Arc<LiveTasks> {
    let config = ConcurrencyConfig { default_max_live_tasks: limit, ..ConcurrencyConfig::default() };
    LiveTasks::new(&config).expect("valid")
}

fn event<'a>(request_id: Option<&'a str>, task_id: &'a str, state: TaskState) -> TaskEvent<'a> {
    TaskEvent {
        caller: None,
        request_id,
        backend: "b",
        skill: None,
        task_id: Some(task_id),
        context_id: None,
        state: Some(state),
        artifact: None,
        source: Source::Response,
        at: std::time::Instant::now(),
    }
}

#[tokio::test]
async fn a_bound_reservation_outlives_its_guard_and_ends_with_the_task() {
    let live = table(5);
    let alice: Arc<str> = Arc::from("alice");
    let guard = live.reserve(&alice, "r1").expect("admitted");
    live.observe(&event(Some("r1"), "t1", TaskState::Working));
    drop(guard);
    assert_eq!(live.live_tasks("alice"), 1);
    live.observe(&event(None, "t1", TaskState::InputRequired));
    assert_eq!(live.live_tasks("alice"), 1, "interrupted tasks are live");
    live.observe(&event(Some("other"), "t1", TaskState::Canceled));
    assert_eq!(live.live_tasks("alice"), 0);
    assert_eq!(live.footprint(), (0, 0, 0), "nothing is left behind");
}

#[tokio::test]
async fn the_same_task_is_leased_once_and_only_for_its_backend() {
    let live = table(5);
    let alice: Arc<str> = Arc::from("alice");
    let _a = live.reserve(&alice, "r1").expect("admitted");
    let _b = live.reserve(&alice, "r2").expect("admitted");
    live.observe(&event(Some("r1"), "t1", TaskState::Working));
    live.observe(&event(Some("r2"), "t1", TaskState::Working));
    assert_eq!(live.live_tasks("alice"), 1);
    let elsewhere = TaskEvent { backend: "other", ..event(None, "t1", TaskState::Completed) };
    live.observe(&elsewhere);
    assert_eq!(live.live_tasks("alice"), 1, "a task of another backend with the same id");
}

#[tokio::test(start_paused = true)]
async fn sweeping_drops_expired_leases_of_callers_who_never_return() {
    let live = table(5);
    for i in 0..100 {
        let caller: Arc<str> = Arc::from(format!("ip:{i}"));
        let request = format!("r{i}");
        let guard = live.reserve(&caller, &request).expect("admitted");
        live.observe(&event(Some(&request), &format!("t{i}"), TaskState::Submitted));
        drop(guard);
    }
    assert_eq!(live.footprint(), (100, 0, 100));
    tokio::time::advance(ConcurrencyConfig::default().lease_ttl).await;
    live.sweep();
    assert_eq!(live.footprint(), (0, 0, 0));
}

#[test]
fn concurrent_reservations_never_overshoot_the_limit() {
    let live = table(5);
    let admitted: Vec<Reservation> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|worker| {
                let live = &live;
                scope.spawn(move || {
                    let alice: Arc<str> = Arc::from("alice");
                    (0..100).filter_map(|i| live.reserve(&alice, &format!("w{worker}-{i}")).ok()).collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|worker| worker.join().expect("joined")).collect()
    });
    assert_eq!(admitted.len(), 5);
    assert_eq!(live.live_tasks("alice"), 5);
    drop(admitted);
    assert_eq!(live.footprint(), (0, 0, 0));
}

#[tokio::test]
async fn a_request_id_cannot_hold_two_reservations() {
    let live = table(5);
    let alice: Arc<str> = Arc::from("alice");
    let first = live.reserve(&alice, "same").expect("admitted");
    assert!(matches!(live.reserve(&alice, "same"), Err(A2aError::Internal)));
    assert_eq!(live.live_tasks("alice"), 1);
    drop(first);
    assert_eq!(live.footprint(), (0, 0, 0));
    let _again = live.reserve(&alice, "same").expect("free once the first is over");
}

#[test]
fn a_zero_lease_ttl_is_refused() {
    let config = ConcurrencyConfig { lease_ttl: Duration::ZERO, ..ConcurrencyConfig::default() };
    assert!(LiveTasks::new(&config).is_err());
}

/// The table's three maps stay deadlock-free only by their lock order (`holders` before an index).
/// Binding, finishing, releasing and sweeping at once from several threads must all finish; a lock
/// taken the other way round somewhere shows as the watchdog's failure (as in the task directory,
/// where such a pair once stopped the whole gateway).
#[test]
fn binding_finishing_and_sweeping_at_once_never_wait_on_each_other() {
    use std::sync::atomic::AtomicBool;
    let live = table(usize::MAX);
    let done = Arc::new(AtomicBool::new(false));
    let (finished, watchdog) = std::sync::mpsc::channel();
    let sweeper = {
        let (live, done) = (live.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                live.sweep();
            }
        })
    };
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let (live, finished) = (live.clone(), finished.clone());
            std::thread::spawn(move || {
                let callers: Vec<Arc<str>> = (0..3).map(|c| Arc::from(format!("c{c}"))).collect();
                for i in 0..5_000 {
                    let (request, task) = (format!("r{worker}-{i}"), format!("t{worker}-{i}"));
                    let guard = live.reserve(&callers[i % callers.len()], &request).expect("no limit");
                    live.observe(&event(Some(&request), &task, TaskState::Working));
                    drop(guard);
                    live.observe(&event(None, &task, TaskState::Completed));
                }
                let _ = finished.send(());
            })
        })
        .collect();
    for _ in 0..workers.len() {
        watchdog.recv_timeout(Duration::from_secs(60)).expect("the workers did not finish: two locks deadlocked");
    }
    done.store(true, Ordering::Relaxed);
    sweeper.join().expect("joined");
    workers.into_iter().for_each(|w| w.join().expect("joined"));
    assert_eq!(live.footprint(), (0, 0, 0));
}

/// Nothing is freed at the release of a slot but its count: callers holding nothing and slots that
/// expired are dropped as later reservations come, without an owner's timer.
#[tokio::test(start_paused = true)]
async fn later_reservations_drop_idle_callers_and_expired_slots_on_their_own() {
    let live = table(5);
    for i in 0..100 {
        let caller: Arc<str> = Arc::from(format!("ip:{i}"));
        let request = format!("r{i}");
        let guard = live.reserve(&caller, &request).expect("admitted");
        if i % 2 == 0 {
            live.observe(&event(Some(&request), &format!("t{i}"), TaskState::Working));
        }
        drop(guard);
    }
    assert_eq!((live.holders.len(), live.by_task.len()), (100, 50), "kept until a sweep is due");
    tokio::time::advance(SWEEP_EVERY).await;
    let _next = live.reserve(&Arc::from("bob"), "r-bob").expect("admitted");
    assert_eq!((live.holders.len(), live.by_task.len()), (51, 50), "the idle callers went, the leases stay");
    tokio::time::advance(ConcurrencyConfig::default().lease_ttl).await;
    let _last = live.reserve(&Arc::from("carol"), "r-carol").expect("admitted");
    // Bob's reservation expired with the leases: only Carol's is left.
    assert_eq!((live.holders.len(), live.by_request.len(), live.by_task.len()), (1, 1, 0), "what expired went");
}

/// A caller at its limit is refused without a walk over every slot while none of its slots can
/// have expired; once one may have, the walk runs and frees it.
#[tokio::test(start_paused = true)]
async fn a_caller_at_its_limit_looks_for_expired_slots_only_once_one_may_have_expired() {
    let live = table(1);
    let alice: Arc<str> = Arc::from("alice");
    let _held = live.reserve(&alice, "r1").expect("admitted");
    live.observe(&event(Some("r1"), "t1", TaskState::Working));
    let purged_before = live.next_purge_at_limit.load(Ordering::Relaxed);
    tokio::time::advance(Duration::from_secs(1)).await;
    for i in 0..10 {
        assert!(matches!(
            live.reserve(&alice, &format!("again{i}")),
            Err(A2aError::TooManyTasks { held: 1, limit: 1 })
        ));
    }
    assert_eq!(
        live.next_purge_at_limit.load(Ordering::Relaxed),
        purged_before,
        "no walk while nothing can have expired"
    );
    tokio::time::advance(ConcurrencyConfig::default().lease_ttl).await;
    let _next = live.reserve(&alice, "r2").expect("the expired lease was found and given back");
    assert_eq!(live.live_tasks("alice"), 1);
}
