//! A concurrent map keyed by ids that outsiders choose (task and context ids), in shards, where each
//! shard keeps within its share of a limit by itself: the insert that takes a shard past its share
//! forgets that shard's oldest entry, in the order entries came, sparing those seen again since
//! (once) and those that ask to be spared while others can go.
//!
//! Why: a map-wide eviction that ranks every entry reads ten entries for every one it forgets (it
//! forgets a tenth), out of cache for the task directory's million, in one walk of ~0.4 s on a
//! thread of its own for every 100k new tasks: ~2.6 µs per new task on a ~25 µs call once the
//! directory stayed full, and on one CPU calls held up for milliseconds (`directory-stall`). Ranking
//! shard by shard reads as many entries per one forgotten, and holds up the insert that does it
//! (~60 µs for a tenth of a thousand-entry shard). Here each shard keeps its entries' arrival order
//! (CLOCK, the second-chance approximation of least recently used), so forgetting an entry reads
//! about one, what comes up at the front of the queue, and each insert past the limit forgets one.
//!
//! Keys spread evenly over the shards (a keyed hash), so the shares add up to the limit; what goes
//! is chosen shard by shard, exactly in arrival order when the map is small enough to be one shard.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use hashbrown::HashTable;

use crate::hashing::ByOutsiders;

/// Which entries stay while others can go.
pub trait Spared {
    /// Whether the entry is passed over while entries that are not spared can be forgotten instead
    /// (a live task, while finished ones can go). None is, unless its type says so.
    fn spared(&self) -> bool {
        false
    }
}

/// Entries forgotten to make room, handed back to be dropped (or acted on) outside the shard's lock.
pub type Forgotten<V> = Vec<(String, V)>;

pub struct BoundedMap<V> {
    shards: Box<[Lane<V>]>,
    hasher: ByOutsiders,
    /// log2 of the number of shards.
    shard_bits: u32,
    /// Most entries of one shard (`usize::MAX`: no limit).
    share: usize,
}

/// A shard on cache lines of its own (two shards' locks written from two cores would otherwise move
/// one line between them).
#[repr(align(128))]
struct Lane<V>(RwLock<Shard<V>>);

struct Shard<V> {
    table: HashTable<Slot<V>>,
    /// The hash of each entry in the order the entries came, oldest first, and hashes of entries
    /// gone since (skipped when they come up).
    arrivals: VecDeque<u64>,
}

struct Slot<V> {
    /// The key's hash, kept: the table grows and finds arrivals by it without hashing keys again.
    hash: u64,
    key: String,
    value: V,
    /// Seen again since it last came up at the front of the arrivals.
    seen_again: bool,
}

/// Shards of an unbounded map, and the most of a bounded one (about a thousand entries each for the
/// task directory's million).
const MAX_SHARDS: usize = 1024;

/// The fewest entries a bounded map's shard is given, so that what goes follows the map-wide order
/// closely enough (a map with a lower limit is one shard).
const MIN_SHARE: usize = 64;

impl<V: Spared> BoundedMap<V> {
    /// A map of at most `limit` entries (none when `None`).
    pub fn new(limit: Option<usize>) -> BoundedMap<V> {
        let shards = match limit {
            None => MAX_SHARDS,
            Some(limit) => prev_power_of_two(limit.max(1) / MIN_SHARE).clamp(1, MAX_SHARDS),
        };
        // The shares round down, so that the shards together never hold more than `limit`.
        let share = limit.map_or(usize::MAX, |limit| (limit / shards).max(1));
        let empty = || Lane(RwLock::new(Shard { table: HashTable::new(), arrivals: VecDeque::new() }));
        BoundedMap {
            shards: (0..shards).map(|_| empty()).collect(),
            hasher: ByOutsiders::default(),
            shard_bits: shards.trailing_zeros(),
            share,
        }
    }

    /// What `read` makes of the entry of `key`, if there is one.
    pub fn get<R>(&self, key: &str, read: impl FnOnce(&V) -> R) -> Option<R> {
        let hash = self.hasher.hash_one(key);
        let shard = read_lock(&self.shards[self.shard_of(hash)]);
        shard.table.find(hash, |slot| slot.hash == hash && slot.key == key).map(|slot| read(&slot.value))
    }

    /// Hands the entry of `key` to `update`, made by `make` first when there is none (`update` is
    /// told whether it was). An entry found counts as seen again. An entry made past the shard's
    /// share makes room: the entry forgotten for it is handed back.
    pub fn upsert<R>(
        &self,
        key: &str,
        make: impl FnOnce() -> V,
        update: impl FnOnce(&mut V, bool) -> R,
    ) -> (R, Forgotten<V>) {
        let hash = self.hasher.hash_one(key);
        let mut guard = write_lock(&self.shards[self.shard_of(hash)]);
        let shard = &mut *guard;
        if let Some(slot) = shard.find_mut(hash, key) {
            slot.seen_again = true;
            return (update(&mut slot.value, false), Vec::new());
        }
        let (value, forgotten) = shard.add(hash, key, make(), self.share);
        (update(value, true), forgotten)
    }

    /// Puts `value` under `key`, in place of the entry there if any (which counts as seen again);
    /// past the shard's share, the entry forgotten for a new one is handed back.
    pub fn insert(&self, key: &str, value: V) -> Forgotten<V> {
        let hash = self.hasher.hash_one(key);
        let mut guard = write_lock(&self.shards[self.shard_of(hash)]);
        let shard = &mut *guard;
        if let Some(slot) = shard.find_mut(hash, key) {
            slot.seen_again = true;
            slot.value = value;
            return Vec::new();
        }
        shard.add(hash, key, value, self.share).1
    }

    /// Forgets every entry that `keep` refuses, a shard at a time (its lock held for that shard
    /// alone); `forgotten` gets each shard's share of them, after that shard's lock is released.
    pub fn retain(&self, mut keep: impl FnMut(&V) -> bool, mut forgotten: impl FnMut(Forgotten<V>)) {
        for lane in &self.shards {
            let gone: Forgotten<V> = {
                let mut guard = write_lock(lane);
                let shard = &mut *guard;
                let gone: Forgotten<V> =
                    shard.table.extract_if(|slot| !keep(&slot.value)).map(|slot| (slot.key, slot.value)).collect();
                // Arrivals of entries gone are skipped when they come up; a shard that seldom makes
                // room drops them here, before they outnumber its entries.
                if shard.arrivals.len() > 2 * shard.table.len() + 16 {
                    let table = &shard.table;
                    shard.arrivals.retain(|&hash| table.find(hash, |slot| slot.hash == hash).is_some());
                }
                gone
            };
            if !gone.is_empty() {
                forgotten(gone);
            }
        }
    }

    /// Up to `limit` of what `read` makes of the entries (those it makes something of), in no
    /// particular order.
    pub fn collect<R>(&self, limit: usize, mut read: impl FnMut(&str, &V) -> Option<R>) -> Vec<R> {
        let mut out = Vec::new();
        for lane in &self.shards {
            let shard = read_lock(lane);
            let made = shard.table.iter().filter_map(|slot| read(&slot.key, &slot.value));
            out.extend(made.take(limit - out.len()));
            if out.len() == limit {
                break;
            }
        }
        out
    }

    /// How many entries (each shard counted under its own lock: not one instant's count).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|lane| read_lock(lane).table.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shard of a hash: bits below the top 7, which the shard's table reads as each entry's
    /// control byte (shards picked by those would give every entry of a shard the same byte).
    fn shard_of(&self, hash: u64) -> usize {
        if self.shard_bits == 0 { 0 } else { ((hash << 7) >> (64 - self.shard_bits)) as usize }
    }
}

impl<V: Spared> Shard<V> {
    fn find_mut(&mut self, hash: u64, key: &str) -> Option<&mut Slot<V>> {
        self.table.find_mut(hash, |slot| slot.hash == hash && slot.key == key)
    }

    /// Adds an entry for a key it does not hold, then makes room past `share` (the new entry is the
    /// newest: it never goes for itself).
    fn add(&mut self, hash: u64, key: &str, value: V, share: usize) -> (&mut V, Forgotten<V>) {
        let excess = (self.table.len() + 1).saturating_sub(share);
        let forgotten = if excess > 0 { self.make_room(excess) } else { Vec::new() };
        self.arrivals.push_back(hash);
        let slot = Slot { hash, key: key.to_owned(), value, seen_again: false };
        (&mut self.table.insert_unique(hash, slot, |slot| slot.hash).into_mut().value, forgotten)
    }

    /// Forgets `excess` entries (one, but for a shard past its share some other way), taking them
    /// from the front of the arrivals. An entry seen again since it last came up, or spared, goes to
    /// the back instead, until every entry has come up once or [`MAX_PASSES`] have: then the one at
    /// the front goes, spared or not.
    fn make_room(&mut self, excess: usize) -> Forgotten<V> {
        let mut forgotten = Vec::with_capacity(excess);
        let mut passes = self.arrivals.len().min(MAX_PASSES);
        while forgotten.len() < excess {
            let Some(hash) = self.arrivals.pop_front() else { break };
            let Ok(mut entry) = self.table.find_entry(hash, |slot| slot.hash == hash) else { continue };
            let slot = entry.get_mut();
            if passes > 0 && (slot.seen_again || slot.value.spared()) {
                passes -= 1;
                slot.seen_again = false;
                self.arrivals.push_back(hash);
                continue;
            }
            let (slot, _) = entry.remove();
            forgotten.push((slot.key, slot.value));
        }
        forgotten
    }
}

/// The most entries one insert passes over before it forgets the one at the front: a shard whose
/// next 64 entries are all spared holds hardly any other (and an insert never walks a whole shard).
const MAX_PASSES: usize = 64;

fn prev_power_of_two(n: usize) -> usize {
    if n == 0 { 0 } else { 1 << (usize::BITS - 1 - n.leading_zeros()) }
}

// A panic while a shard was held leaves a consistent table (each write is one insert, update or
// removal): go on with it.
fn read_lock<V>(lane: &Lane<V>) -> RwLockReadGuard<'_, Shard<V>> {
    lane.0.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write_lock<V>(lane: &Lane<V>) -> RwLockWriteGuard<'_, Shard<V>> {
    lane.0.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Even numbers are spared.
    impl Spared for u32 {
        fn spared(&self) -> bool {
            self.is_multiple_of(2)
        }
    }

    /// Odd numbers only, so that none is spared.
    fn insert(map: &BoundedMap<u32>, key: u32) -> Vec<u32> {
        let value = 2 * key + 1;
        let mut gone: Vec<u32> =
            map.upsert(&key.to_string(), || value, |_, _| ()).1.into_iter().map(|(_, v)| v / 2).collect();
        gone.sort_unstable();
        gone
    }

    /// A map within one shard keeps exactly its limit's worth: each insert past it forgets the
    /// oldest entry, and hands it back.
    #[test]
    fn past_its_limit_a_small_map_forgets_its_oldest() {
        let map = BoundedMap::new(Some(50));
        for key in 0..50 {
            assert!(insert(&map, key).is_empty());
        }
        assert_eq!(map.len(), 50);
        assert_eq!(insert(&map, 50), [0]);
        assert_eq!(insert(&map, 51), [1]);
        assert_eq!(map.len(), 50);
        assert!((2..=51).all(|k| map.get(&k.to_string(), |v| *v) == Some(2 * k + 1)));
    }

    /// The oldest go first, but for entries seen again since they came (once) and spared ones
    /// (while others can go).
    #[test]
    fn entries_seen_again_and_spared_ones_go_after_the_others() {
        let map = BoundedMap::new(Some(10));
        for key in 0..10u32 {
            // Keys 0, 2, 4, ... are spared.
            let value = if key % 2 == 0 { 2 * key } else { 2 * key + 1 };
            let _ = map.upsert(&key.to_string(), || value, |_, _| ());
        }
        let ((), none) = map.upsert("1", || unreachable!("made twice"), |_, made| assert!(!made));
        assert!(none.is_empty());
        let mut gone = Vec::new();
        for key in 10..16u32 {
            let forgotten = map.upsert(&key.to_string(), || 2 * key + 1, |_, _| ()).1;
            gone.extend(forgotten.into_iter().map(|(k, _)| k));
        }
        // 0 spared, 1 seen again, 2 spared: 3 goes; then 5, 7, 9; then 1, passed over once already,
        // and the first of the new ones.
        assert_eq!(gone, ["3", "5", "7", "9", "1", "10"]);
        assert_eq!(map.len(), 10);
    }

    /// When every entry is spared, the oldest go all the same.
    #[test]
    fn when_every_entry_is_spared_the_oldest_go() {
        let map = BoundedMap::new(Some(10));
        for key in 0..10u32 {
            let _ = map.upsert(&key.to_string(), || 2 * key, |_, _| ());
        }
        let gone: Vec<String> = map.upsert("10", || 20, |_, _| ()).1.into_iter().map(|(k, _)| k).collect();
        assert_eq!(gone, ["0"]);
    }

    /// A big map never holds more than its limit, forgets one entry at a time, and nothing recent.
    #[test]
    fn a_big_map_stays_within_its_limit_a_shard_at_a_time() {
        let limit = 100_000;
        let map = BoundedMap::new(Some(limit));
        let shards = map.shards.len();
        assert_eq!(shards, 1024, "a hundred thousand entries: 64 or more a shard");
        let (mut forgotten, mut largest_batch) = (Vec::new(), 0);
        for key in 0..300_000 {
            let batch = insert(&map, key);
            largest_batch = largest_batch.max(batch.len());
            forgotten.extend(batch);
            if key % 1000 == 0 {
                assert!(map.len() <= limit, "over the limit at {key}");
            }
        }
        assert!(map.len() <= limit);
        assert!(map.len() >= limit * 9 / 10, "kept {} of {limit}", map.len());
        assert_eq!(largest_batch, 1, "one at a time");
        assert_eq!(forgotten.len() + map.len(), 300_000, "every entry is kept or handed back");
        // Shard by shard the order is approximate: nothing recent is forgotten.
        assert!(forgotten.iter().all(|&k| (k as usize) < 300_000 - limit / 2), "a recent entry was forgotten");
    }

    #[test]
    fn retain_hands_back_what_it_forgets_and_later_arrivals_skip_them() {
        let map = BoundedMap::new(Some(10));
        (0..10).for_each(|k| _ = insert(&map, k));
        let mut gone = Vec::new();
        map.retain(|v| v / 2 >= 3, |batch| gone.extend(batch.into_iter().map(|(_, v)| v / 2)));
        gone.sort_unstable();
        assert_eq!(gone, [0, 1, 2]);
        assert_eq!(map.len(), 7);
        (10..13).for_each(|k| assert!(insert(&map, k).is_empty(), "room for three"));
        assert_eq!(insert(&map, 13), [3], "the oldest kept goes next");
    }

    #[test]
    fn collect_stops_at_its_limit() {
        let map = BoundedMap::new(None);
        (0..100).for_each(|k| _ = insert(&map, k));
        assert_eq!(map.collect(10, |_, v| Some(*v)).len(), 10);
        assert_eq!(map.collect(1000, |_, v| Some(*v)).len(), 100);
        assert_eq!(map.collect(1000, |_, v| (v % 4 == 1).then_some(*v)).len(), 50, "odd values: every other one");
    }
}
