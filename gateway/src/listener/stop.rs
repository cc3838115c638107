//! The shutdown signal as a served connection's task sees it. tokio's `Notified` (under
//! `CancellationToken::cancelled`) takes its `Notify`'s mutex on every poll while it waits, and every
//! connection of every worker waits on the one token: ~5 polls per request, each a lock on one
//! cache line shared by all cores. Here the token's waiter is registered once with a waker of our
//! own; later polls read one atomic flag, and only a wake from the token polls the token again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

pin_project_lite::pin_project! {
    /// Ready once the token is cancelled (at once if it already is).
    pub(super) struct StopSignal {
        #[pin]
        cancelled: WaitForCancellationFutureOwned,
        woken: Arc<Woken>,
        registered: bool,
    }
}

/// Set by the token's wake-up; wakes the connection's task.
#[derive(Default)]
struct Woken {
    flag: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.flag.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl StopSignal {
    pub(super) fn new(token: CancellationToken) -> StopSignal {
        StopSignal { cancelled: token.cancelled_owned(), woken: Arc::default(), registered: false }
    }
}

impl Future for StopSignal {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        // Registered before the flag is read: a wake-up in between still reaches this task.
        this.woken.task.register(cx.waker());
        if *this.registered && !this.woken.flag.swap(false, Ordering::Acquire) {
            return Poll::Pending;
        }
        *this.registered = true;
        let waker = Waker::from(this.woken.clone());
        this.cancelled.poll(&mut Context::from_waker(&waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    /// Counts its wake-ups (the connection task's waker).
    #[derive(Default)]
    struct Counter(std::sync::atomic::AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_cancel_while_waiting_wakes_the_task_and_ends_the_wait() {
        let token = CancellationToken::new();
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        let mut stop = Box::pin(StopSignal::new(token.clone()));
        assert!(stop.as_mut().poll(&mut cx).is_pending());
        // Polls without a wake-up from the token stay pending (and do not reach the token).
        assert!(stop.as_mut().poll(&mut cx).is_pending());
        assert!(stop.as_mut().poll(&mut cx).is_pending());
        token.cancel();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(stop.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn the_latest_waker_is_the_one_woken() {
        let token = CancellationToken::new();
        let (first, second) = (Arc::new(Counter::default()), Arc::new(Counter::default()));
        let mut stop = Box::pin(StopSignal::new(token.clone()));
        assert!(stop.as_mut().poll(&mut Context::from_waker(&Waker::from(first.clone()))).is_pending());
        assert!(stop.as_mut().poll(&mut Context::from_waker(&Waker::from(second.clone()))).is_pending());
        token.cancel();
        assert_eq!((first.0.load(Ordering::SeqCst), second.0.load(Ordering::SeqCst)), (0, 1));
    }

    #[test]
    fn a_token_cancelled_before_the_first_poll_ends_it_at_once() {
        let token = CancellationToken::new();
        token.cancel();
        assert!(Box::pin(StopSignal::new(token)).now_or_never().is_some());
    }
}
