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
        let status = Command::new("openssl").args(&keygen).arg("-out").arg(&key).status().unwrap();
        assert!(status.success());
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
