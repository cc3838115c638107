use super::*;
use serde_json::json;

#[test]
fn security_schemes_change_shape_both_ways() {
    let cases = [
        (
            json!({"type": "apiKey", "in": "header", "name": "X-Key", "description": "d"}),
            json!({"apiKeySecurityScheme": {"location": "header", "name": "X-Key", "description": "d"}}),
        ),
        (
            json!({"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}),
            json!({"httpAuthSecurityScheme": {"scheme": "bearer", "bearerFormat": "JWT"}}),
        ),
        (
            json!({"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}}),
            json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}}}),
        ),
        (
            json!({"type": "openIdConnect", "openIdConnectUrl": "https://o"}),
            json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://o"}}),
        ),
        (json!({"type": "mutualTLS"}), json!({"mtlsSecurityScheme": {}})),
    ];
    for (v03, v1) in cases {
        assert_eq!(security_scheme_to_v1(v03.clone()), v1);
        assert_eq!(security_scheme_from_v1(v1), v03);
    }
    let unknown = json!({"type": "carrier-pigeon"});
    assert_eq!(security_scheme_to_v1(unknown.clone()), unknown);
}

#[test]
fn one_oauth_flow_survives_into_1_0() {
    let two = json!({"type": "oauth2", "flows": {
            "implicit": {"authorizationUrl": "https://a", "scopes": {}},
            "authorizationCode": {"authorizationUrl": "https://a", "tokenUrl": "https://t", "scopes": {}}}});
    let v1 = security_scheme_to_v1(two);
    let flows = v1["oauth2SecurityScheme"]["flows"].as_object().expect("flows");
    assert_eq!(flows.keys().collect::<Vec<_>>(), ["authorizationCode"]);
    let device = json!({"oauth2SecurityScheme": {"flows": {"deviceCode": {"tokenUrl": "https://t"}}}});
    assert_eq!(security_scheme_from_v1(device), json!({"type": "oauth2", "flows": {}}));
}

#[test]
fn interfaces_fold_into_url_and_additional_interfaces() {
    let v03: AgentCard = serde_json::from_value(json!({
            "name": "n", "description": "d", "version": "1", "url": "http://a/rpc", "preferredTransport": "JSONRPC",
            "protocolVersion": "0.3.0", "capabilities": {"stateTransitionHistory": true},
            "additionalInterfaces": [{"url": "http://a/rpc", "transport": "JSONRPC"}, {"url": "http://a/rest", "transport": "HTTP+JSON"}],
            "defaultInputModes": [], "defaultOutputModes": [], "skills": []}))
        .expect("card");
    let v1 = card_to_v1(v03);
    let listed: Vec<_> =
        v1.supported_interfaces.iter().map(|i| (i.url.as_str(), i.protocol_binding.as_str())).collect();
    assert_eq!(listed, [("http://a/rpc", "JSONRPC"), ("http://a/rest", "HTTP+JSON")]);
    let back = card_from_v1(v1);
    assert_eq!(back.url, "http://a/rpc");
    assert_eq!(
        back.additional_interfaces,
        [AgentInterface { url: "http://a/rest".into(), transport: "HTTP+JSON".into() }]
    );
    assert_eq!(back.capabilities.state_transition_history, None);
}

#[test]
fn a_pure_1_0_card_still_gets_a_primary_interface() {
    let v1 = model::AgentCard {
        supported_interfaces: vec![model::AgentInterface {
            url: "http://g/rpc".into(),
            protocol_binding: "JSONRPC".into(),
            tenant: Some("acme".into()),
            protocol_version: Some("1.0".into()),
        }],
        ..Default::default()
    };
    let v03 = card_from_v1(v1.clone());
    assert_eq!((v03.url.as_str(), v03.protocol_version.as_deref()), ("http://g/rpc", Some(DEFAULT_VERSION)));
    let hybrid = hybrid_card(&v1);
    assert_eq!(hybrid["url"], "http://g/rpc");
    assert_eq!(hybrid["supportedInterfaces"][0]["tenant"], "acme");
}
