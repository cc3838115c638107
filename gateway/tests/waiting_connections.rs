//! A connection that waits holds no buffer it is not using: the heap an open, quiet event stream
//! costs in hyper (as the gateway serves and forwards it), counted byte for byte by a counting
//! allocator. Stock hyper 1.12 keeps 44,955 bytes per server + client pair here (an 8 KiB read buffer
//! and an 8 KiB head buffer on each side, ~9 KiB of client dispatch-channel slots, the tasks); with the
//! vendored patches (vendor/README.md) 4,615. This fails if a patch goes missing on an upgrade.
//!
//! The only test in this binary: dhat's allocator counts the whole process.

use std::convert::Infallible;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn live_bytes() -> isize {
    dhat::HeapStats::get().curr_bytes as isize
}

/// One event, then quiet for as long as the test holds the connection.
fn quiet_stream(_: Request<Incoming>) -> std::future::Ready<Result<Response<StreamBody<EventStream>>, Infallible>> {
    let first = futures::stream::once(async { Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"data: {}\n\n"))) });
    let body: EventStream = Box::pin(first.chain(futures::stream::pending()));
    std::future::ready(Ok(Response::builder()
        .header("content-type", "text/event-stream")
        .body(StreamBody::new(body))
        .unwrap()))
}

type EventStream = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send>>;

/// Opens a connection, asks for the stream and reads its first event; returns what keeps it open.
async fn open(addr: std::net::SocketAddr) -> impl Sized {
    let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(io).await.unwrap();
    tokio::spawn(connection);
    let request = Request::post("/").header("host", "gateway").body(Empty::new()).unwrap();
    let mut body = sender.send_request(request).await.unwrap().into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.data_ref().map(|d| d.as_ref()), Some(&b"data: {}\n\n"[..]));
    (sender, body)
}

#[tokio::test(flavor = "current_thread")]
async fn a_quiet_event_stream_holds_no_idle_buffers_in_hyper() {
    const STREAMS: isize = 64;
    let _profiler = dhat::Profiler::builder().testing().build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(quiet_stream));
            tokio::spawn(connection);
        }
    });
    // Warm: the runtime's and the sockets' one-time allocations are not the streams'.
    let warm = open(addr).await;
    tokio::task::yield_now().await;
    let before = live_bytes();
    let mut held = Vec::new();
    for _ in 0..STREAMS {
        held.push(open(addr).await);
    }
    // Let both ends of every connection reach their wait.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let per_stream = (live_bytes() - before) / STREAMS;
    drop((held, warm));
    assert!(per_stream < 8 * 1024, "a quiet stream holds {per_stream} bytes of heap (server and client ends)");
}
