//! SIGHUP, the operator's "read your files again": one listener per reloader (the configuration,
//! the TLS files). Off Unix there is no such signal and [`Hangups::next`] never returns.

/// The SIGHUPs received from now on.
pub struct Hangups {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangups {
    /// Must be called inside a Tokio runtime. Without a signal handler (it could not be installed)
    /// only the file checks reload.
    pub fn listen() -> Hangups {
        Hangups {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok(),
        }
    }

    /// Waits for the next SIGHUP.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = self.signal.as_mut() {
            signal.recv().await;
            return;
        }
        std::future::pending::<()>().await
    }
}
