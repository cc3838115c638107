//! A gRPC caller's `grpc-timeout` is its call's deadline at the gateway, streams included, and gRPC
//! calls are counted under their own binding. The call is made by hand (a hand-encoded protobuf over
//! HTTP/2) so the deadline is the gateway's doing, not a client library's own timer.

use std::time::Duration;

use a2a_e2e::{config, example_agent, gateway, wait_for_skills};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::BIN;

/// A protobuf length-delimited field (`tag` is the field's key byte; lengths below 128).
fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
    assert!(bytes.len() < 128);
    let mut out = vec![tag, bytes.len() as u8];
    out.extend_from_slice(bytes);
    out
}

/// `SendMessageRequest {tenant, message: {message_id, role: ROLE_USER, parts: [{text}]}}`, framed.
fn send_request(tenant: &str, text: &str) -> Bytes {
    let part = field(0x0A, text.as_bytes());
    let mut message = field(0x0A, b"m-deadline");
    message.extend_from_slice(&[0x20, 0x01]);
    message.extend(field(0x2A, &part));
    let mut request = field(0x0A, tenant.as_bytes());
    request.extend(field(0x12, &message));
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(request.len() as u32).to_be_bytes());
    framed.extend(request);
    Bytes::from(framed)
}

#[tokio::test]
async fn grpc_timeout_ends_a_stream_with_deadline_exceeded_and_grpc_calls_count_as_grpc() {
    // The task runs far longer than the caller's deadline (and than the guard below).
    let slow = example_agent(BIN, "slow", &["--slow-secs", "600"]).await;
    let gw = gateway(BIN, &config(&[("slow", &slow.url)], "")).await;
    wait_for_skills(&gw.url, &["slow"]).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let request = http::Request::post(format!("{}/lf.a2a.v1.A2AService/SendStreamingMessage", gw.url))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", "1S")
        .body(Full::new(send_request("slow", "take your time")))
        .unwrap();
    // A guard against a hang, not a timing assertion: without the deadline the stream runs 600 s.
    let (headers, trailers) = tokio::time::timeout(Duration::from_secs(120), async {
        let response = client.request(request).await.expect("gRPC call");
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.expect("the stream ends");
        (headers, body.trailers().cloned().unwrap_or_default())
    })
    .await
    .expect("the gateway ends the stream at the caller's deadline");
    // Trailers after the stream's first events, or trailers-only when the deadline passed before.
    let status = trailers.get("grpc-status").or(headers.get("grpc-status")).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(status.as_deref(), Some("4"), "{headers:?} {trailers:?}");

    // The call is counted once the stack inside has its answer (it runs on after the deadline).
    let admin = gw.admin.clone().unwrap();
    let mut line = None;
    for _ in 0..100 {
        let metrics = a2a_e2e::client().get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap();
        line = metrics
            .lines()
            .find(|l| l.starts_with("a2a_requests_total{") && l.contains("operation=\"SendStreamingMessage\""))
            .map(str::to_owned);
        if line.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let line = line.expect("the gRPC call is counted");
    assert!(line.contains("binding=\"GRPC\""), "{line}");
    drop(slow);
}
