//! The identity in a client certificate the TLS handshake verified: its first URI subject
//! alternative name (a SPIFFE ID), else its subject DN in RFC 4514 form, plus the tenant and the
//! RFC 8705 thumbprint ([`a2a_core::ClientCertificate`]).
//!
//! A small DER reader over the few X.509 fields needed: the certificate has already been parsed
//! and verified by webpki, so malformed input only means "no identity", never a panic.

use std::sync::Arc;

use a2a_core::ClientCertificate;
use base64::Engine;
use sha2::{Digest, Sha256};

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
/// `[3] EXPLICIT` extensions of a TBSCertificate.
const EXTENSIONS: u8 = 0xa3;
/// `uniformResourceIdentifier [6] IA5String` in GeneralNames.
const SAN_URI: u8 = 0x86;
/// 2.5.29.17, subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// 2.5.4.10, organizationName.
const ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];

/// The identity of a verified leaf certificate (DER); `None` when it names nothing usable.
pub fn identify(der: &[u8]) -> Option<ClientCertificate> {
    let (tag, certificate, _) = tlv(der)?;
    let (_, tbs, _) = (tag == SEQUENCE).then(|| tlv(certificate)).flatten()?;
    let fields = elements(tbs)?;
    // version [0] is optional; then serial, signature, issuer, validity, subject, spki.
    let start = usize::from(fields.first()?.0 == 0xa0);
    let subject = fields.get(start + 4).filter(|f| f.0 == SEQUENCE)?.1;
    let extensions = fields.iter().find(|f| f.0 == EXTENSIONS).map(|f| f.1);
    let uri = extensions.and_then(san_uri);
    let rdns = attributes(subject)?;
    let name = match &uri {
        Some(uri) => uri.clone(),
        None => distinguished_name(&rdns)?,
    };
    let tenant = match uri.as_deref().and_then(|u| u.strip_prefix("spiffe://")) {
        Some(rest) => rest.split('/').next().filter(|d| !d.is_empty()).map(str::to_owned),
        None => rdns.iter().find(|(oid, _)| *oid == ORGANIZATION).map(|(_, value)| value.clone()),
    };
    let thumbprint = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(der));
    Some(ClientCertificate {
        subject: Arc::from(name),
        tenant: tenant.map(Arc::from),
        thumbprint: Arc::from(thumbprint),
    })
}

/// One DER element: (tag, content, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count].iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[count..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements inside a constructed value.
fn elements(mut content: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (tag, value, rest) = tlv(content)?;
        out.push((tag, value));
        content = rest;
    }
    Some(out)
}

/// The first URI in the subjectAltName extension.
fn san_uri(explicit: &[u8]) -> Option<String> {
    let (_, list, _) = tlv(explicit)?;
    for (_, extension) in elements(list)? {
        let parts = elements(extension)?;
        if parts.first().is_some_and(|p| p.0 == OID && p.1 == SUBJECT_ALT_NAME) {
            let value = parts.iter().rev().find(|p| p.0 == OCTET_STRING)?.1;
            let (_, names, _) = tlv(value)?;
            return elements(names)?
                .into_iter()
                .find(|n| n.0 == SAN_URI)
                .and_then(|n| std::str::from_utf8(n.1).ok())
                .map(str::to_owned);
        }
    }
    None
}

/// The attributes of a Name, in order: (OID bytes, value text).
fn attributes(name: &[u8]) -> Option<Vec<(&[u8], String)>> {
    let mut out = Vec::new();
    for (tag, rdn) in elements(name)? {
        if tag != SET {
            return None;
        }
        for (_, pair) in elements(rdn)? {
            let parts = elements(pair)?;
            let (oid, value) = (parts.first()?, parts.get(1)?);
            if oid.0 != OID {
                return None;
            }
            // Every string type of a DN here is UTF-8 compatible (UTF8String, Printable, IA5).
            out.push((oid.1, String::from_utf8_lossy(value.1).into_owned()));
        }
    }
    Some(out)
}

/// RFC 4514: the most specific attribute first, special characters escaped.
fn distinguished_name(attributes: &[(&[u8], String)]) -> Option<String> {
    if attributes.is_empty() {
        return None;
    }
    let parts: Vec<String> =
        attributes.iter().rev().map(|(oid, value)| format!("{}={}", short_name(oid), escape(value))).collect();
    Some(parts.join(","))
}

fn short_name(oid: &[u8]) -> String {
    match oid {
        [0x55, 0x04, 0x03] => "CN".into(),
        [0x55, 0x04, 0x06] => "C".into(),
        [0x55, 0x04, 0x07] => "L".into(),
        [0x55, 0x04, 0x08] => "ST".into(),
        [0x55, 0x04, 0x0a] => "O".into(),
        [0x55, 0x04, 0x0b] => "OU".into(),
        other => dotted(other),
    }
}

fn dotted(oid: &[u8]) -> String {
    let Some((&first, rest)) = oid.split_first() else { return String::new() };
    let mut arcs = vec![u64::from(first / 40), u64::from(first % 40)];
    let mut value = 0u64;
    for &byte in rest {
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            arcs.push(value);
            value = 0;
        }
    }
    arcs.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let edge = i == 0 && (c == '#' || c == ' ') || i + 1 == value.chars().count() && c == ' ';
        if edge || matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/O=Example/CN=billing"
    /// -addext subjectAltName=URI:spiffe://example.org/ns/prod/sa/billing` (public, no key kept).
    const SPIFFE_CERT: &str = include_str!("testdata/spiffe.pem");
    /// The same without the SAN: identified by its DN.
    const DN_CERT: &str = include_str!("testdata/dn.pem");

    fn der(pem: &str) -> Vec<u8> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
    }

    #[test]
    fn a_spiffe_id_is_the_identity_and_its_trust_domain_the_tenant() {
        let id = identify(&der(SPIFFE_CERT)).unwrap();
        assert_eq!(&*id.subject, "spiffe://example.org/ns/prod/sa/billing");
        assert_eq!(id.tenant.as_deref(), Some("example.org"));
        assert_eq!(id.thumbprint.len(), 43);
    }

    #[test]
    fn without_a_uri_the_subject_dn_is_the_identity() {
        let id = identify(&der(DN_CERT)).unwrap();
        assert_eq!(&*id.subject, "CN=billing\\, east,O=Example");
        assert_eq!(id.tenant.as_deref(), Some("Example"));
    }

    #[test]
    fn garbage_names_nothing() {
        assert!(identify(b"").is_none());
        assert!(identify(&[0x30, 0x82, 0xff]).is_none());
        assert!(identify(&[0x30, 0x03, 0x30, 0x01, 0x00]).is_none());
    }
}
