//! An agent's event stream (SSE, or gRPC's length-prefixed messages) arriving in arbitrary pieces:
//! nothing may panic, and where the stream is cut must not change what is read from it.
#![no_main]

use a2a_gateway::protocol::grpc::wire::Deframer;
use a2a_gateway::protocol::sse::SseParser;
use a2a_gateway_fuzz::pieces;
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    /// The event size limit, up to 4 KiB.
    limit: u16,
    cuts: Vec<u16>,
    stream: &'a [u8],
}

/// What a parser made of a stream: each event's data, and what it reports at the end.
#[derive(Debug, PartialEq)]
struct Read {
    events: Vec<Vec<u8>>,
    event_bytes: u64,
    overflowed: bool,
    at_boundary: bool,
}

fn sse(limit: usize, pieces: &[&[u8]]) -> Read {
    let mut parser = SseParser::with_limit(limit);
    let mut read = Read { events: Vec::new(), event_bytes: 0, overflowed: false, at_boundary: true };
    for piece in pieces {
        let mut last = 0;
        parser.feed_steps(piece, &mut |data, end| {
            assert!(end <= piece.len() && end >= last, "step end {end} after {last} in a piece of {}", piece.len());
            last = end;
            if let Some(data) = data {
                assert!(data.len() <= limit, "an event of {} bytes passed the limit {limit}", data.len());
                read.events.push(data.to_vec());
            }
        });
    }
    read.event_bytes = parser.event_bytes();
    read.overflowed = parser.overflowed();
    read.at_boundary = parser.at_boundary();
    read
}

fn grpc(max: usize, pieces: &[&[u8]]) -> (Vec<Vec<u8>>, Option<String>) {
    let mut deframer = Deframer::new(max);
    let mut messages = Vec::new();
    for piece in pieces {
        deframer.push(piece);
        loop {
            match deframer.next_message() {
                Ok(Some(message)) => {
                    assert!(message.len() <= max);
                    messages.push(message.to_vec());
                }
                Ok(None) => break,
                Err(error) => return (messages, Some(error.to_string())),
            }
        }
    }
    (messages, deframer.finish().err().map(|e| e.to_string()))
}

fuzz_target!(|input: Input<'_>| {
    let limit = usize::from(input.limit % 4096) + 1;
    let cut = pieces(input.stream, &input.cuts);

    let whole = sse(limit, &[input.stream]);
    let in_pieces = sse(limit, &cut);
    // The events and the verdicts may not move; nor may the byte count, until an event overflows
    // (the parser stops there, at the end of the piece that overflowed, and the stream ends).
    assert_eq!(whole.events, in_pieces.events);
    assert_eq!(whole.overflowed, in_pieces.overflowed);
    if !whole.overflowed {
        assert_eq!(whole.event_bytes, in_pieces.event_bytes);
        assert_eq!(whole.at_boundary, in_pieces.at_boundary);
    }

    let max = usize::from(input.limit);
    assert_eq!(grpc(max, &[input.stream]), grpc(max, &cut));
});
