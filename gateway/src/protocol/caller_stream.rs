//! The caller side of an event stream: the stack answers in 1.0 (the relay's output, whole events
//! only), and a caller of another dialect or of gRPC gets each event in its own form. One adaptor
//! frames the 1.0 stream; an [`EventWriter`] (the caller's codec: 0.3 or early SSE in
//! [`bridge`](super::bridge), gRPC messages in [`grpc::front`](super::grpc::front)) writes what
//! each event becomes, and how the stream ends.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::BodyDataStream;
use bytes::Bytes;
use futures::Stream;
use tokio::time::Sleep;

use super::sse::SseParser;

/// What a caller-side codec writes.
pub trait EventWriter {
    /// What the caller's body is made of (bytes, or HTTP/2 frames with trailers).
    type Frame;

    /// One 1.0 event's `data`: its frames for the caller go to `out`. `false` ends the stream
    /// there (the writer has written its end).
    fn event(&mut self, data: &[u8], out: &mut VecDeque<Self::Frame>) -> bool;

    /// A comment between events (a keep-alive): dropped unless the writer passes it on.
    fn comment(&mut self, _chunk: Bytes, _out: &mut VecDeque<Self::Frame>) {}

    /// The 1.0 stream ended: `Ended` as it should, `BrokeOff` cut, `Expired` at the caller's
    /// deadline. Whatever the writer adds goes last; `Err` cuts the caller's stream too.
    fn end(&mut self, how: End, out: &mut VecDeque<Self::Frame>) -> Result<(), axum::Error>;
}

/// How the 1.0 stream ended.
#[derive(Debug)]
pub enum End {
    Ended,
    BrokeOff(axum::Error),
    Expired,
}

/// A 1.0 event stream written for the caller by `W`.
pub struct CallerStream<W: EventWriter> {
    inner: BodyDataStream,
    parser: SseParser,
    writer: W,
    out: VecDeque<W::Frame>,
    /// Cuts the caller's stream after the frames before it.
    cut: Option<axum::Error>,
    done: bool,
    /// The caller's deadline, when it set one (gRPC's `grpc-timeout`).
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<W: EventWriter> CallerStream<W> {
    /// `inner` is the relay's output: it enforced the event size limit already.
    pub fn new(inner: BodyDataStream, writer: W) -> CallerStream<W> {
        CallerStream {
            inner,
            parser: SseParser::with_limit(usize::MAX),
            writer,
            out: VecDeque::new(),
            cut: None,
            done: false,
            deadline: None,
        }
    }

    /// Ends the stream when `at` passes.
    pub fn until(mut self, at: Option<tokio::time::Instant>) -> CallerStream<W> {
        self.deadline = at.map(|at| Box::pin(tokio::time::sleep_until(at)));
        self
    }

    fn end(&mut self, how: End) {
        self.done = true;
        if let Err(error) = self.writer.end(how, &mut self.out) {
            self.cut = Some(error);
        }
    }

    /// Writes the events `chunk` completes, and the comment and blank lines in it that stand between
    /// events, in one piece where they follow one another (a line begun in an earlier chunk is not
    /// passed on in part).
    fn take(&mut self, chunk: Bytes) {
        let (writer, out, done) = (&mut self.writer, &mut self.out, &mut self.done);
        let mut start = 0;
        let mut whole = self.parser.at_boundary();
        // Comment lines not yet passed on: from there to `start`.
        let mut comments: Option<usize> = None;
        self.parser.feed_steps(&chunk, &mut |data, end| {
            if *done {
                return;
            }
            match data {
                Some(data) => {
                    if let Some(from) = comments.take() {
                        writer.comment(chunk.slice(from..start), out);
                    }
                    *done = !writer.event(data, out);
                }
                // A comment line, or the blank line after one.
                None if whole && matches!(chunk.get(start), Some(b':' | b'\r' | b'\n')) => {
                    comments.get_or_insert(start);
                }
                None => {
                    if let Some(from) = comments.take() {
                        writer.comment(chunk.slice(from..start), out);
                    }
                }
            }
            (start, whole) = (end, true);
        });
        if let Some(from) = comments.filter(|_| !self.done) {
            self.writer.comment(chunk.slice(from..start), &mut self.out);
        }
    }
}

impl<W: EventWriter + Unpin> Stream for CallerStream<W>
where
    W::Frame: Unpin,
{
    type Item = Result<W::Frame, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(frame) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if let Some(error) = this.cut.take() {
                return Poll::Ready(Some(Err(error)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(deadline) = this.deadline.as_mut()
                && deadline.as_mut().poll(cx).is_ready()
            {
                this.end(End::Expired);
                continue;
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.take(chunk),
                Poll::Ready(Some(Err(error))) => this.end(End::BrokeOff(error)),
                Poll::Ready(None) => this.end(End::Ended),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use futures::StreamExt;

    /// Writes each event's data as it is and each comment quoted, stops at `stop`, and writes how
    /// the stream ended.
    struct Echo;

    impl EventWriter for Echo {
        type Frame = String;

        fn event(&mut self, data: &[u8], out: &mut VecDeque<String>) -> bool {
            out.push_back(String::from_utf8_lossy(data).into_owned());
            data != b"stop"
        }

        fn comment(&mut self, chunk: Bytes, out: &mut VecDeque<String>) {
            out.push_back(format!("comment {:?}", String::from_utf8_lossy(&chunk)));
        }

        fn end(&mut self, how: End, out: &mut VecDeque<String>) -> Result<(), axum::Error> {
            match how {
                End::BrokeOff(error) => Err(error),
                how => {
                    out.push_back(format!("{how:?}"));
                    Ok(())
                }
            }
        }
    }

    fn stream(chunks: Vec<Result<&'static str, &'static str>>) -> CallerStream<Echo> {
        let chunks =
            chunks.into_iter().map(|c| c.map(|s| Bytes::from_static(s.as_bytes())).map_err(std::io::Error::other));
        CallerStream::new(Body::from_stream(futures::stream::iter(chunks)).into_data_stream(), Echo)
    }

    async fn written(stream: CallerStream<Echo>) -> Vec<Result<String, String>> {
        stream.map(|item| item.map_err(|e| e.to_string())).collect().await
    }

    #[tokio::test]
    async fn events_split_across_chunks_are_written_whole_and_the_end_last() {
        // A comment and the start of an event in one chunk (an agent's keep-alive before its event):
        // the comment is passed on alone, the event once whole, written by the codec.
        let out = written(stream(vec![Ok(": ka\r\n\r\ndata: o"), Ok("ne\r\n\r\n: k"), Ok("a\r\n")])).await;
        let expected = [r#"comment ": ka\r\n\r\n""#, "one", "Ended"];
        assert_eq!(
            out,
            expected.map(|s| Ok(s.to_string())),
            "the comment begun in another chunk is not passed in part"
        );
    }

    #[tokio::test]
    async fn a_writer_that_stops_gets_nothing_more() {
        let out = written(stream(vec![Ok("data: stop\r\n\r\ndata: after\r\n\r\n"), Ok("data: more\r\n\r\n")])).await;
        assert_eq!(out, [Ok("stop".into())]);
    }

    #[tokio::test]
    async fn a_broken_stream_is_cut_after_the_events_before_it() {
        let out = written(stream(vec![Ok("data: one\r\n\r\n"), Err("gone")])).await;
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0], Ok("one".into()));
        assert!(out[1].as_ref().is_err_and(|e| e.contains("gone")), "{out:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_callers_deadline_ends_the_stream() {
        let pending = Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>());
        let at = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        let out = written(CallerStream::new(pending.into_data_stream(), Echo).until(Some(at))).await;
        assert_eq!(out, [Ok("Expired".into())]);
    }
}
