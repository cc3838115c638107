//! An incremental Server-Sent Events parser for the stream tap. It reads a copy of the bytes the
//! caller receives and hands each event's `data` to a callback; it never changes the bytes
//! themselves. Line endings may be CRLF, LF or CR, and may be split across chunks. The relay also
//! learns from it where events end (so that it hands on whole events only) and how many bytes
//! belonged to events rather than comments (keep-alives do not count as activity).

/// Largest event the parser reads by default. A bigger one ends the parse: nothing after it is read,
/// and [`SseParser::overflowed`] says so (a stream that lost an event cannot be trusted further).
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One SSE event carrying `data` (CRLF framing, like the reference SDK): the one framer of every
/// event the gateway writes.
pub fn frame(data: &[u8]) -> bytes::Bytes {
    let mut out = Vec::with_capacity(data.len() + 10);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n\r\n");
    bytes::Bytes::from(out)
}

/// Whether `headers` announce an event stream (the media type compared as RFC 9110 says: leading
/// space and case do not matter).
pub fn is_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().get(..17).is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream")))
}

#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// A field other than `data` (`event`, `id`, `retry`) was read for the event in progress.
    has_fields: bool,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to that line end.
    after_cr: bool,
    /// The current event outgrew `limit` and is being skipped.
    oversize: bool,
    /// Some event outgrew `limit` (stays set).
    overflowed: bool,
    limit: usize,
    /// Bytes of lines that are not comments, ever fed.
    event_bytes: u64,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// A parser that skips (and reports) events larger than `limit` bytes.
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            has_fields: false,
            after_cr: false,
            oversize: false,
            overflowed: false,
            limit,
            event_bytes: 0,
        }
    }

    /// True when no part of an event is pending: bytes written now cannot split an event.
    pub fn at_boundary(&self) -> bool {
        self.line.is_empty() && !self.has_data && !self.has_fields && !self.oversize
    }

    /// Whether an event ever passed the parser's limit.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Bytes of event lines (not comments, not blank lines) fed so far.
    pub fn event_bytes(&self) -> u64 {
        self.event_bytes
    }

    /// Feeds one chunk; `on_event` gets the data of every event the chunk completes.
    pub fn feed(&mut self, chunk: &[u8], on_event: &mut dyn FnMut(&[u8])) {
        self.feed_steps(chunk, &mut |data, _| {
            if let Some(data) = data {
                on_event(data);
            }
        });
    }

    /// Feeds one chunk and says where in it the stream is between events again: `on_step(Some(data),
    /// end)` for each event it completes, `on_step(None, end)` after any other line that leaves the
    /// parser between events (a comment, a blank line); `end` is the offset just past that line.
    pub fn feed_steps(&mut self, chunk: &[u8], on_step: &mut dyn FnMut(Option<&[u8]>, usize)) {
        if chunk.is_empty() || self.overflowed {
            return;
        }
        let mut offset = 0;
        if self.after_cr {
            self.after_cr = false;
            if chunk.first() == Some(&b'\n') {
                offset = 1;
            }
        }
        // Line ends found by a vector scan (`memchr2`), not a byte at a time: events are lines of JSON.
        while let Some(end) = memchr::memchr2(b'\n', b'\r', &chunk[offset..]) {
            let end = offset + end;
            self.push_line_part(&chunk[offset..end]);
            if self.overflowed {
                return;
            }
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let dispatched = self.end_line();
            if dispatched {
                on_step(Some(&self.data), next);
                self.data.clear();
            } else if self.at_boundary() {
                on_step(None, next);
            }
            offset = next;
        }
        self.push_line_part(&chunk[offset..]);
    }

    fn push_line_part(&mut self, part: &[u8]) {
        if part.is_empty() {
            return;
        }
        let first = self.line.first().or(part.first());
        if first != Some(&b':') {
            self.event_bytes += part.len() as u64;
        }
        if self.line.len() + self.data.len() + part.len() > self.limit {
            self.oversize = true;
            self.overflowed = true;
            self.line.clear();
            self.data.clear();
        }
        if !self.oversize {
            self.line.extend_from_slice(part);
        }
    }

    /// Ends the current line; true when it dispatched an event (its data is in `self.data`).
    fn end_line(&mut self) -> bool {
        if self.line.is_empty() {
            let dispatch = self.has_data && !self.oversize;
            if !dispatch {
                self.data.clear();
            }
            self.has_data = false;
            self.has_fields = false;
            self.oversize = false;
            return dispatch;
        }
        if self.oversize {
            self.line.clear();
            return false;
        }
        let line = &self.line[..];
        if line[0] != b':' {
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(i) => (&line[..i], line[i + 1..].strip_prefix(b" ").unwrap_or(&line[i + 1..])),
                None => (line, &b""[..]),
            };
            if field == b"data" {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            } else {
                self.has_fields = true;
            }
        }
        self.line.clear();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_event_stream_media_type_is_read_without_regard_to_case_space_or_parameters() {
        let with = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_str(value).unwrap());
            is_event_stream(&headers)
        };
        assert!(with("text/event-stream"));
        assert!(with(" Text/Event-Stream; charset=utf-8"));
        assert!(!with("text/event"));
        assert!(!with("application/json"));
        assert!(!is_event_stream(&http::HeaderMap::new()));
        assert_eq!(&frame(b"{}")[..], b"data: {}\r\n\r\n");
    }

    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut |data| out.push(String::from_utf8(data.to_vec()).unwrap()));
        }
        out
    }

    #[test]
    fn reads_crlf_framed_events_like_the_sdk_sends() {
        let stream = b"data: {\"a\": 1}\r\n\r\n: ping - 2026-12-02\r\n\r\ndata: {\"b\": 2}\r\n\r\n";
        assert_eq!(events(&[stream]), ["{\"a\": 1}", "{\"b\": 2}"]);
    }

    #[test]
    fn joins_multi_line_data_and_ignores_other_fields() {
        let stream = b"id: 7\nevent: error\nretry: 100\ndata: one\ndata:two\n\n";
        assert_eq!(events(&[stream]), ["one\ntwo"]);
    }

    #[test]
    fn handles_line_ends_split_across_chunks() {
        assert_eq!(events(&[b"data: x\r", b"\n\r", b"\ndata: y\r\r"]), ["x", "y"]);
        assert_eq!(events(&[b"da", b"ta: spl", b"it\n", b"\n"]), ["split"]);
        // An empty chunk between the CR and the LF of one line end.
        assert_eq!(events(&[b"data: a\r", b"", b"\ndata: b\r\n\r\n"]), ["a\nb"]);
    }

    #[test]
    fn boundary_is_known() {
        let mut parser = SseParser::new();
        parser.feed(b"data: x\n", &mut |_| {});
        assert!(!parser.at_boundary());
        parser.feed(b"\n", &mut |_| {});
        assert!(parser.at_boundary());
    }

    #[test]
    fn an_oversize_event_ends_the_parse() {
        let mut big = b"data: first\n\ndata: ".to_vec();
        big.extend(std::iter::repeat_n(b'x', MAX_EVENT_BYTES + 10));
        big.extend_from_slice(b"\n\ndata: small\n\n");
        assert_eq!(events(&[&big]), ["first"]);
    }

    #[test]
    fn steps_say_where_events_and_comments_end() {
        let mut parser = SseParser::new();
        let mut steps = Vec::new();
        let chunk = b": ka\r\n\r\ndata: {}\r\n\r\nevent: x\r\ndata: par";
        parser.feed_steps(chunk, &mut |data, end| steps.push((data.map(<[u8]>::to_vec), end)));
        assert_eq!(steps, [(None, 6), (None, 8), (Some(b"{}".to_vec()), 20)]);
        assert!(!parser.at_boundary());
        let mut parser = SseParser::new();
        parser.feed(b": comm", &mut |_| {});
        parser.feed(b"ent\r\n\r\n", &mut |_| {});
        assert_eq!(parser.event_bytes(), 0, "a comment is no event byte");
        parser.feed(b"data: 1\n\n", &mut |_| {});
        assert_eq!(parser.event_bytes(), 7);
    }

    #[test]
    fn overflow_is_reported() {
        let mut parser = SseParser::with_limit(10);
        let mut got = Vec::new();
        parser.feed(b"data: ok\n\ndata: 0123456789abc\n\ndata: no\n\n", &mut |d| got.push(d.to_vec()));
        assert!(parser.overflowed());
        assert_eq!(got, [b"ok".to_vec()]);
    }

    proptest! {
        /// However the bytes are cut into chunks, the same events come out.
        #[test]
        fn chunking_does_not_change_events(cuts in proptest::collection::vec(0usize..200, 0..12)) {
            let stream: &[u8] = b"data: {\"k\": 1}\r\n\r\n: c\r\n\r\ndata: a\r\ndata: b\r\n\r\nid: 3\ndata: z\n\ndata: w\r\r";
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % stream.len()).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for cut in cuts {
                chunks.push(&stream[start..cut]);
                start = cut;
            }
            chunks.push(&stream[start..]);
            prop_assert_eq!(events(&chunks), events(&[stream]));
        }
    }
}
