//! What every HTTP client of pullcheck shares, whoever it speaks to (registries, cloud
//! metadata and token endpoints, the API server): the `User-Agent`, a TLS configuration over
//! given roots, and an error's chain of causes in one line. A leaf, so that the credential
//! sources and the node lookup need not reach into `registry` for it.

use std::sync::Arc;

/// The `User-Agent` of every request.
pub(crate) const USER_AGENT: &str = concat!("pullcheck/", env!("CARGO_PKG_VERSION"));

/// A TLS configuration that trusts `roots` alone, with ring as the crypto provider (the
/// static binary carries no other) and no client certificate.
pub(crate) fn tls_config(
    roots: rustls::RootCertStore,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A client builder over `tls`, with our `User-Agent` and no redirect followed: the callers
/// outside `registry` send tokens that are for the host they asked alone.
pub(crate) fn client_builder(tls: rustls::ClientConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .user_agent(USER_AGENT)
        .redirect(reqwest::redirect::Policy::none())
}

/// An error and its causes, joined with `: `, without repeating a cause that the previous
/// message already includes.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = c.source();
    }
    out
}
