//! The hash of maps on the request path. std's SipHash took ~3 % of a plain request's instructions
//! (callgrind, `tests/bench/ir-per-request.sh`) in a handful of lookups: the registry's backend and
//! skill maps, the metrics' per-thread handles, the task directory. foldhash (hashbrown's default)
//! is seeded at random per map as std's is, so keys an outsider chooses cannot aim at one bucket
//! without that seed.

/// A map keyed by configuration and labels (backend names, skill ids, metric labels).
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A set of such keys.
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The hasher of maps keyed by what callers and agents send (task and context ids): foldhash's
/// stronger finish, shared with the policies.
pub use a2a_core::ByOutsiders;
