//! A gRPC caller's request, and a gRPC agent's answer, for every method of the service: nothing may
//! panic; a message the gateway reads becomes a 1.0 request or a clean refusal, and what the gateway
//! writes for a gRPC agent reads back as the same message.
#![no_main]

use a2a_gateway::protocol::decode::decode_grpc;
use a2a_gateway::protocol::grpc::{self, Method, back, front};
use a2a_model::{Operation, Request, TaskState};
use arbitrary::Arbitrary;
use http::HeaderMap;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    method: u8,
    framed: bool,
    request: &'a [u8],
    answer: &'a [u8],
}

fuzz_target!(|input: Input<'_>| {
    let operation = Operation::ALL[usize::from(input.method) % Operation::ALL.len()];
    let method = Method::of(operation);
    let body = if input.framed { grpc::wire::frame(input.request).to_vec() } else { input.request.to_vec() };
    if let Ok(json) = front::request_json(&method, &body) {
        if let Ok(decoded) = decode_grpc(operation, &json, &HeaderMap::new()) {
            // The request as a gRPC agent gets it, and back.
            let (_, bytes) = back::request_message(&decoded.request, None).expect("the gateway writes what it read");
            let again = grpc::to_json(&method.input, &bytes).expect("and reads what it wrote");
            let again = decode_grpc(operation, &again, &HeaderMap::new()).expect("and takes it again");
            assert_eq!(normal(again.request), normal(decoded.request));
            // The agent's answer message, as the gateway reads it for the caller.
            let _ = back::unary_answer(&decoded.call, &method, input.answer);
            let _ = back::stream_event(&decoded.call, &method, input.answer);
        }
    }
    if let Some(status) = grpc::message("google.rpc.Status") {
        let _ = grpc::to_json(&status, input.answer);
    }
});

/// ListTasks' status filter is a plain enum in the proto: UNSPECIFIED there is no filter, as the
/// gateway reads it (`list.rs`), and a gRPC agent cannot tell the two apart.
fn normal(mut request: Request) -> Request {
    if let Request::ListTasks(list) = &mut request
        && list.status == Some(TaskState::Unspecified)
    {
        list.status = None;
    }
    request
}
