//! Keeping a concurrent map within a limit: past it, forget the entries of lowest rank (the least
//! recently seen, say) in one pass, down to nine tenths of the limit so that the next pass is a
//! tenth of it away; and within an age, walked only once an entry may have reached it. Used by the
//! task directory and the maps that live as long as its entries, all made by [`swept_map`].

use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Shards of a map that a sweep walks whole (the task directory and its Redis cache, the early ids).
/// A sweep holds one shard's lock at a time, and a call that records into that shard waits until it
/// lets go: in DashMap's default 4 × CPUs shards (8 on two CPUs) a sweep of a million entries kept
/// one record in 10,000 waiting 3.6-4.7 ms; in this many, ~1k entries a shard, 0.28 ms
/// (`directory-stall`). 128 bytes a shard.
const SWEPT_SHARDS: usize = 1024;

/// An empty map that sweeps walk whole, in `SWEPT_SHARDS` shards.
pub fn swept_map<K: Eq + Hash, V, S: BuildHasher + Clone + Default>() -> DashMap<K, V, S> {
    DashMap::with_hasher_and_shard_amount(S::default(), SWEPT_SHARDS)
}

/// When a map's entries may next outlive their time-to-live. An entry's last sighting only moves
/// forward, so after a walk none expires before the oldest it kept does: until then a sweep need not
/// walk the map again. A walk of a million entries takes a fifth of a second, and on a gateway with
/// one CPU it holds that CPU for whole time slices while calls wait (finding 39).
#[derive(Default)]
pub struct Aging {
    /// When the oldest entry kept by the last walk reaches its time-to-live; `None` before a walk.
    due: Mutex<Option<Instant>>,
}

impl Aging {
    /// Forgets the entries last seen `ttl` or longer ago, by one clock reading for the whole walk (an
    /// entry recorded since reads as just seen), unless none can be that old yet; how many. `walk`
    /// visits every entry with the test of its last sighting, and keeps those it passes.
    pub fn forget_older_than(&self, ttl: Duration, walk: impl FnOnce(&mut dyn FnMut(Instant) -> bool)) -> usize {
        let now = Instant::now();
        // Sweeps of one map do not overlap (one sweeper), so this lock is never waited for.
        let mut due = self.due.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if due.is_some_and(|due| now < due) {
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

/// Past `max` entries, forgets those of lowest `rank` down to nine tenths of `max` (room for a tenth
/// before the next time); how many. One pass to rank, one to forget: entries recorded in between
/// rank above those forgotten (they were seen last), so they stay.
///
/// The cut is found from a sample of at most [`RANKED`] entries spread over the whole map (every
/// entry of a map that small), so a big map is cut near nine tenths rather than at it exactly: a
/// ranking of every entry of a million took a 32 MiB vector, whose allocation and release held the
/// allocator's lock long enough to stall calls recording into the directory by 15-20 ms while the
/// sweep ran; sampled, ~3 ms (`directory-stall`).
pub fn evict_lowest<K, V, S, R>(map: &DashMap<K, V, S>, max: usize, rank: impl Fn(&V) -> R) -> usize
where
    K: Eq + Hash,
    S: BuildHasher + Clone,
    R: Ord + Copy,
{
    let before = map.len();
    if before <= max {
        return 0;
    }
    let step = before.div_ceil(RANKED);
    let mut ranks: Vec<R> = Vec::with_capacity(before.div_ceil(step));
    ranks.extend(map.iter().step_by(step).map(|entry| rank(entry.value())));
    if ranks.is_empty() {
        return 0;
    }
    // At least one entry goes (a sweep that forgot nothing would be asked for again at once).
    let excess = before - (max - max / 10);
    let forget = excess.div_ceil(step).clamp(1, ranks.len());
    let (_, &mut last_forgotten, _) = ranks.select_nth_unstable(forget - 1);
    drop(ranks);
    map.retain(|_, value| rank(value) > last_forgotten);
    before.saturating_sub(map.len())
}

/// How many entries [`evict_lowest`] ranks to find its cut, at most.
const RANKED: usize = 16_384;

#[cfg(test)]
mod tests {
    use super::*;

    /// A map is walked for age only once its oldest kept entry may have reached it: before that, a
    /// sweep reads no entry.
    #[test]
    fn a_map_is_walked_for_age_only_once_an_entry_may_have_reached_it() {
        let ttl = Duration::from_millis(50);
        let map: DashMap<u32, Instant> = (0..100).map(|k| (k, Instant::now())).collect();
        let (aging, read) = (Aging::default(), std::cell::Cell::new(0));
        let sweep = || {
            aging.forget_older_than(ttl, |young| {
                map.retain(|_, at| {
                    read.set(read.get() + 1);
                    young(*at)
                })
            })
        };
        assert_eq!(sweep(), 0);
        assert_eq!(read.get(), 100, "the first sweep walks the map");
        map.insert(100, Instant::now());
        assert_eq!(sweep(), 0);
        assert_eq!(read.get(), 100, "nothing can be old enough yet: no walk");
        std::thread::sleep(ttl);
        map.insert(101, Instant::now());
        assert_eq!(sweep(), 101, "those seen before the pause reached their age");
        assert_eq!(read.get(), 202, "the walk read every entry");
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn within_the_limit_nothing_goes_past_it_the_lowest_ranked_go_down_to_nine_tenths() {
        let map: DashMap<u32, u32> = (0..100).map(|k| (k, k)).collect();
        assert_eq!(evict_lowest(&map, 100, |v| *v), 0);
        assert_eq!(map.len(), 100);
        map.insert(100, 100);
        assert_eq!(evict_lowest(&map, 100, |v| *v), 11);
        assert_eq!(map.len(), 90);
        assert!((0..11).all(|k| !map.contains_key(&k)), "the lowest ranks are forgotten");
        assert!((11..=100).all(|k| map.contains_key(&k)));
    }

    /// A map larger than the sample is cut near nine tenths (the sample's spread is ~0.8k entries
    /// here; the bound is seven times that), and only below the cut.
    #[test]
    fn a_big_map_is_cut_from_a_sample_near_nine_tenths_and_only_its_lowest_go() {
        let map: DashMap<u32, u32> = (0..200_000).map(|k| (k, k)).collect();
        let forgotten = evict_lowest(&map, 100_000, |v| *v);
        assert!((104_500..=115_500).contains(&forgotten), "about 110,000 forgotten, not {forgotten}");
        assert_eq!(map.len(), 200_000 - forgotten);
        let lowest_kept = map.iter().map(|e| *e.value()).min().unwrap();
        assert_eq!(lowest_kept as usize, forgotten, "exactly the lowest ranks are forgotten");
    }
}
