use super::*;
use serde_json::json;

#[test]
fn interface_paths_prefer_1_x_and_skip_0_3() {
    let card = json!({"supportedInterfaces": [
        {"url": "http://x/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "http://x/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "http://x/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "http://x/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    ]});
    assert_eq!(interface_paths(&card, Dialect::V1), (Some("/a2a/jsonrpc".into()), Some("/a2a/rest".into())));
    assert_eq!(interface_paths(&json!({"url": "http://x/"}), Dialect::V1), (None, None));
    assert_eq!(interfaces_of(&card, Some(Dialect::V03)), (Dialect::V03, Some("/old".into()), None));
}

#[test]
fn cards_of_0_3_and_early_agents_are_read_in_their_dialect() {
    let v03 = normalize_card(json!({"name": "a", "url": "http://x/rpc", "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC", "version": "1", "skills": [{"id": "s", "name": "S"}]}));
    assert_eq!(interfaces_of(&v03, None), (Dialect::V03, Some("/rpc".into()), None));
    assert_eq!(v03["skills"][0]["id"], "s");
    let rest = normalize_card(json!({"name": "a", "url": "http://x/", "protocolVersion": "0.3.0",
        "preferredTransport": "HTTP+JSON", "version": "1", "skills": []}));
    assert_eq!(interfaces_of(&rest, None), (Dialect::V03, None, Some("/".into())));
    let early = normalize_card(json!({"name": "e", "url": "http://x/", "version": "0.1.0",
            "skills": [{"id": "early-echo", "name": "E", "inputSchema": {"type": "object"}}]}));
    assert_eq!(interfaces_of(&early, None), (Dialect::Early, None, Some("/".into())));
    assert_eq!(early["skills"][0]["inputSchema"], json!({"type": "object"}));
}

#[test]
fn interfaces_are_joined_to_the_configured_origin() {
    let base = Url::parse("http://10.0.0.5:8000").unwrap();
    assert_eq!(on_origin(&base, "/a2a/jsonrpc").as_str(), "http://10.0.0.5:8000/a2a/jsonrpc");
}
