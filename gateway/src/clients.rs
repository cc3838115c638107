//! The connection to agents, built once (it outlives configuration reloads, so pooled connections do
//! too) with its limits set deliberately: connect timeout, idle connections kept per origin and for
//! how long (a burst of streams must not leave one pooled connection, with its buffers, per stream
//! that ran), TCP keep-alive and user timeout. Plain `http://` agents get HTTP/1.1 from a client and
//! pool of our own ([`http1`]: the forwarding task writes the request and reads the answer itself, no
//! connection task, no lock or SipHash beyond one origin lookup); `https://` agents hyper-util's pooled client with rustls and the
//! platform's trust store, HTTP/2 where the agent offers it by ALPN — what the gateway's reqwest
//! client gave before, without its per-request URL handling, redirect and proxy machinery the
//! forwarder never used.
//!
//! Also the HTTP/2-only client of agents that speak only gRPC ([`GrpcClient`]), and the clients of
//! backends with their own TLS settings ([`BackendClients`], from their `tls:` section through
//! [`crate::backend_tls`]), built per configuration generation. The forwarder ([`crate::proxy`])
//! sends through them, the registry fetches cards with them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls_platform_verifier::BuilderVerifierExt;

use crate::config::{Config, Limits};
use crate::workers::PerWorker;

mod http1;

#[cfg(fuzzing)]
pub use self::http1::read_answer_in_pieces;
pub use self::http1::{AgentBody, Http1Error};

/// Pooled client to agents: HTTP/1.1 on plain TCP from a pool of our own ([`http1`]), TLS (where
/// ALPN may choose HTTP/2) through hyper-util's pooled client.
#[derive(Clone)]
pub struct AgentClient {
    plain: http1::Http1Pool,
    tls: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// Why an agent request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentClientError {
    #[error(transparent)]
    Plain(#[from] Http1Error),
    #[error(transparent)]
    Tls(#[from] hyper_util::client::legacy::Error),
}

impl AgentClientError {
    /// Whether the agent cannot have read the request: no connection was made, or the request was
    /// given back unsent (its pooled connection closed before dispatch), or the connection was reset
    /// before any answer. A reset means the agent's socket was closed with our bytes unread (a
    /// process that read the whole request and then died closes with a FIN instead); that is what a
    /// pooled connection to a restarted agent gets. A plain end of connection before the answer
    /// stays ambiguous: the agent may have read the request.
    pub fn never_sent(&self) -> bool {
        let mut source: Option<&(dyn std::error::Error + 'static)> = match self {
            AgentClientError::Plain(Http1Error::NotSent(_)) => return true,
            AgentClientError::Plain(Http1Error::Sent(error)) => Some(error as &(dyn std::error::Error + 'static)),
            AgentClientError::Tls(error) if error.is_connect() => return true,
            AgentClientError::Tls(error) => std::error::Error::source(error),
        };
        while let Some(cause) = source {
            if cause.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_canceled)
                || cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset)
            {
                return true;
            }
            source = cause.source();
        }
        false
    }
}

impl AgentClient {
    /// Sends `request` (an absolute URI) to its agent.
    pub async fn request(&self, request: http::Request<Bytes>) -> Result<http::Response<AgentBody>, AgentClientError> {
        if request.uri().scheme() == Some(&http::uri::Scheme::HTTP) {
            return Ok(self.plain.send(request).await?);
        }
        Ok(self.tls.request(request.map(Full::new)).await?.map(AgentBody::from))
    }
}

/// The agent client of each worker thread (see [`crate::workers`]): each with its own pool.
pub type AgentClients = PerWorker<AgentClient>;

/// Builds the client from the configured limits, trusting the platform's trust store.
pub fn agent_client(limits: &Limits) -> anyhow::Result<AgentClient> {
    agent_client_with(limits, platform_tls())
}

/// One [`agent_client_with`] per worker thread.
pub fn agent_clients(limits: &Limits, tls: rustls::ClientConfig) -> anyhow::Result<AgentClients> {
    PerWorker::build(|| agent_client_with(limits, tls.clone()))
}

/// rustls with the platform's trust store (and the ring provider when none is installed).
pub fn platform_tls() -> rustls::ClientConfig {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the providers' default protocol versions");
    match builder.clone().with_platform_verifier() {
        Ok(builder) => builder.with_no_client_auth(),
        // No usable platform store: nothing verifies, so no TLS agent is reachable (plain ones are).
        Err(error) => {
            tracing::error!(%error, "the platform's TLS trust store is unusable; https agents need a tls.ca");
            builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
        }
    }
}

/// The same with `tls` (a backend's own trust settings, see [`crate::backend_tls`]).
pub fn agent_client_with(limits: &Limits, tls: rustls::ClientConfig) -> anyhow::Result<AgentClient> {
    let mut http = HttpConnector::new();
    // The TLS layer above takes https URLs.
    http.enforce_http(false);
    http.set_connect_timeout(Some(limits.connect_timeout));
    http.set_nodelay(true);
    // As reqwest did: a dead peer of an idle pooled connection is found within about a minute.
    http.set_keepalive(Some(Duration::from_secs(15)));
    http.set_keepalive_interval(Some(Duration::from_secs(15)));
    http.set_keepalive_retries(Some(3));
    http.set_tcp_user_timeout(Some(Duration::from_secs(30)));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let tls = Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_max_idle_per_host(limits.backend_idle_connections)
        .pool_idle_timeout(limits.backend_idle_timeout)
        .build(connector);
    Ok(AgentClient { plain: http1::Http1Pool::new(limits), tls })
}

/// The client to agents that speak only gRPC.
pub type GrpcClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An HTTP/2-only client (gRPC needs HTTP/2: prior knowledge on plain TCP, ALPN h2 on TLS, where
/// the platform's trust store vouches for agents).
pub fn grpc_client(connect_timeout: std::time::Duration) -> GrpcClient {
    grpc_client_with(connect_timeout, None)
}

/// The same with `tls` (a backend's own trust and client certificate) instead of the platform's.
pub fn grpc_client_with(connect_timeout: std::time::Duration, tls: Option<rustls::ClientConfig>) -> GrpcClient {
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    let tls = tls.unwrap_or_else(platform_tls);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http2()
        .wrap_connector(connector);
    Client::builder(TokioExecutor::new()).http2_only(true).build(connector)
}

/// The clients of one backend with its own TLS settings.
#[derive(Clone)]
pub struct TlsClients {
    /// Card fetches.
    pub cards: reqwest::Client,
    /// JSON-RPC and HTTP+JSON forwarding.
    pub agent: AgentClients,
    /// gRPC forwarding (HTTP/2 only).
    pub grpc: PerWorker<GrpcClient>,
}

/// The clients of the backends that have a `tls:` section, by backend name.
#[derive(Clone, Default)]
pub struct BackendClients(Arc<HashMap<String, TlsClients>>);

impl BackendClients {
    /// Builds the clients of every backend with a `tls:` section; the error names the key.
    pub fn build(config: &Config) -> Result<BackendClients, (String, String)> {
        let mut clients = HashMap::new();
        for (i, backend) in config.backends.iter().enumerate() {
            let Some(tls) = &backend.tls else { continue };
            let path = format!("backends[{i}].tls");
            let tls = tls.client_config(&config.base_dir, &path)?;
            clients.insert(backend.name.clone(), clients_for(tls, &config.limits).map_err(|e| (path, e.to_string()))?);
        }
        Ok(BackendClients(Arc::new(clients)))
    }

    pub fn get(&self, backend: &str) -> Option<&TlsClients> {
        self.0.get(backend)
    }
}

fn clients_for(tls: rustls::ClientConfig, limits: &Limits) -> anyhow::Result<TlsClients> {
    let mut for_cards = tls.clone();
    for_cards.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let cards = reqwest::Client::builder()
        .connect_timeout(limits.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tls_backend_preconfigured(for_cards)
        .build()?;
    let agent = agent_clients(limits, tls.clone())?;
    let grpc = PerWorker::new(|| grpc_client_with(limits.connect_timeout, Some(tls.clone())));
    Ok(TlsClients { cards, agent, grpc })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    use super::agent_client;
    use crate::config::Limits;

    /// An agent that answers only once `burst` requests are waiting (so each came on its own
    /// connection) and counts its open connections.
    async fn agent(burst: usize) -> (std::net::SocketAddr, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(AtomicUsize::new(0));
        let all = accepted.clone();
        let barrier = Arc::new(tokio::sync::Barrier::new(burst));
        let counted = open.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                all.fetch_add(1, Ordering::SeqCst);
                let (counted, barrier) = (counted.clone(), barrier.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |_request| {
                        let barrier = barrier.clone();
                        async move {
                            barrier.wait().await;
                            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from_static(b"{}"))))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    counted.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        (addr, accepted, open)
    }

    /// After a burst, the pool keeps `backend_idle_connections` connections (each with its buffers)
    /// and closes the rest at once.
    #[tokio::test]
    async fn a_burst_leaves_only_the_configured_idle_connections() {
        let burst = 12;
        let (addr, accepted, open) = agent(burst).await;
        let limits = Limits { backend_idle_connections: 3, ..Limits::default() };
        let client = agent_client(&limits).unwrap();
        let calls = (0..burst).map(|_| {
            let client = client.clone();
            async move {
                let request = http::Request::post(format!("http://{addr}/")).body(Bytes::from_static(b"{}")).unwrap();
                let response = client.request(request).await.unwrap();
                response.into_body().collect().await.unwrap();
            }
        });
        futures::future::join_all(calls).await;
        assert_eq!(accepted.load(Ordering::SeqCst), burst, "every call of the burst had its own connection");
        // The agent sees the surplus connections close (no timing asserted: waits up to 20 s).
        for _ in 0..200 {
            if open.load(Ordering::SeqCst) <= 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(open.load(Ordering::SeqCst), 3, "idle connections beyond the limit stay open");
    }
}
