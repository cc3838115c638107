//! The one address screen for URLs the gateway calls on someone else's say-so — a caller's
//! push-notification webhook, a self-registering agent's card and admission probes: which schemes,
//! and which network addresses, a stranger may make the gateway connect to. Only globally routable
//! unicast addresses pass, unless an operator allow-list names them; a cloud metadata address
//! (169.254.169.254, 100.100.100.200, fd00:ec2::254) passes only a rule naming it alone, never a
//! range that contains it. The screen judges the final URL, after it was built and validated.
//!
//! The screen resolves the host itself ([`Resolver`], stubbed in tests) and returns the addresses
//! it judged: the caller connects to those, never to the host name again, so that a name that
//! resolves to a public address when screened and to an internal one a moment later (DNS
//! rebinding) cannot reach inside. [`ScreeningResolver`] does this for a `reqwest` client.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;

/// What a screened URL may be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenPolicy {
    /// `http` URLs too (otherwise `https` only).
    pub allow_http: bool,
    /// Addresses that pass though not global (a receiver on the operator's own network).
    pub allow: Vec<AllowRule>,
}

/// One allow-list entry: a network (`10.1.0.0/16`, `127.0.0.1`, `::1/128`), or an address and port
/// (`127.0.0.1:8080`, `[::1]:8080`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    network: IpAddr,
    prefix: u8,
    port: Option<u16>,
}

impl AllowRule {
    /// Names one address (a /32 or /128), not a range.
    fn is_exact(&self) -> bool {
        self.prefix == if self.network.is_ipv4() { 32 } else { 128 }
    }

    fn matches(&self, addr: SocketAddr) -> bool {
        // Port 0 is a connect-time resolution, whose port the URL screen already judged.
        (addr.port() == 0 || self.port.is_none_or(|p| p == addr.port()))
            && in_network(addr.ip(), self.network, self.prefix)
    }
}

impl std::str::FromStr for AllowRule {
    type Err = String;
    fn from_str(text: &str) -> Result<AllowRule, String> {
        let bad = || format!("{text:?} is neither a CIDR network nor an address:port");
        if let Ok(addr) = text.parse::<SocketAddr>() {
            let prefix = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(AllowRule { network: addr.ip(), prefix, port: Some(addr.port()) });
        }
        let (ip, prefix) = match text.split_once('/') {
            Some((ip, prefix)) => (ip, Some(prefix.parse::<u8>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let network: IpAddr = ip.parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(AllowRule { network, prefix, port: None })
    }
}

impl<'de> Deserialize<'de> for AllowRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<AllowRule, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a URL was refused. The messages name the class of address, never the address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScreenError {
    #[error("the URL is not a valid absolute URL")]
    Malformed,
    #[error("the URL scheme must be https{0}")]
    Scheme(&'static str),
    #[error("the URL must not carry credentials")]
    Credentials,
    #[error("the URL's host could not be resolved")]
    Unresolved,
    #[error("the URL's host resolves to a {0} address, which the gateway does not call")]
    Refused(&'static str),
}

/// Turns a host name into addresses: the system's resolver, or a stub in tests.
pub trait Resolver: Send + Sync + 'static {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>>;
}

/// The operating system's resolver (through tokio's blocking pool).
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Parses and screens `url`: the addresses it may be reached at (every one the host resolves to
/// passed; one refused address refuses the URL, since a client might pick it).
pub async fn screen_url(
    url: &str,
    policy: &ScreenPolicy,
    resolver: &dyn Resolver,
) -> Result<Vec<SocketAddr>, ScreenError> {
    let url = reqwest::Url::parse(url).map_err(|_| ScreenError::Malformed)?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_http => {}
        _ => return Err(ScreenError::Scheme(if policy.allow_http { " or http" } else { "" })),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ScreenError::Credentials);
    }
    let port = url.port_or_known_default().ok_or(ScreenError::Malformed)?;
    let addrs = match url.host().ok_or(ScreenError::Malformed)? {
        url::Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        url::Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        url::Host::Domain(host) => resolver.resolve(host, port).await.map_err(|_| ScreenError::Unresolved)?,
    };
    screen_addrs(addrs, policy)
}

/// Screens resolved addresses (see [`screen_url`]).
pub fn screen_addrs(addrs: Vec<SocketAddr>, policy: &ScreenPolicy) -> Result<Vec<SocketAddr>, ScreenError> {
    if addrs.is_empty() {
        return Err(ScreenError::Unresolved);
    }
    for addr in &addrs {
        let metadata = is_metadata(addr.ip());
        if policy.allow.iter().any(|rule| rule.matches(*addr) && (!metadata || rule.is_exact())) {
            continue;
        }
        if metadata {
            return Err(ScreenError::Refused("cloud metadata"));
        }
        if let Some(class) = non_global(addr.ip()) {
            return Err(ScreenError::Refused(class));
        }
    }
    Ok(addrs)
}

/// Cloud instance metadata endpoints (IPv4-mapped forms included).
fn is_metadata(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    ip == IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))
        || ip == IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200))
        || ip == IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254))
}

/// The class of a non-global address, or `None` for a global unicast one.
pub fn non_global(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => v4_class(ip),
        IpAddr::V6(ip) => {
            // An IPv4-mapped or IPv4-compatible address reaches its IPv4 address.
            if let Some(v4) = ip.to_ipv4_mapped() {
                return v4_class(v4);
            }
            v6_class(ip)
        }
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let class = if ip.is_unspecified() || a == 0 {
        "unspecified"
    } else if ip.is_loopback() {
        "loopback"
    } else if ip.is_private() {
        "private"
    } else if ip.is_link_local() {
        // 169.254.0.0/16, where cloud metadata services live.
        "link-local"
    } else if a == 100 && (b & 0xc0) == 64 {
        "shared (carrier-grade NAT)"
    } else if ip.is_broadcast() {
        "broadcast"
    } else if ip.is_multicast() {
        "multicast"
    } else if ip.is_documentation() {
        "documentation"
    } else if a == 192 && b == 0 && c == 0 {
        "protocol-assignment"
    } else if a == 198 && (b & 0xfe) == 18 {
        "benchmarking"
    } else if a == 192 && b == 88 && c == 99 {
        "6to4-relay"
    } else if a >= 240 {
        "reserved"
    } else {
        return None;
    };
    Some(class)
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let class = if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_loopback() {
        "loopback"
    } else if ip.is_multicast() {
        "multicast"
    } else if (segments[0] & 0xffc0) == 0xfe80 {
        "link-local"
    } else if (segments[0] & 0xffc0) == 0xfec0 {
        "site-local"
    } else if (segments[0] & 0xfe00) == 0xfc00 {
        "unique-local"
    } else if segments[0] == 0x64 && segments[1] == 0xff9b {
        // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48) translates to IPv4 addresses.
        "NAT64"
    } else if segments[0] == 0x2001 && segments[1] == 0xdb8 {
        "documentation"
    } else if segments[..6] == [0; 6] {
        // IPv4-compatible (deprecated) and the rest of ::/96.
        "reserved"
    } else if segments[0] == 0x0100 && segments[1..4] == [0; 3] {
        "discard-only"
    } else if segments[0] == 0x2001 && segments[1] < 0x200 {
        // Teredo, benchmarking, ORCHID and other IETF protocol assignments.
        "protocol-assignment"
    } else if segments[0] == 0x2002 {
        // 6to4 embeds an IPv4 address the relay would reach.
        "6to4"
    } else if (segments[0] & 0xe000) != 0x2000 {
        // Only 2000::/3 is global unicast.
        "reserved"
    } else {
        return None;
    };
    Some(class)
}

fn in_network(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) if network.is_ipv4() => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        other => other,
    };
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// A client builder for calls on someone's say-so: it connects only to addresses `policy` passes
/// (resolved and screened again at connect time), follows no redirect and ignores any proxy in the
/// environment (a proxy would connect for it, unscreened).
pub fn client_builder(policy: Arc<ScreenPolicy>) -> reqwest::ClientBuilder {
    let resolver = ScreeningResolver { policy, resolver: Arc::new(SystemResolver) };
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_proxy().dns_resolver(Arc::new(resolver))
}

/// A `reqwest` DNS resolver that screens every resolution: the connect-time check. A client built
/// with it connects only to addresses that passed, whatever the name resolves to by then.
/// (IP-literal URLs are not resolved; [`screen_url`] judged them, and they cannot change.)
pub struct ScreeningResolver {
    pub policy: Arc<ScreenPolicy>,
    pub resolver: Arc<dyn Resolver>,
}

impl reqwest::dns::Resolve for ScreeningResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let resolver = self.resolver.clone();
        Box::pin(async move {
            // The port is the connector's; the screen judges it only through port-bound allow rules,
            // which the URL screen applied already.
            let addrs = resolver.resolve(name.as_str(), 0).await?;
            let addrs =
                screen_addrs(addrs, &policy).map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests;
