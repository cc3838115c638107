//! Keeping a concurrent map within a limit: past it, forget the entries of lowest rank (the least
//! recently seen, say) in one pass, down to nine tenths of the limit so that the next pass is a
//! tenth of it away. Used by the task directory and the maps that live as long as its entries.

use dashmap::DashMap;

/// Past `max` entries, forgets those of lowest `rank` down to nine tenths of `max` (room for a tenth
/// before the next time); how many. One pass to rank, one to forget: entries recorded in between
/// rank above those forgotten (they were seen last), so they stay.
pub fn evict_lowest<K, V, S, R>(map: &DashMap<K, V, S>, max: usize, rank: impl Fn(&V) -> R) -> usize
where
    K: Eq + std::hash::Hash,
    S: std::hash::BuildHasher + Clone,
    R: Ord + Copy,
{
    let before = map.len();
    if before <= max {
        return 0;
    }
    let mut ranks: Vec<R> = map.iter().map(|entry| rank(entry.value())).collect();
    let forget = ranks.len().saturating_sub(max - max / 10);
    if forget == 0 {
        return 0;
    }
    let (_, &mut last_forgotten, _) = ranks.select_nth_unstable(forget - 1);
    drop(ranks);
    map.retain(|_, value| rank(value) > last_forgotten);
    before.saturating_sub(map.len())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
