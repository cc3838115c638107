//! An incremental Server-Sent Events parser for the stream tap. It reads a copy of the bytes the
//! caller receives and hands each event's `data` to a callback; it never changes or holds back the
//! bytes themselves. Line endings may be CRLF, LF or CR, and may be split across chunks.

/// Largest event the tap reads; a bigger one is skipped (the bytes still reach the caller).
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to that line end.
    after_cr: bool,
    /// The current event outgrew [`MAX_EVENT_BYTES`] and is being skipped.
    oversize: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// True when no part of an event is pending: a comment written now cannot split an event.
    pub fn at_boundary(&self) -> bool {
        self.line.is_empty() && !self.has_data && !self.oversize
    }

    /// Feeds one chunk; `on_event` gets the data of every event the chunk completes.
    pub fn feed(&mut self, mut chunk: &[u8], on_event: &mut dyn FnMut(&[u8])) {
        if chunk.is_empty() {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_line_part(&chunk[..end]);
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.end_line(on_event);
            chunk = &chunk[next..];
        }
        self.push_line_part(chunk);
    }

    fn push_line_part(&mut self, part: &[u8]) {
        if self.line.len() + self.data.len() + part.len() > MAX_EVENT_BYTES {
            self.oversize = true;
        }
        if !self.oversize {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self, on_event: &mut dyn FnMut(&[u8])) {
        if self.line.is_empty() {
            if self.has_data && !self.oversize {
                on_event(&self.data);
            }
            self.data.clear();
            self.has_data = false;
            self.oversize = false;
            return;
        }
        if self.oversize {
            self.line.clear();
            return;
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
            }
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn oversize_events_are_skipped_and_the_next_one_read() {
        let mut big = b"data: ".to_vec();
        big.extend(std::iter::repeat_n(b'x', MAX_EVENT_BYTES + 10));
        big.extend_from_slice(b"\n\ndata: small\n\n");
        assert_eq!(events(&[&big]), ["small"]);
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
