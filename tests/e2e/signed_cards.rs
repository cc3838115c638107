//! Signed Agent Cards: every card the gateway serves carries its signature, which an independent
//! JOSE implementation (Python jwcrypto, with the rfc8785 package's canonical JSON) verifies against
//! the gateway's `/.well-known/jwks.json`; a changed card does not verify.

use std::process::Command;

use a2a_e2e::{example_agent, gateway, python, repo_root};

use crate::BIN;
use crate::tls::Pki;

const KEY: &str = "ops-secret-token-0123456789abcdef";

/// Runs tests/python/verify_card.py; (ok, its result line).
fn verify(card: &str, jwks: &str, extra: &[&str]) -> (bool, String) {
    let script = repo_root().join("tests/python/verify_card.py");
    let output =
        Command::new(python()).arg(script).args(["--card", card, "--jwks", jwks]).args(extra).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[tokio::test]
async fn every_card_the_gateway_serves_verifies_against_its_jwks_in_rfc8785_form() {
    let pki = Pki::new();
    let echo = example_agent(BIN, "echo", &[]).await;
    let clarify = example_agent(BIN, "clarify", &[]).await;
    // Both key types the gateway takes: P-256 (ES256) and RSA (RS256).
    for (alg, keygen) in [
        ("ES256", vec!["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
        ("RS256", vec!["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
    ] {
        let key = pki.path(&format!("{alg}.pem"));
        let made = Command::new("openssl").args(&keygen).arg("-out").arg(&key).output().unwrap();
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        // A caller with an API key, for the extended card (the card cut to the caller's skills).
        let extra = format!(
            "gateway_identity:\n  issuer: https://gateway.test/\n  signing_key: '{}'\n  key_id: gw-{alg}\n\
             auth:\n  api_keys:\n    keys:\n      - {{id: ops, hash: '{}', caller: ops, free_form: true}}\n\
             permissions:\n  default: deny\n  rules:\n    - {{skills: [echo], callers: ['key:ops']}}\n",
            key.display(),
            a2a_policies::auth::hash_key(KEY)
        );
        let gw = gateway(BIN, &a2a_e2e::config(&[("echo", &echo.url), ("clarify", &clarify.url)], &extra)).await;
        wait_for_card(&gw.url).await;
        let jwks = format!("{}/.well-known/jwks.json", gw.url);
        for card in [
            format!("{}/.well-known/agent-card.json", gw.url),
            format!("{}/agents/echo/.well-known/agent-card.json", gw.url),
        ] {
            // Both forms: the strict 1.0 card, and the one with 0.3 fields for clients naming no version.
            for version in ["1.0", "none"] {
                let (ok, text) = verify(&card, &jwks, &["--a2a-version", version]);
                assert!(ok && text.contains(alg), "{alg} {card} {version}: {text}");
            }
            let (ok, text) = verify(&card, &jwks, &["--tamper"]);
            assert!(!ok && text.contains("InvalidJWSSignature"), "{alg} {card} tampered: {text}");
        }
        let extended = format!("{}/extendedAgentCard", gw.url);
        // Cut to the caller's one skill, so not the served card: signed anew.
        let (ok, text) = verify(&extended, &jwks, &["--bearer", KEY]);
        assert!(ok && text.contains(alg), "{alg} extended card: {text}");
        let cut: serde_json::Value = a2a_e2e::client()
            .get(&extended)
            .header("A2A-Version", "1.0")
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(cut["skills"].as_array().map(Vec::len), Some(1), "{cut}");
    }
}

/// Waits until the gateway's card lists the echo skill (the card is public; calls need the key).
async fn wait_for_card(base: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, card) = a2a_e2e::get_json(&format!("{base}/.well-known/agent-card.json")).await;
        let listed = |id: &str| card["skills"].as_array().is_some_and(|skills| skills.iter().any(|s| s["id"] == id));
        if listed("echo") && listed("clarify") {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "echo never appeared on the card");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A card signed with jwcrypto over its RFC 8785 form verifies; one changed after signing keeps its
/// backend out of routing under `require_signed_card`, with the reason in the admin API.
#[tokio::test]
async fn a_backend_card_signed_elsewhere_is_verified_and_a_tampered_one_is_kept_out() {
    let pki = Pki::new();
    let key = pki.path("agent.pem");
    let status = Command::new("openssl")
        .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(status.success());
    let script = repo_root().join("tests/python/signed_card_server.py").display().to_string();
    let serve = |name: &str, tamper: bool| {
        let jwks = pki.path(&format!("{name}.jwks.json")).display().to_string();
        let mut args =
            vec![script.clone(), "--key".into(), key.display().to_string(), "--kid".into(), "agent-1".into()];
        args.extend(["--jwks-out".into(), jwks]);
        if tamper {
            args.push("--tamper".into());
        }
        args
    };
    let python = python().display().to_string();
    let signed_args = serve("signed", false);
    let tampered_args = serve("tampered", true);
    let signed_args: Vec<&str> = signed_args.iter().map(String::as_str).collect();
    let tampered_args: Vec<&str> = tampered_args.iter().map(String::as_str).collect();
    let signed = a2a_e2e::start_command("signed-card", &python, &signed_args, "READY").await;
    let tampered = a2a_e2e::start_command("tampered-card", &python, &tampered_args, "READY").await;
    let entry = |name: &str, url: &str| {
        let jwks = pki.path(&format!("{name}.jwks.json"));
        format!("  - name: {name}\n    url: {url}\n    card_jwks: {}\n    require_signed_card: true\n", jwks.display())
    };
    let yaml = a2a_e2e::config(&[], "") + &entry("signed", &signed.url) + &entry("tampered", &tampered.url);
    let gw = gateway(BIN, &yaml).await;
    a2a_e2e::wait_for_skills(&gw.url, &["signed-echo"]).await;
    let admin = gw.admin.clone().unwrap();
    let (_, backends) = a2a_e2e::get_json(&format!("{admin}/admin/v1/backends")).await;
    let find = |name: &str| backends["backends"].as_array().and_then(|l| l.iter().find(|b| b["name"] == name)).cloned();
    let signed_state = find("signed").expect("signed listed");
    assert_eq!(signed_state["healthy"], true, "{signed_state}");
    // Provenance: the admin API names the key whose signature vouched for the card.
    assert_eq!(signed_state["card_signed_by"], "agent-1", "{signed_state}");
    let tampered_state = find("tampered").expect("tampered listed");
    assert_eq!(tampered_state["healthy"], false, "{tampered_state}");
    let reason = tampered_state["last_card_error"].as_str().unwrap_or("");
    assert!(
        reason.contains("card signature: the signature by \"agent-1\" does not match the card"),
        "{tampered_state}"
    );

    // `check`: the requirement needs keys, and the keys file must be a JWKS.
    let check = |yaml: String| {
        let path = pki.path("check.yaml");
        std::fs::write(&path, yaml).unwrap();
        let output = Command::new(BIN).arg("check").arg(&path).output().unwrap();
        (output.status.success(), String::from_utf8_lossy(&output.stderr).to_string())
    };
    let (ok, text) = check("backends:\n  - {name: a, url: 'http://127.0.0.1:9', require_signed_card: true}\n".into());
    assert!(!ok && text.contains("backends[0].require_signed_card: needs card_jwks"), "{text}");
    let (ok, text) =
        check(format!("backends:\n  - {{name: a, url: 'http://127.0.0.1:9', card_jwks: '{}'}}\n", key.display()));
    assert!(!ok && text.contains("backends[0].card_jwks:") && text.contains("is not a JWKS"), "{text}");
}
