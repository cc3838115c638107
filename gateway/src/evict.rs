//! Forgetting what has aged: a map's entries last seen longer ago than its time-to-live, walked only
//! once an entry may have reached it. Used by the task directory, the early ids and the Redis
//! caches, each on a [`BoundedMap`](crate::bounded_map::BoundedMap) that keeps itself within its
//! limit as entries come.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When a map's entries may next outlive their time-to-live. An entry's last sighting only moves
/// forward, so after a walk none expires before the oldest it kept does: until then a sweep need not
/// walk the map again. A walk of a million entries takes a fifth of a second, and on a gateway with
/// one CPU it holds that CPU for whole time slices while calls wait (finding 39).
pub struct Aging {
    /// When the oldest entry kept by the last walk reaches its time-to-live; `None` before a walk.
    due: Mutex<Option<Instant>>,
    /// When the map was made (empty): before a walk, none of its entries is older.
    born: Instant,
}

impl Default for Aging {
    /// The aging of a map made empty now.
    fn default() -> Aging {
        Aging { due: Mutex::new(None), born: Instant::now() }
    }
}

impl Aging {
    /// Forgets the entries last seen `ttl` or longer ago, by one clock reading for the whole walk (an
    /// entry recorded since reads as just seen), unless none can be that old yet; how many. `walk`
    /// visits every entry with the test of its last sighting, and keeps those it passes.
    pub fn forget_older_than(&self, ttl: Duration, walk: impl FnOnce(&mut dyn FnMut(Instant) -> bool)) -> usize {
        let now = Instant::now();
        // Sweeps of one map do not overlap (one sweeper), so this lock is never waited for.
        let mut due = self.due.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if now < due.unwrap_or(self.born + ttl) {
            return 0;
        }
        let (mut forgotten, mut oldest_kept) = (0, now);
        walk(&mut |at| {
            let keep = now.saturating_duration_since(at) < ttl;
            if keep {
                oldest_kept = oldest_kept.min(at);
            } else {
                forgotten += 1;
            }
            keep
        });
        // Entries recorded during the walk were seen at `now` or later, give or take the moment
        // between a record's clock reading and its write.
        *due = Some(oldest_kept + ttl);
        forgotten
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dashmap::DashMap;

    /// A map is walked for age only once its oldest kept entry may have reached it: before that, a
    /// sweep reads no entry.
    #[test]
    fn a_map_is_walked_for_age_only_once_an_entry_may_have_reached_it() {
        let ttl = Duration::from_millis(50);
        let (aging, read) = (Aging::default(), std::cell::Cell::new(0));
        let map: DashMap<u32, Instant> = (0..100).map(|k| (k, Instant::now())).collect();
        let sweep = || {
            aging.forget_older_than(ttl, |young| {
                map.retain(|_, at| {
                    read.set(read.get() + 1);
                    young(*at)
                })
            })
        };
        assert_eq!(sweep(), 0);
        assert_eq!(read.get(), 0, "nothing can be older than the map: no walk");
        std::thread::sleep(ttl);
        map.insert(100, Instant::now());
        assert_eq!(sweep(), 100, "those seen before the pause reached their age");
        assert_eq!(read.get(), 101, "the walk read every entry");
        map.insert(101, Instant::now());
        assert_eq!(sweep(), 0);
        assert_eq!(read.get(), 101, "nothing can be old enough yet: no walk");
        std::thread::sleep(ttl);
        assert_eq!(sweep(), 2, "both reached their age");
        assert_eq!(read.get(), 103);
        assert!(map.is_empty());
    }
}
