//! The gateway's own ListTasks page tokens: opaque, bound to the caller and to the query they
//! continue, and tamper-proof (an HMAC-SHA256 tag under a key only the gateway holds). A token that
//! does not verify reads as invalid, whoever made it: another caller's token is worth nothing.

use sha2::{Digest, Sha256};

const TAG_BYTES: usize = 16;

pub struct PageTokens {
    key: [u8; 32],
}

impl PageTokens {
    /// Tokens under a fresh random key (valid for as long as this process keeps it).
    pub fn random() -> PageTokens {
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        PageTokens { key }
    }

    /// Tokens under a given key (shared by replicas).
    pub fn from_key(key: [u8; 32]) -> PageTokens {
        PageTokens { key }
    }

    /// Tokens under a key derived from a configured secret: every replica derives the same.
    pub fn from_secret(secret: &[u8]) -> PageTokens {
        let key = Sha256::new().chain_update(b"a2a-gateway page tokens\0").chain_update(secret).finalize();
        PageTokens { key: key.into() }
    }

    /// The token that continues the list `query` selects (its fields: agent, context, ...) for
    /// `owner` after position `cursor`.
    pub fn seal(&self, owner: &str, query: &[&str], cursor: u64) -> String {
        let mut token = cursor.to_be_bytes().to_vec();
        token.extend_from_slice(&self.tag(owner, query, cursor));
        hex::encode(token)
    }

    /// The position a token continues from, if it was made by this gateway for `owner` and `query`.
    pub fn open(&self, token: &str, owner: &str, query: &[&str]) -> Option<u64> {
        let bytes = hex::decode(token).ok().filter(|b| b.len() == 8 + TAG_BYTES)?;
        let cursor = u64::from_be_bytes(bytes[..8].try_into().ok()?);
        let expected = self.tag(owner, query, cursor);
        // Constant time: a mismatch must not say how much of the tag was right.
        let diff = expected.iter().zip(&bytes[8..]).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then_some(cursor)
    }

    fn tag(&self, owner: &str, query: &[&str], cursor: u64) -> [u8; TAG_BYTES] {
        // Every field length-prefixed: no two (owner, query) pairs write the same message, whatever
        // bytes their fields hold (a separator could also appear inside a context id).
        let mut message = Vec::with_capacity(64);
        for field in std::iter::once(&owner).chain(query) {
            message.extend_from_slice(&(field.len() as u64).to_be_bytes());
            message.extend_from_slice(field.as_bytes());
        }
        message.extend_from_slice(&cursor.to_be_bytes());
        let mac = hmac_sha256(&self.key, &message);
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&mac[..TAG_BYTES]);
        tag
    }
}

/// HMAC-SHA256 (RFC 2104) with a key of at most one block.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    outer.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_only_for_its_owner_and_query() {
        let tokens = PageTokens::random();
        let token = tokens.seal("alice", &["c1"], 42);
        assert_eq!(tokens.open(&token, "alice", &["c1"]), Some(42));
        assert_eq!(tokens.open(&token, "bob", &["c1"]), None);
        assert_eq!(tokens.open(&token, "alice", &["c2"]), None);
        assert_eq!(PageTokens::random().open(&token, "alice", &["c1"]), None, "another key");
        let mut forged = hex::decode(&token).unwrap();
        forged[7] ^= 1;
        assert_eq!(tokens.open(&hex::encode(forged), "alice", &["c1"]), None, "a changed cursor");
        assert_eq!(tokens.open("not-hex", "alice", &[]), None);
    }

    #[test]
    fn fields_do_not_run_into_each_other() {
        // Separators inside ids (a context id may hold `|` or NUL) must not make two queries, or an
        // owner and a query, read the same.
        let tokens = PageTokens::random();
        let token = tokens.seal("alice", &["", "x|", "", ""], 7);
        assert_eq!(tokens.open(&token, "alice", &["", "x|", "", ""]), Some(7));
        assert_eq!(tokens.open(&token, "alice", &["", "x", "", "|"]), None);
        assert_eq!(tokens.open(&token, "alice", &["", "x", "|", ""]), None);
        let token = tokens.seal("al\0ice", &["c"], 7);
        assert_eq!(tokens.open(&token, "al", &["ice\0c"]), None);
        let token = tokens.seal("a", &["bc"], 7);
        assert_eq!(tokens.open(&token, "ab", &["c"]), None);
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2_shape() {
        // RFC 4231 test case 2 uses a 4-byte key; padded with zeros to 32 bytes it is the same key.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = hmac_sha256(&key, b"what do ya want for nothing?");
        assert_eq!(hex::encode(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }
}
