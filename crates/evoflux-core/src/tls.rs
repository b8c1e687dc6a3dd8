//! The process's TLS crypto provider.
//!
//! The workspace builds reqwest (and through it rmcp) with rustls but
//! without a bundled crypto provider, so exactly one provider must be
//! installed as the process default before the first HTTP client exists.
//! Every crate that builds a client (the model providers, the MCP client,
//! `web_fetch`) calls [`install_crypto_provider`] first; it lives here, the
//! lowest crate they share, behind the `tls` feature so crates that never
//! speak HTTP do not compile rustls.

use std::sync::Once;

static PROVIDER: Once = Once::new();

/// Installs rustls' ring provider as the process default, once; later
/// calls do nothing. Call it before building any `reqwest::Client`.
pub fn install_crypto_provider() {
    PROVIDER.call_once(|| {
        // Something outside evoflux may have installed a provider already;
        // either one serves, so "already installed" is not an error.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn installing_twice_leaves_one_provider() {
        super::install_crypto_provider();
        super::install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
