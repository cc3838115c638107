use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn pool() -> Http1Pool {
    Http1Pool::new(&Limits::default())
}

fn post(url: String) -> Request<Bytes> {
    Request::post(url).body(Bytes::from_static(b"{}")).unwrap()
}

/// An agent on raw TCP: for each connection, answers `answers` requests with `answer` (read as one
/// head, bodies are `{}`), then closes; records each request's head and counts connections.
async fn raw_agent(answer: &'static str, answers: usize) -> (SocketAddr, Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (seen, counted) = (heads.clone(), connections.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                for _ in 0..answers {
                    // The head and its 2-byte body.
                    let request = loop {
                        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n")
                            && buffer.len() >= end + 6
                        {
                            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
                            buffer.drain(..end + 6);
                            break Some(head);
                        }
                        let mut chunk = [0; 4096];
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => break None,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let Some(head) = request else { return };
                    seen.lock().unwrap().push(head);
                    if stream.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, heads, connections)
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{\"a\":1}";

#[tokio::test]
async fn requests_go_in_origin_form_with_the_host_header() {
    let (addr, heads, _) = raw_agent(OK, 1).await;
    let response = pool().send(post(format!("http://{addr}/a2a/v1?x=1"))).await.unwrap();
    assert_eq!(response.into_body().collect().await.unwrap().to_bytes(), "{\"a\":1}");
    let head = heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.starts_with("post /a2a/v1?x=1 http/1.1\r\n"), "{head}");
    assert!(head.contains(&format!("\r\nhost: {addr}")), "{head}");
}

#[tokio::test]
async fn a_connection_read_to_its_end_carries_the_next_request() {
    let (addr, heads, connections) = raw_agent(OK, 10).await;
    let pool = pool();
    for _ in 0..3 {
        let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
        response.into_body().collect().await.unwrap();
    }
    assert_eq!(heads.lock().unwrap().len(), 3);
    assert_eq!(connections.load(Ordering::SeqCst), 1, "all three on one connection");
}

#[tokio::test]
async fn a_connection_whose_answer_was_left_unread_is_not_reused() {
    let (addr, heads, connections) = raw_agent("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{", 10).await;
    let pool = pool();
    let first = pool.send(post(format!("http://{addr}/"))).await.unwrap();
    drop(first);
    let second = pool.send(post(format!("http://{addr}/"))).await.unwrap();
    drop(second);
    assert_eq!(heads.lock().unwrap().len(), 2);
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

/// An agent that closes a connection after its answer (without saying so): the next request goes out
/// on a new connection, not on the closed one.
#[tokio::test]
async fn a_connection_the_agent_closed_is_not_used_again() {
    let (addr, heads, connections) = raw_agent(OK, 1).await;
    let pool = pool();
    for _ in 0..3 {
        let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
        response.into_body().collect().await.unwrap();
        // Let the runtime see the agent's close (the pool asks its record of the socket's readiness).
        tokio::task::yield_now().await;
    }
    assert_eq!(heads.lock().unwrap().len(), 3);
    assert_eq!(connections.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_empty_answer_hands_its_connection_back_at_once() {
    let (addr, _, connections) = raw_agent("HTTP/1.1 204 No Content\r\n\r\n", 10).await;
    let pool = pool();
    for _ in 0..2 {
        // The body is never polled: it is empty from the start.
        let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
        assert_eq!(response.status(), 204);
    }
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refused_connection_is_not_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let error = pool().send(post(format!("http://{addr}/"))).await.unwrap_err();
    assert!(matches!(error, Http1Error::NotSent(_)), "{error:?}");
}

#[tokio::test]
async fn an_answer_cut_off_was_sent() {
    // The agent reads the request and closes without a word: it may have acted on it.
    let (addr, _, _) = raw_agent("", 1).await;
    let error = pool().send(post(format!("http://{addr}/"))).await.unwrap_err();
    assert!(matches!(error, Http1Error::Sent(_)), "{error:?}");
}

#[tokio::test]
async fn waiting_connections_close_after_the_idle_timeout() {
    let (addr, _, connections) = raw_agent(OK, 10).await;
    let limits = Limits { backend_idle_timeout: Duration::from_millis(200), ..Limits::default() };
    let pool = Http1Pool::new(&limits);
    let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
    response.into_body().collect().await.unwrap();
    let waiting = || pool.shared.idle.lock().unwrap().by_origin.values().map(Vec::len).sum::<usize>();
    assert_eq!(waiting(), 1);
    // No timing asserted: the sweep gets up to 10 s.
    for _ in 0..200 {
        if waiting() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(waiting(), 0, "swept");
    assert!(!pool.shared.idle.lock().unwrap().sweeping, "the sweep ends when nothing waits");
    let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
    response.into_body().collect().await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

/// Sends one request to an agent that answers `answer` and returns the answer's status, body (or
/// the body's error) and how many connections the agent saw after a second request.
async fn answered(answer: &'static str) -> (Result<(u16, Result<Bytes, String>), String>, usize) {
    let (addr, _, connections) = raw_agent(answer, 10).await;
    let pool = pool();
    let first = match pool.send(post(format!("http://{addr}/"))).await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.map(|b| b.to_bytes()).map_err(|e| e.to_string());
            Ok((status, body))
        }
        Err(error) => Err(error.to_string()),
    };
    tokio::task::yield_now().await;
    if let Ok(response) = pool.send(post(format!("http://{addr}/"))).await {
        let _ = response.into_body().collect().await;
    }
    (first, connections.load(Ordering::SeqCst))
}

fn ok(body: &str) -> Result<(u16, Result<Bytes, String>), String> {
    Ok((200, Ok(Bytes::copy_from_slice(body.as_bytes()))))
}

#[tokio::test]
async fn a_chunked_answer_is_decoded_and_its_connection_reused() {
    let chunked = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nx-trailer: 1\r\n\r\n";
    assert_eq!(answered(chunked).await, (ok("{\"a\":1}"), 1));
}

#[tokio::test]
async fn interim_answers_are_skipped() {
    let answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
    assert_eq!(answered(answer).await, (ok("{}"), 1));
}

#[tokio::test]
async fn an_answer_without_a_length_ends_with_its_connection_which_is_not_reused() {
    // raw_agent closes after its answers: 10 here, but this one's end is the connection's.
    let (addr, _, connections) = raw_agent("HTTP/1.1 200 OK\r\n\r\n{\"a\":1}", 1).await;
    let pool = pool();
    let response = pool.send(post(format!("http://{addr}/"))).await.unwrap();
    assert_eq!(response.into_body().collect().await.unwrap().to_bytes(), "{\"a\":1}");
    let _ = pool.send(post(format!("http://{addr}/"))).await;
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_the_agent_asked_to_close_or_with_bytes_past_its_answer_is_not_reused() {
    let close = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}";
    assert_eq!(answered(close).await, (ok("{}"), 2));
    let extra = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}junk";
    assert_eq!(answered(extra).await, (ok("{}"), 2));
    let http10 = "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}";
    assert_eq!(answered(http10).await, (ok("{}"), 2));
}

#[tokio::test]
async fn answers_the_client_cannot_read_are_errors_of_the_answer() {
    for (answer, what) in [
        ("HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}", "disagree"),
        ("HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\n{}", "Content-Length"),
        ("HTTP/1.1 200 OK\r\ncontent-length: 0x2\r\n\r\n{}", "Content-Length"),
        ("HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\n\r\n", "switched"),
        ("SMTP ready\r\n\r\n", "not HTTP/1.1"),
        ("HTTP/1.1 200 OK\r\nbad header\r\n\r\n", "not HTTP/1.1"),
    ] {
        let (first, _) = answered(answer).await;
        let error = first.expect_err(answer);
        assert!(error.contains(what), "{answer:?}: {error}");
    }
}

#[tokio::test]
async fn broken_chunked_bodies_are_errors_of_the_body() {
    for (answer, what) in [
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "chunk size"),
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n", "bare LF"),
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n", "past its size"),
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffffffffffff\r\n", "chunk size"),
    ] {
        let (first, _) = answered(answer).await;
        let (status, body) = first.expect(answer);
        assert_eq!(status, 200);
        let error = body.expect_err(answer);
        assert!(error.contains(what), "{answer:?}: {error}");
    }
}

#[tokio::test]
async fn an_answer_cut_off_in_its_body_is_an_error_of_the_body() {
    let (addr, _, _) = raw_agent("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}", 1).await;
    let response = pool().send(post(format!("http://{addr}/"))).await.unwrap();
    let error = response.into_body().collect().await.unwrap_err();
    assert!(error.to_string().contains("in the middle of its answer"), "{error}");
}

#[tokio::test]
async fn an_endless_head_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut request = [0; 1024];
        let _ = stream.read(&mut request).await;
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n").await;
        let field = format!("x-long: {}\r\n", "a".repeat(1000));
        while stream.write_all(field.as_bytes()).await.is_ok() {}
    });
    let error = pool().send(post(format!("http://{addr}/"))).await.unwrap_err();
    assert!(matches!(error, Http1Error::Sent(_)), "{error:?}");
    assert!(error.to_string().contains("too large") || error.to_string().contains("too many"), "{error}");
}

#[tokio::test]
async fn the_request_carries_its_length_and_not_the_callers_framing() {
    let (addr, heads, _) = raw_agent(OK, 1).await;
    let mut request = post(format!("http://{addr}/"));
    request.headers_mut().insert(header::TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    request.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from_static("99"));
    request.headers_mut().insert("x-kept", HeaderValue::from_static("yes"));
    let response = pool().send(request).await.unwrap();
    response.into_body().collect().await.unwrap();
    let head = heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.contains("\r\ncontent-length: 2") && head.contains("\r\nx-kept: yes"), "{head}");
    // (Not just "99": the host field's port may hold it.)
    assert!(!head.contains("chunked") && !head.contains("content-length: 99"), "{head}");
}

#[test]
fn chunk_sizes_are_hex_with_extensions_ignored() {
    assert_eq!(chunk_size(b"1a").unwrap(), 26);
    assert_eq!(chunk_size(b"0").unwrap(), 0);
    assert_eq!(chunk_size(b"A ;name=value").unwrap(), 10);
    for bad in [&b""[..], b";x", b"1 2", b"-1", b"1000000000000000"] {
        assert!(chunk_size(bad).is_err(), "{bad:?}");
    }
}

/// An event stream waits between events with no read buffer (an idle stream's memory: README).
#[tokio::test]
async fn a_waiting_stream_holds_no_read_buffer() {
    // Two answers: the agent keeps the connection open after the first.
    let (addr, _, _) = raw_agent("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\ndata:\r\n", 2).await;
    let response = pool().send(post(format!("http://{addr}/"))).await.unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "data:");
    let pending = futures::poll!(body.frame());
    assert!(pending.is_pending());
    let Inner::Plain(plain) = &body.inner else { panic!("a pooled connection's body") };
    assert_eq!(plain.connection.as_ref().unwrap().read.capacity(), 0);
}

/// The trailer section's limit counts every line: one line just under it leaves no room for the
/// empty line that ends the section (this overflowed the count once).
#[test]
fn a_trailer_section_over_its_limit_is_refused() {
    let mut framing = Framing::Chunked(Chunk::Trailers(0));
    let mut read = BytesMut::new();
    read.extend_from_slice(format!("x: {}\r\n\r\n", "a".repeat(MAX_TRAILERS - 4)).as_bytes());
    let error = decode(&mut framing, &mut read).err().expect("over the limit");
    assert!(error.to_string().contains("trailer section is too long"), "{error}");
    let mut framing = Framing::Chunked(Chunk::Trailers(0));
    let mut read = BytesMut::from(&b"x: 1\r\ny: 2\r\n\r\n"[..]);
    assert!(matches!(decode(&mut framing, &mut read), Ok(Step::End)));
    assert!(read.is_empty());
}
