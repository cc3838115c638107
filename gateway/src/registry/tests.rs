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

fn card_with_skills(url: &str, skills: &[&str]) -> serde_json::Value {
    let skills: Vec<serde_json::Value> = skills.iter().map(|id| json!({"id": id, "name": id})).collect();
    json!({"name": "a", "version": "1", "skills": skills,
           "supportedInterfaces": [{"url": format!("{url}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]})
}

/// A registry of `config`'s backends behind a gateway named `gw`, no card read yet.
fn registry_of(config: &Config) -> Arc<Registry> {
    let cards = CardSettings {
        info: crate::config::CardInfo { name: "gw".into(), ..Default::default() },
        public_base: "http://gw".into(),
        security: None,
        push: false,
        grpc: false,
        signer: None,
    };
    crate::install_crypto_provider();
    let clients = crate::clients::BackendClients::default();
    Registry::new(config, cards, reqwest::Client::new(), clients, None).unwrap()
}

/// A self-registered agent's card that claims more than its grant (changed after admission) is
/// routed with its granted skills only, and never with a file backend's skill it may not share.
#[test]
fn an_agent_is_routed_only_with_its_granted_skills() {
    let file =
        "backends:\n  - {name: echo, url: 'http://127.0.0.1:1'}\n  - {name: team-a-x, url: 'http://127.0.0.1:2'}\n";
    for (shared, echo_routes_to) in [(vec![], vec!["echo"]), (vec!["echo".to_string()], vec!["echo", "team-a-x"])] {
        let mut config = Config::parse(file, &|_| None).unwrap();
        config.backends[1].skill_grant = Some(Arc::new(config::SkillGrant {
            credential: "team-a".into(),
            skills: vec!["team-a-*".into(), "echo".into()],
            shared_skills: shared.clone(),
        }));
        let registry = registry_of(&config);
        registry.install_card("echo", card_with_skills("http://127.0.0.1:1", &["echo"]));
        registry.install_card("team-a-x", card_with_skills("http://127.0.0.1:2", &["team-a-one", "echo", "other"]));
        let snapshot = registry.snapshot();
        let names =
            |skill: &str| -> Vec<String> { snapshot.with_skill(skill).iter().map(|b| b.name.to_string()).collect() };
        assert_eq!(names("echo"), echo_routes_to, "shared: {shared:?}");
        assert_eq!(names("team-a-one"), ["team-a-x"]);
        assert!(names("other").is_empty(), "an ungranted skill is not routed");
        let offered = String::from_utf8_lossy(&snapshot.gateway_card.body).to_string();
        assert!(!offered.contains("\"other\""), "nor offered on the gateway's card: {offered}");
        let status = registry.status().into_iter().find(|s| s.name == "team-a-x").unwrap();
        assert_eq!(status.skill_grant.map(|g| g.credential), Some("team-a".into()));
        assert!(!status.skills.contains(&"other".to_string()), "{:?}", status.skills);
    }
}

/// Validation reads each backend's own skills: the same skill id on two cards is two specs, and a
/// skill or backend the cards do not name has none.
#[test]
fn the_catalog_gives_each_backends_own_skill_spec() {
    let file = "backends:\n  - {name: one, url: 'http://127.0.0.1:1'}\n  - {name: two, url: 'http://127.0.0.1:2'}\n";
    let registry = registry_of(&Config::parse(file, &|_| None).unwrap());
    let card = |schema: serde_json::Value, modes: &[&str]| {
        let mut card = card_with_skills("http://127.0.0.1:1", &["review"]);
        card["skills"][0]["inputSchema"] = schema;
        card["skills"][0]["inputModes"] = json!(modes);
        card
    };
    registry.install_card("one", card(json!({"type": "object"}), &["application/json"]));
    registry.install_card("two", card(json!({"type": "string"}), &["text/plain"]));
    let catalog = RegistryCatalog(registry.clone());
    let one = catalog.skill("one", "review").expect("one's review");
    let two = catalog.skill("two", "review").expect("two's review");
    assert_eq!(one.input_schema.as_deref(), Some(&json!({"type": "object"})));
    assert_eq!(one.input_modes, ["application/json"]);
    assert_eq!(two.input_schema.as_deref(), Some(&json!({"type": "string"})));
    assert_eq!(two.input_modes, ["text/plain"]);
    assert!(catalog.skill("one", "other").is_none());
    assert!(catalog.skill("three", "review").is_none());
}
