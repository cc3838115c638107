use super::*;

/// Resolves every name to the given addresses, and never touches the network.
struct Stub(Vec<IpAddr>);

impl Resolver for Stub {
    fn resolve<'a>(&'a self, _host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        let addrs = self.0.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
        Box::pin(async move { Ok(addrs) })
    }
}

fn policy() -> ScreenPolicy {
    ScreenPolicy::default()
}

const REFUSED: &[(&str, &str)] = &[
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.0.1", "link-local"),
    ("100.64.0.1", "shared (carrier-grade NAT)"),
    ("100.127.255.254", "shared (carrier-grade NAT)"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("192.0.0.8", "protocol-assignment"),
    ("198.18.0.1", "benchmarking"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("febf::1", "link-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "cloud metadata"),
    ("::ffff:10.1.2.3", "private"),
    ("64:ff9b::a9fe:a9fe", "NAT64"),
    ("64:ff9b:1::1", "NAT64"),
    ("2001:db8::1", "documentation"),
    ("::10.0.0.1", "reserved"),
    ("100::1", "discard-only"),
    ("2001::1", "protocol-assignment"),
    ("2002:a9fe:a9fe::1", "6to4"),
    ("fec0::1", "site-local"),
    ("4000::1", "reserved"),
];

const GLOBAL: &[&str] = &["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "2a00:1450:4001::1"];

#[tokio::test]
async fn every_non_global_class_is_refused_as_a_literal_and_through_a_resolver() {
    for (ip, class) in REFUSED {
        let parsed: IpAddr = ip.parse().unwrap();
        let host = if parsed.is_ipv6() { format!("[{ip}]") } else { (*ip).to_owned() };
        let literal = screen_url(&format!("https://{host}/hook"), &policy(), &Stub(vec![])).await;
        assert_eq!(literal, Err(ScreenError::Refused(class)), "literal {ip}");
        let resolved = screen_url("https://hook.example/x", &policy(), &Stub(vec![parsed])).await;
        assert_eq!(resolved, Err(ScreenError::Refused(class)), "resolved {ip}");
    }
}

#[tokio::test]
async fn global_addresses_pass_and_are_what_the_caller_connects_to() {
    for ip in GLOBAL {
        let parsed: IpAddr = ip.parse().unwrap();
        let addrs = screen_url("https://hook.example:8443/x", &policy(), &Stub(vec![parsed])).await;
        assert_eq!(addrs, Ok(vec![SocketAddr::new(parsed, 8443)]), "{ip}");
    }
}

#[tokio::test]
async fn one_internal_address_among_public_ones_refuses_the_host() {
    let stub = Stub(vec!["8.8.8.8".parse().unwrap(), "169.254.169.254".parse().unwrap()]);
    let screened = screen_url("https://hook.example/", &policy(), &stub).await;
    assert_eq!(screened, Err(ScreenError::Refused("cloud metadata")));
}

#[tokio::test]
async fn schemes_other_than_https_are_refused_unless_http_is_allowed() {
    let stub = Stub(vec!["8.8.8.8".parse().unwrap()]);
    for url in ["http://hook.example/", "file:///etc/passwd", "gopher://hook.example/", "ftp://hook.example/"] {
        assert!(matches!(screen_url(url, &policy(), &stub).await, Err(ScreenError::Scheme(_))), "{url}");
    }
    let http = ScreenPolicy { allow_http: true, ..policy() };
    assert!(screen_url("http://hook.example/", &http, &stub).await.is_ok());
    assert!(matches!(screen_url("file:///etc/passwd", &http, &stub).await, Err(ScreenError::Scheme(_))));
    assert_eq!(screen_url("not a url", &policy(), &stub).await, Err(ScreenError::Malformed));
    assert_eq!(screen_url("https://u:p@hook.example/", &policy(), &stub).await, Err(ScreenError::Credentials));
}

#[tokio::test]
async fn unresolvable_hosts_are_refused() {
    assert_eq!(screen_url("https://hook.example/", &policy(), &Stub(vec![])).await, Err(ScreenError::Unresolved));
}

#[tokio::test]
async fn the_allow_list_admits_networks_and_address_ports() {
    let allow =
        |rules: &[&str]| ScreenPolicy { allow_http: true, allow: rules.iter().map(|r| r.parse().unwrap()).collect() };
    let loopback = Stub(vec!["127.0.0.1".parse().unwrap()]);
    assert!(screen_url("http://localhost:9000/", &allow(&["127.0.0.1"]), &loopback).await.is_ok());
    assert!(screen_url("http://127.0.0.1:9000/", &allow(&["127.0.0.0/8"]), &loopback).await.is_ok());
    assert!(screen_url("http://127.0.0.1:9000/", &allow(&["127.0.0.1:9000"]), &loopback).await.is_ok());
    let other_port = screen_url("http://127.0.0.1:9001/", &allow(&["127.0.0.1:9000"]), &loopback).await;
    assert_eq!(other_port, Err(ScreenError::Refused("loopback")));
    let other_net = screen_url("http://10.0.0.1/", &allow(&["127.0.0.1"]), &loopback).await;
    assert_eq!(other_net, Err(ScreenError::Refused("private")));
    // A mapped address is judged (and allowed) as its IPv4 address.
    let mapped = screen_url("http://[::ffff:127.0.0.1]:9/", &allow(&["127.0.0.1"]), &loopback).await;
    assert!(mapped.is_ok());
    assert!(screen_url("http://[::1]:9/", &allow(&["::1/128"]), &loopback).await.is_ok());
    for bad in ["10.0.0.0/33", "example.com", "::1/129", "1.2.3.4/x"] {
        assert!(bad.parse::<AllowRule>().is_err(), "{bad}");
    }
}

#[tokio::test]
async fn the_connect_time_resolver_screens_again() {
    use reqwest::dns::Resolve;
    // The name passed when the config was made; by the time of the connection it points inside.
    let resolver = ScreeningResolver {
        policy: Arc::new(policy()),
        resolver: Arc::new(Stub(vec!["169.254.169.254".parse().unwrap()])),
    };
    let name: reqwest::dns::Name = "hook.example".parse().unwrap();
    assert!(resolver.resolve(name).await.is_err());
    let resolver =
        ScreeningResolver { policy: Arc::new(policy()), resolver: Arc::new(Stub(vec!["8.8.8.8".parse().unwrap()])) };
    let name: reqwest::dns::Name = "hook.example".parse().unwrap();
    let addrs: Vec<SocketAddr> = resolver.resolve(name).await.unwrap().collect();
    assert_eq!(addrs, vec!["8.8.8.8:0".parse().unwrap()]);
}

#[tokio::test]
async fn metadata_passes_only_a_rule_naming_it_alone() {
    let wide =
        ScreenPolicy { allow_http: true, allow: vec!["169.254.0.0/16".parse().unwrap(), "::/0".parse().unwrap()] };
    for metadata in ["169.254.169.254", "100.100.100.200", "fd00:ec2::254", "::ffff:169.254.169.254"] {
        let resolver = Stub(vec![metadata.parse().unwrap()]);
        let refused = screen_url("http://meta.example/", &wide, &resolver).await;
        assert_eq!(refused, Err(ScreenError::Refused("cloud metadata")), "{metadata}");
    }
    assert!(screen_url("http://meta.example/", &wide, &Stub(vec!["169.254.1.1".parse().unwrap()])).await.is_ok());
    let exact = ScreenPolicy { allow_http: true, allow: vec!["169.254.169.254".parse().unwrap()] };
    let resolver = Stub(vec!["169.254.169.254".parse().unwrap()]);
    assert!(screen_url("http://meta.example/", &exact, &resolver).await.is_ok());
}
