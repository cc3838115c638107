//! The hash chain that makes the log tamper-evident. Every record ends with
//! `"seq":N,"prev":"<hex>"`: `prev` is the lower-case hex SHA-256 of the previous record's exact
//! line bytes (without the line break), `seq` counts records along the chain. A chain starts with a
//! `chain_anchor` record whose `prev` is [`GENESIS`], or — in the file that follows a rotated one, or
//! after a restart — the hash of the last line before it.

use sha2::{Digest, Sha256};

use super::record::{ANCHOR_EVENT, Record};

/// `prev` of the very first record of a log.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub(crate) type Hash = [u8; 32];

pub(crate) fn line_hash(line: &[u8]) -> Hash {
    Sha256::digest(line).into()
}

/// Where the next record of a chain links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    seq: u64,
    prev: Hash,
}

impl Chain {
    pub fn genesis() -> Chain {
        Chain { seq: 0, prev: [0; 32] }
    }

    /// Continues after an existing line. A line that is not a record (a torn write) still gets
    /// linked to, so that `verify` reports it rather than the records after it.
    pub fn after(line: &[u8]) -> Chain {
        let seq = Link::parse(line).map_or(0, |link| link.seq.saturating_add(1));
        Chain { seq, prev: line_hash(line) }
    }

    /// Appends `record` to `out` as one line without the line break, linked to the chain, and
    /// moves the chain past it.
    pub fn seal(&mut self, record: &Record, out: &mut Vec<u8>) {
        let start = out.len();
        record.write_json(out);
        debug_assert_eq!(out.last(), Some(&b'}'));
        out.pop();
        if out.len() > start + 1 {
            out.push(b',');
        }
        out.extend_from_slice(b"\"seq\":");
        out.extend_from_slice(self.seq.to_string().as_bytes());
        out.extend_from_slice(b",\"prev\":\"");
        out.extend_from_slice(hex::encode(self.prev).as_bytes());
        out.extend_from_slice(b"\"}");
        self.prev = line_hash(&out[start..]);
        self.seq += 1;
    }
}

/// The chain fields of one line, as `verify` and resuming need them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub seq: u64,
    pub prev: Hash,
    pub anchor: bool,
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
            prev_file: fields.prev_file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::record::Kind;

    #[test]
    fn each_line_links_to_the_hash_of_the_one_before() {
        let mut chain = Chain::genesis();
        let mut first = Vec::new();
        chain.seal(&Record::meta(Kind::Anchor { reason: "start", prev_file: None }), &mut first);
        let mut second = Vec::new();
        chain.seal(&Record::meta(Kind::Dropped { count: 1 }), &mut second);

        let a = Link::parse(&first).unwrap();
        assert_eq!((a.seq, a.prev, a.anchor), (0, [0; 32], true));
        assert!(String::from_utf8_lossy(&first).ends_with(&format!("\"seq\":0,\"prev\":\"{GENESIS}\"}}")));
        let b = Link::parse(&second).unwrap();
        assert_eq!((b.seq, b.prev, b.anchor), (1, line_hash(&first), false));
        assert_eq!(Chain::after(&second), chain);
    }

    #[test]
    fn a_torn_line_is_linked_to_as_it_is() {
        let chain = Chain::after(b"{\"ts\":\"2026");
        assert_eq!(chain.seq, 0);
        assert_eq!(chain.prev, line_hash(b"{\"ts\":\"2026"));
        assert_eq!(Link::parse(b"{\"seq\":1,\"prev\":\"abc\"}"), None);
    }
}
