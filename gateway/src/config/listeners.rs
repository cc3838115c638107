//! The `listeners.protection` section: how the public listener defends itself against slow and
//! greedy clients. Every limit is on by default; `null` turns one off. And the `listeners.tls`
//! section, whose files the listener reads ([`crate::listener`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// Limits of the public listener.
///
/// ```yaml
/// listeners:
///   protection:
///     header_read_timeout: 10s     # a request's headers must arrive within this (and a new
///                                  # connection must send its first request within it)
///     body_read_timeout: 30s       # the whole request body; a slower one gets 408
///     idle_timeout: 60s            # a connection without a request in flight is closed after this
///                                  # (both cut at a per-connection point in their last fifth)
///     max_connections: 10000       # open connections in total
///     max_connections_per_address: 512   # per source address (IPv6: per /64)
///     accept_backlog: 4096         # connections the kernel holds until the gateway accepts them
///     http2_max_concurrent_streams: 100
///     http2_max_header_list_size: 16384
///     http2_max_pending_accept_reset_streams: 20
///     http2_max_local_error_reset_streams: 256
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Protection {
    #[serde(default = "default_header_read_timeout", with = "crate::config::opt_duration")]
    #[schemars(with = "Option<a2a_core::duration::Text>")]
    pub header_read_timeout: Option<Duration>,
    #[serde(default = "default_body_read_timeout", with = "crate::config::opt_duration")]
    #[schemars(with = "Option<a2a_core::duration::Text>")]
    pub body_read_timeout: Option<Duration>,
    #[serde(default = "default_idle_timeout", with = "crate::config::opt_duration")]
    #[schemars(with = "Option<a2a_core::duration::Text>")]
    pub idle_timeout: Option<Duration>,
    #[serde(default = "default_max_connections")]
    pub max_connections: Option<usize>,
    /// Connections from a configured trusted proxy are not counted against this cap (only against
    /// `max_connections`): a proxy carries many callers.
    #[serde(default = "default_max_connections_per_address")]
    pub max_connections_per_address: Option<usize>,
    /// The listen backlog: connections the kernel completes and holds until the gateway accepts
    /// them (capped by `net.core.somaxconn`). The usual 128 overflows under a burst of slow
    /// connections: the kernel then drops the handshake's last ACK, and a silent client is left
    /// with a connection the gateway never sees (never shed), while new callers wait for SYN
    /// retransmits.
    #[serde(default = "default_accept_backlog")]
    pub accept_backlog: u32,
    #[serde(default = "default_max_concurrent_streams")]
    pub http2_max_concurrent_streams: Option<u32>,
    #[serde(default = "default_max_header_list_size")]
    pub http2_max_header_list_size: u32,
    /// Streams a client may open and reset before the gateway accepted them (rapid reset,
    /// CVE-2023-44487); over it the connection is closed.
    #[serde(default = "default_max_pending_accept_reset_streams")]
    pub http2_max_pending_accept_reset_streams: Option<usize>,
    /// Streams the gateway may reset because of the client's protocol errors before it closes the
    /// connection (CVE-2024-27316 class).
    #[serde(default = "default_max_local_error_reset_streams")]
    pub http2_max_local_error_reset_streams: Option<usize>,
}

impl Default for Protection {
    fn default() -> Self {
        Protection {
            header_read_timeout: default_header_read_timeout(),
            body_read_timeout: default_body_read_timeout(),
            idle_timeout: default_idle_timeout(),
            max_connections: default_max_connections(),
            max_connections_per_address: default_max_connections_per_address(),
            accept_backlog: default_accept_backlog(),
            http2_max_concurrent_streams: default_max_concurrent_streams(),
            http2_max_header_list_size: default_max_header_list_size(),
            http2_max_pending_accept_reset_streams: default_max_pending_accept_reset_streams(),
            http2_max_local_error_reset_streams: default_max_local_error_reset_streams(),
        }
    }
}

impl Protection {
    /// The key paths of the protections that are turned off, for `check`'s warning.
    pub fn disabled(&self) -> Vec<&'static str> {
        let mut off = Vec::new();
        if self.header_read_timeout.is_none() {
            off.push("header_read_timeout");
        }
        if self.body_read_timeout.is_none() {
            off.push("body_read_timeout");
        }
        if self.idle_timeout.is_none() {
            off.push("idle_timeout");
        }
        if self.max_connections.is_none() {
            off.push("max_connections");
        }
        if self.max_connections_per_address.is_none() {
            off.push("max_connections_per_address");
        }
        if self.http2_max_concurrent_streams.is_none() {
            off.push("http2_max_concurrent_streams");
        }
        if self.http2_max_pending_accept_reset_streams.is_none() {
            off.push("http2_max_pending_accept_reset_streams");
        }
        off
    }

    /// Checks what types cannot: zero values that would refuse everything.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, message: &str| Err((format!("listeners.protection.{key}"), message.to_string()));
        for (key, value) in [
            ("header_read_timeout", self.header_read_timeout),
            ("body_read_timeout", self.body_read_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if value.is_some_and(|d| d.is_zero()) {
                return bad(key, "must be greater than zero (null turns it off)");
            }
        }
        if self.max_connections == Some(0) {
            return bad("max_connections", "must be at least 1 (null turns it off)");
        }
        if self.max_connections_per_address == Some(0) {
            return bad("max_connections_per_address", "must be at least 1 (null turns it off)");
        }
        if self.accept_backlog == 0 {
            return bad("accept_backlog", "must be at least 1");
        }
        if self.http2_max_concurrent_streams == Some(0) {
            return bad("http2_max_concurrent_streams", "must be at least 1 (null turns it off)");
        }
        if self.http2_max_header_list_size < 1024 {
            return bad("http2_max_header_list_size", "must be at least 1024");
        }
        Ok(())
    }
}

fn default_header_read_timeout() -> Option<Duration> {
    Some(Duration::from_secs(10))
}
fn default_body_read_timeout() -> Option<Duration> {
    Some(Duration::from_secs(30))
}
fn default_idle_timeout() -> Option<Duration> {
    Some(Duration::from_secs(60))
}
fn default_max_connections() -> Option<usize> {
    Some(10_000)
}
fn default_max_connections_per_address() -> Option<usize> {
    Some(512)
}
fn default_accept_backlog() -> u32 {
    4096
}
fn default_max_concurrent_streams() -> Option<u32> {
    Some(100)
}
fn default_max_header_list_size() -> u32 {
    16 * 1024
}
fn default_max_pending_accept_reset_streams() -> Option<usize> {
    Some(20)
}
fn default_max_local_error_reset_streams() -> Option<usize> {
    Some(256)
}

/// Serve the listeners over TLS.
///
/// ```yaml
/// listeners:
///   tls:
///     cert: /etc/a2a-gateway/tls.crt      # PEM chain, leaf first
///     key: /etc/a2a-gateway/tls.key       # PEM private key (PKCS#8, PKCS#1 or SEC1)
///     client_ca: [/etc/a2a-gateway/callers-ca.pem]   # mutual TLS: see auth.mtls
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file with the certificate chain, the gateway's own certificate first.
    pub cert: PathBuf,
    /// PEM file with the certificate's private key.
    pub key: PathBuf,
    /// PEM files of the CAs whose client certificates identify callers (mutual TLS). Needs
    /// `auth.mtls`, which says whether a certificate is required. Empty: none is asked for.
    #[serde(default)]
    pub client_ca: Vec<PathBuf>,
    /// The admin listener is served over TLS too, with the same certificate (without client
    /// certificates: operators use the admin credentials).
    #[serde(default = "default_true")]
    pub admin: bool,
}

fn default_true() -> bool {
    true
}
