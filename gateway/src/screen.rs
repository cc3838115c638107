//! Screening of addresses the gateway is asked to call on someone else's behalf (self-registering
//! agents; later push-notification webhooks): every address a URL's host resolves to must be an
//! ordinary public one, or be on the operator's allow-list. Cloud metadata endpoints, link-local,
//! loopback, private, unspecified, multicast and reserved ranges are refused by default.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// What kind of address an IP is, as far as screening cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    /// Cloud instance metadata (169.254.169.254, fd00:ec2::254, 100.100.100.200).
    Metadata,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918, 100.64.0.0/10 (shared), fc00::/7 (unique local).
    Private,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 224.0.0.0/4, 255.255.255.255, ff00::/8.
    Multicast,
    /// Documentation, benchmarking and reserved ranges (192.0.2.0/24, 240.0.0.0/4, 2001:db8::/32, …).
    Reserved,
}

impl AddressClass {
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Public => "public",
            AddressClass::Metadata => "cloud metadata",
            AddressClass::LinkLocal => "link-local",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Multicast => "multicast",
            AddressClass::Reserved => "reserved",
        }
    }
}

/// An address refused by the screen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{address} is a {} address and not on the allow-list", class.as_str())]
pub struct Refused {
    pub address: IpAddr,
    pub class: AddressClass,
}

/// The class of `address`; IPv4-mapped and IPv4-compatible IPv6 addresses are judged as IPv4.
pub fn classify(address: IpAddr) -> AddressClass {
    match address {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let o = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        AddressClass::Metadata
    } else if o[0] == 0 {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        AddressClass::Private
    } else if ip.is_multicast() || ip.is_broadcast() {
        AddressClass::Multicast
    } else if ip.is_documentation()
        || o[0] >= 240
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
    {
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        AddressClass::Metadata
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if (s[0] & 0xffc0) == 0xfe80 {
        AddressClass::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 {
        AddressClass::Private
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] & 0xe000) != 0x2000 {
        // Outside 2000::/3 nothing is globally routed unicast (this covers NAT64 and the deprecated
        // IPv4-compatible form, which could otherwise smuggle an IPv4 address past the screen).
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

/// The screen: public addresses pass; any other passes only inside an allow-listed network. A
/// metadata address passes only when allow-listed by itself (a /32 or /128), never as part of a
/// wider range such as 169.254.0.0/16.
#[derive(Debug, Clone, Default)]
pub struct Screen {
    allow: Vec<IpNet>,
}

impl Screen {
    pub fn new(allow: Vec<IpNet>) -> Screen {
        Screen { allow }
    }

    /// Parses allow-list entries (`127.0.0.0/8`, `10.1.2.3`, `::1`).
    pub fn parse(entries: &[String]) -> Result<Screen, String> {
        let mut allow = Vec::with_capacity(entries.len());
        for entry in entries {
            let net = entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("'{entry}' is not an address or network (10.0.0.0/8, ::1)"))?;
            allow.push(net);
        }
        Ok(Screen { allow })
    }

    pub fn check(&self, address: IpAddr) -> Result<(), Refused> {
        let class = classify(address);
        if class == AddressClass::Public {
            return Ok(());
        }
        let judged = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        let allowed = self.allow.iter().any(|net| {
            net.contains(&judged) && (class != AddressClass::Metadata || net.prefix_len() == net.max_prefix_len())
        });
        if allowed { Ok(()) } else { Err(Refused { address, class }) }
    }

    /// Checks every address in `addresses`; none at all is refused too.
    pub fn check_all(&self, addresses: &[IpAddr]) -> Result<(), String> {
        if addresses.is_empty() {
            return Err("the host resolves to no address".into());
        }
        for address in addresses {
            self.check(*address).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Resolves `host` (an IP literal is taken as it is) to the addresses a connection could use.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let lookup = tokio::time::timeout(std::time::Duration::from_secs(5), tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("resolving '{host}' timed out"))?
        .map_err(|_| format!("'{host}' does not resolve"))?;
    Ok(lookup.map(|a| a.ip()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn every_class_is_recognised() {
        let cases = [
            ("8.8.8.8", AddressClass::Public),
            ("2606:4700::1111", AddressClass::Public),
            ("169.254.169.254", AddressClass::Metadata),
            ("100.100.100.200", AddressClass::Metadata),
            ("fd00:ec2::254", AddressClass::Metadata),
            ("::ffff:169.254.169.254", AddressClass::Metadata),
            ("169.254.1.1", AddressClass::LinkLocal),
            ("fe80::1", AddressClass::LinkLocal),
            ("127.0.0.1", AddressClass::Loopback),
            ("127.1.2.3", AddressClass::Loopback),
            ("::1", AddressClass::Loopback),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("10.0.0.1", AddressClass::Private),
            ("172.16.5.4", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::Private),
            ("fd12:3456::1", AddressClass::Private),
            ("0.0.0.0", AddressClass::Unspecified),
            ("::", AddressClass::Unspecified),
            ("224.0.0.1", AddressClass::Multicast),
            ("255.255.255.255", AddressClass::Multicast),
            ("ff02::1", AddressClass::Multicast),
            ("192.0.2.1", AddressClass::Reserved),
            ("240.0.0.1", AddressClass::Reserved),
            ("2001:db8::1", AddressClass::Reserved),
            ("64:ff9b::a9fe:a9fe", AddressClass::Reserved),
        ];
        for (text, class) in cases {
            assert_eq!(classify(ip(text)), class, "{text}");
        }
    }

    #[test]
    fn only_public_addresses_pass_an_empty_screen() {
        let screen = Screen::default();
        assert!(screen.check(ip("8.8.8.8")).is_ok());
        for text in ["127.0.0.1", "10.0.0.1", "169.254.169.254", "fd00:ec2::254", "0.0.0.0", "ff02::1", "::1"] {
            assert!(screen.check(ip(text)).is_err(), "{text}");
        }
        let refused = screen.check(ip("169.254.169.254")).unwrap_err();
        assert_eq!(refused.class, AddressClass::Metadata);
        assert!(refused.to_string().contains("metadata"), "{refused}");
    }

    #[test]
    fn the_allow_list_admits_its_networks_but_metadata_only_by_itself() {
        let screen = Screen::parse(&["127.0.0.0/8".into(), "169.254.0.0/16".into(), "::1".into()]).unwrap();
        assert!(screen.check(ip("127.0.0.1")).is_ok());
        assert!(screen.check(ip("::ffff:127.0.0.1")).is_ok(), "mapped addresses judged as IPv4");
        assert!(screen.check(ip("::1")).is_ok());
        assert!(screen.check(ip("169.254.1.1")).is_ok());
        assert!(screen.check(ip("169.254.169.254")).is_err(), "a wide range does not admit metadata");
        assert!(screen.check(ip("10.0.0.1")).is_err());
        let exact = Screen::parse(&["169.254.169.254".into()]).unwrap();
        assert!(exact.check(ip("169.254.169.254")).is_ok());
        assert!(Screen::parse(&["not-an-ip".into()]).is_err());
    }

    #[test]
    fn check_all_refuses_when_any_address_is_refused() {
        let screen = Screen::parse(&["127.0.0.0/8".into()]).unwrap();
        assert!(screen.check_all(&[ip("127.0.0.1")]).is_ok());
        assert!(screen.check_all(&[ip("127.0.0.1"), ip("169.254.169.254")]).is_err());
        assert!(screen.check_all(&[]).is_err());
    }

    #[tokio::test]
    async fn literals_resolve_without_a_lookup() {
        assert_eq!(resolve("127.0.0.1", 80).await.unwrap(), [ip("127.0.0.1")]);
        assert_eq!(resolve("[::1]", 80).await.unwrap(), [ip("::1")]);
    }
}
