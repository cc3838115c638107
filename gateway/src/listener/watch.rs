//! One connection's watchdog: knows whether a request is in flight, when the connection last fell
//! quiet and when bytes of a next request began to arrive, and decides when the connection has
//! been too slow to send a request or idle too long.
//!
//! Rules, applied only while no request is in flight (a request's body has its own timeout, and a
//! relayed stream may legitimately stay open for long):
//! - a new connection must complete its first request's headers within `header_read_timeout`
//!   (silent connections and byte-by-byte senders alike);
//! - on HTTP/1.1, once the first byte of a next request arrives, its headers must complete within
//!   `header_read_timeout` (HTTP/2 connections carry control frames between requests, so there
//!   only the idle rule applies after the first request);
//! - a connection with no request for `idle_timeout` is closed.
//!
//! Each connection is cut at its own point in the last fifth of a timeout (see [`random_cut`]):
//! connections opened together — a slow-client attack opens them in bursts — would otherwise all
//! be closed in the same millisecond, reconnect together and trickle their bytes in step, and each
//! such burst of thousands of wake-ups stalls the normal calls queued behind it (measured in
//! `tests/bench/slow-clients.md`).

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The timeouts a watchdog applies.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub header_read: Option<Duration>,
    pub idle: Option<Duration>,
}

impl Timeouts {
    pub fn any(&self) -> bool {
        self.header_read.is_some() || self.idle.is_some()
    }

    /// These timeouts cut at `cut` thousandths (at most the whole timeout; see [`random_cut`]).
    pub fn cut_at(self, cut: u64) -> Timeouts {
        let scale = |timeout: Duration| timeout * cut.min(1000) as u32 / 1000;
        Timeouts { header_read: self.header_read.map(scale), idle: self.idle.map(scale) }
    }
}

/// Why a connection was closed by its watchdog (a metrics label).
pub const HEADER_TIMEOUT: &str = "header_timeout";
pub const IDLE_TIMEOUT: &str = "idle_timeout";

/// Sentinel of `first_byte`: no byte since the connection fell quiet.
const NONE: u64 = u64::MAX;

/// The earliest cut, in thousandths of a timeout.
const EARLIEST_CUT: u64 = 800;

/// A connection's cut point, in thousandths of a timeout: spread evenly over 800..=1000 (never later
/// than the configured timeout). Not a secret: the process-keyed hasher of a counter is enough.
pub fn random_cut() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static KEYS: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    EARLIEST_CUT + KEYS.get_or_init(RandomState::new).hash_one(n) % (1000 - EARLIEST_CUT + 1)
}

pub struct ConnWatch {
    accepted: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds since `accepted` when the last request ended (0: none yet).
    quiet_since: AtomicU64,
    /// Milliseconds since `accepted` of the first byte read while quiet.
    first_byte: AtomicU64,
    served: AtomicBool,
    http2: AtomicBool,
}

impl ConnWatch {
    pub fn new() -> Arc<ConnWatch> {
        Arc::new(ConnWatch {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            quiet_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(NONE),
            served: AtomicBool::new(false),
            http2: AtomicBool::new(false),
        })
    }

    fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.accepted).as_millis()).unwrap_or(u64::MAX - 1)
    }

    fn at(&self, millis: u64) -> Instant {
        self.accepted + Duration::from_millis(millis)
    }

    /// A request's headers arrived; the returned guard ends it when dropped (with its response body).
    pub fn start_request(self: &Arc<Self>, http2: bool) -> InFlight {
        self.served.store(true, Ordering::Relaxed);
        if http2 {
            self.http2.store(true, Ordering::Relaxed);
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    /// Bytes arrived. No wake-up: the watchdog reads this when it is next polled, right after the
    /// connection that read them (see [`ConnWatch::expired`]).
    fn saw_bytes(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 && self.first_byte.load(Ordering::Relaxed) == NONE {
            self.first_byte.store(self.millis(Instant::now()), Ordering::Relaxed);
        }
    }

    /// Close now (with the reason), or the instant the next deadline falls due (`None`: none is
    /// due — a request is in flight, or no timeout applies — so check again after a while).
    fn verdict(&self, now: Instant, timeouts: &Timeouts) -> Result<Option<Instant>, &'static str> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Ok(None);
        }
        // The earliest of the deadlines that apply (kept as it goes: this runs on every poll).
        let mut earliest: Option<(Instant, &'static str)> = None;
        let mut consider = |at: Instant, reason| {
            if earliest.is_none_or(|(first, _)| at < first) {
                earliest = Some((at, reason));
            }
        };
        if let Some(header) = timeouts.header_read {
            if !self.served.load(Ordering::Relaxed) {
                consider(self.accepted + header, HEADER_TIMEOUT);
            }
            let first = self.first_byte.load(Ordering::Relaxed);
            if first != NONE && !self.http2.load(Ordering::Relaxed) {
                consider(self.at(first) + header, HEADER_TIMEOUT);
            }
        }
        if let Some(idle) = timeouts.idle {
            consider(self.at(self.quiet_since.load(Ordering::Relaxed)) + idle, IDLE_TIMEOUT);
        }
        match earliest {
            Some((at, reason)) if at <= now => Err(reason),
            Some((at, _)) => Ok(Some(at)),
            None => Ok(None),
        }
    }

    /// Resolves with the reason once the connection is to be closed.
    ///
    /// It judges the connection afresh each time it is polled, and its timer is moved only when the
    /// deadline moves. Polled right after the connection in the same task (`listener::drive`), it
    /// sees bytes that just arrived and a request that just ended without being woken for them: a
    /// wake-up per request used to re-poll the whole connection and re-arm the timer.
    pub async fn expired(&self, timeouts: Timeouts) -> &'static str {
        let recheck = timeouts.header_read.into_iter().chain(timeouts.idle).min().unwrap_or(Duration::from_secs(60));
        let timer = tokio::time::sleep(recheck);
        tokio::pin!(timer);
        let mut armed: Option<Instant> = None;
        let mut fired: Option<Instant> = None;
        std::future::poll_fn(|cx| {
            loop {
                // Once the timer has fired, its deadline counts as reached.
                let now = fired.take().map_or_else(Instant::now, |at| Instant::now().max(at));
                let at = match self.verdict(now, &timeouts) {
                    Err(reason) => return Poll::Ready(reason),
                    Ok(Some(at)) => at,
                    // Nothing due: keep a recheck already set, else set one.
                    Ok(None) => armed.filter(|&at| at > now).unwrap_or(now + recheck),
                };
                if armed != Some(at) {
                    timer.as_mut().reset(at);
                    armed = Some(at);
                }
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                // Fired: judge again, as of its deadline at the earliest, and arm afresh.
                fired = Some(at);
                armed = None;
            }
        })
        .await
    }
}

/// One request in flight; dropped when its response body is finished or abandoned.
pub struct InFlight(Arc<ConnWatch>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let watch = &self.0;
        if watch.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            watch.quiet_since.store(watch.millis(Instant::now()), Ordering::Relaxed);
            watch.first_byte.store(NONE, Ordering::Relaxed);
        }
    }
}

/// The connection's socket, telling its watchdog when bytes arrive.
pub struct Watched<T> {
    inner: T,
    watch: Arc<ConnWatch>,
}

impl<T> Watched<T> {
    pub fn new(inner: T, watch: Arc<ConnWatch>) -> Watched<T> {
        Watched { inner, watch }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.watch.saw_bytes();
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts { header_read: Some(Duration::from_secs(1)), idle: Some(Duration::from_secs(5)) };

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_cut_at_its_own_point_of_the_timeout() {
        let watch = ConnWatch::new();
        let started = Instant::now();
        assert_eq!(watch.expired(T.cut_at(800)).await, HEADER_TIMEOUT);
        assert_eq!(started.elapsed(), Duration::from_millis(800));
        let cuts: Vec<u64> = (0..1000).map(|_| random_cut()).collect();
        assert!(cuts.iter().all(|cut| (EARLIEST_CUT..=1000).contains(cut)), "never later than the timeout");
        // Spread over the window: every tenth of it is hit (a constant would not be).
        let mut tenths = [0usize; 10];
        for cut in &cuts {
            tenths[((cut - EARLIEST_CUT) * 10 / 201) as usize] += 1;
        }
        assert!(tenths.iter().all(|&n| n > 50), "cuts not spread: {tenths:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_expires_at_the_header_timeout() {
        let watch = ConnWatch::new();
        let started = Instant::now();
        assert_eq!(watch.expired(T).await, HEADER_TIMEOUT);
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_flight_are_never_cut_and_quiet_keep_alive_lasts_until_idle() {
        let watch = ConnWatch::new();
        let request = watch.start_request(false);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(watch.verdict(Instant::now(), &T).is_ok());
        drop(request);
        let quiet = Instant::now();
        assert_eq!(watch.expired(T).await, IDLE_TIMEOUT);
        assert_eq!(quiet.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_next_request_trickling_in_expires_at_the_header_timeout() {
        let watch = ConnWatch::new();
        drop(watch.start_request(false));
        tokio::time::advance(Duration::from_secs(2)).await;
        watch.saw_bytes();
        let first_byte = Instant::now();
        assert_eq!(watch.expired(T).await, HEADER_TIMEOUT);
        assert_eq!(first_byte.elapsed(), Duration::from_secs(1));
        // HTTP/2 control frames between requests do not count as a request's headers.
        let h2 = ConnWatch::new();
        drop(h2.start_request(true));
        h2.saw_bytes();
        assert_eq!(h2.expired(T).await, IDLE_TIMEOUT);
    }
}
