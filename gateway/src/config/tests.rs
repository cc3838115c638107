use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

const MINIMAL: &str = "backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n";

#[test]
fn minimal_config_gets_defaults() {
    let config = Config::parse(MINIMAL, &no_env).unwrap();
    assert_eq!(config.listeners.public, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(config.health.unhealthy_after, 3);
    assert_eq!(config.backends[0].card_path, "/.well-known/agent-card.json");
}

#[test]
fn unknown_key_is_named_with_its_path() {
    let text = "backends:\n  - name: echo\n    url: http://127.0.0.1:9001\n    colour: blue\n";
    let err = Config::parse(text, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("backends[0]"), "{err}");
    assert!(err.contains("colour"), "{err}");
}

#[test]
fn bad_url_is_named_with_its_path() {
    let text = "backends:\n  - name: a\n    url: http://127.0.0.1:1\n  - name: b\n    url: ftp://x\n";
    let err = Config::parse(text, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("backends[1].url:"), "{err}");
}

#[test]
fn duplicate_and_unsafe_names_are_refused() {
    let dup = "backends:\n  - {name: a, url: 'http://h:1'}\n  - {name: a, url: 'http://h:2'}\n";
    assert!(Config::parse(dup, &no_env).unwrap_err().to_string().starts_with("backends[1].name"));
    let bad = "backends:\n  - {name: 'A/b', url: 'http://h:1'}\n";
    assert!(Config::parse(bad, &no_env).unwrap_err().to_string().starts_with("backends[0].name"));
}

#[test]
fn bad_duration_is_named_with_its_path() {
    let text = format!("health:\n  interval: soon\n{MINIMAL}");
    let err = Config::parse(&text, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("health.interval"), "{err}");
}

#[test]
fn env_references_are_expanded_and_missing_ones_named() {
    let text = "public_url: '${GW_URL}'\nbackends:\n  - name: echo\n    url: 'http://${HOST}:9001'\n";
    let env = |name: &str| match name {
        "GW_URL" => Some("https://gw.example".to_string()),
        "HOST" => Some("127.0.0.1".to_string()),
        _ => None,
    };
    let config = Config::parse(text, &env).unwrap();
    assert_eq!(config.public_url.as_deref(), Some("https://gw.example"));
    assert_eq!(config.backends[0].url, "http://127.0.0.1:9001");
    let err = Config::parse(text, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("public_url:") && err.contains("GW_URL"), "{err}");
}

#[test]
fn dollar_dollar_escapes_a_reference() {
    assert_eq!(expand_str("a$${B}c", "p", &no_env).unwrap(), "a${B}c");
}

#[test]
fn push_needs_the_signing_key_and_reads_its_allow_list() {
    let push = "push:\n  allow_http: true\n  allow: ['127.0.0.1', '10.0.0.0/8', '[::1]:9000']\n  backoff: 50ms\n";
    let err = Config::parse(&format!("{push}{MINIMAL}"), &no_env).unwrap_err().to_string();
    assert!(err.starts_with("push:") && err.contains("gateway_identity"), "{err}");
    let bad = "push:\n  allow: ['example.com']\n";
    let err = Config::parse(&format!("{bad}{MINIMAL}"), &no_env).unwrap_err().to_string();
    assert!(err.starts_with("push.allow"), "{err}");
    let off = "push:\n  enabled: false\n";
    let config = Config::parse(&format!("{off}{MINIMAL}"), &no_env).unwrap();
    assert!(!config.push.unwrap().enabled);
    let typo = "push:\n  alow_http: true\n";
    assert!(Config::parse(&format!("{typo}{MINIMAL}"), &no_env).unwrap_err().to_string().contains("alow_http"));
}

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert!(parse_duration("10").is_err());
    assert!(parse_duration("-1s").is_err());
}
