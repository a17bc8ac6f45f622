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
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    // The host follows any `user:pass@`.
    let host = authority.rsplit('@').next().unwrap_or(authority);
    host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_hosts_are_found_behind_credentials_too() {
        for (url, loopback) in [
            ("http://127.0.0.1:8000/v1", true),
            ("http://localhost/v1", true),
            ("http://[::1]:9/v1", true),
            ("http://user:pass@127.0.0.1:9/v1?api-key=x", true),
            ("http://127.0.0.1@evil.example/v1", false),
            ("https://api.openai.com/v1", false),
        ] {
            assert_eq!(super::is_loopback(url), loopback, "{url}");
        }
    }
}
