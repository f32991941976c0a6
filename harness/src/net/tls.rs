//! TLS for talking to receivers and state endpoints over https.
//!
//! Production receivers are https, so the sender and the HTTP probe speak
//! it: the public web roots are trusted, plus any CA certificates the target
//! names (`ca_cert`), for staging environments with a private CA. Plain
//! http keeps working through the same connector.

use std::path::Path;
use std::sync::Arc;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// A CA file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TlsError {
    /// The file.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

/// Extra trusted CA certificates (DER), shared by every client.
#[derive(Debug, Clone, Default)]
pub struct TrustedRoots(pub Arc<Vec<CertificateDer<'static>>>);

impl TrustedRoots {
    /// Loads every certificate of a PEM file.
    pub fn load_pem(path: &Path) -> Result<TrustedRoots, TlsError> {
        let err = |message: String| TlsError {
            path: path.display().to_string(),
            message,
        };
        // A regular file within the budget: `/dev/zero` or a pipe would
        // never end or never answer.
        let pem = crate::limits::budget::read_file(path, crate::limits::budget::CONFIG_FILE)
            .map_err(|e| err(format!("cannot read PEM certificates: {e}")))?;
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .map(|c| c.map(|c| c.into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| err(format!("not a PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(err(
                "no certificate in the file (expected -----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        Ok(TrustedRoots(Arc::new(certs)))
    }
}

/// The client TLS configuration: web roots plus `extra`.
pub fn client_config(extra: &TrustedRoots) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in extra.0.iter() {
        // A certificate the store cannot parse is skipped, as browsers do.
        let _ = roots.add(cert.clone());
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// An http-and-https connector over `http` (which must not enforce http).
pub fn connector(mut http: HttpConnector, extra: &TrustedRoots) -> HttpsConnector<HttpConnector> {
    http.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(client_config(extra))
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}
