//! The public listener: accepts connections under caps (in total and per source address), serves
//! each over HTTP/1.1 or HTTP/2 with the configured limits, closes connections that are too slow
//! to send a request or idle too long (see [`watch`]), and drains on shutdown. Every refusal is
//! counted in `a2a_listener_refused_total{reason}`.
//!
//! (axum's `serve` cannot set timeouts or caps: this is its accept loop with those added.)

mod peer_identity;
mod tls;
mod watch;

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_core::{ClientAddress, ClientCertificate};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use http::{Request, Version};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::workers::SpreadStreams;

pub use crate::client_address::{TrustedProxies, limit_key};
pub use crate::config::{Protection, TlsConfig};
pub use tls::{ClientCerts, ListenerTls, TlsError};
use watch::{ConnWatch, InFlight, Timeouts, Watched};

/// Connections and requests the listener refused or cut, by reason.
pub const REFUSED: &str = "a2a_listener_refused_total";
/// Connections closed after `idle_timeout` without a request (not a refusal: keep-alive ends).
pub const IDLE_CLOSED: &str = "a2a_listener_idle_closed_total";
/// Open connections on the public listener.
pub const CONNECTIONS: &str = "a2a_listener_connections";

/// What a connection over a cap gets before it is closed (written only if the socket takes it at
/// once: a refusal never waits for the client).
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: application/json\r\ncontent-length: 87\r\n\r\n{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\",\"message\":\"too many connections; retry later\"}}";

/// The public listener's settings, built once at start.
pub struct PublicListener {
    builder: Arc<Builder<SpreadStreams>>,
    timeouts: Timeouts,
    slots: Arc<Slots>,
    trusted: Arc<TrustedProxies>,
    tls: Option<ListenerTls>,
}

impl PublicListener {
    pub fn new(protection: &Protection, trusted: TrustedProxies) -> PublicListener {
        let mut builder = Builder::new(SpreadStreams);
        // The watchdog owns header timing: hyper's own header timer would also end idle keep-alive
        // connections at the header timeout.
        builder.http1().header_read_timeout(None);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(protection.http2_max_concurrent_streams)
            .max_header_list_size(protection.http2_max_header_list_size)
            .max_pending_accept_reset_streams(protection.http2_max_pending_accept_reset_streams)
            .max_local_error_reset_streams(protection.http2_max_local_error_reset_streams);
        PublicListener {
            builder: Arc::new(builder),
            timeouts: Timeouts { header_read: protection.header_read_timeout, idle: protection.idle_timeout },
            slots: Arc::new(Slots {
                total: AtomicUsize::new(0),
                max_total: protection.max_connections,
                per_address: DashMap::new(),
                max_per_address: protection.max_connections_per_address,
            }),
            trusted: Arc::new(trusted),
            tls: None,
        }
    }

    /// Serves over TLS: each connection's handshake (within the header timeout) before HTTP.
    pub fn with_tls(mut self, tls: Option<ListenerTls>) -> PublicListener {
        self.tls = tls;
        self
    }

    /// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, asks every
    /// connection to finish gracefully and waits until all have closed.
    pub async fn serve(self, listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
        let stop = CancellationToken::new();
        // Every connection task holds a sender; when the last one ends, `recv` returns.
        let (open, mut all_closed) = tokio::sync::mpsc::channel::<Infallible>(1);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        accept_error(error).await;
                        continue;
                    }
                },
                _ = &mut shutdown => break,
            };
            let ip = peer.ip().to_canonical();
            let slot = match self.slots.acquire(limit_key(ip), self.trusted.contains(ip)) {
                Ok(slot) => slot,
                Err(reason) => {
                    metrics::counter!(REFUSED, "reason" => reason).increment(1);
                    tracing::debug!(%peer, reason, "connection refused");
                    let _ = stream.try_write(OVER_CAPACITY);
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let connection = Connection {
                builder: self.builder.clone(),
                timeouts: self.timeouts,
                trusted: self.trusted.clone(),
                app: app.clone(),
                peer,
                tls: self.tls.clone(),
            };
            let (stop, open) = (stop.clone(), open.clone());
            match crate::workers::get() {
                None => {
                    tokio::spawn(connection.run(stream, slot, stop, open));
                }
                // Registered again on the worker's own reactor, so its readiness wakes that thread.
                Some(workers) => match stream.into_std() {
                    Ok(stream) => workers.spawn(async move {
                        match TcpStream::from_std(stream) {
                            Ok(stream) => connection.run(stream, slot, stop, open).await,
                            Err(error) => tracing::warn!(%peer, %error, "connection not handed to a worker"),
                        }
                    }),
                    Err(error) => tracing::warn!(%peer, %error, "connection not handed to a worker"),
                },
            }
        }
        drop(listener);
        stop.cancel();
        drop(open);
        let _ = all_closed.recv().await;
    }
}

/// Binds the public listener with `backlog` pending connections (tokio's `bind` uses 128).
pub fn bind(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    // As tokio's `bind`: a restarted gateway can take its port while old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Accept errors: per-connection ones (reset before accept) are nothing; running out of file
/// descriptors or memory must not spin the loop.
async fn accept_error(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::warn!(%error, "accept failed; pausing the listener for 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

struct Connection {
    builder: Arc<Builder<SpreadStreams>>,
    timeouts: Timeouts,
    trusted: Arc<TrustedProxies>,
    app: Router,
    peer: SocketAddr,
    tls: Option<ListenerTls>,
}

/// A refusal counted when a TLS handshake fails (no certificate, an unknown CA, an expired one…).
const TLS_HANDSHAKE: &str = "tls_handshake";

impl Connection {
    async fn run(
        self,
        stream: TcpStream,
        slot: Slot,
        stop: CancellationToken,
        _open: tokio::sync::mpsc::Sender<Infallible>,
    ) {
        let watch = ConnWatch::new();
        // This connection's own cut point, fixed once (see `watch`).
        let timeouts = self.timeouts.cut_at(watch::random_cut());
        let expired = {
            let watch = watch.clone();
            async move { if timeouts.any() { watch.expired(timeouts).await } else { std::future::pending().await } }
        };
        tokio::pin!(expired);
        let stream = Watched::new(stream, watch.clone());
        let peer = self.peer;
        match self.tls.as_ref().map(ListenerTls::acceptor) {
            None => self.serve(stream, None, watch, expired, stop).await,
            Some(acceptor) => {
                // The handshake's bytes count as the first request's: the header timeout bounds it.
                let accepted = tokio::select! {
                    accepted = acceptor.accept(stream) => accepted,
                    reason = &mut expired => {
                        metrics::counter!(REFUSED, "reason" => reason).increment(1);
                        return;
                    }
                    _ = stop.cancelled() => return,
                };
                match accepted {
                    Ok(stream) => {
                        let certificate = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|chain| chain.first())
                            .and_then(|leaf| peer_identity::identify(leaf));
                        self.serve(stream, certificate, watch, expired, stop).await
                    }
                    Err(error) => {
                        metrics::counter!(REFUSED, "reason" => TLS_HANDSHAKE).increment(1);
                        tracing::info!(%peer, %error, "TLS handshake refused");
                    }
                }
            }
        }
        drop(slot);
    }

    /// Serves HTTP on an established connection until it ends, is cut by the watchdog, or drained.
    async fn serve<IO>(
        self,
        stream: IO,
        certificate: Option<ClientCertificate>,
        watch: Arc<ConnWatch>,
        mut expired: Pin<&mut impl Future<Output = &'static str>>,
        stop: CancellationToken,
    ) where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Connection { builder, trusted, app, peer, .. } = self;
        let service = {
            let watch = watch.clone();
            hyper::service::service_fn(move |request: Request<Incoming>| {
                let in_flight = watch.start_request(request.version() == Version::HTTP_2);
                let client = trusted.client_address(peer.ip(), request.headers());
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(ConnectInfo(peer));
                request.extensions_mut().insert(ClientAddress(client));
                if let Some(certificate) = &certificate {
                    request.extensions_mut().insert(certificate.clone());
                }
                let answer = app.clone().oneshot(request);
                async move {
                    let response = answer.await?;
                    Ok::<_, Infallible>(response.map(|body| Body::new(Guarded { inner: body, _in_flight: in_flight })))
                }
            })
        };
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let mut draining = false;
        loop {
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::trace!(%peer, %error, "connection ended with an error");
                    }
                    break;
                }
                _ = stop.cancelled(), if !draining => {
                    draining = true;
                    connection.as_mut().graceful_shutdown();
                }
                reason = expired.as_mut() => {
                    // Nothing is in flight: dropping the connection cuts no answer.
                    if reason == watch::IDLE_TIMEOUT {
                        metrics::counter!(IDLE_CLOSED).increment(1);
                    } else {
                        metrics::counter!(REFUSED, "reason" => reason).increment(1);
                        tracing::debug!(%peer, reason, "connection closed");
                    }
                    break;
                }
            }
        }
    }
}

/// A response body that ends its request's time in flight when it is finished or dropped.
struct Guarded {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Open connections, in total and per source address.
struct Slots {
    total: AtomicUsize,
    max_total: Option<usize>,
    per_address: DashMap<IpAddr, usize>,
    max_per_address: Option<usize>,
}

impl Slots {
    /// A slot for a connection from `key`; trusted proxies (`exempt`) count only in the total.
    fn acquire(self: &Arc<Self>, key: IpAddr, exempt: bool) -> Result<Slot, &'static str> {
        let before = self.total.fetch_add(1, Ordering::AcqRel);
        if self.max_total.is_some_and(|max| before >= max) {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err("max_connections");
        }
        let counted = match self.max_per_address {
            Some(max) if !exempt => {
                let mut count = self.per_address.entry(key).or_insert(0);
                if *count >= max {
                    drop(count);
                    self.total.fetch_sub(1, Ordering::AcqRel);
                    return Err("max_connections_per_address");
                }
                *count += 1;
                Some(key)
            }
            _ => None,
        };
        metrics::gauge!(CONNECTIONS).increment(1.0);
        Ok(Slot { slots: self.clone(), key: counted })
    }
}

struct Slot {
    slots: Arc<Slots>,
    key: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.total.fetch_sub(1, Ordering::AcqRel);
        metrics::gauge!(CONNECTIONS).decrement(1.0);
        if let Some(key) = self.key
            && let Entry::Occupied(mut count) = self.slots.per_address.entry(key)
        {
            *count.get_mut() -= 1;
            if *count.get() == 0 {
                count.remove();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections opened at once, before the gateway accepts any, must all reach it: with the
    /// usual backlog of 128 the rest are dropped by the kernel (a silent client never learns it).
    #[tokio::test]
    async fn a_burst_of_connections_waits_in_the_accept_queue() {
        const BURST: usize = 400;
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), Protection::default().accept_backlog).unwrap();
        let addr = listener.local_addr().unwrap();
        let connects = (0..BURST).map(|_| async move {
            tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await.ok().and_then(Result::ok)
        });
        // Nothing is accepted while the burst arrives; the kernel holds what the backlog allows.
        let clients: Vec<TcpStream> = futures::future::join_all(connects).await.into_iter().flatten().collect();
        let mut accepted = Vec::new();
        while let Ok(Ok((stream, _))) = tokio::time::timeout(Duration::from_secs(2), listener.accept()).await {
            accepted.push(stream);
        }
        assert_eq!(accepted.len(), BURST, "{} clients connected, the gateway saw {}", clients.len(), accepted.len());
    }

    fn slots(total: usize, per_address: usize) -> Arc<Slots> {
        Arc::new(Slots {
            total: AtomicUsize::new(0),
            max_total: Some(total),
            per_address: DashMap::new(),
            max_per_address: Some(per_address),
        })
    }

    #[test]
    fn caps_hold_per_address_and_in_total_and_free_on_drop() {
        let slots = slots(3, 2);
        let (a, b, c): (IpAddr, IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), "10.0.0.3".parse().unwrap());
        let a1 = slots.acquire(a, false).unwrap();
        let _a2 = slots.acquire(a, false).unwrap();
        assert_eq!(slots.acquire(a, false).err(), Some("max_connections_per_address"));
        let _b1 = slots.acquire(b, false).unwrap();
        assert_eq!(slots.acquire(c, true).err(), Some("max_connections"));
        drop(a1);
        let _proxy = slots.acquire(c, true).unwrap();
        assert_eq!(slots.total.load(Ordering::Relaxed), 3);
        assert_eq!(slots.per_address.len(), 2, "a trusted proxy is not counted per address");
    }
}
