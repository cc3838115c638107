//! HTTP/1.1 to agents on plain TCP (`http://` URLs): hyper's client connections, pooled here.
//!
//! hyper-util's legacy client, which served these before, hands a connection back to its pool from a
//! task it spawns for every request (to wait until the connection may carry the next one), and
//! takes a lock and hashes the origin with SipHash on each way. Here the answer's body hands its
//! connection back itself, on the task that read it, once it has read the last byte; the next
//! request waits (`ready`) until hyper's connection task has the connection idle again, which it
//! does on its next poll. A connection whose answer was not read to its end is not reused (hyper
//! closes it).
//!
//! The same limits as before: `backend_idle_connections` kept per origin (the rest closed at once),
//! none kept longer than `backend_idle_timeout` (a sweep while any wait), the connect timeout, TCP
//! keep-alive and user timeout so that a dead agent of a waiting connection is found.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery};
use http::{HeaderValue, Request, Response, Uri, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

use crate::config::Limits;

/// The pooled HTTP/1.1 connections of one worker thread to every plain-TCP agent.
#[derive(Clone)]
pub struct Http1Pool {
    shared: Arc<Shared>,
}

struct Shared {
    idle: Mutex<Idle>,
    max_idle: usize,
    idle_timeout: Duration,
    connect_timeout: Duration,
}

#[derive(Default)]
struct Idle {
    /// Per origin, the most recently returned connection last.
    by_origin: HashMap<Authority, Vec<Waiting>, foldhash::fast::RandomState>,
    /// A sweep task runs (it ends when nothing waits).
    sweeping: bool,
}

struct Waiting {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Http1Error {
    /// No connection could be made, or the request was given back unsent: the agent cannot have
    /// read it.
    #[error("{0}")]
    NotSent(Box<dyn std::error::Error + Send + Sync>),
    /// The request went out (perhaps in part) and no answer came.
    #[error("{0}")]
    Sent(hyper::Error),
}

impl Http1Pool {
    pub fn new(limits: &Limits) -> Http1Pool {
        Http1Pool {
            shared: Arc::new(Shared {
                idle: Mutex::default(),
                max_idle: limits.backend_idle_connections,
                idle_timeout: limits.backend_idle_timeout,
                connect_timeout: limits.connect_timeout,
            }),
        }
    }

    /// Sends `request` (an absolute `http://` URI) on a waiting connection to its origin, or a new one.
    pub async fn send(&self, mut request: Request<Full<Bytes>>) -> Result<Response<AgentBody>, Http1Error> {
        let authority = request.uri().authority().cloned().ok_or_else(|| not_sent("the URL names no host"))?;
        to_origin_form(&mut request, &authority)?;
        while let Some(mut sender) = self.checkout(&authority) {
            if sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(self.answer(response, authority, sender)),
                // Closed before the request was written: it goes out on the next connection.
                Err(mut error) => match error.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(Http1Error::Sent(error.into_error())),
                },
            }
        }
        let mut sender = self.connect(&authority).await?;
        match sender.try_send_request(request).await {
            Ok(response) => Ok(self.answer(response, authority, sender)),
            Err(error) if error.message().is_some() => Err(Http1Error::NotSent(error.into_error().into())),
            Err(error) => Err(Http1Error::Sent(error.into_error())),
        }
    }

    /// The most recently returned connection to `origin` that is still open, if any.
    fn checkout(&self, origin: &Authority) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let waiting = idle.by_origin.get_mut(origin)?;
        while let Some(Waiting { sender, since }) = waiting.pop() {
            if !sender.is_closed() && since.elapsed() < self.shared.idle_timeout {
                return Some(sender);
            }
        }
        None
    }

    async fn connect(&self, origin: &Authority) -> Result<SendRequest<Full<Bytes>>, Http1Error> {
        let host = origin.host().trim_start_matches('[').trim_end_matches(']');
        let port = origin.port_u16().unwrap_or(80);
        let stream = tokio::time::timeout(self.shared.connect_timeout, connect_to(host, port))
            .await
            .map_err(|_| not_sent("connect timed out"))?
            .map_err(|error| Http1Error::NotSent(error.into()))?;
        let (sender, connection) =
            http1::handshake(TokioIo::new(stream)).await.map_err(|error| Http1Error::NotSent(error.into()))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "agent connection ended");
            }
        });
        Ok(sender)
    }

    /// The answer, with a body that hands `sender` back once it has been read to its end.
    fn answer(
        &self,
        response: Response<Incoming>,
        origin: Authority,
        sender: SendRequest<Full<Bytes>>,
    ) -> Response<AgentBody> {
        let mut going_back = Some(GoingBack { pool: Arc::downgrade(&self.shared), origin, sender });
        if response.body().is_end_stream()
            && let Some(back) = going_back.take()
        {
            back.put();
        }
        response.map(|inner| AgentBody { inner, going_back })
    }
}

/// Connects to the first of `host`'s addresses that accepts, with the socket options of a
/// long-lived agent connection.
async fn connect_to(host: &str, port: u16) -> std::io::Result<tokio::net::TcpStream> {
    let mut last = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        match connect_one(address).await {
            Ok(stream) => return Ok(stream),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "the host has no address")))
}

async fn connect_one(address: SocketAddr) -> std::io::Result<tokio::net::TcpStream> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let socket = socket2::SockRef::from(&stream);
    // A dead agent of a waiting connection is found within about a minute (what reqwest did).
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(15))
        .with_interval(Duration::from_secs(15))
        .with_retries(3);
    socket.set_tcp_keepalive(&keepalive)?;
    socket.set_tcp_user_timeout(Some(Duration::from_secs(30)))?;
    Ok(stream)
}

/// What an HTTP/1.1 request to an origin server carries: the path in origin form, the origin in `Host`.
fn to_origin_form(request: &mut Request<Full<Bytes>>, origin: &Authority) -> Result<(), Http1Error> {
    if !request.headers().contains_key(header::HOST) {
        // Without user information, and without the default port (as hyper-util wrote it).
        let host = origin.as_str().rsplit('@').next().unwrap_or_default();
        let host = host.strip_suffix(":80").unwrap_or(host);
        let value = HeaderValue::from_str(host).map_err(|_| not_sent("the URL's host is not a header value"))?;
        request.headers_mut().insert(header::HOST, value);
    }
    let path = request.uri().path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/"));
    *request.uri_mut() = Uri::from(path);
    Ok(())
}

fn not_sent(reason: &'static str) -> Http1Error {
    Http1Error::NotSent(reason.into())
}

/// A connection on its way back to the pool.
struct GoingBack {
    pool: Weak<Shared>,
    origin: Authority,
    sender: SendRequest<Full<Bytes>>,
}

impl GoingBack {
    fn put(self) {
        let Some(shared) = self.pool.upgrade() else { return };
        if shared.max_idle == 0 || self.sender.is_closed() {
            return;
        }
        let mut idle = shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let waiting = idle.by_origin.entry(self.origin).or_default();
        if waiting.len() >= shared.max_idle {
            // The burst is over: the connections beyond the limit close now (dropped here).
            return;
        }
        waiting.push(Waiting { sender: self.sender, since: Instant::now() });
        if !idle.sweeping {
            idle.sweeping = true;
            drop(idle);
            tokio::spawn(sweep(Arc::downgrade(&shared), shared.idle_timeout));
        }
    }
}

/// Closes connections that waited longer than `idle_timeout`, every `idle_timeout`, while any wait.
async fn sweep(pool: Weak<Shared>, idle_timeout: Duration) {
    loop {
        tokio::time::sleep(idle_timeout.max(Duration::from_millis(100))).await;
        let Some(shared) = pool.upgrade() else { return };
        let mut idle = shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        idle.by_origin.retain(|_, waiting| {
            waiting.retain(|w| !w.sender.is_closed() && w.since.elapsed() < idle_timeout);
            !waiting.is_empty()
        });
        if idle.by_origin.is_empty() {
            idle.sweeping = false;
            return;
        }
    }
}

/// An agent's answer body. One that came on a pooled HTTP/1.1 connection hands the connection back
/// once its last byte is read.
pub struct AgentBody {
    inner: Incoming,
    going_back: Option<GoingBack>,
}

impl std::fmt::Debug for AgentBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBody").field("pooled", &self.going_back.is_some()).finish_non_exhaustive()
    }
}

impl From<Incoming> for AgentBody {
    fn from(inner: Incoming) -> AgentBody {
        AgentBody { inner, going_back: None }
    }
}

impl Body for AgentBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => true,
            // Readers that stop at `is_end_stream` never poll for the end.
            Poll::Ready(Some(Ok(_))) => self.inner.is_end_stream(),
            Poll::Ready(Some(Err(_))) => {
                self.going_back = None;
                false
            }
            Poll::Pending => false,
        };
        if ended && let Some(back) = self.going_back.take() {
            back.put();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests;
