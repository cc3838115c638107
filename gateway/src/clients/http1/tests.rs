use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn pool() -> Http1Pool {
    Http1Pool::new(&Limits::default())
}

fn post(url: String) -> Request<Full<Bytes>> {
    Request::post(url).body(Full::new(Bytes::from_static(b"{}"))).unwrap()
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
        // Let the connection task see the agent's close (the request below must not depend on it:
        // a request given back unsent goes out on a new connection).
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
