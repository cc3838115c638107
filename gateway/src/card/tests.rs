use super::*;

fn backend_card() -> Value {
    json!({
        "name": "Echo Agent",
        "description": "Echoes; docs at http://10.0.0.5:8000/docs",
        "supportedInterfaces": [
            {"url": "http://10.0.0.5:8000/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://10.0.0.5:8000/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "url": "http://10.0.0.5:8000/a2a/jsonrpc",
        "preferredTransport": "JSONRPC",
        "iconUrl": "http://10.0.0.5:8000/icon.png",
        "provider": {"organization": "x", "url": "http://10.0.0.5:8000/"},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "capabilities": {"streaming": true},
        "signatures": [{"protected": "x", "signature": "y"}],
        "skills": [
            {"id": "echo", "name": "Echo", "description": "runs on 10.0.0.5:8000", "tags": []},
            {"id": "shout", "name": "Shout", "description": "d", "tags": [], "inputModes": ["application/json"]}
        ],
        "futureField": {"kept": true}
    })
}

fn names() -> Redactor {
    Redactor::new(["http://10.0.0.5:8000", "http://10.0.0.5:8000/a2a/jsonrpc"])
}

fn settings(public_base: &str) -> CardSettings {
    CardSettings {
        info: CardInfo::default(),
        public_base: public_base.into(),
        security: None,
        push: false,
        grpc: false,
        signer: None,
    }
}

fn backend<'a>(card: &'a Value, names: &'a Redactor) -> BackendCard<'a> {
    BackendCard { name: "echo", card, redactor: names, has_jsonrpc: true, has_rest: true }
}

#[test]
fn gateway_card_unions_skills_and_hides_backends() {
    let card = backend_card();
    let names = names();
    let other = json!({"skills": [{"id": "echo", "name": "dup"}, {"id": "review-pr", "name": "Review"}]});
    let backends = [backend(&card, &names), BackendCard { name: "rev", card: &other, ..backend(&card, &names) }];
    let out = gateway_card(&settings("https://gw.example"), &backends);
    let ids: Vec<&str> = out["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["echo", "shout", "review-pr"]);
    assert_eq!(out["skills"][0]["name"], "Echo", "first declaration wins");
    assert_eq!(out["skills"][0]["inputModes"], json!(["text/plain"]), "backend defaults made explicit");
    assert_eq!(out["skills"][1]["inputModes"], json!(["application/json"]));
    assert_eq!(out["supportedInterfaces"][0]["url"], "https://gw.example/");
    assert_eq!(out["supportedInterfaces"][1]["url"], "https://gw.example");
    let text = serde_json::to_string(&out).unwrap();
    assert!(!text.contains("10.0.0.5"), "{text}");
}

#[test]
fn agent_card_points_at_the_agent_path_and_publishes_only_allowed_fields() {
    let card = backend_card();
    let names = names();
    let out = agent_card(&settings("https://gw.example"), &backend(&card, &names));
    assert_eq!(out["supportedInterfaces"][0]["url"], "https://gw.example/agents/echo/");
    assert_eq!(out["supportedInterfaces"][1]["url"], "https://gw.example/agents/echo");
    for dropped in ["iconUrl", "futureField", "signatures", "documentationUrl"] {
        assert!(out.get(dropped).is_none(), "{dropped}");
    }
    assert_eq!(out["provider"], Value::Null, "the backend's provider is not the gateway's to vouch for");
    assert_eq!(out["skills"][0]["description"], "runs on [redacted]");
    assert_eq!(out["description"], "Echoes; docs at [redacted]");
    // The backend's own 0.3 fields are replaced by the gateway's 0.3 JSON-RPC endpoint.
    assert_eq!(out["url"], "https://gw.example/agents/echo/");
    assert_eq!((&out["preferredTransport"], &out["protocolVersion"]), (&json!("JSONRPC"), &json!("0.3.0")));
    let text = serde_json::to_string(&out).unwrap();
    assert!(!text.contains("10.0.0.5"), "{text}");
}

#[test]
fn agent_card_lists_only_the_bindings_the_backend_has() {
    let card = backend_card();
    let names = names();
    let only_rpc = BackendCard { has_rest: false, ..backend(&card, &names) };
    let out = agent_card(&settings("http://gw"), &only_rpc);
    // The JSON-RPC endpoint, in 1.0 and 0.3.
    assert_eq!(out["supportedInterfaces"].as_array().unwrap().len(), 2);
    assert_eq!(out["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(out["supportedInterfaces"][1]["protocolVersion"], "0.3");
    assert_eq!(out["url"], "http://gw/agents/echo/");
}

#[test]
fn cards_advertise_the_gateways_security_not_the_backends() {
    let mut card = backend_card();
    card["securitySchemes"] = json!({"internal": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
    card["skills"][0]["securityRequirements"] = json!([{"schemes": {"internal": {"list": []}}}]);
    let names = names();
    let open = agent_card(&settings("http://gw"), &backend(&card, &names));
    assert!(open.get("securitySchemes").is_none());
    assert!(open["skills"][0].get("securityRequirements").is_none());
    assert_eq!(open["capabilities"]["extendedAgentCard"], false);
    let security =
        Security { schemes: json!({"bearer": {}}), requirements: json!([{"schemes": {"bearer": {"list": []}}}]) };
    let locked = CardSettings { security: Some(security.clone()), ..settings("http://gw") };
    for out in [agent_card(&locked, &backend(&card, &names)), gateway_card(&locked, &[backend(&card, &names)])] {
        assert_eq!(out["securitySchemes"], security.schemes);
        assert_eq!(out["securityRequirements"], security.requirements);
        assert_eq!(out["capabilities"]["extendedAgentCard"], true);
    }
}

#[test]
fn etag_follows_content() {
    let a = CardDoc::new(&json!({"a": 1}));
    assert_eq!(a.etag, CardDoc::new(&json!({"a": 1})).etag);
    assert_ne!(a.etag, CardDoc::new(&json!({"a": 2})).etag);
    assert!(a.etag.starts_with("W/\""));
}

mod leaks {
    //! Property: whatever field of a backend's card hides the backend's address, and in whatever
    //! spelling, no card the gateway serves carries it.
    use super::*;
    use proptest::prelude::*;

    const PORT: u16 = 47123;
    const PATH: &str = "/internal-rpc-x9";

    /// The backend's address in the spellings that leaked before.
    fn spellings() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            format!("http://127.0.0.1:{PORT}{PATH}"),
            format!("127.0.0.1:{PORT}"),
            format!("localhost:{PORT}"),
            format!("LocalHost:{PORT}"),
            format!("[::1]:{PORT}"),
            "::1".to_string(),
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "127.0.0.1:9".to_string(),
            format!("other-host:{PORT}"),
            format!("http%3A%2F%2F127.0.0.1%3A{PORT}"),
            format!("http%253A%252F%252Flocalhost%253A{PORT}"),
            "127%2E0%2E0%2E1".to_string(),
            format!("http:\\/\\/localhost:{PORT}"),
            format!("ws://[::1]:{PORT}/x"),
            PATH.to_string(),
            format!("http://127.0.0.1:{PORT}{PATH}?q=1#f"),
        ])
    }

    /// Text around the address: words without digits (so a port cannot appear by chance), joined
    /// to it by a space or punctuation (letters would make it another name).
    fn wrapped() -> impl Strategy<Value = String> {
        let joints = || prop::sample::select(vec![" ", "(", ")", ",", "=", "'", "\"", "<", ">", ";", "/", "\n"]);
        ("[a-z ]{0,8}", joints(), spellings(), joints(), "[a-z ]{0,8}")
            .prop_map(|(a, j1, leak, j2, b)| format!("{a}{j1}{leak}{j2}{b}"))
    }

    /// Every place a string goes in a card, the address in one (or, with `all`, every) of them.
    fn card(leak: String, at: usize, all: bool) -> Value {
        let mut n = 0;
        let mut s = |plain: &str| {
            n += 1;
            if all || n == at { leak.clone() } else { plain.to_string() }
        };
        json!({
            "name": s("Lab"), "description": s("a lab"), "version": s("1"),
            "supportedInterfaces": [{"url": format!("http://127.0.0.1:{PORT}{PATH}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "url": format!("http://localhost:{PORT}/"),
            "provider": {"organization": s("org"), "url": s("https://example.org")},
            "documentationUrl": s("https://docs"), "iconUrl": s("https://icon"),
            "capabilities": {"streaming": true, "extensions": [{"uri": s("https://ext.example/v1"), "description": s("ext"), "params": {s("key"): s("value")}}]},
            "securitySchemes": {s("scheme"): {"httpAuthSecurityScheme": {"scheme": s("Bearer")}}},
            "defaultInputModes": [s("text/plain")], "defaultOutputModes": [s("text/plain")],
            "skills": [{"id": s("skill"), "name": s("Skill"), "description": s("does things"), "tags": [s("tag")],
                "examples": [s("an example")], "inputModes": [s("application/json")], "outputModes": [s("text/plain")],
                "inputSchema": {"type": "object", "properties": {s("field"): {"type": "string", "description": s("a field"), "default": PORT}},
                    "$id": s("urn:schema")},
                "securityRequirements": [{"schemes": {s("scheme"): {"list": [s("scope")]}}}],
                s("x-extra"): s("extra")}],
            s("x-vendor"): {s("k"): s("v")},
        })
    }

    /// Whether `text` (a served card) still carries the address in any spelling.
    fn leaks(text: &str) -> Option<String> {
        let mut forms = vec![text.to_lowercase()];
        for _ in 0..3 {
            let last = forms.last().cloned().unwrap_or_default();
            let decoded = crate::redact::tests_support::percent_decode(&last).replace("\\/", "/");
            forms.push(decoded.to_lowercase());
        }
        let needles = ["127.0.0.1", "localhost", "::1", "127%2e", PATH];
        for form in &forms {
            for needle in needles {
                if form.contains(needle) {
                    return Some(needle.to_string());
                }
            }
            if form.contains(&format!(":{PORT}")) || form.contains(&PORT.to_string()) {
                return Some(PORT.to_string());
            }
        }
        None
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn no_served_card_carries_the_backends_address(leak in wrapped(), at in 1usize..40, all in prop::bool::weighted(0.1)) {
            let card = card(leak, at, all);
            let redactor = Redactor::new([format!("http://127.0.0.1:{PORT}").as_str(), &format!("http://127.0.0.1:{PORT}{PATH}")]);
            let view = BackendCard { name: "lab", card: &card, redactor: &redactor, has_jsonrpc: true, has_rest: true };
            let settings = CardSettings { info: CardInfo::default(), public_base: "https://gw.example".into(), security: None, push: false, grpc: false, signer: None };
            for served in [agent_card(&settings, &view), gateway_card(&settings, std::slice::from_ref(&view))] {
                let text = serde_json::to_string(&served).unwrap();
                prop_assert!(leaks(&text).is_none(), "{:?} leaked: {}", leaks(&text), text);
                // The 0.3 and early renderings are made from the same card.
                let model: a2a_model::AgentCard = serde_json::from_value(served).unwrap();
                for rendered in [
                    serde_json::to_string(&crate::protocol::translate::v03::card_from_v1(model.clone())).unwrap(),
                    serde_json::to_string(&crate::protocol::translate::early::card_from_v1(model)).unwrap(),
                ] {
                    prop_assert!(leaks(&rendered).is_none(), "{}", rendered);
                }
            }
        }
    }
}

#[test]
fn the_strict_form_drops_only_the_0_3_fields_and_dates_survive_unchanged_rebuilds() {
    let card = json!({"name": "n", "url": "u", "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0",
            "capabilities": {"pushNotifications": true}});
    let mut doc = CardDoc::new(&card);
    let strict: Value = serde_json::from_slice(&doc.strict).unwrap();
    assert_eq!(strict, json!({"name": "n", "capabilities": {"pushNotifications": true}}));
    assert_ne!(doc.etag, doc.strict_etag);
    assert!(doc.push);
    doc.modified = UNIX_EPOCH;
    assert_eq!(CardDoc::new(&card).since(Some(&doc)).modified, UNIX_EPOCH);
    assert_ne!(CardDoc::new(&json!({"name": "m"})).since(Some(&doc)).modified, UNIX_EPOCH);
}

#[test]
fn grpc_interface_is_a_grpc_target() {
    assert_eq!(super::grpc_target("http://127.0.0.1:8080"), "127.0.0.1:8080");
    assert_eq!(super::grpc_target("https://gw.example"), "https://gw.example:443", "over TLS the scheme says so");
    assert_eq!(super::grpc_target("http://[::1]:9000"), "[::1]:9000");
}

/// The card a 0.3 client reads carries the gateway's authentication in 0.3 form too (as the reference
/// SDK merges both forms); the strict 1.0 card only the 1.0 form.
#[test]
fn the_0_3_form_carries_authentication_the_strict_form_does_not() {
    let scheme = json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}});
    let security =
        Security { schemes: json!({"bearer": scheme}), requirements: json!([{"schemes": {"bearer": {"list": []}}}]) };
    let locked = CardSettings { security: Some(security), ..settings("http://gw") };
    let doc = CardDoc::new(&gateway_card(&locked, &[]));
    let hybrid: Value = serde_json::from_slice(&doc.body).unwrap();
    let bearer = &hybrid["securitySchemes"]["bearer"];
    assert_eq!(
        (&bearer["type"], &bearer["scheme"], &bearer["bearerFormat"]),
        (&json!("http"), &json!("Bearer"), &json!("JWT"))
    );
    assert_eq!(bearer["httpAuthSecurityScheme"], scheme["httpAuthSecurityScheme"]);
    assert_eq!(hybrid["security"], json!([{"bearer": []}]));
    assert_eq!(hybrid["supportsAuthenticatedExtendedCard"], true);
    let strict: Value = serde_json::from_slice(&doc.strict).unwrap();
    assert_eq!(strict["securitySchemes"], json!({"bearer": scheme}));
    assert!(strict.get("security").is_none() && strict.get("supportsAuthenticatedExtendedCard").is_none());
}

/// `card.unversioned_fetch: "1.0"`: a client that names no version gets the strict 1.0 card, from
/// the gateway and from each agent path, authentication in 1.0 form only; the default serves it the
/// 0.3 fields.
#[test]
fn an_unversioned_fetch_can_be_read_as_1_0() {
    let scheme = json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}});
    let security =
        Security { schemes: json!({"bearer": scheme}), requirements: json!([{"schemes": {"bearer": {"list": []}}}]) };
    let strict_info = CardInfo { unversioned_fetch: crate::config::UnversionedFetch::V1, ..CardInfo::default() };
    let strict = CardSettings { info: strict_info, security: Some(security.clone()), ..settings("http://gw") };
    let lenient = CardSettings { security: Some(security), ..settings("http://gw") };
    let card = backend_card();
    let names = names();
    for (settings, v03) in [(&strict, false), (&lenient, true)] {
        for built in [gateway_card(settings, &[backend(&card, &names)]), agent_card(settings, &backend(&card, &names))]
        {
            let doc = CardDoc::new(&built);
            let served: Value = serde_json::from_slice(&doc.body).unwrap();
            for field in V03_TOP_LEVEL.iter().chain(&["security", "supportsAuthenticatedExtendedCard"]) {
                assert_eq!(served.get(*field).is_some(), v03, "{field} with v03 = {v03}");
            }
            assert_eq!(served["supportedInterfaces"], built["supportedInterfaces"]);
            assert_eq!(doc.body == doc.strict, !v03, "the unversioned form is the strict form only when set");
        }
    }
}
