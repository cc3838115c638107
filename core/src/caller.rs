//! Who is calling: the identity the authentication layer establishes and every later layer, the
//! audit log and the spans use.

use std::net::IpAddr;
use std::sync::Arc;

/// The address a request came from: the TCP peer, or the client a trusted proxy forwarded for.
/// Set by the listener on every request; limits before authentication and anonymous callers are
/// keyed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddress(pub IpAddr);

impl ClientAddress {
    /// The key the address is limited under: IPv4 as is, IPv6 by its /64 (one subscriber usually
    /// holds a whole /64, so single addresses would cost an attacker nothing).
    pub fn limit_key(&self) -> IpAddr {
        match self.0.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
            v4 => v4,
        }
    }
}

/// The client certificate the listener verified on this request's connection (mutual TLS): a
/// request extension, turned into a [`Caller`] by authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate's identity: its first URI subject alternative name (a SPIFFE ID such as
    /// `spiffe://example.org/ns/prod/sa/billing`), else its subject DN (`CN=billing,O=Example`).
    pub subject: Arc<str>,
    /// The tenant it names: a SPIFFE ID's trust domain, else the subject's organisation (`O`).
    pub tenant: Option<Arc<str>>,
    /// SHA-256 of the certificate's DER (RFC 8705 `x5t#S256`, base64url), for bound tokens.
    pub thumbprint: Arc<str>,
}

/// How the caller proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMethod {
    /// A bearer JWT from `issuer`.
    Jwt { issuer: Arc<str> },
    /// A static API key, by its configured id (never the key itself).
    ApiKey { key_id: Arc<str> },
    /// An opaque token accepted by OAuth2 token introspection.
    Introspection,
    /// A client certificate verified by the listener (mutual TLS).
    Mtls,
    /// No authentication is configured: the caller is known by its network address only.
    Anonymous,
}

/// The authenticated caller, a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Stable identity, unique across authentication methods (e.g. `jwt:https://idp/|alice`).
    pub id: Arc<str>,
    /// The caller's tenant or organisation, when the credential names one.
    pub tenant: Option<Arc<str>>,
    /// Scopes granted by the credential.
    pub scopes: Arc<[String]>,
    pub auth: AuthMethod,
}

/// The tenant authorities that are not JWT issuers (see [`Caller::tenant_authority`]): no issuer
/// may be named so, or its tokens would share their tenants.
pub const RESERVED_AUTHORITIES: [&str; 4] = ["api-key", "introspection", "mtls", "anonymous"];

impl Caller {
    /// The caller of a gateway without authentication, known by its address.
    pub fn anonymous(address: IpAddr) -> Caller {
        // Calls from one address come in runs (a connection's requests, one after the other on a
        // worker thread): each thread writes the caller of the address it saw last once, not per call.
        thread_local! {
            static LAST: std::cell::RefCell<Option<(IpAddr, Caller)>> = const { std::cell::RefCell::new(None) };
        }
        LAST.with_borrow_mut(|last| match last {
            Some((seen, caller)) if *seen == address => caller.clone(),
            _ => {
                let caller = Caller {
                    id: Arc::from(format!("ip:{address}")),
                    tenant: None,
                    scopes: Arc::from([]),
                    auth: AuthMethod::Anonymous,
                };
                *last = Some((address, caller.clone()));
                caller
            }
        })
    }

    /// Who vouched for the caller's tenant: the JWT issuer, `api-key` (the gateway's own key list)
    /// `introspection` or `mtls` (the configured client CAs). A tenant name means something only together with its authority: two
    /// issuers may both name an `acme`.
    pub fn tenant_authority(&self) -> &str {
        match &self.auth {
            AuthMethod::Jwt { issuer } => issuer,
            AuthMethod::ApiKey { .. } => RESERVED_AUTHORITIES[0],
            AuthMethod::Introspection => RESERVED_AUTHORITIES[1],
            AuthMethod::Mtls => RESERVED_AUTHORITIES[2],
            AuthMethod::Anonymous => RESERVED_AUTHORITIES[3],
        }
    }

    /// The tenant with its authority (`authority|tenant`), as isolation and the audit log key it.
    pub fn qualified_tenant(&self) -> Option<Arc<str>> {
        let tenant = self.tenant.as_deref()?;
        Some(Arc::from(format!("{}|{tenant}", self.tenant_authority())))
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every authority that is not a JWT issuer is reserved, so no issuer can be named like it and
    /// share its tenants; a new authentication method that forgets this fails here.
    #[test]
    fn every_non_jwt_authority_is_reserved() {
        let caller = |auth| Caller { id: Arc::from("c"), tenant: Some(Arc::from("acme")), scopes: Arc::from([]), auth };
        let methods = [
            AuthMethod::ApiKey { key_id: Arc::from("k") },
            AuthMethod::Introspection,
            AuthMethod::Mtls,
            AuthMethod::Anonymous,
        ];
        let mut authorities: Vec<String> =
            methods.into_iter().map(|m| caller(m).tenant_authority().to_owned()).collect();
        authorities.sort();
        let mut reserved = RESERVED_AUTHORITIES.map(str::to_owned).to_vec();
        reserved.sort();
        assert_eq!(authorities, reserved);
        let jwt = caller(AuthMethod::Jwt { issuer: Arc::from("https://idp") });
        assert_eq!(jwt.tenant_authority(), "https://idp");
    }

    /// The cached anonymous caller is the caller of the address asked for, whatever came before.
    #[test]
    fn an_anonymous_caller_is_known_by_its_own_address() {
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = "::1".parse().unwrap();
        for (address, id) in [(a, "ip:10.0.0.1"), (a, "ip:10.0.0.1"), (b, "ip:::1"), (a, "ip:10.0.0.1")] {
            let caller = Caller::anonymous(address);
            assert_eq!((&*caller.id, caller.tenant.is_none(), caller.scopes.len()), (id, true, 0));
            assert_eq!(caller.auth, AuthMethod::Anonymous);
        }
    }
}
