//! TLS for outgoing HTTP (webhooks, OTLP over HTTP): rustls on the ring
//! provider, which sqlx and kube already use. A client built without a
//! process-wide provider would panic, so every binary installs it first.

/// Makes ring the process's rustls provider; later calls change nothing.
pub fn install_crypto_provider() {
    // Err only when a provider is installed already: that one stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
