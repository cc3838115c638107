//! Who is at the other end: the TCP peer, or — when the peer is a configured trusted proxy — the
//! address that proxy says it forwarded for (`Forwarded: for=…`, else `X-Forwarded-For`). Headers
//! from anyone else are ignored: a caller cannot choose the address it is limited by.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use http::HeaderMap;
use ipnet::IpNet;

/// The networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses CIDRs (`10.0.0.0/8`) or single addresses; the error names the bad entry's index.
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, (usize, String)> {
        let mut nets = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry.trim();
            let net = match entry.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => match entry.parse::<IpAddr>() {
                    Ok(ip) => IpNet::from(ip),
                    Err(_) => return Err((i, format!("'{entry}' is not an address or a CIDR like 10.0.0.0/8"))),
                },
            };
            nets.push(net.trunc());
        }
        Ok(TrustedProxies(nets))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The caller's address. Forwarding entries are read right to left (the nearest hop first)
    /// and trusted proxies among them skipped; the first other address is the caller. An entry
    /// that cannot be read ends the walk at the proxy that wrote it.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if self.0.is_empty() || !self.contains(peer) {
            return peer;
        }
        let hops = forwarded_for(headers);
        let mut nearest = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(ip) if self.contains(*ip) => nearest = *ip,
                Some(ip) => return *ip,
                None => return nearest,
            }
        }
        nearest
    }
}

/// The `for` addresses of `Forwarded` (RFC 7239) when present, else of `X-Forwarded-For`, in
/// order; `None` for an entry that is not an address (`unknown`, obfuscated, garbage).
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<&str> =
        headers.get_all(http::header::FORWARDED).iter().filter_map(|v| v.to_str().ok()).collect();
    if !forwarded.is_empty() {
        let mut hops = Vec::new();
        for element in forwarded.iter().flat_map(|v| v.split(',')) {
            let value = element.split(';').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                key.trim().eq_ignore_ascii_case("for").then(|| value.trim().trim_matches('"'))
            });
            // An element without `for` says nothing about the client: it cannot be trusted past.
            hops.push(value.and_then(parse_hop));
        }
        return hops;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .map(|v| v.to_str().ok())
        .flat_map(|v| match v {
            Some(text) => text.split(',').map(|hop| parse_hop(hop.trim())).collect::<Vec<_>>(),
            None => vec![None],
        })
        .collect()
}

/// `1.2.3.4`, `1.2.3.4:80`, `::1`, `[::1]`, `[::1]:80`.
fn parse_hop(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr.ip().to_canonical());
    }
    text.strip_prefix('[')?.strip_suffix(']')?.parse::<Ipv6Addr>().ok().map(|ip| IpAddr::V6(ip).to_canonical())
}

/// The key an address is limited under (IPv6 by /64): see [`a2a_core::ClientAddress::limit_key`].
pub fn limit_key(ip: IpAddr) -> IpAddr {
    a2a_core::ClientAddress(ip).limit_key()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        map
    }

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        let spoofed = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=1.2.3.4")]);
        assert_eq!(trusted.client_address(peer, &spoofed), peer);
        assert_eq!(TrustedProxies::default().client_address(peer, &spoofed), peer);
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8", "192.168.1.1"]);
        let peer: IpAddr = "10.1.2.3".parse().unwrap();
        // The client may put anything on the left; only what trusted proxies appended counts.
        let chain = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7"), ("x-forwarded-for", "192.168.1.1")]);
        assert_eq!(trusted.client_address(peer, &chain), "198.51.100.7".parse::<IpAddr>().unwrap());
        let forwarded = headers(&[("forwarded", "for=6.6.6.6, for=\"[2001:db8::17]:4711\";proto=https")]);
        assert_eq!(trusted.client_address(peer, &forwarded), "2001:db8::17".parse::<IpAddr>().unwrap());
        assert_eq!(trusted.client_address(peer, &HeaderMap::new()), peer, "no header: the proxy itself");
        let garbage = headers(&[("x-forwarded-for", "1.1.1.1, nonsense, 10.0.0.5")]);
        assert_eq!(trusted.client_address(peer, &garbage), "10.0.0.5".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn ipv6_is_limited_by_its_slash_64() {
        let a = limit_key("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = limit_key("2001:db8:1:2:bbbb::9".parse().unwrap());
        assert_eq!(a, b);
        assert_eq!(limit_key("::ffff:127.0.0.1".parse().unwrap()), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert!(TrustedProxies::parse(&["not-a-net".into()]).is_err());
    }
}
