//! TLS to agents: the rustls configuration of a backend's `tls:` section ([`BackendTls`]: its own
//! CA bundle, a client certificate for mutual TLS, and — for development only —
//! `insecure_skip_verify`), and the clients built from it ([`crate::clients::BackendClients`]). A
//! backend without the section is reached with the platform's trust store through the shared
//! clients; one with it gets its own clients (card fetches, JSON forwarding, gRPC), built per
//! configuration generation. SNI is the host of the backend's URL.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

pub use crate::config::{ALLOW_INSECURE_ENV, BackendTls};

impl BackendTls {
    /// The rustls client configuration: TLS 1.2+ (each client sets its ALPN offer).
    pub fn client_config(&self, base_dir: &Path, path: &str) -> Result<rustls::ClientConfig, (String, String)> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| (path.to_string(), e.to_string()))?;
        let builder = if self.insecure_skip_verify {
            tracing::warn!(
                backend = path,
                "TLS certificate verification is OFF for this backend (insecure_skip_verify)"
            );
            builder.dangerous().with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
        } else if self.ca.is_empty() {
            use rustls_platform_verifier::BuilderVerifierExt;
            builder.with_platform_verifier().map_err(|e| (path.to_string(), e.to_string()))?
        } else {
            let mut roots = RootCertStore::empty();
            for (i, ca) in self.ca.iter().enumerate() {
                let at = format!("{path}.ca[{i}]");
                for cert in read_certs(&base_dir.join(ca), &at)? {
                    roots.add(cert).map_err(|e| (at.clone(), format!("not a usable CA certificate: {e}")))?;
                }
            }
            builder.with_root_certificates(roots)
        };
        let config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(&base_dir.join(cert), &format!("{path}.cert"))?;
                let key_file = base_dir.join(key);
                let pem = std::fs::read(&key_file)
                    .map_err(|e| (format!("{path}.key"), format!("cannot read {}: {e}", key_file.display())))?;
                let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
                    (format!("{path}.key"), format!("{} holds no private key in PEM form ({e})", key_file.display()))
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    (format!("{path}.key"), format!("the key does not fit the certificate {}: {e}", cert.display()))
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(config)
    }
}

fn read_certs(file: &Path, at: &str) -> Result<Vec<CertificateDer<'static>>, (String, String)> {
    let pem = std::fs::read(file).map_err(|e| (at.to_string(), format!("cannot read {}: {e}", file.display())))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (at.to_string(), format!("{} holds no certificate in PEM form ({e})", file.display())))?;
    if certs.is_empty() {
        return Err((at.to_string(), format!("{} holds no certificate in PEM form", file.display())));
    }
    Ok(certs)
}

/// Accepts any server certificate: `insecure_skip_verify` (signatures still checked, so the
/// handshake itself is sound; who is at the other end is not).
#[derive(Debug)]
struct SkipVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
