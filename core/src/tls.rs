//! TLS for outgoing HTTP (webhooks, OTLP over HTTP): rustls on the ring
//! provider, which sqlx and kube already use. A client built without a
//! process-wide provider would panic, so every binary installs it first.

/// Makes ring the process's rustls provider; later calls change nothing.
pub fn install_crypto_provider() {
    // Err only when a provider is installed already: that one stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What outgoing HTTPS (webhooks, the payment provider) trusts: the
/// Mozilla roots (webpki-roots), on ring, without the process's provider.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    Ok(
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
        .with_no_client_auth(),
    )
}
