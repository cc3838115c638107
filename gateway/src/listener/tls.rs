//! TLS on the listeners: the rustls server configuration built from the PEM files of the
//! `listeners.tls` section ([`TlsConfig`]) (TLS 1.2 and 1.3 only, ALPN `h2` and `http/1.1`, client
//! certificates verified against `client_ca` when callers are identified by them), and its reload:
//! every new connection takes the configuration current then, rebuilt when a file changes (checked
//! every second) or on SIGHUP. A file that does not load keeps the running certificate and is
//! logged.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_util::sync::CancellationToken;

use crate::config::TlsConfig;

/// Whether a listener asks for client certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCerts {
    /// None asked for (the admin listener, or no `client_ca`).
    Off,
    /// Asked for; a connection without one is still served (other credentials then apply).
    Optional,
    /// A connection without a valid certificate is refused in the handshake.
    Required,
}

impl crate::config::Config {
    /// How the public listener asks for client certificates.
    pub fn client_certs(&self) -> ClientCerts {
        use a2a_policies::auth::MtlsMode;
        match self.auth.as_ref().and_then(|auth| auth.mtls.as_ref()).map(|mtls| mtls.mode) {
            None => ClientCerts::Off,
            Some(MtlsMode::Optional) => ClientCerts::Optional,
            Some(MtlsMode::Required | MtlsMode::WithToken) => ClientCerts::Required,
        }
    }
}

/// Why the TLS files could not be used; [`TlsError::path`] names the key it is about.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read { key: &'static str, path: String, source: std::io::Error },
    #[error("{path} holds no {what} in PEM form ({detail})")]
    Pem { key: &'static str, path: String, what: &'static str, detail: String },
    #[error("the private key in {key} does not belong to the certificate in {cert} (their public keys differ)")]
    Mismatch { cert: String, key: String },
    #[error("the certificate in {cert} and the key in {key} cannot be used together: {detail}")]
    Unusable { cert: String, key: String, detail: String },
    #[error("{detail}")]
    ClientCa { detail: String },
}

impl TlsError {
    /// The key path the message is about (for the configuration's error type).
    pub fn path(&self) -> String {
        match self {
            TlsError::Read { key, .. } | TlsError::Pem { key, .. } => format!("listeners.tls.{key}"),
            TlsError::Mismatch { .. } => "listeners.tls.key".into(),
            TlsError::Unusable { .. } => "listeners.tls".into(),
            TlsError::ClientCa { .. } => "listeners.tls.client_ca".into(),
        }
    }
}

impl TlsConfig {
    /// The files this configuration reads, resolved against `base_dir` (the config's directory).
    fn files(&self, base_dir: &Path) -> Vec<PathBuf> {
        let mut files = vec![base_dir.join(&self.cert), base_dir.join(&self.key)];
        files.extend(self.client_ca.iter().map(|ca| base_dir.join(ca)));
        files
    }

    /// Reads the files and builds the server configuration of a listener.
    pub fn server_config(&self, base_dir: &Path, client: ClientCerts) -> Result<rustls::ServerConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cert_path = base_dir.join(&self.cert);
        let key_path = base_dir.join(&self.key);
        let chain = read_certs("cert", &cert_path)?;
        let key = read_key(&key_path)?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsError::Unusable {
                cert: shown(&cert_path),
                key: shown(&key_path),
                detail: e.to_string(),
            })?;
        let builder = match client {
            ClientCerts::Off => builder.with_no_client_auth(),
            ClientCerts::Optional | ClientCerts::Required => {
                let mut roots = RootCertStore::empty();
                for ca in &self.client_ca {
                    for cert in read_certs("client_ca", &base_dir.join(ca))? {
                        roots.add(cert).map_err(|e| TlsError::ClientCa {
                            detail: format!("{}: not a usable CA certificate: {e}", shown(&base_dir.join(ca))),
                        })?;
                    }
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let verifier =
                    if client == ClientCerts::Optional { verifier.allow_unauthenticated() } else { verifier };
                builder.with_client_cert_verifier(
                    verifier.build().map_err(|e| TlsError::ClientCa { detail: e.to_string() })?,
                )
            }
        };
        let mut config = builder.with_single_cert(chain, key).map_err(|e| match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                TlsError::Mismatch { cert: shown(&cert_path), key: shown(&key_path) }
            }
            other => TlsError::Unusable { cert: shown(&cert_path), key: shown(&key_path), detail: other.to_string() },
        })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { key, path: shown(path), source })
}

fn read_certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| TlsError::Pem {
        key,
        path: shown(path),
        what: "certificate",
        detail: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            key,
            path: shown(path),
            what: "certificate",
            detail: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read("key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        key: "key",
        path: shown(path),
        what: "private key",
        detail: e.to_string(),
    })
}

/// A listener's TLS configuration as it is now; the reloader swaps it when the files change.
#[derive(Clone)]
pub struct ListenerTls {
    current: Arc<ArcSwap<rustls::ServerConfig>>,
}

impl ListenerTls {
    /// Loads the files now (an error stops the start) and keeps them reloaded until `stop`.
    pub fn start(
        config: &TlsConfig,
        base_dir: &Path,
        client: ClientCerts,
        stop: CancellationToken,
    ) -> Result<ListenerTls, TlsError> {
        let current = Arc::new(ArcSwap::from_pointee(config.server_config(base_dir, client)?));
        spawn_reloader(config.clone(), base_dir.to_path_buf(), client, current.clone(), stop);
        Ok(ListenerTls { current })
    }

    /// The acceptor for a new connection: the configuration current now.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.load_full())
    }
}

/// Rebuilds the configuration on SIGHUP and when a file's content changes (read every second, as
/// the config file: robust against tools that replace files, e.g. cert-manager's symlink swap).
fn spawn_reloader(
    config: TlsConfig,
    base_dir: PathBuf,
    client: ClientCerts,
    current: Arc<ArcSwap<rustls::ServerConfig>>,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let files = config.files(&base_dir);
        let contents = || files.iter().map(|f| std::fs::read(f).ok()).collect::<Vec<_>>();
        let mut last = contents();
        let mut hangups = crate::hangup::Hangups::listen();
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = hangups.next() => last = contents(),
                _ = ticker.tick() => {
                    let now = contents();
                    if now == last {
                        continue;
                    }
                    last = now;
                }
            }
            match config.server_config(&base_dir, client) {
                Ok(fresh) => {
                    current.store(Arc::new(fresh));
                    tracing::info!(cert = %config.cert.display(), "TLS certificate reloaded; new connections use it");
                }
                Err(error) => tracing::error!(%error, "TLS reload refused; the running certificate stays"),
            }
        }
    });
}
