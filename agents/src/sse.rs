//! Server-Sent Events framing as the reference SDK writes it: one `data: <json>` line per event,
//! CRLF line ends (`data: …\r\n\r\n`), no `id:` / `retry:`, and a `: ping - <timestamp>` comment
//! every 15 s. Each event is its own body chunk, flushed as soon as it is produced.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use futures::stream::{self, BoxStream, StreamExt};
use http::header;
use serde::Serialize;
use tokio::time::{Instant, Interval, MissedTickBehavior, interval_at};

const PING_EVERY: Duration = Duration::from_secs(15);

/// One event frame: `data: ` + compact JSON + CRLF CRLF.
pub fn frame(event: &impl Serialize) -> Bytes {
    let json = serde_json::to_vec(event).unwrap_or_else(|_| b"null".to_vec());
    let mut buf = BytesMut::with_capacity(json.len() + 10);
    buf.put_slice(b"data: ");
    buf.put_slice(&json);
    buf.put_slice(b"\r\n\r\n");
    buf.freeze()
}

/// A keep-alive comment frame.
fn ping_frame() -> Bytes {
    Bytes::from(format!(": ping - {}\r\n\r\n", crate::time::now_rfc3339()))
}

/// A `200 text/event-stream` response relaying `frames`, with pings between them while the
/// stream is quiet; the body ends when `frames` ends.
pub fn response(frames: BoxStream<'static, Bytes>) -> Response {
    let mut ping = interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let body = stream::unfold((frames, ping), next_chunk).map(Ok::<_, Infallible>);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

async fn next_chunk(
    (mut frames, mut ping): (BoxStream<'static, Bytes>, Interval),
) -> Option<(Bytes, (BoxStream<'static, Bytes>, Interval))> {
    tokio::select! {
        // An event ready at the same time as a ping goes first.
        biased;
        frame = frames.next() => frame.map(|frame| (frame, (frames, ping))),
        _ = ping.tick() => Some((ping_frame(), (frames, ping))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_use_crlf_and_compact_json() {
        let frame = frame(&json!({"result": {"task": {"id": "t"}}}));
        assert_eq!(&frame[..], b"data: {\"result\":{\"task\":{\"id\":\"t\"}}}\r\n\r\n");
    }

    #[tokio::test(start_paused = true)]
    async fn pings_while_quiet_and_ends_with_the_events() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Bytes>();
        let response = response(rx.boxed());
        let mut body = response.into_body().into_data_stream();
        tokio::time::advance(PING_EVERY + Duration::from_millis(1)).await;
        let chunk = body.next().await.and_then(Result::ok).unwrap_or_default();
        assert!(chunk.starts_with(b": ping - "), "{chunk:?}");
        assert!(chunk.ends_with(b"\r\n\r\n"));
        let _ = tx.unbounded_send(Bytes::from_static(b"data: 1\r\n\r\n"));
        drop(tx);
        let chunk = body.next().await.and_then(Result::ok).unwrap_or_default();
        assert_eq!(&chunk[..], b"data: 1\r\n\r\n");
        assert!(body.next().await.is_none());
    }
}
