//! Network plumbing shared by every layer that opens HTTP connections: the
//! TLS crypto provider and loopback detection.
//!
//! A leaf: it imports nothing from the rest of the crate.

/// Installs the TLS crypto provider once per process.
pub fn install_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Whether `url` points at this machine (such requests bypass any proxy).
pub(crate) fn is_loopback(url: &str) -> bool {
    let host = url.split("://").nth(1).unwrap_or(url);
    host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
}
