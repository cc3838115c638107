//! HTTP/1.1 to agents on plain TCP (`http://` URLs): a client of our own, pooled here.
//!
//! hyper's client connection runs each connection as a task of its own, handed requests through
//! one channel and giving back the answer's head and body through two more: every answer crossed
//! tasks three times and was polled through two state machines. Here the task that forwards a call
//! writes the request and reads the answer on the socket itself ([`Http1Pool::send`]), and the
//! answer's body ([`AgentBody`]) reads the rest and hands the connection back to the pool once it
//! has read the last byte. The codec is small because the gateway asks little of it: a request with
//! its whole body, written with its head in one system call; an answer framed by `Content-Length`,
//! chunked transfer coding or the connection's end (RFC 9112 §6.3), with its head at most
//! [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields, interim (1xx) answers skipped. Anything else an
//! agent sends is an error of its answer, never a guess. A connection whose answer was not read to
//! its end, that said `Connection: close`, or that had bytes beyond its answer is not reused.
//!
//! The same limits as before: `backend_idle_connections` kept per origin (the rest closed at once),
//! none kept longer than `backend_idle_timeout` (a sweep while any wait), the connect timeout, TCP
//! keep-alive and user timeout so that a dead agent of a waiting connection is found.

use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use http::uri::Authority;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version, header};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::config::Limits;

/// The most an answer's head may take (and each interim answer before it).
const MAX_HEAD: usize = 64 * 1024;
/// The most fields an answer's head may have.
const MAX_HEADERS: usize = 100;
/// The most a chunk-size line (with its extensions) may take.
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// The most the trailer section of a chunked answer may take (its fields are read and dropped).
const MAX_TRAILERS: usize = 16 * 1024;
/// The room a read asks for.
const READ_SIZE: usize = 8 * 1024;
/// Below this much room left, a read asks for more first.
const MIN_READ_SIZE: usize = 2 * 1024;
/// The most room a read asks for when the answer's length is known.
const MAX_READ_SIZE: usize = 256 * 1024;

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
    connection: Connection,
    since: Instant,
}

/// A connection to an agent: its socket and the bytes read from it not yet consumed (none while it
/// waits in the pool).
struct Connection {
    io: TcpStream,
    read: BytesMut,
}

impl Connection {
    /// Lets the read buffer go when it holds nothing: the next read takes a new one.
    fn wait_unbuffered(&mut self) {
        if self.read.is_empty() {
            self.read = BytesMut::new();
        }
    }

    /// Whether the agent closed the connection or sent something unasked while it waited. Asks the
    /// runtime's record of the socket's readiness, not the socket (no system call): a close the
    /// runtime has not seen yet shows up as an answer cut off.
    fn spoiled(&self) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        self.io.poll_read_ready(&mut context).is_ready()
    }
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Http1Error {
    /// No connection could be made, or nothing of the request was written: the agent cannot have
    /// read it.
    #[error("{0}")]
    NotSent(Box<dyn std::error::Error + Send + Sync>),
    /// The request went out (perhaps in part) and no answer came, or an answer the client cannot
    /// read (`InvalidData`).
    #[error("{0}")]
    Sent(io::Error),
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
    pub async fn send(&self, request: Request<Bytes>) -> Result<Response<AgentBody>, Http1Error> {
        let origin = request.uri().authority().cloned().ok_or_else(|| not_sent("the URL names no host"))?;
        let head = request_head(&request, &origin)?;
        let (method, body) = (request.method().clone(), request.into_body());
        while let Some(connection) = self.checkout(&origin) {
            match exchange(connection, &head, &body, &method).await {
                Ok(answer) => return Ok(self.answer(answer, origin)),
                // Closed before any of the request went out: it goes out on the next connection.
                Err(Http1Error::NotSent(_)) => continue,
                Err(error) => return Err(error),
            }
        }
        let connection = self.connect(&origin).await?;
        let answer = exchange(connection, &head, &body, &method).await?;
        Ok(self.answer(answer, origin))
    }

    /// The most recently returned connection to `origin` that is still usable, if any.
    fn checkout(&self, origin: &Authority) -> Option<Connection> {
        let mut idle = self.shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let waiting = idle.by_origin.get_mut(origin)?;
        while let Some(Waiting { connection, since }) = waiting.pop() {
            if !connection.spoiled() && since.elapsed() < self.shared.idle_timeout {
                return Some(connection);
            }
        }
        None
    }

    async fn connect(&self, origin: &Authority) -> Result<Connection, Http1Error> {
        let host = origin.host().trim_start_matches('[').trim_end_matches(']');
        let port = origin.port_u16().unwrap_or(80);
        let io = tokio::time::timeout(self.shared.connect_timeout, connect_to(host, port))
            .await
            .map_err(|_| not_sent("connect timed out"))?
            .map_err(|error| Http1Error::NotSent(error.into()))?;
        Ok(Connection { io, read: BytesMut::new() })
    }

    /// The answer, with a body that hands its connection back once it has been read to its end.
    fn answer(&self, answer: Answer, origin: Authority) -> Response<AgentBody> {
        let Answer { head, connection, framing, reusable } = answer;
        let mut body = PlainBody {
            connection: Some(connection),
            framing,
            reusable,
            home: Some(Home { pool: Arc::downgrade(&self.shared), origin }),
        };
        if body.framing.ended() {
            body.finish();
        }
        head.map(|()| AgentBody { inner: Inner::Plain(body) })
    }
}

/// Connects to the first of `host`'s addresses that accepts, with the socket options of a
/// long-lived agent connection.
async fn connect_to(host: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        match connect_one(address).await {
            Ok(stream) => return Ok(stream),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the host has no address")))
}

async fn connect_one(address: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(address).await?;
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

/// The request's head as an origin server reads it: the path in origin form, the origin in `Host`
/// (unless the request names one), the body's length, the request's other fields as they are.
fn request_head(request: &Request<Bytes>, origin: &Authority) -> Result<Vec<u8>, Http1Error> {
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(request.method().as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    if !request.headers().contains_key(header::HOST) {
        // Without user information, and without the default port (as hyper-util wrote it).
        let host = origin.as_str().rsplit('@').next().unwrap_or_default();
        let host = host.strip_suffix(":80").unwrap_or(host);
        if host.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(not_sent("the URL's host is not a header value"));
        }
        head.extend_from_slice(b"host: ");
        head.extend_from_slice(host.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    for (name, value) in request.headers() {
        // The framing is the client's to write.
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING || name == header::CONNECTION {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    let body = request.body();
    if !body.is_empty() || matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH) {
        head.extend_from_slice(b"content-length: ");
        head.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Ok(head)
}

fn not_sent(reason: &'static str) -> Http1Error {
    Http1Error::NotSent(reason.into())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the agent's answer is not HTTP/1.1: {what}"))
}

/// An answer's head, read, and what follows it.
struct Answer {
    head: Response<()>,
    connection: Connection,
    framing: Framing,
    reusable: bool,
}

/// Writes the request on `connection` and reads the answer's head.
async fn exchange(
    mut connection: Connection,
    head: &[u8],
    body: &Bytes,
    method: &Method,
) -> Result<Answer, Http1Error> {
    write_request(&mut connection.io, head, body).await?;
    loop {
        if let Some((head, framing, reusable)) = read_head(&mut connection.read, method).map_err(Http1Error::Sent)? {
            return Ok(Answer { head, connection, framing, reusable });
        }
        if connection.read.len() >= MAX_HEAD {
            return Err(Http1Error::Sent(invalid("its head is too large")));
        }
        connection.read.reserve(READ_SIZE);
        match tokio::io::AsyncReadExt::read_buf(&mut connection.io, &mut connection.read).await {
            Ok(0) => {
                let what = "the agent closed the connection before its answer was complete";
                return Err(Http1Error::Sent(io::Error::new(io::ErrorKind::UnexpectedEof, what)));
            }
            Ok(_) => {}
            Err(error) => return Err(Http1Error::Sent(error)),
        }
    }
}

/// Writes head and body, together where the socket takes them. Nothing written is [`Http1Error::NotSent`].
async fn write_request(io: &mut TcpStream, mut head: &[u8], mut body: &[u8]) -> Result<(), Http1Error> {
    let mut written = 0;
    while !head.is_empty() || !body.is_empty() {
        let n = match io.write_vectored(&[IoSlice::new(head), IoSlice::new(body)]).await {
            Ok(0) => Err(io::Error::from(io::ErrorKind::WriteZero)),
            result => result,
        };
        match n {
            Ok(n) => {
                written += n;
                let from_head = n.min(head.len());
                head = &head[from_head..];
                body = &body[n - from_head..];
            }
            Err(error) if written == 0 => return Err(Http1Error::NotSent(error.into())),
            Err(error) => return Err(Http1Error::Sent(error)),
        }
    }
    Ok(())
}

/// The answer's head if `read` holds all of it (interim answers before it dropped), with how its
/// body is framed and whether the connection may carry another request after it.
fn read_head(read: &mut BytesMut, method: &Method) -> io::Result<Option<(Response<()>, Framing, bool)>> {
    loop {
        // Most answers have a handful of fields: room for 16 first, the limit only when needed.
        let parsed = match parse_head(read, &mut [httparse::EMPTY_HEADER; 16]) {
            Err(httparse::Error::TooManyHeaders) => parse_head(read, &mut [httparse::EMPTY_HEADER; MAX_HEADERS]),
            parsed => parsed,
        };
        let head = match parsed {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(invalid("its head has too many fields")),
            Err(error) => return Err(invalid(&error.to_string())),
        };
        if (100..200).contains(&head.code) {
            if head.code == 101 {
                return Err(invalid("it switched protocols unasked"));
            }
            read.advance(head.length);
            continue;
        }
        let status = StatusCode::from_u16(head.code).map_err(|_| invalid("its status code"))?;
        let bytes = read.split_to(head.length).freeze();
        let mut headers = HeaderMap::with_capacity(head.fields.len());
        for (name, start, end) in head.fields {
            let name = HeaderName::from_bytes(&bytes[name.0..name.1]).map_err(|_| invalid("a field name"))?;
            let value =
                HeaderValue::from_maybe_shared(bytes.slice(start..end)).map_err(|_| invalid("a field value"))?;
            headers.append(name, value);
        }
        let (framing, reusable) = framing(method, status, head.version, &headers)?;
        let mut response = Response::new(());
        *response.status_mut() = status;
        *response.version_mut() = head.version;
        *response.headers_mut() = headers;
        return Ok(Some((response, framing, reusable)));
    }
}

/// An answer's head as parsed: its length, status code and version, and where each field's name and
/// value lie in it (so that the values can be shared slices of the head instead of copies).
struct ParsedHead {
    length: usize,
    code: u16,
    version: Version,
    fields: Vec<((usize, usize), usize, usize)>,
}

fn parse_head<'b>(read: &'b [u8], room: &mut [httparse::Header<'b>]) -> Result<Option<ParsedHead>, httparse::Error> {
    let mut parsed = httparse::Response::new(room);
    let length = match parsed.parse(read)? {
        httparse::Status::Complete(length) => length,
        httparse::Status::Partial => return Ok(None),
    };
    let base = read.as_ptr() as usize;
    let offset = |part: &[u8]| part.as_ptr() as usize - base;
    let fields = parsed
        .headers
        .iter()
        .map(|f| {
            let (name, value) = (offset(f.name.as_bytes()), offset(f.value));
            ((name, name + f.name.len()), value, value + f.value.len())
        })
        .collect();
    let version = if parsed.version == Some(0) { Version::HTTP_10 } else { Version::HTTP_11 };
    Ok(Some(ParsedHead { length, code: parsed.code.unwrap_or_default(), version, fields }))
}

/// How the answer's body is framed (RFC 9112 §6.3), and whether the connection may be reused.
fn framing(method: &Method, status: StatusCode, version: Version, headers: &HeaderMap) -> io::Result<(Framing, bool)> {
    let keep_alive = match version {
        Version::HTTP_10 => has_token(headers, header::CONNECTION, "keep-alive"),
        _ => !has_token(headers, header::CONNECTION, "close"),
    };
    if *method == Method::HEAD || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Ok((Framing::Length(0), keep_alive));
    }
    if headers.contains_key(header::TRANSFER_ENCODING) {
        let last = headers.get_all(header::TRANSFER_ENCODING).iter().next_back();
        let coding = last.and_then(|v| v.to_str().ok()).and_then(|v| v.rsplit(',').next()).map(str::trim);
        // With a length beside it, the coding wins, and the connection is not trusted again.
        let alone = !headers.contains_key(header::CONTENT_LENGTH);
        return Ok(match coding {
            Some(coding) if coding.eq_ignore_ascii_case("chunked") => {
                (Framing::Chunked(Chunk::Size), keep_alive && alone)
            }
            _ => (Framing::ToClose, false),
        });
    }
    let mut length = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        for item in value.to_str().map_err(|_| invalid("its Content-Length"))?.split(',') {
            let item = item.trim();
            if item.is_empty() || item.len() > 19 || !item.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid("its Content-Length"));
            }
            let n: u64 = item.parse().map_err(|_| invalid("its Content-Length"))?;
            if length.is_some_and(|m| m != n) {
                return Err(invalid("its Content-Length fields disagree"));
            }
            length = Some(n);
        }
    }
    Ok(match length {
        Some(n) => (Framing::Length(n), keep_alive),
        None => (Framing::ToClose, false),
    })
}

fn has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// How an answer's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// After this many more bytes.
    Length(u64),
    /// With the last chunk and the trailer section.
    Chunked(Chunk),
    /// With the connection.
    ToClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line is next.
    Size,
    /// This many bytes of chunk data are next.
    Data(u64),
    /// The CRLF after a chunk's data is next.
    DataEnd,
    /// Trailer fields (this many bytes of them so far), up to an empty line.
    Trailers(usize),
    Done,
}

impl Framing {
    fn ended(&self) -> bool {
        matches!(self, Framing::Length(0) | Framing::Chunked(Chunk::Done))
    }
}

/// What [`decode`] found in the bytes read.
enum Step {
    Data(Bytes),
    End,
    /// More bytes must be read.
    More,
}

/// The next piece of the body from `read`, by `framing` (which moves on).
fn decode(framing: &mut Framing, read: &mut BytesMut) -> io::Result<Step> {
    match framing {
        Framing::Length(0) => Ok(Step::End),
        Framing::Length(remaining) => {
            if read.is_empty() {
                return Ok(Step::More);
            }
            let take = (*remaining).min(read.len() as u64) as usize;
            *remaining -= take as u64;
            Ok(Step::Data(read.split_to(take).freeze()))
        }
        Framing::ToClose if read.is_empty() => Ok(Step::More),
        Framing::ToClose => Ok(Step::Data(read.split().freeze())),
        Framing::Chunked(state) => loop {
            match state {
                Chunk::Size => {
                    let Some(line) = crlf_line(read, MAX_CHUNK_LINE, "a chunk-size line")? else {
                        return Ok(Step::More);
                    };
                    let size = chunk_size(&read[..line])?;
                    read.advance(line + 2);
                    *state = if size == 0 { Chunk::Trailers(0) } else { Chunk::Data(size) };
                }
                Chunk::Data(remaining) => {
                    if read.is_empty() {
                        return Ok(Step::More);
                    }
                    let take = (*remaining).min(read.len() as u64) as usize;
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        *state = Chunk::DataEnd;
                    }
                    return Ok(Step::Data(read.split_to(take).freeze()));
                }
                Chunk::DataEnd => {
                    if read.len() < 2 {
                        return Ok(Step::More);
                    }
                    if &read[..2] != b"\r\n" {
                        return Err(invalid("a chunk runs past its size"));
                    }
                    read.advance(2);
                    *state = Chunk::Size;
                }
                Chunk::Trailers(seen) => {
                    let Some(line) = crlf_line(read, MAX_TRAILERS.saturating_sub(*seen), "its trailer section")? else {
                        return Ok(Step::More);
                    };
                    read.advance(line + 2);
                    *state = if line == 0 { Chunk::Done } else { Chunk::Trailers(*seen + line + 2) };
                }
                Chunk::Done => return Ok(Step::End),
            }
        },
    }
}

/// The length of the CRLF-ended line at the start of `read` (without the CRLF), if all of it is
/// there; an error when it is longer than `max`, or ends in a bare LF.
fn crlf_line(read: &[u8], max: usize, what: &str) -> io::Result<Option<usize>> {
    match memchr::memchr(b'\n', read) {
        Some(end) if end > max => Err(invalid(&format!("{what} is too long"))),
        Some(end) if end == 0 || read[end - 1] != b'\r' => Err(invalid(&format!("{what} ends in a bare LF"))),
        Some(end) => Ok(Some(end - 1)),
        None if read.len() > max => Err(invalid(&format!("{what} is too long"))),
        None => Ok(None),
    }
}

/// A chunk-size line's size: hex digits, then nothing or chunk extensions (ignored).
fn chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii_start();
    if digits == 0 || digits > 15 || !(rest.is_empty() || rest[0] == b';') {
        return Err(invalid("a chunk size"));
    }
    let text = std::str::from_utf8(&line[..digits]).map_err(|_| invalid("a chunk size"))?;
    u64::from_str_radix(text, 16).map_err(|_| invalid("a chunk size"))
}

/// Where a connection goes back to.
struct Home {
    pool: Weak<Shared>,
    origin: Authority,
}

impl Home {
    fn put(self, connection: Connection) {
        let Some(shared) = self.pool.upgrade() else { return };
        if shared.max_idle == 0 {
            return;
        }
        let mut idle = shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let waiting = idle.by_origin.entry(self.origin).or_default();
        if waiting.len() >= shared.max_idle {
            // The burst is over: the connections beyond the limit close now (dropped here).
            return;
        }
        waiting.push(Waiting { connection, since: Instant::now() });
        if !idle.sweeping {
            idle.sweeping = true;
            drop(idle);
            tokio::spawn(sweep(Arc::downgrade(&shared), shared.idle_timeout));
        }
    }
}

/// Closes connections that waited longer than `idle_timeout`, or that their agent closed, every
/// `idle_timeout`, while any wait.
async fn sweep(pool: Weak<Shared>, idle_timeout: Duration) {
    loop {
        tokio::time::sleep(idle_timeout.max(Duration::from_millis(100))).await;
        let Some(shared) = pool.upgrade() else { return };
        let mut idle = shared.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        idle.by_origin.retain(|_, waiting| {
            waiting.retain(|w| !w.connection.spoiled() && w.since.elapsed() < idle_timeout);
            !waiting.is_empty()
        });
        if idle.by_origin.is_empty() {
            idle.sweeping = false;
            return;
        }
    }
}

/// The body of an answer on a pooled connection: read from the socket as it is polled.
struct PlainBody {
    /// None once the body ended or broke.
    connection: Option<Connection>,
    framing: Framing,
    reusable: bool,
    home: Option<Home>,
}

impl PlainBody {
    /// The body has ended: its connection goes back if nothing follows the answer on it.
    fn finish(&mut self) {
        let Some(connection) = self.connection.take() else { return };
        if self.reusable
            && connection.read.is_empty()
            && let Some(home) = self.home.take()
        {
            home.put(connection);
        }
    }

    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        loop {
            let Some(connection) = self.connection.as_mut() else { return Poll::Ready(None) };
            let step = match decode(&mut self.framing, &mut connection.read) {
                Ok(step) => step,
                Err(error) => {
                    self.connection = None;
                    return Poll::Ready(Some(Err(error)));
                }
            };
            match step {
                Step::Data(data) => {
                    // Readers that stop at `is_end_stream` never poll for the end.
                    if self.framing.ended() {
                        self.finish();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Step::End => {
                    self.finish();
                    return Poll::Ready(None);
                }
                Step::More => {}
            }
            // A stream is polled once more after each event and then waits, perhaps for minutes:
            // it waits without a buffer, and takes one only when the socket has something.
            if connection.io.poll_read_ready(cx).is_pending() {
                connection.wait_unbuffered();
                return Poll::Pending;
            }
            if connection.read.capacity() - connection.read.len() < MIN_READ_SIZE {
                let room = match self.framing {
                    Framing::Length(n) | Framing::Chunked(Chunk::Data(n)) => {
                        usize::try_from(n).unwrap_or(usize::MAX).clamp(READ_SIZE, MAX_READ_SIZE)
                    }
                    _ => READ_SIZE,
                };
                connection.read.reserve(room);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut connection.io), cx, &mut connection.read) {
                Poll::Pending => {
                    connection.wait_unbuffered();
                    return Poll::Pending;
                }
                Poll::Ready(Err(error)) => {
                    self.connection = None;
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(Ok(0)) => {
                    self.connection = None;
                    if self.framing == Framing::ToClose {
                        return Poll::Ready(None);
                    }
                    let what = "the agent closed the connection in the middle of its answer";
                    return Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::UnexpectedEof, what))));
                }
                Poll::Ready(Ok(_)) => {}
            }
        }
    }
}

/// The error of an answer's body: the socket's, or an answer the client cannot read.
pub type AgentBodyError = Box<dyn std::error::Error + Send + Sync>;

/// An agent's answer body: read by this module's codec from a pooled HTTP/1.1 connection (which it
/// hands back once its last byte is read), or hyper's (TLS agents, HTTP/2, gRPC).
pub struct AgentBody {
    inner: Inner,
}

enum Inner {
    Plain(PlainBody),
    Hyper(Incoming),
}

impl std::fmt::Debug for AgentBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBody").field("pooled", &matches!(self.inner, Inner::Plain(_))).finish_non_exhaustive()
    }
}

impl From<Incoming> for AgentBody {
    fn from(inner: Incoming) -> AgentBody {
        AgentBody { inner: Inner::Hyper(inner) }
    }
}

impl Body for AgentBody {
    type Data = Bytes;
    type Error = AgentBodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, AgentBodyError>>> {
        match &mut self.get_mut().inner {
            Inner::Plain(body) => body.poll_frame(cx).map(|frame| frame.map(|f| f.map_err(Into::into))),
            Inner::Hyper(body) => Pin::new(body).poll_frame(cx).map(|frame| frame.map(|f| f.map_err(Into::into))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Plain(body) => body.connection.is_none() || body.framing.ended(),
            Inner::Hyper(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Plain(PlainBody { framing: Framing::Length(n), .. }) => SizeHint::with_exact(*n),
            Inner::Plain(_) => SizeHint::default(),
            Inner::Hyper(body) => body.size_hint(),
        }
    }
}

/// The fuzzer's way in (`fuzz/`, built with `--cfg fuzzing`): an agent's answer to `method` read
/// as a connection reads it, arriving in `pieces` — the head, then the body by its framing. The head
/// (once whole), the body read so far and whether it ended, or the error the connection ends with.
#[cfg(fuzzing)]
pub fn read_answer_in_pieces(method: &Method, pieces: &[&[u8]]) -> io::Result<(Option<Response<()>>, Vec<u8>, bool)> {
    let mut read = BytesMut::new();
    let mut head = None;
    let mut body = Vec::new();
    for piece in pieces {
        read.extend_from_slice(piece);
        if head.is_none() {
            match read_head(&mut read, method)? {
                Some(found) => head = Some(found),
                None if read.len() >= MAX_HEAD => return Err(invalid("its head is too large")),
                None => continue,
            }
        }
        let Some((_, framing, _)) = head.as_mut() else { continue };
        loop {
            match decode(framing, &mut read)? {
                Step::Data(data) => body.extend_from_slice(&data),
                Step::End => return Ok((head.map(|(response, ..)| response), body, true)),
                Step::More => break,
            }
        }
    }
    Ok((head.map(|(response, ..)| response), body, false))
}

#[cfg(test)]
mod tests;
