//! A keyed GCRA state store with a bound on the number of keys, and the clock the limiters read.
//!
//! governor's own dashmap store grows with every distinct key until someone calls
//! `retain_recent`. This store counts its keys, asks for a sweep every so many new keys, and past
//! its bound puts new keys into one shared overflow bucket rather than growing: memory stays bounded
//! however many callers appear, and a flood of new identities shares one quota instead of getting
//! fresh ones.

use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use governor::clock::Clock;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed, StateStore};

/// The limiters' clock: tokio's, so that tests can pause and advance time; outside a paused runtime
/// it is `std::time::Instant`. (governor's default quanta clock is a little cheaper to read but
/// cannot be paused.)
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    type Instant = std::time::Instant;

    fn now(&self) -> std::time::Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// How full a [`BoundedStore`] is; shared between the store (inside its limiter) and the owner
/// who sweeps it.
#[derive(Debug)]
pub struct Occupancy {
    max_keys: usize,
    keys: AtomicUsize,
    /// Keys asked for that were not tracked yet, since the last sweep.
    new_keys: AtomicUsize,
    sweep_every: usize,
    sweeping: AtomicBool,
    /// When the last sweep ran, in milliseconds since `base`.
    last_sweep_ms: AtomicU64,
    base: Instant,
}

/// While the store is full, how often a sweep may look for callers that have gone idle since.
const FULL_SWEEP_SPACING: Duration = Duration::from_secs(1);

impl Occupancy {
    pub fn keys(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    /// Claims the next sweep when it is due — enough new keys were seen since the last one, or the
    /// store is full and a while has passed — and nobody else is sweeping. The caller must then
    /// sweep and call [`Occupancy::swept`].
    pub fn claim_sweep(&self, now: Instant) -> bool {
        let many_new = self.new_keys.load(Ordering::Relaxed) >= self.sweep_every;
        let full_for_a_while = self.keys() >= self.max_keys
            && self.millis(now) >= self.last_sweep_ms.load(Ordering::Relaxed) + FULL_SWEEP_SPACING.as_millis() as u64;
        (many_new || full_for_a_while) && !self.sweeping.swap(true, Ordering::Acquire)
    }

    pub fn swept(&self, now: Instant) {
        self.last_sweep_ms.store(self.millis(now), Ordering::Relaxed);
        self.sweeping.store(false, Ordering::Release);
    }

    fn millis(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
    }
}

pub struct BoundedStore<K = Arc<str>> {
    map: DashMap<K, InMemoryState, crate::ByOutsiders>,
    overflow: InMemoryState,
    occupancy: Arc<Occupancy>,
}

impl<K: Hash + Eq + Clone> BoundedStore<K> {
    pub fn new(max_keys: usize) -> BoundedStore<K> {
        // Sweeping visits every key: spacing sweeps by a fraction of the bound keeps the amortised
        // cost at a few key visits per new key.
        let sweep_every = (max_keys / 16).clamp(64, 4096);
        let occupancy = Occupancy {
            max_keys,
            keys: AtomicUsize::new(0),
            new_keys: AtomicUsize::new(0),
            sweep_every,
            sweeping: AtomicBool::new(false),
            last_sweep_ms: AtomicU64::new(0),
            base: TokioClock.now(),
        };
        BoundedStore { map: DashMap::default(), overflow: InMemoryState::default(), occupancy: Arc::new(occupancy) }
    }

    pub fn occupancy(&self) -> Arc<Occupancy> {
        self.occupancy.clone()
    }
}

/// The theoretical arrival time held by a state, read without changing it: the closure refuses,
/// so nothing is written, and hands back what it saw.
fn tat(state: &InMemoryState) -> Option<Nanos> {
    state.measure_and_replace(&NotKeyed::NonKey, Err::<((), Nanos), _>).err().flatten()
}

impl<K: Hash + Eq + Clone> StateStore for BoundedStore<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        if let Some(state) = self.map.get(key) {
            return state.measure_and_replace(&NotKeyed::NonKey, f);
        }
        let occupancy = &self.occupancy;
        occupancy.new_keys.fetch_add(1, Ordering::Relaxed);
        if occupancy.keys.load(Ordering::Relaxed) >= occupancy.max_keys {
            return self.overflow.measure_and_replace(&NotKeyed::NonKey, f);
        }
        match self.map.entry(key.clone()) {
            Entry::Occupied(state) => state.get().measure_and_replace(&NotKeyed::NonKey, f),
            Entry::Vacant(slot) => {
                occupancy.keys.fetch_add(1, Ordering::Relaxed);
                slot.insert(InMemoryState::default()).measure_and_replace(&NotKeyed::NonKey, f)
            }
        }
    }
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for BoundedStore<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        self.map.retain(|_, state| tat(state).is_some_and(|tat| tat > drop_below));
        self.occupancy.keys.store(self.map.len(), Ordering::Relaxed);
        self.occupancy.new_keys.store(0, Ordering::Relaxed);
    }

    fn shrink_to_fit(&self) {
        self.map.shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.occupancy.keys()
    }

    fn is_empty(&self) -> bool {
        self.occupancy.keys() == 0
    }
}
