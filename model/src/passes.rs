//! Counts the JSON passes (tokenizing reads of a document) and writes made on this thread, so that a
//! test can hold the README's cost table ("What a call costs in parsing and writing") to the code.
//! The readers of this crate count themselves; the gateway counts its own `serde_json` calls on the
//! request and answer paths with [`read`] and [`write`].
//!
//! Only with the `count-passes` feature (the gateway's tests turn it on): otherwise the hooks are
//! empty and inline away.

/// Passes and writes counted by [`counted`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    /// Tokenizing reads of a JSON document (or of a part of one read on its own).
    pub reads: u32,
    /// JSON documents written.
    pub writes: u32,
}

#[cfg(feature = "count-passes")]
thread_local! {
    static COUNT: std::cell::Cell<Passes> = const { std::cell::Cell::new(Passes { reads: 0, writes: 0 }) };
}

/// One tokenizing read of a JSON document.
#[inline(always)]
pub fn read() {
    #[cfg(feature = "count-passes")]
    COUNT.with(|c| c.set(Passes { reads: c.get().reads + 1, ..c.get() }));
}

/// One JSON document written.
#[inline(always)]
pub fn write() {
    #[cfg(feature = "count-passes")]
    COUNT.with(|c| c.set(Passes { writes: c.get().writes + 1, ..c.get() }));
}

/// Runs `f` and returns what it returned with the passes and writes it made on this thread.
#[cfg(feature = "count-passes")]
pub fn counted<R>(f: impl FnOnce() -> R) -> (R, Passes) {
    let before = so_far();
    let out = f();
    (out, so_far().since(before))
}

/// The passes and writes made on this thread so far (to count across an `.await`, which
/// [`counted`] cannot wrap: `so_far().since(start)`).
#[cfg(feature = "count-passes")]
pub fn so_far() -> Passes {
    COUNT.with(std::cell::Cell::get)
}

impl Passes {
    /// What was made after `start`.
    pub fn since(self, start: Passes) -> Passes {
        Passes { reads: self.reads - start.reads, writes: self.writes - start.writes }
    }
}
