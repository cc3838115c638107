//! Recent traffic for the status page: requests and errors per skill in 10-second buckets over the
//! last ten minutes, and the latest denials with their reasons. Small ring buffers fed by the
//! metrics layer and read by the admin API's `/admin/v1/stats`; Prometheus keeps the long-term
//! series. The counts are kept per thread shard (merged when read): one lock every call of every
//! worker took was one cache line passed between all cores, a point of contention that grows with
//! them.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds per bucket.
pub const BUCKET_SECS: u64 = 10;
/// Buckets kept (ten minutes).
const BUCKETS: usize = 60;
/// Denials kept.
const DENIALS: usize = 50;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub requests: u64,
    pub errors: u64,
}

#[derive(Debug)]
struct Bucket {
    /// Unix seconds of the bucket's start.
    start: u64,
    by_skill: crate::hashing::FastMap<String, Counts>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Denial {
    /// Unix milliseconds.
    pub at_ms: u64,
    pub category: &'static str,
    pub reason: &'static str,
    pub skill: Option<String>,
}

/// One thread shard's buckets, on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(Mutex<VecDeque<Bucket>>);

#[derive(Debug)]
pub struct RecentTraffic {
    shards: Box<[Shard]>,
    denials: Mutex<VecDeque<Denial>>,
}

impl Default for RecentTraffic {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 64);
        RecentTraffic { shards: (0..threads).map(|_| Shard::default()).collect(), denials: Mutex::default() }
    }
}

/// This thread's shard number (threads numbered in turn as they first count).
fn shard_index() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    INDEX.with(|index| *index)
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The process's recent traffic (the metrics layer is process-wide too).
pub static RECENT: LazyLock<RecentTraffic> = LazyLock::new(RecentTraffic::default);

fn now() -> std::time::Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

impl RecentTraffic {
    /// Counts one call to `skill` (`""` when none was resolved); `denial` is the refusing policy's
    /// category and reason.
    pub fn record(&self, skill: &str, error: bool, denial: Option<(&'static str, &'static str)>) {
        let now = now();
        self.record_at(now.as_secs(), skill, error);
        if let Some((category, reason)) = denial {
            let mut denials = locked(&self.denials);
            if denials.len() == DENIALS {
                denials.pop_front();
            }
            let skill = (!skill.is_empty()).then(|| skill.to_string());
            denials.push_back(Denial { at_ms: now.as_millis() as u64, category, reason, skill });
        }
    }

    fn record_at(&self, secs: u64, skill: &str, error: bool) {
        let start = secs - secs % BUCKET_SECS;
        let mut buckets = locked(&self.shards[shard_index() % self.shards.len()].0);
        if buckets.back().is_none_or(|b| b.start < start) {
            if buckets.len() == BUCKETS {
                buckets.pop_front();
            }
            buckets.push_back(Bucket { start, by_skill: Default::default() });
        }
        // A call finishing late may belong to an earlier bucket; the latest is close enough.
        let Some(bucket) = buckets.back_mut() else { return };
        let counts = match bucket.by_skill.get_mut(skill) {
            Some(counts) => counts,
            None => bucket.by_skill.entry(skill.to_string()).or_default(),
        };
        counts.requests += 1;
        counts.errors += u64::from(error);
    }

    /// The series as JSON: bucket starts (oldest first, gaps filled with zeros) and per skill the
    /// request and error counts of each bucket; then the denials, newest first.
    pub fn report(&self) -> serde_json::Value {
        self.report_at(now().as_secs())
    }

    fn report_at(&self, secs: u64) -> serde_json::Value {
        let last = secs - secs % BUCKET_SECS;
        let first = last.saturating_sub(BUCKET_SECS * (BUCKETS as u64 - 1));
        let starts: Vec<u64> = (0..BUCKETS as u64).map(|i| first + i * BUCKET_SECS).collect();
        let mut skills: HashMap<String, (Vec<u64>, Vec<u64>)> = HashMap::new();
        for shard in &self.shards {
            let buckets = locked(&shard.0);
            for bucket in buckets.iter().filter(|b| b.start >= first && b.start <= last) {
                let slot = ((bucket.start - first) / BUCKET_SECS) as usize;
                for (skill, counts) in &bucket.by_skill {
                    let series = match skills.get_mut(skill.as_str()) {
                        Some(series) => series,
                        None => skills.entry(skill.clone()).or_insert_with(|| (vec![0; BUCKETS], vec![0; BUCKETS])),
                    };
                    series.0[slot] += counts.requests;
                    series.1[slot] += counts.errors;
                }
            }
        }
        let mut names: Vec<&str> = skills.keys().map(String::as_str).collect();
        names.sort_unstable();
        let by_skill: Vec<serde_json::Value> = names
            .iter()
            .map(|name| {
                let (requests, errors) = &skills[*name];
                let skill = if name.is_empty() { "(none)" } else { name };
                serde_json::json!({"skill": skill, "requests": requests, "errors": errors})
            })
            .collect();
        let kept = locked(&self.denials);
        let denials: Vec<&Denial> = kept.iter().rev().collect();
        let mut by_reason: HashMap<&str, u64> = HashMap::new();
        for denial in kept.iter() {
            *by_reason.entry(denial.reason).or_default() += 1;
        }
        serde_json::json!({
            "bucket_seconds": BUCKET_SECS,
            "bucket_starts": starts,
            "by_skill": by_skill,
            "denials": denials,
            "denials_by_reason": by_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_bucket_and_old_ones_age_out() {
        let traffic = RecentTraffic::default();
        traffic.record_at(1_000, "echo", false);
        traffic.record_at(1_005, "echo", true);
        traffic.record_at(1_012, "review-pr", false);
        let report = traffic.report_at(1_015);
        let echo = &report["by_skill"][0];
        assert_eq!(echo["skill"], "echo");
        assert_eq!(echo["requests"][BUCKETS - 2], 2);
        assert_eq!(echo["errors"][BUCKETS - 2], 1);
        assert_eq!(report["by_skill"][1]["requests"][BUCKETS - 1], 1);
        let later = traffic.report_at(1_015 + BUCKET_SECS * BUCKETS as u64);
        assert_eq!(later["by_skill"], serde_json::json!([]));
    }

    #[test]
    fn counts_from_every_thread_shard_are_added_up() {
        let traffic = std::sync::Arc::new(RecentTraffic::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let traffic = traffic.clone();
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        traffic.record_at(2_000, "echo", false);
                    }
                    traffic.record_at(2_000, "echo", true);
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let report = traffic.report_at(2_005);
        assert_eq!(report["by_skill"][0]["requests"][BUCKETS - 1], 104);
        assert_eq!(report["by_skill"][0]["errors"][BUCKETS - 1], 4);
    }

    #[test]
    fn denials_are_kept_newest_first_and_counted_by_reason() {
        let traffic = RecentTraffic::default();
        for _ in 0..(DENIALS + 5) {
            traffic.record("echo", true, Some(("rate", "RATE_LIMITED")));
        }
        traffic.record("", true, Some(("authentication", "UNAUTHENTICATED")));
        let report = traffic.report();
        assert_eq!(report["denials"].as_array().unwrap().len(), DENIALS);
        assert_eq!(report["denials"][0]["reason"], "UNAUTHENTICATED");
        assert_eq!(report["denials_by_reason"]["RATE_LIMITED"], DENIALS as u64 - 1);
    }
}
