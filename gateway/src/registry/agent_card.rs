//! Reading an agent's card: fetched within its limits, normalized to the 1.0 shape, and the
//! interfaces the gateway can call found in it.

use super::*;

/// Fetches the card at `url` and checks that it offers an interface the gateway can use (a
/// self-registering agent's card is checked so before it is admitted).
pub async fn probe_card(
    client: &reqwest::Client,
    url: Url,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Value, String> {
    fetch_card(client, url, timeout, max_bytes).await.map_err(|e| e.to_string())
}

/// Where the gateway would call an agent whose (normalized) card is `card` and whose configured URL
/// is `base`: the dialect, and the JSON-RPC and HTTP+JSON endpoints on `base`'s origin.
pub fn endpoints(card: &Value, base: &Url) -> (Dialect, Option<Url>, Option<Url>) {
    let (dialect, jsonrpc, rest) = interfaces_of(card, None);
    (dialect, jsonrpc.map(|p| on_origin(base, &p)), rest.map(|p| on_origin(base, p.trim_end_matches('/'))))
}

pub(super) async fn fetch_card(
    client: &reqwest::Client,
    url: Url,
    timeout: Duration,
    max: usize,
) -> Result<Value, CheckError> {
    let response = client
        .get(url.clone())
        .header("a2a-version", crate::protocol::PROTOCOL_VERSION)
        .timeout(timeout)
        .send()
        .await?;
    if !response.status().is_success() {
        return Err(CheckError::Status(response.status().as_u16()));
    }
    let bytes = read_capped(response, max).await?;
    let card: Value = serde_json::from_slice(&bytes).map_err(CheckError::Json)?;
    let card = normalize_card(card);
    let (_, jsonrpc, rest) = interfaces_of(&card, None);
    if jsonrpc.is_none() && rest.is_none() && grpc_interface(&card, &url).is_none() {
        return Err(CheckError::NoInterface);
    }
    Ok(card)
}

/// The body of `response`, refused as soon as it passes `max` bytes (by its declared length, or while
/// it streams in): a huge card costs the gateway at most `max` bytes of memory. The health check's
/// timeout bounds the time.
pub(super) async fn read_capped(response: reqwest::Response, max: usize) -> Result<Vec<u8>, CheckError> {
    use futures::StreamExt;
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(CheckError::TooLarge(max));
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max {
            return Err(CheckError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A card in the 1.0 shape: 1.0 cards as they are, a 0.3 card (top-level `url` and a 0.x
/// `protocolVersion`, or `preferredTransport` / `additionalInterfaces`) and an early card (a `url`
/// and no version) through their translations, which list their interfaces as 0.x ones.
pub(super) fn normalize_card(card: Value) -> Value {
    if card.get("supportedInterfaces").is_some_and(Value::is_array) || card.get("url").is_none() {
        return card;
    }
    let version = card.get("protocolVersion").and_then(Value::as_str);
    let is_v03 = version.is_some_and(|v| v.starts_with("0."))
        || card.get("preferredTransport").is_some()
        || card.get("additionalInterfaces").is_some();
    let translated = if is_v03 {
        serde_json::from_value::<v03::AgentCard>(card.clone()).ok().map(v03::card_to_v1)
    } else {
        serde_json::from_value::<early::AgentCard>(card.clone()).ok().map(early::card_to_v1)
    };
    translated.and_then(|c| serde_json::to_value(c).ok()).unwrap_or(card)
}

/// The dialect the gateway speaks to a backend and the paths of its interfaces in it: the first
/// 1.x JSONRPC and HTTP+JSON interfaces; without any, a 0.x JSONRPC one (A2A 0.3) or the early
/// dialect's HTTP+JSON one. `force` picks a dialect the card offers (e.g. the 0.3 interface of an
/// agent that serves both).
pub(super) fn interfaces_of(card: &Value, force: Option<Dialect>) -> (Dialect, Option<String>, Option<String>) {
    let order = match force {
        Some(dialect) => vec![dialect],
        None => vec![Dialect::V1, Dialect::V03, Dialect::Early],
    };
    for dialect in order {
        let (jsonrpc, rest) = interface_paths(card, dialect);
        if jsonrpc.is_some() || rest.is_some() {
            return (dialect, jsonrpc, rest);
        }
    }
    (Dialect::V1, None, None)
}

/// The paths of the card's first JSONRPC and HTTP+JSON interfaces of `dialect` (0.3: JSON-RPC, used
/// when offered, else HTTP+JSON; early: HTTP+JSON of version 0.1 only).
pub(super) fn interface_paths(card: &Value, dialect: Dialect) -> (Option<String>, Option<String>) {
    let mut jsonrpc = None;
    let mut rest = None;
    let Some(Value::Array(list)) = card.get("supportedInterfaces") else {
        return (None, None);
    };
    for interface in list {
        let version = interface.get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0");
        let binding = interface.get("protocolBinding").and_then(Value::as_str);
        let wanted = match dialect {
            Dialect::V1 => version.split('.').next() == Some("1"),
            Dialect::Early => version == early::PROTOCOL_VERSION && binding == Some("HTTP+JSON"),
            Dialect::V03 => {
                version.starts_with("0.")
                    && version != early::PROTOCOL_VERSION
                    && matches!(binding, Some("JSONRPC" | "HTTP+JSON"))
            }
        };
        if !wanted {
            continue;
        }
        let Some(url) = interface.get("url").and_then(Value::as_str) else { continue };
        let Some(path) = url_path(url) else { continue };
        let slot = match interface.get("protocolBinding").and_then(Value::as_str) {
            Some("JSONRPC") => &mut jsonrpc,
            Some("HTTP+JSON") => &mut rest,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(path);
        }
    }
    (jsonrpc, rest)
}

/// The card's first A2A 1.x GRPC interface, on the host of `base`: a card may name the port its gRPC
/// service listens on (gRPC servers rarely share the card's port), never another host. Interfaces
/// that need TLS are not used (the gateway speaks gRPC to agents over plain HTTP/2).
pub(super) fn grpc_interface(card: &Value, base: &Url) -> Option<GrpcTarget> {
    let Some(Value::Array(list)) = card.get("supportedInterfaces") else { return None };
    list.iter().find_map(|interface| {
        let version = interface.get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0");
        if interface.get("protocolBinding").and_then(Value::as_str) != Some("GRPC")
            || version.split('.').next() != Some("1")
        {
            return None;
        }
        let address = interface.get("url").and_then(Value::as_str)?;
        let with_scheme = if address.contains("://") { address.to_owned() } else { format!("http://{address}") };
        let named = Url::parse(&with_scheme).ok()?;
        // The origin's scheme decides TLS: a backend configured https:// is reached over TLS
        // on its gRPC port too.
        if !matches!(named.scheme(), "http" | "https" | "grpc" | "grpcs") || named.host_str() != base.host_str() {
            return None;
        }
        let mut url = base.clone();
        url.set_port(named.port().or(base.port())).ok()?;
        url.set_path(named.path().trim_end_matches('/'));
        url.set_query(None);
        let tenant = interface.get("tenant").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
        Some(GrpcTarget { url, tenant })
    })
}

/// The path of an absolute or root-relative URL.
pub(super) fn url_path(url: &str) -> Option<String> {
    match Url::parse(url) {
        Ok(parsed) => Some(parsed.path().to_string()),
        Err(_) if url.starts_with('/') => Some(url.to_string()),
        Err(_) => None,
    }
}

/// The interface path on the configured origin: a card cannot send the gateway to another host.
pub(super) fn on_origin(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url
}
