//! An agent's HTTP/1.1 answer read by the gateway's own client, arriving in arbitrary pieces: nothing
//! may panic; a body framed by length never runs past it; where the bytes are cut must not change
//! the head, the body or whether it ended (only how far an error lets it read).
#![no_main]

use a2a_gateway::clients::read_answer_in_pieces;
use a2a_gateway_fuzz::pieces;
use arbitrary::Arbitrary;
use http::Method;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    head: bool,
    cuts: Vec<u16>,
    answer: &'a [u8],
}

fuzz_target!(|input: Input<'_>| {
    let method = if input.head { Method::HEAD } else { Method::POST };
    let whole = read_answer_in_pieces(&method, &[input.answer]);
    let cut = read_answer_in_pieces(&method, &pieces(input.answer, &input.cuts));
    if let Ok((Some(head), body, _)) = &whole {
        if let Some(length) = head.headers().get(http::header::CONTENT_LENGTH) {
            if let Ok(length) = length.to_str().unwrap_or_default().trim().parse::<usize>() {
                if !head.headers().contains_key(http::header::TRANSFER_ENCODING) {
                    assert!(body.len() <= length, "a body of {} past its length {length}", body.len());
                }
            }
        }
    }
    match (whole, cut) {
        (Ok((head_a, body_a, ended_a)), Ok((head_b, body_b, ended_b))) => {
            assert_eq!(
                head_a.map(|h| (h.status(), h.headers().clone())),
                head_b.map(|h| (h.status(), h.headers().clone()))
            );
            assert_eq!(body_a, body_b);
            assert_eq!(ended_a, ended_b);
        }
        (Err(_), Err(_)) => {}
        // Cut, an error may show only once the bytes that make it arrive, and never otherwise.
        (whole, cut) => {
            panic!("whole: {:?}; in pieces: {:?}", whole.map(|r| (r.1.len(), r.2)), cut.map(|r| (r.1.len(), r.2)))
        }
    }
});
