//! The public listener: accepts connections under caps (in total and per source address), serves
//! each over HTTP/1.1 or HTTP/2 with the configured limits, closes connections that are too slow
//! to send a request or idle too long (see [`watch`]), and drains on shutdown. Every refusal is
//! counted in `a2a_listener_refused_total{reason}`.
//!
//! (axum's `serve` cannot set timeouts or caps: this is its accept loop with those added.)

mod peer_identity;
mod stop;
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
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use http::{Request, Response, Version};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceExt};

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
    protocols: Arc<Protocols>,
    timeouts: Timeouts,
    slots: Arc<Slots>,
    trusted: Arc<TrustedProxies>,
    tls: Option<ListenerTls>,
}

impl PublicListener {
    pub fn new(protection: &Protection, trusted: TrustedProxies) -> PublicListener {
        let mut http1 = http1::Builder::new();
        // The watchdog owns header timing: hyper's own header timer would also end idle keep-alive
        // connections at the header timeout.
        http1.header_read_timeout(None);
        let mut http2 = http2::Builder::new(SpreadStreams);
        http2
            .timer(TokioTimer::new())
            .max_concurrent_streams(protection.http2_max_concurrent_streams)
            .max_header_list_size(protection.http2_max_header_list_size)
            .max_pending_accept_reset_streams(protection.http2_max_pending_accept_reset_streams)
            .max_local_error_reset_streams(protection.http2_max_local_error_reset_streams);
        PublicListener {
            protocols: Arc::new(Protocols { http1, http2 }),
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

    fn connection<A: App>(&self, app: &A, peer: SocketAddr) -> Connection<A> {
        Connection {
            protocols: self.protocols.clone(),
            timeouts: self.timeouts,
            trusted: self.trusted.clone(),
            app: app.clone(),
            peer,
            tls: self.tls.clone(),
        }
    }

    /// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, asks every
    /// connection to finish gracefully and waits until all have closed.
    pub async fn serve<A: App>(self, listener: TcpListener, app: A, shutdown: impl Future<Output = ()>) {
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
            let connection = self.connection(&app, peer);
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

/// HTTP/1.1 and HTTP/2, each served by its own hyper connection: a connection holds only the state of
/// the protocol it speaks (hyper-util's `auto` connection is as large as its HTTP/2 state, and the
/// preface it reads ahead doubled every HTTP/1 connection's read buffer to 16 KiB).
struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<SpreadStreams>,
}

/// The protocol of a connection: by ALPN over TLS, by the HTTP/2 preface on plain TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// How an HTTP/2 connection with prior knowledge starts (RFC 9113 §3.4): no HTTP/1 request does,
/// as `PRI` is no HTTP/1 method.
const HTTP2_PREFACE_START: &[u8] = b"PRI ";

impl Protocol {
    /// Looks at the first bytes a plain TCP client sent, without taking them.
    async fn sniff(stream: &TcpStream) -> std::io::Result<Protocol> {
        let mut start = [0u8; HTTP2_PREFACE_START.len()];
        loop {
            let seen = stream.peek(&mut start).await?;
            if seen == 0 || start[..seen] != HTTP2_PREFACE_START[..seen] {
                // HTTP/1 (a connection closed at once ends there too).
                return Ok(Protocol::Http1);
            }
            if seen == start.len() {
                return Ok(Protocol::Http2);
            }
            // A beginning of the preface only: look again when more may have come (the header
            // timeout bounds the wait).
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn of_alpn(alpn: Option<&[u8]>) -> Protocol {
        // HTTP/2 over TLS is negotiated by ALPN (RFC 9113 §3.2); without it a client speaks HTTP/1.1.
        if alpn == Some(b"h2") { Protocol::Http2 } else { Protocol::Http1 }
    }
}

/// A hyper connection of either protocol, as the serving loop drives it.
trait ServedConnection: Future<Output = Result<(), hyper::Error>> {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S> ServedConnection for http1::Connection<I, S>
where
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S::ResBody: 'static,
    <S::ResBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http1::Connection::graceful_shutdown(self);
    }
}

impl<I, S, E> ServedConnection for http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S::ResBody: 'static,
    <S::ResBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self);
    }
}

/// What a listener serves: the public app, or the admin app over TLS.
pub trait App:
    Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone + Send + Sync + 'static
{
}

impl<T> App for T where
    T: Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

struct Connection<A> {
    protocols: Arc<Protocols>,
    timeouts: Timeouts,
    trusted: Arc<TrustedProxies>,
    app: A,
    peer: SocketAddr,
    tls: Option<ListenerTls>,
}

/// A refusal counted when a TLS handshake fails (no certificate, an unknown CA, an expired one…).
const TLS_HANDSHAKE: &str = "tls_handshake";

impl<A: App> Connection<A> {
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
        let peer = self.peer;
        match self.tls.as_ref().map(ListenerTls::acceptor) {
            None => {
                // The first bytes count as the first request's: the header timeout bounds the wait.
                let protocol = tokio::select! {
                    protocol = Protocol::sniff(&stream) => protocol,
                    reason = &mut expired => {
                        // Counted as when hyper served it: no byte came, as before any request.
                        count_expired(reason, peer);
                        return;
                    }
                    _ = stop.cancelled() => return,
                };
                let Ok(protocol) = protocol else { return };
                let stream = Watched::new(stream, watch.clone());
                self.serve(stream, protocol, None, watch, expired, stop).await
            }
            // Boxed: the TLS handshake is large, and plain connections (the many) need not carry it.
            Some(acceptor) => Box::pin(self.serve_tls(acceptor, stream, watch, expired, stop)).await,
        }
        drop(slot);
    }

    /// The TLS handshake (bounded by the header timeout), then HTTP on the session.
    async fn serve_tls(
        self,
        acceptor: tokio_rustls::TlsAcceptor,
        stream: TcpStream,
        watch: Arc<ConnWatch>,
        mut expired: Pin<&mut impl Future<Output = &'static str>>,
        stop: CancellationToken,
    ) {
        let handshake = handshake(acceptor, stream, &watch, expired.as_mut(), &stop, self.peer);
        let Some((stream, protocol, certificate)) = handshake.await else { return };
        self.serve(stream, protocol, certificate, watch, expired, stop).await
    }

    /// Serves HTTP on an established connection until it ends, is cut by the watchdog, or drained.
    async fn serve<IO>(
        self,
        stream: IO,
        protocol: Protocol,
        certificate: Option<ClientCertificate>,
        watch: Arc<ConnWatch>,
        expired: Pin<&mut impl Future<Output = &'static str>>,
        stop: CancellationToken,
    ) where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Connection { protocols, trusted, app, peer, .. } = self;
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
        let io = TokioIo::new(stream);
        match protocol {
            Protocol::Http1 => drive(protocols.http1.serve_connection(io, service), peer, expired, stop).await,
            // Boxed: the HTTP/2 state is large, and HTTP/1 connections (the many) need not carry it.
            Protocol::Http2 => {
                Box::pin(drive(protocols.http2.serve_connection(io, service), peer, expired, stop)).await
            }
        }
    }
}

/// A TLS session (~1.2 KiB) as the connection keeps it: boxed, since every async fn it passes
/// through keeps its arguments for its whole life, and the session inline was held three times over
/// (a TLS stream's connection task was ~14 KiB; `tests/bench/stream-heap.sh --tls`).
type TlsSession = Box<tokio_rustls::server::TlsStream<Watched<TcpStream>>>;

/// The TLS handshake, within the header timeout (its bytes count as the first request's): the
/// session, the protocol ALPN chose and the client's certificate identity; `None` when refused.
async fn handshake(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    watch: &Arc<ConnWatch>,
    expired: Pin<&mut impl Future<Output = &'static str>>,
    stop: &CancellationToken,
    peer: SocketAddr,
) -> Option<(TlsSession, Protocol, Option<ClientCertificate>)> {
    let accepted = tokio::select! {
        accepted = acceptor.accept(Watched::new(stream, watch.clone())) => accepted,
        reason = expired => {
            metrics::counter!(REFUSED, "reason" => reason).increment(1);
            return None;
        }
        _ = stop.cancelled() => return None,
    };
    match accepted {
        Ok(stream) => {
            let session = stream.get_ref().1;
            let certificate = session
                .peer_certificates()
                .and_then(|chain| chain.first())
                .and_then(|leaf| peer_identity::identify(leaf));
            let protocol = Protocol::of_alpn(session.alpn_protocol());
            Some((Box::new(stream), protocol, certificate))
        }
        Err(error) => {
            metrics::counter!(REFUSED, "reason" => TLS_HANDSHAKE).increment(1);
            tracing::info!(%peer, %error, "TLS handshake refused");
            None
        }
    }
}

/// Drives a served connection until it ends, is cut by the watchdog, or has drained.
async fn drive(
    connection: impl ServedConnection,
    peer: SocketAddr,
    mut expired: Pin<&mut impl Future<Output = &'static str>>,
    stop: CancellationToken,
) {
    tokio::pin!(connection);
    let stop = stop::StopSignal::new(stop);
    tokio::pin!(stop);
    let mut draining = false;
    loop {
        tokio::select! {
            // The watchdog after the connection, every poll: it then sees what the connection just
            // read or finished without a wake-up of its own (see `ConnWatch::expired`).
            biased;
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::trace!(%peer, %error, "connection ended with an error");
                }
                break;
            }
            _ = stop.as_mut(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            reason = expired.as_mut() => {
                // Nothing is in flight: dropping the connection cuts no answer.
                count_expired(reason, peer);
                break;
            }
        }
    }
}

/// Counts a connection the watchdog closed: the end of an idle keep-alive, or a refusal.
fn count_expired(reason: &'static str, peer: SocketAddr) {
    if reason == watch::IDLE_TIMEOUT {
        metrics::counter!(IDLE_CLOSED).increment(1);
    } else {
        metrics::counter!(REFUSED, "reason" => reason).increment(1);
        tracing::debug!(%peer, reason, "connection closed");
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

    /// A connection's task is allocated whole for as long as it lives, an idle stream's too: what
    /// only TLS or HTTP/2 connections need is boxed, so a plain HTTP/1.1 one does not carry it
    /// (the TLS session inline made every task ~9 KiB; `a2a-bench --only idle`: 40.7 -> 34 KiB).
    #[tokio::test]
    async fn a_plain_connection_task_does_not_carry_tls_or_http2_state() {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), 16).unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        let public = PublicListener::new(&Protection::default(), TrustedProxies::default());
        let slot = public.slots.acquire(peer.ip(), false).unwrap();
        let (open, _all_closed) = tokio::sync::mpsc::channel::<Infallible>(1);
        let task = public.connection(&axum::Router::new(), peer).run(stream, slot, CancellationToken::new(), open);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 4 * 1024, "a plain connection's task holds {size} bytes");
        drop((task, client));
    }

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

    /// What a plain TCP client's first bytes say, sent in `pieces` (with a pause between them).
    async fn sniffed(pieces: &[&'static [u8]]) -> Protocol {
        use tokio::io::AsyncWriteExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let pieces = pieces.to_vec();
        let sender = tokio::spawn(async move {
            for piece in pieces {
                client.write_all(piece).await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            client
        });
        let protocol = Protocol::sniff(&server).await.unwrap();
        drop(sender.await);
        let mut start = [0u8; 64];
        let seen = server.peek(&mut start).await.unwrap();
        assert!(seen > 0, "the bytes looked at are left for hyper");
        protocol
    }

    #[tokio::test]
    async fn http2_prior_knowledge_is_told_from_http1_by_its_preface() {
        assert_eq!(sniffed(&[b"GET / HTTP/1.1\r\nhost: a\r\n\r\n"]).await, Protocol::Http1);
        assert_eq!(sniffed(&[b"POST / HTTP/1.1\r\n"]).await, Protocol::Http1);
        assert_eq!(sniffed(&[b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]).await, Protocol::Http2);
        // The preface's start split across packets waits for the rest; one that diverges is HTTP/1.
        assert_eq!(sniffed(&[b"PR", b"I * HTTP/2.0\r\n\r\nSM\r\n\r\n"]).await, Protocol::Http2);
        assert_eq!(sniffed(&[b"P", b"OST / HTTP/1.1\r\n"]).await, Protocol::Http1);
    }

    #[test]
    fn over_tls_alpn_says_http2() {
        assert_eq!(Protocol::of_alpn(Some(b"h2")), Protocol::Http2);
        assert_eq!(Protocol::of_alpn(Some(b"http/1.1")), Protocol::Http1);
        assert_eq!(Protocol::of_alpn(None), Protocol::Http1);
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
