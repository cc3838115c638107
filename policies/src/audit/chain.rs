//! The hash chain that makes the log tamper-evident. Every record ends with
//! `"seq":N,"prev":"<hex>"`: `prev` is the lower-case hex HMAC-SHA256, under the configured
//! `audit.chain_key`, of the previous record's exact line bytes (without the line break) — or their
//! plain SHA-256 when no key is configured — and `seq` counts records along the chain. A chain starts
//! with a `chain_anchor` record whose `prev` is [`GENESIS`], or — in the file that follows a rotated
//! one, or after a restart — the hash of the last line before it.
//!
//! Keyed, the chain cannot be recomputed by someone who edits, reorders or deletes records without
//! the key. What a chain alone cannot show — records cut off its end — a seal shows: a
//! `chain_seal` record ends every rotated file and the active file at shutdown, and carries a `mac`
//! over its own line, so a file whose seal is gone (or forged without the key) fails `verify`.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::record::{ANCHOR_EVENT, SEAL_EVENT, Written};

/// `prev` of the very first record of a log.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub(crate) type Hash = [u8; 32];

/// The chain's key: HMAC-SHA256 under it, or plain SHA-256 without one.
#[derive(Clone, Default)]
pub struct ChainKey(Option<Keyed>);

/// A key with its HMAC already keyed (RFC 2104): the two pad blocks are hashed once, here, and every
/// digest starts from a copy of those states instead of hashing them again (two of a record's ~12
/// blocks).
#[derive(Clone)]
struct Keyed {
    /// What two chain keys are compared by.
    key: Arc<[u8]>,
    inner: Midstate,
    outer: Midstate,
}

impl PartialEq for ChainKey {
    fn eq(&self, other: &ChainKey) -> bool {
        self.0.as_ref().map(|k| &k.key) == other.0.as_ref().map(|k| &k.key)
    }
}

impl Eq for ChainKey {}

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "ChainKey(keyed)" } else { "ChainKey(none)" })
    }
}

/// Domain separation of a seal's `mac` from the chain's links.
const SEAL_CONTEXT: &[u8] = b"a2a-gateway audit seal\n";

impl ChainKey {
    pub fn new(key: Option<&[u8]>) -> ChainKey {
        ChainKey(key.filter(|k| !k.is_empty()).map(|key| {
            // RFC 2104: a key longer than a block is hashed first; the block is the key, zero-padded.
            let mut block = [0u8; 64];
            if key.len() > block.len() {
                block[..32].copy_from_slice(&Sha256::digest(key));
            } else {
                block[..key.len()].copy_from_slice(key);
            }
            let pad = |byte: u8| {
                let mut state = Midstate::START;
                state.absorb(&block.map(|b| b ^ byte));
                state
            };
            Keyed { key: Arc::from(key), inner: pad(0x36), outer: pad(0x5c) }
        }))
    }

    pub fn is_keyed(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn hash(&self, line: &[u8]) -> Hash {
        self.end(self.start().finish(line))
    }

    /// The `mac` of a seal whose line (without the `mac` field) is `line`.
    pub(crate) fn seal_mac(&self, line: &[u8]) -> Hash {
        // Seals are rare: the context and the line are hashed from one copy.
        self.hash(&[SEAL_CONTEXT, line].concat())
    }

    /// SHA-256 as it starts a message under this key: after the inner pad block, or at its start.
    fn start(&self) -> Midstate {
        self.0.as_ref().map_or(Midstate::START, |keyed| keyed.inner)
    }

    /// The digest, given the hash of the message from [`ChainKey::start`]: HMAC's outer hash over
    /// it, or itself without a key.
    fn end(&self, hash: Hash) -> Hash {
        self.0.as_ref().map_or(hash, |keyed| keyed.outer.finish(&hash))
    }

    /// Which key this is, for [`Begun`]: 0 without a key, else where its bytes live (clones share
    /// them; a key made again from the same bytes is another key here, and only costs the writer
    /// the whole hash).
    fn id(&self) -> usize {
        self.0.as_ref().map_or(0, |keyed| Arc::as_ptr(&keyed.key).cast::<u8>() as usize)
    }

    /// Begins the hash of the line `json`'s record will take: the line starts with the record's
    /// JSON, so its whole 64-byte blocks (but the last byte, the object's `}`, where the chain's
    /// fields go) are hashed here, wherever in the chain the line will go.
    pub(crate) fn begin(&self, json: &[u8]) -> Begun {
        let mut state = self.start();
        state.absorb(json.strip_suffix(b"}").unwrap_or_default());
        Begun { state, key: self.id() }
    }

    /// The hash of `line`, begun on a worker: `None` when it was begun under another key (the
    /// writer then hashes the line whole), or on other bytes than the line's.
    fn finish(&self, begun: &Begun, line: &[u8]) -> Option<Hash> {
        if begun.key != self.id() {
            return None;
        }
        // A keyed state has hashed the inner pad block before the line.
        let pad = if self.is_keyed() { 64 } else { 0 };
        let head = usize::try_from(begun.state.len).ok()?.checked_sub(pad)?;
        if line.len() < head {
            return None;
        }
        Some(self.end(begun.state.finish(&line[head..])))
    }
}

/// A line's hash begun where its record was made ([`ChainKey::begin`]). The one writer thread hashes
/// every line of the chain; with the head of a line hashed on the worker that made its record, it
/// hashes only the tail — `seq`, `prev` and the block they share with the record's last bytes: two
/// or three blocks of a ~500-byte line instead of nine. The line is the same, byte for byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Begun {
    state: Midstate,
    /// The key it was begun under ([`ChainKey::id`]).
    key: usize,
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_IV: [u32; 8] =
    [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// SHA-256 part way through a message: its state after whole 64-byte blocks, and their length. The
/// chain's one form of hashing: whole lines, lines [`Begun`] on a worker (40 bytes to queue per
/// record, where the `Sha256` hasher with its block buffer takes 112), HMAC's pad blocks.
#[derive(Debug, Clone, Copy)]
struct Midstate {
    state: [u32; 8],
    len: u64,
}

impl Midstate {
    const START: Midstate = Midstate { state: SHA256_IV, len: 0 };

    /// Hashes the whole blocks of `bytes`; what is left over (less than a block) is not hashed.
    fn absorb(&mut self, bytes: &[u8]) {
        let (blocks, _) = bytes.as_chunks::<64>();
        sha2::block_api::compress256(&mut self.state, blocks);
        self.len += (blocks.len() * 64) as u64;
    }

    /// The digest of the message: what was absorbed, then `rest` (FIPS 180-4, 5.1.1 padding).
    fn finish(mut self, rest: &[u8]) -> Hash {
        self.absorb(rest);
        let (_, tail) = rest.as_chunks::<64>();
        let bits = (self.len + tail.len() as u64) * 8;
        let mut last = [0u8; 128];
        last[..tail.len()].copy_from_slice(tail);
        last[tail.len()] = 0x80;
        let end = if tail.len() < 56 { 64 } else { 128 };
        last[end - 8..end].copy_from_slice(&bits.to_be_bytes());
        sha2::block_api::compress256(&mut self.state, last[..end].as_chunks::<64>().0);
        let mut hash = [0; 32];
        for (bytes, word) in hash.chunks_exact_mut(4).zip(self.state) {
            bytes.copy_from_slice(&word.to_be_bytes());
        }
        hash
    }
}

/// The unkeyed hash of a line (tests, and logs written without a key).
#[cfg(test)]
pub(crate) fn line_hash(line: &[u8]) -> Hash {
    ChainKey::default().hash(line)
}

/// Where the next record of a chain links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    seq: u64,
    prev: Hash,
    key: ChainKey,
}

/// `,"mac":"` + 64 hex digits + `"}`: what a seal's line has after its sealed part.
const MAC_SUFFIX_LEN: usize = 8 + 64 + 2;

impl Chain {
    pub fn genesis(key: ChainKey) -> Chain {
        Chain { seq: 0, prev: [0; 32], key }
    }

    /// Continues after an existing line. A line that is not a record (a torn write) still gets
    /// linked to, so that `verify` reports it rather than the records after it.
    pub fn after(line: &[u8], key: ChainKey) -> Chain {
        let seq = Link::parse(line).map_or(0, |link| link.seq.saturating_add(1));
        Chain { seq, prev: key.hash(line), key }
    }

    pub fn key(&self) -> &ChainKey {
        &self.key
    }

    /// Appends `record` to `out` as one line without the line break, linked to the chain, and
    /// moves the chain past it.
    pub fn seal(&mut self, record: &Written, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&record.json);
        debug_assert_eq!(out.last(), Some(&b'}'));
        out.pop();
        if out.len() > start + 1 {
            out.push(b',');
        }
        out.extend_from_slice(b"\"seq\":");
        push_decimal(out, self.seq);
        out.extend_from_slice(b",\"prev\":\"");
        push_hex(out, &self.prev);
        out.extend_from_slice(b"\"}");
        if record.seal {
            let mac = self.key.seal_mac(&out[start..]);
            out.pop();
            out.extend_from_slice(b",\"mac\":\"");
            push_hex(out, &mac);
            out.extend_from_slice(b"\"}");
        }
        let line = &out[start..];
        let begun = record.begun.as_ref().filter(|_| !record.seal);
        self.prev = begun.and_then(|begun| self.key.finish(begun, line)).unwrap_or_else(|| self.key.hash(line));
        self.seq += 1;
    }
}

/// Appends `n` in decimal.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends a hash as lower-case hex (what `hex::encode` writes, without its allocation): written
/// into an array first and appended once, not pushed byte by byte (a capacity check each).
fn push_hex(out: &mut Vec<u8>, bytes: &Hash) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 64];
    for (pair, byte) in text.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
    out.extend_from_slice(&text);
}

/// Whether `line`, a `chain_seal` record, carries the `mac` `key` gives its sealed part.
pub(crate) fn seal_is_valid(line: &[u8], key: &ChainKey) -> bool {
    let Some(cut) = line.len().checked_sub(MAC_SUFFIX_LEN) else { return false };
    let (sealed, suffix) = line.split_at(cut);
    let Some(hex_mac) = suffix.strip_prefix(b",\"mac\":\"").and_then(|s| s.strip_suffix(b"\"}")) else {
        return false;
    };
    let mut mac = [0u8; 32];
    if hex::decode_to_slice(hex_mac, &mut mac).is_err() {
        return false;
    }
    let mut original = sealed.to_vec();
    original.push(b'}');
    // Compared in constant time: the mac is a secret-derived value.
    let expected = key.seal_mac(&original);
    expected.iter().zip(mac.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The chain fields of one line, as `verify` and resuming need them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub seq: u64,
    pub prev: Hash,
    pub anchor: bool,
    pub seal: bool,
    /// An anchor's statement that the chain is keyed.
    pub keyed: bool,
    pub prev_file: Option<String>,
}

#[derive(serde::Deserialize)]
struct LinkFields {
    seq: u64,
    prev: String,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    prev_file: Option<String>,
    #[serde(default)]
    keyed: bool,
}

impl Link {
    /// `None` when the line is not a JSON object with a numeric `seq` and a 64-hex-digit `prev`.
    pub fn parse(line: &[u8]) -> Option<Link> {
        let fields: LinkFields = serde_json::from_slice(line).ok()?;
        let mut prev = [0; 32];
        if fields.prev.len() != 64 || hex::decode_to_slice(&fields.prev, &mut prev).is_err() {
            return None;
        }
        Some(Link {
            seq: fields.seq,
            prev,
            anchor: fields.event.as_deref() == Some(ANCHOR_EVENT),
            seal: fields.event.as_deref() == Some(SEAL_EVENT),
            keyed: fields.keyed,
            prev_file: fields.prev_file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    use hmac::{KeyInit, Mac};

    use crate::audit::record::{Kind, Record};

    #[test]
    fn numbers_and_hashes_are_written_as_the_formatter_and_hex_write_them() {
        for n in [0, 7, 10, 99, 1_000_001, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
        for start in [0u8, 32, 224] {
            let bytes: Hash = std::array::from_fn(|i| start.wrapping_add(i as u8));
            let mut out = Vec::new();
            push_hex(&mut out, &bytes);
            assert_eq!(out, hex::encode(bytes).into_bytes());
        }
    }

    #[test]
    fn each_line_links_to_the_hash_of_the_one_before() {
        let mut chain = Chain::genesis(ChainKey::default());
        let mut first = Vec::new();
        chain
            .seal(&Record::meta(Kind::Anchor { reason: "start", prev_file: None, keyed: false }).written(), &mut first);
        let mut second = Vec::new();
        chain.seal(
            &Record::meta(Kind::Dropped { count: 1, cause: "queue_full", first: None, last: None }).written(),
            &mut second,
        );

        let a = Link::parse(&first).unwrap();
        assert_eq!((a.seq, a.prev, a.anchor), (0, [0; 32], true));
        assert!(String::from_utf8_lossy(&first).ends_with(&format!("\"seq\":0,\"prev\":\"{GENESIS}\"}}")));
        let b = Link::parse(&second).unwrap();
        assert_eq!((b.seq, b.prev, b.anchor), (1, line_hash(&first), false));
        assert_eq!(Chain::after(&second, ChainKey::default()), chain);
    }

    #[test]
    fn a_torn_line_is_linked_to_as_it_is() {
        let chain = Chain::after(b"{\"ts\":\"2026", ChainKey::default());
        assert_eq!(chain.seq, 0);
        assert_eq!(chain.prev, line_hash(b"{\"ts\":\"2026"));
        assert_eq!(Link::parse(b"{\"seq\":1,\"prev\":\"abc\"}"), None);
    }

    #[test]
    fn a_keyed_chain_links_by_hmac_and_seals_carry_a_mac() {
        let key = ChainKey::new(Some(b"k"));
        let mut chain = Chain::genesis(key.clone());
        let mut first = Vec::new();
        chain.seal(&Record::meta(Kind::Anchor { reason: "start", prev_file: None, keyed: true }).written(), &mut first);
        let mut seal = Vec::new();
        chain.seal(&Record::meta(Kind::Seal { reason: "shutdown" }).written(), &mut seal);
        let link = Link::parse(&seal).unwrap();
        assert_eq!(link.prev, key.hash(&first));
        assert_ne!(link.prev, line_hash(&first));
        assert!(link.seal && seal_is_valid(&seal, &key));
        assert!(!seal_is_valid(&seal, &ChainKey::new(Some(b"other"))));
        assert!(!seal_is_valid(&first, &key));
        let forged = String::from_utf8(seal.clone()).unwrap().replace("shutdown", "rotate");
        assert!(!seal_is_valid(forged.as_bytes(), &key));
    }

    /// A line whose hash the worker began links the chain exactly as one hashed whole by the writer:
    /// with and without a key, for records of any length (the head ending anywhere in a block), for
    /// an empty object, and under a key other than the one it was begun under (hashed whole then).
    #[test]
    fn a_begun_hash_links_as_the_whole_line_does() {
        let long = [7u8; 65];
        let keys = [
            ChainKey::default(),
            ChainKey::new(Some(b"k")),
            ChainKey::new(Some(b"k")),
            ChainKey::new(Some(&long[..64])),
            ChainKey::new(Some(&long)),
        ];
        for (i, key) in keys.iter().enumerate() {
            for begun_with in [key, &keys[0], &keys[1]] {
                let mut whole = Chain::genesis(key.clone());
                let mut begun = Chain::genesis(key.clone());
                for len in (0..200).chain([1000, 4096]) {
                    let json = if len == 0 {
                        b"{}".to_vec()
                    } else {
                        format!("{{\"x\":\"{}\"}}", "a".repeat(len)).into_bytes()
                    };
                    let plain = Written { at: SystemTime::UNIX_EPOCH, json, seal: false, begun: None };
                    let mut early = Written { begun: None, json: plain.json.clone(), ..plain };
                    early.begin_hash(begun_with);
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    whole.seal(&plain, &mut a);
                    begun.seal(&early, &mut b);
                    assert_eq!(a, b, "key {i}, length {len}");
                    assert_eq!(whole, begun, "key {i}, length {len}");
                    assert_eq!(begun.prev, key.hash(&b));
                }
            }
        }
    }

    /// Whole hashes are SHA-256 and HMAC-SHA256 as the `sha2` and `hmac` crates compute them, for
    /// messages ending anywhere in a block (the padding's one- and two-block cases).
    #[test]
    fn whole_hashes_are_sha256_and_hmac_sha256() {
        let keys: [&[u8]; 3] = [b"k", &[9; 64], &[9; 65]];
        for len in 0..200 {
            let message: Vec<u8> = (0..len).map(|i| i as u8).collect();
            assert_eq!(ChainKey::default().hash(&message), <[u8; 32]>::from(Sha256::digest(&message)), "{len}");
            for key in keys {
                let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
                mac.update(&message);
                let expected = <[u8; 32]>::from(mac.finalize().into_bytes());
                assert_eq!(ChainKey::new(Some(key)).hash(&message), expected, "{len}, key of {}", key.len());
            }
        }
    }

    /// The pre-keyed HMAC gives HMAC-SHA256 exactly (RFC 4231, test case 2), on every use of a key,
    /// and on a key longer than a block (hashed first, RFC 2104).
    #[test]
    fn a_keyed_digest_is_hmac_sha256() {
        let key = ChainKey::new(Some(b"Jefe"));
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        for _ in 0..2 {
            assert_eq!(hex::encode(key.hash(b"what do ya want for nothing?")), expected);
        }
        let long = [0xaa_u8; 131];
        let reference = |line: &[u8]| {
            let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&long).unwrap();
            mac.update(line);
            <[u8; 32]>::from(mac.finalize().into_bytes())
        };
        let keyed = ChainKey::new(Some(&long));
        assert_eq!(keyed.hash(b"a line"), reference(b"a line"));
        assert_eq!(keyed.hash(b"another"), reference(b"another"));
        assert_ne!(keyed, key);
        assert_eq!(keyed, ChainKey::new(Some(&long)));
    }
}
