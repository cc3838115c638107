//! A backend's own card signatures, checked against the keys configured for it
//! (`backends[].card_jwks`, a JWKS file): at least one entry of `signatures` must be a valid JWS
//! (detached payload) over the RFC 8785 form of the card without `signatures`, by a key the file
//! names with the header's `kid`. Keys are never fetched from the `jku` a card names. With
//! `require_signed_card`, a card that fails is a failed health check: the backend stays out of
//! routing and the admin API shows why.

use std::path::Path;

use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::sign::canonical;

/// The keys a backend's card may be signed with.
#[derive(Debug)]
pub struct CardKeys {
    keys: JwkSet,
}

impl CardKeys {
    /// Reads a JWKS file; the error says what is wrong with it.
    pub fn load(path: &Path) -> Result<CardKeys, String> {
        let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let keys: JwkSet =
            serde_json::from_slice(&text).map_err(|e| format!("{} is not a JWKS: {e}", path.display()))?;
        if keys.keys.is_empty() {
            return Err(format!("{} holds no keys", path.display()));
        }
        Ok(CardKeys { keys })
    }

    /// The `kid` of the first of `card`'s signatures that verifies; the error says why none does.
    pub fn verify(&self, card: &Value) -> Result<String, String> {
        let Some(Value::Array(signatures)) = card.get("signatures") else {
            return Err("the card is not signed".into());
        };
        let mut unsigned = card.clone();
        if let Value::Object(map) = &mut unsigned {
            map.remove("signatures");
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = b64.encode(canonical(&unsigned));
        let mut why = String::from("the card has no signatures");
        for entry in signatures {
            match self.check(entry, &payload) {
                Ok(kid) => return Ok(kid),
                Err(reason) => why = reason,
            }
        }
        Err(why)
    }

    fn check(&self, entry: &Value, payload: &str) -> Result<String, String> {
        let protected = entry.get("protected").and_then(Value::as_str).ok_or("a signature without 'protected'")?;
        let signature = entry.get("signature").and_then(Value::as_str).ok_or("a signature without 'signature'")?;
        let header: Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(protected.trim_end_matches('='))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or("a protected header that is not base64url JSON")?;
        let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
        // Asymmetric algorithms only: a shared secret proves nothing to third parties.
        let algorithm = match alg {
            "ES256" => Algorithm::ES256,
            "ES384" => Algorithm::ES384,
            "RS256" => Algorithm::RS256,
            "RS384" => Algorithm::RS384,
            "RS512" => Algorithm::RS512,
            "PS256" => Algorithm::PS256,
            "EdDSA" => Algorithm::EdDSA,
            other => return Err(format!("algorithm {other:?} is not accepted for card signatures")),
        };
        let kid = header.get("kid").and_then(Value::as_str).ok_or("a signature header without 'kid'")?;
        let jwk = self.keys.find(kid).ok_or_else(|| format!("no configured key has kid {kid:?}"))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("key {kid:?} is unusable: {e}"))?;
        let message = format!("{protected}.{payload}");
        match jsonwebtoken::crypto::verify(signature, message.as_bytes(), &key, algorithm) {
            Ok(true) => Ok(kid.to_owned()),
            Ok(false) => Err(format!("the signature by {kid:?} does not match the card (changed after signing?)")),
            Err(e) => Err(format!("the signature by {kid:?} cannot be checked: {e}")),
        }
    }
}
