//! Static API keys: how keys are generated and hashed for the configuration, and how a presented
//! key is found and checked.
//!
//! A generated key reads `a2a_<id>_<secret>`: `<id>` is the configured, non-secret key id, so a
//! presented key is found with one map lookup; `<secret>` is 32 random bytes in hex. The
//! configuration holds only `sha256$<salt-hex>$<hash-hex>`, the SHA-256 of salt ‖ key. A fast hash
//! is enough here because the keys carry 256 bits of randomness (nothing to brute-force, unlike
//! passwords); the salt keeps equal keys from having equal hashes. Hashes are compared in
//! constant time.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::config::ApiKeysConfig;
use super::failure::AuthFailure;
use a2a_core::{AuthMethod, Caller};

const PREFIX: &str = "a2a_";
const SALT_BYTES: usize = 16;
const SECRET_BYTES: usize = 32;

/// Whether `id` can be the `<id>` of a key: 1 to 64 of `A-Z a-z 0-9 -` (no `_`, the separator).
pub fn is_valid_key_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A new random key `a2a_<id>_<64 hex digits>`. Characters of `id` outside `A-Z a-z 0-9 -` are
/// replaced by `-` (check [`is_valid_key_id`] first to avoid surprises; [`key_id`] reads the id back).
pub fn generate_key(id: &str) -> String {
    let id: String = id.chars().take(64).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    let id = if id.is_empty() { "key".to_owned() } else { id };
    format!("{PREFIX}{id}_{}", hex::encode(random::<SECRET_BYTES>()))
}

/// The configuration form of `key`: `sha256$<salt-hex>$<hash-hex>` with a fresh random salt.
pub fn hash_key(key: &str) -> String {
    let salt = random::<SALT_BYTES>();
    format!("sha256${}${}", hex::encode(salt), hex::encode(digest(&salt, key)))
}

/// The `<id>` of a key shaped `a2a_<id>_<secret>`.
pub fn key_id(key: &str) -> Option<&str> {
    let (id, secret) = key.strip_prefix(PREFIX)?.split_once('_')?;
    (is_valid_key_id(id) && !secret.is_empty()).then_some(id)
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // The OS random source failing is not something a key generator can work around.
    getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
    bytes
}

fn digest(salt: &[u8], key: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

/// Compares without an early exit, so the time taken does not tell how many bytes matched.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A parsed `sha256$<salt-hex>$<hash-hex>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredHash {
    salt: Vec<u8>,
    hash: [u8; 32],
}

impl StoredHash {
    pub(crate) fn parse(text: &str) -> Option<StoredHash> {
        let mut parts = text.split('$');
        let (Some("sha256"), Some(salt), Some(hash), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let salt = hex::decode(salt).ok().filter(|s| s.len() >= 8)?;
        let hash = hex::decode(hash).ok()?.try_into().ok()?;
        Some(StoredHash { salt, hash })
    }

    fn matches(&self, key: &str) -> bool {
        constant_time_eq(&digest(&self.salt, key), &self.hash)
    }
}

struct Entry {
    id: Arc<str>,
    hash: StoredHash,
    revoked: bool,
    caller: Caller,
}

/// The configured keys, indexed by id; free-form keys are kept apart and checked one by one.
pub(crate) struct ApiKeyStore {
    by_id: HashMap<Box<str>, Entry>,
    free_form: Vec<Entry>,
}

impl ApiKeyStore {
    /// Builds the store from a validated configuration (entries that do not parse are skipped).
    pub(crate) fn new(config: &ApiKeysConfig) -> ApiKeyStore {
        let mut by_id = HashMap::with_capacity(config.keys.len());
        let mut free_form = Vec::new();
        for key in &config.keys {
            let Some(hash) = StoredHash::parse(key.hash.expose()) else { continue };
            let id: Arc<str> = Arc::from(key.id.as_str());
            let entry = Entry {
                id: id.clone(),
                hash,
                revoked: key.revoked,
                caller: Caller {
                    id: Arc::from(format!("key:{}", key.caller)),
                    tenant: key.tenant.as_deref().map(Arc::from),
                    scopes: Arc::from(key.scopes.clone()),
                    auth: AuthMethod::ApiKey { key_id: id },
                },
            };
            if key.free_form {
                free_form.push(entry);
            } else {
                by_id.insert(Box::from(key.id.as_str()), entry);
            }
        }
        ApiKeyStore { by_id, free_form }
    }

    /// Checks a presented key. `Ok(None)`: the token is not shaped like a key and matches no
    /// free-form key, so another method may judge it. A key-shaped token with an unknown id is
    /// refused here, so that a stale key is never sent on to an introspection endpoint.
    pub(crate) fn verify(&self, key: &str) -> Result<Option<Caller>, AuthFailure> {
        let id = key_id(key);
        if let Some(entry) = id.and_then(|id| self.by_id.get(id)) {
            return Self::judge(entry, key).map(Some);
        }
        if let Some(entry) = self.free_form.iter().find(|entry| entry.hash.matches(key)) {
            return Self::judge(entry, key).map(Some);
        }
        match id {
            Some(id) => Err(AuthFailure::UnknownKeyId(id.to_owned())),
            None => Ok(None),
        }
    }

    /// Like [`verify`](Self::verify), for a header that can only hold an API key.
    pub(crate) fn verify_only(&self, key: &str) -> Result<Caller, AuthFailure> {
        self.verify(key)?.ok_or(AuthFailure::NotAnApiKey)
    }

    fn judge(entry: &Entry, key: &str) -> Result<Caller, AuthFailure> {
        if !entry.hash.matches(key) {
            return Err(AuthFailure::WrongKeySecret(entry.id.to_string()));
        }
        if entry.revoked {
            return Err(AuthFailure::RevokedKey(entry.id.to_string()));
        }
        Ok(entry.caller.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::config::ApiKeyConfig;

    fn store(keys: Vec<ApiKeyConfig>) -> ApiKeyStore {
        ApiKeyStore::new(&ApiKeysConfig { header: "X-API-Key".into(), keys })
    }

    fn entry(id: &str, key: &str) -> ApiKeyConfig {
        ApiKeyConfig {
            id: id.into(),
            hash: hash_key(key).into(),
            caller: format!("{id}-client"),
            tenant: Some("acme".into()),
            scopes: vec!["echo".into()],
            revoked: false,
            free_form: false,
        }
    }

    #[test]
    fn generated_keys_carry_their_id() {
        let key = generate_key("ci-bot");
        assert_eq!(key_id(&key), Some("ci-bot"));
        assert_eq!(key.len(), "a2a_ci-bot_".len() + 64);
        assert_ne!(generate_key("ci-bot"), key, "keys are random");
        assert_eq!(key_id(&generate_key("bad_id!")), Some("bad-id-"));
        assert_eq!(key_id("a2a_x_"), None);
        assert_eq!(key_id("demo-token"), None);
    }

    #[test]
    fn hashes_are_salted_and_verify() {
        let (a, b) = (hash_key("a2a_k_secret"), hash_key("a2a_k_secret"));
        assert_ne!(a, b, "a fresh salt each time");
        assert!(StoredHash::parse(&a).unwrap().matches("a2a_k_secret"));
        assert!(!StoredHash::parse(&a).unwrap().matches("a2a_k_secreT"));
        assert!(StoredHash::parse("sha256$00$zz").is_none());
        assert!(StoredHash::parse("md5$0011223344556677$00").is_none());
    }

    #[test]
    fn a_key_is_found_by_id_and_checked() {
        let key = generate_key("demo");
        let store = store(vec![entry("demo", &key), entry("other", &generate_key("other"))]);
        let caller = store.verify_only(&key).unwrap();
        assert_eq!(&*caller.id, "key:demo-client");
        assert_eq!(caller.tenant.as_deref(), Some("acme"));
        assert_eq!(caller.auth, AuthMethod::ApiKey { key_id: Arc::from("demo") });
        // Change the last secret digit (whatever it was: a fixed replacement equals it 1 time in 16).
        let last = if key.ends_with('0') { '1' } else { '0' };
        let wrong = format!("{}{last}", &key[..key.len() - 1]);
        assert_ne!(wrong, key);
        assert!(matches!(store.verify_only(&wrong), Err(AuthFailure::WrongKeySecret(id)) if id == "demo"));
        assert!(matches!(store.verify_only(&generate_key("nobody")), Err(AuthFailure::UnknownKeyId(_))));
    }

    #[test]
    fn revoked_and_free_form_keys() {
        let key = generate_key("old");
        let mut revoked = entry("old", &key);
        revoked.revoked = true;
        let mut demo = entry("demo", "demo-token");
        demo.free_form = true;
        let store = store(vec![revoked, demo]);
        assert!(matches!(store.verify_only(&key), Err(AuthFailure::RevokedKey(_))));
        assert_eq!(&*store.verify_only("demo-token").unwrap().id, "key:demo-client");
        assert!(store.verify("demo-token2").unwrap().is_none());
    }

    #[test]
    fn constant_time_eq_compares_every_byte() {
        let a = [7u8; 32];
        let mut b = a;
        assert!(constant_time_eq(&a, &b));
        b[31] ^= 1;
        assert!(!constant_time_eq(&a, &b));
    }
}
