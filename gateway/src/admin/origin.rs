//! Requests a web page could make: the admin API answers only requests addressed to the admin
//! listener by one of its own names, and changes state only on requests a browser would not send
//! cross-site without asking first. Applied before any credential check, with or without
//! `admin.auth`:
//!
//! - `Host` must name the listener: its own address, `localhost` (or any loopback address) when it
//!   is bound to loopback, any IP literal when it is bound to every interface — with any port, as
//!   neither an IP literal nor `localhost` can be rebound and port forwards change the port — or be
//!   in `admin.allowed_hosts`. A name an attacker controls (DNS rebinding) is refused.
//! - A state-changing call (any method but GET, HEAD, OPTIONS) must carry `Content-Type:
//!   application/json` or an `Authorization`, `X-API-Key` or `X-A2A-Admin` header: a cross-site
//!   page cannot send those without a CORS preflight, which this API never grants.
//! - An `Origin`, when present, must be `http(s)://` + an accepted host.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, header};

use super::{AdminError, Host};

/// The header a non-browser client may send to mark a state-changing call as deliberate.
pub const ADMIN_HEADER: &str = "x-a2a-admin";

pub async fn guard(State(host): State<Arc<dyn Host>>, request: Request, next: Next) -> Response {
    let allowed = host.gateway().config.admin.allowed_hosts.clone();
    let listener = host.admin_address();
    let authority = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if let Err(error) = check(request.method(), request.headers(), authority.as_deref(), listener, &allowed) {
        return error.into_response();
    }
    next.run(request).await
}

fn check(
    method: &Method,
    headers: &HeaderMap,
    authority: Option<&str>,
    listener: Option<SocketAddr>,
    allowed: &[String],
) -> Result<(), AdminError> {
    let authority = authority.unwrap_or_default();
    if !host_accepted(authority, listener, allowed) {
        return Err(AdminError::Forbidden(format!(
            "the Host '{authority}' is not a name of the admin listener (list it in admin.allowed_hosts)"
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        let origin_host = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        if !origin_host.is_some_and(|h| host_accepted(h, listener, allowed)) {
            return Err(AdminError::Forbidden(format!(
                "cross-origin requests are refused (Origin '{origin}' is not the admin listener)"
            )));
        }
    }
    let changes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if changes && !deliberate(headers) {
        return Err(AdminError::Forbidden(
            "a state-changing admin call needs Content-Type: application/json or an Authorization, X-API-Key or X-A2A-Admin header".into(),
        ));
    }
    Ok(())
}

/// A header a browser sends cross-site only after a preflight.
fn deliberate(headers: &HeaderMap) -> bool {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    json || headers.contains_key(header::AUTHORIZATION)
        || headers.contains_key("x-api-key")
        || headers.contains_key(ADMIN_HEADER)
}

/// Whether `authority` (`host[:port]`) names the admin listener.
fn host_accepted(authority: &str, listener: Option<SocketAddr>, allowed: &[String]) -> bool {
    let authority = authority.to_ascii_lowercase();
    let name = host_name(&authority);
    let listed = allowed.iter().any(|entry| {
        let entry = entry.to_ascii_lowercase();
        entry == authority || entry == name
    });
    if listed {
        return true;
    }
    // Rebinding needs a name the attacker controls: an IP literal or `localhost` cannot be rebound,
    // so their port is not judged (a port forward such as `docker -p 19090:9090` changes it).
    let Some(listener) = listener else { return false };
    let bound = listener.ip();
    match name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => ip == bound || bound.is_unspecified() || (bound.is_loopback() && ip.is_loopback()),
        Err(_) => name == "localhost" && bound.is_loopback(),
    }
}

/// The host of `host[:port]`; an IPv6 literal keeps its brackets.
fn host_name(authority: &str) -> &str {
    match authority.rfind(':') {
        Some(at) if !authority[at..].contains(']') => &authority[..at],
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Option<SocketAddr> {
        Some("127.0.0.1:9090".parse().unwrap())
    }

    #[test]
    fn only_the_listeners_own_names_pass() {
        for good in
            ["127.0.0.1:9090", "localhost:9090", "LOCALHOST:9090", "127.0.0.2:9090", "[::1]:9090", "localhost:19090"]
        {
            assert!(host_accepted(good, loopback(), &[]), "{good}");
        }
        for bad in ["evil.example:9090", "evil.example", "localhost.evil.example:9090", "", "10.0.0.1:9090"] {
            assert!(!host_accepted(bad, loopback(), &[]), "{bad}");
        }
        assert!(host_accepted("ops.internal", loopback(), &["ops.internal".into()]));
        assert!(host_accepted("ops.internal:9090", loopback(), &["ops.internal".into()]));
        assert!(!host_accepted("ops.internal:1", loopback(), &["ops.internal:9090".into()]));
        assert!(host_accepted("localhost", loopback(), &[]), "the default port may be left out");
        let any = Some("0.0.0.0:9090".parse().unwrap());
        assert!(host_accepted("10.0.0.1:9090", any, &[]));
        assert!(!host_accepted("localhost:9090", any, &[]), "a name needs admin.allowed_hosts");
    }

    #[test]
    fn state_changes_need_a_header_a_page_cannot_send() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(check(&Method::POST, &headers, Some("127.0.0.1:9090"), loopback(), &[]).is_err());
        assert!(check(&Method::GET, &headers, Some("127.0.0.1:9090"), loopback(), &[]).is_ok());
        headers.insert(header::CONTENT_TYPE, "application/json; charset=utf-8".parse().unwrap());
        assert!(check(&Method::POST, &headers, Some("127.0.0.1:9090"), loopback(), &[]).is_ok());
        headers.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(check(&Method::POST, &headers, Some("127.0.0.1:9090"), loopback(), &[]).is_err());
        headers.insert(header::ORIGIN, "http://127.0.0.1:9090".parse().unwrap());
        assert!(check(&Method::POST, &headers, Some("127.0.0.1:9090"), loopback(), &[]).is_ok());
        let mut bare = HeaderMap::new();
        assert!(check(&Method::DELETE, &bare, Some("127.0.0.1:9090"), loopback(), &[]).is_err());
        bare.insert(ADMIN_HEADER, "cli".parse().unwrap());
        assert!(check(&Method::DELETE, &bare, Some("127.0.0.1:9090"), loopback(), &[]).is_ok());
    }
}
