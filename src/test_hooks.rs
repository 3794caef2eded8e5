//! The two ways the integration tests reach stand-ins that a user's own means cannot reach,
//! compiled only with the `test-hooks` cargo feature. The release build (`cargo build
//! --release`, as `scripts/build-image.sh` and the Dockerfile run it) leaves the feature out,
//! so the shipped binary neither reads these variables nor holds their names
//! (`tests/it/image.rs` scans the image's binary for them).
//!
//! - `PULLCHECK_TEST_RESOLVE=HOST=IP:PORT,…` connects to HOST at IP:PORT instead of resolving
//!   it, so that cloud registry names (`*.dkr.ecr.*.amazonaws.com`, `*.azurecr.io`, …) and
//!   names that are not on loopback reach a registry the tests started on 127.0.0.1. Why not
//!   `/etc/hosts` in a private mount namespace, as the resolver tests do: a hosts file maps a
//!   name to an address, never to a port, and these names carry no port (a cloud provider
//!   matches the bare host name), so every such test would need root, `unshare -m` and a
//!   registry on port 443 of its own loopback address; a developer without root could no
//!   longer run them.
//! - `PULLCHECK_TEST_ACR_EXCHANGE=http://127.0.0.1:PORT` sends ACR's token exchange (Entra
//!   token in, refresh token out, a `POST` to the registry's own `/oauth2/exchange`) to a
//!   stand-in. No SDK has an override for it (the exchange is the registry's, not Azure's
//!   API), and the registry the tests pin the ACR name to is a real distribution registry,
//!   which has no such endpoint. Only loopback URLs are taken: an Entra token goes nowhere
//!   else.

// A leaf: it reads what its callers hand it, so that no module of the check reaches here and
// back.
use std::net::SocketAddr;

/// The hosts pinned to addresses by `PULLCHECK_TEST_RESOLVE` in the process's environment; a
/// malformed entry is a configuration error. Always empty without the `test-hooks` feature.
#[cfg(feature = "test-hooks")]
pub(crate) fn pinned_hosts(errors: &mut Vec<String>) -> Vec<(String, SocketAddr)> {
    let value = std::env::var("PULLCHECK_TEST_RESOLVE").unwrap_or_default();
    parse_pinned(&value, errors)
}

/// `HOST=IP:PORT,…` as (host, address) pairs.
#[cfg(feature = "test-hooks")]
fn parse_pinned(value: &str, errors: &mut Vec<String>) -> Vec<(String, SocketAddr)> {
    let mut pinned = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry
            .split_once('=')
            .and_then(|(h, a)| Some((h.to_string(), a.parse().ok()?)))
        {
            Some(pair) => pinned.push(pair),
            None => errors.push(format!(
                "PULLCHECK_TEST_RESOLVE {entry:?}: expected HOST=IP:PORT"
            )),
        }
    }
    pinned
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) fn pinned_hosts(_errors: &mut Vec<String>) -> Vec<(String, SocketAddr)> {
    Vec::new()
}

/// Where ACR's token exchange is sent instead of `https://<registry>`, by
/// `PULLCHECK_TEST_ACR_EXCHANGE` (loopback only). Always `None` without the `test-hooks`
/// feature.
#[cfg(feature = "test-hooks")]
pub(crate) fn acr_exchange_base<'a>(env: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    env("PULLCHECK_TEST_ACR_EXCHANGE")
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| u.starts_with("http://127.0.0.1:") || u.starts_with("http://[::1]:"))
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) fn acr_exchange_base<'a>(_env: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    None
}

#[cfg(test)]
#[cfg(feature = "test-hooks")]
mod tests {
    use super::*;
    use crate::credentials::cloud::Env;

    #[test]
    fn pinned_hosts_are_host_equals_address_and_a_bad_entry_is_named() {
        let mut errors = Vec::new();
        let pinned = parse_pinned(
            " a.test=127.0.0.1:5000, ,b.test=[::1]:443,c.test=nowhere",
            &mut errors,
        );
        assert_eq!(
            pinned,
            [
                ("a.test".to_string(), "127.0.0.1:5000".parse().unwrap()),
                ("b.test".to_string(), "[::1]:443".parse().unwrap()),
            ]
        );
        assert_eq!(
            errors,
            ["PULLCHECK_TEST_RESOLVE \"c.test=nowhere\": expected HOST=IP:PORT"]
        );
    }

    #[test]
    fn the_acr_exchange_goes_to_loopback_only() {
        let at = |url: &str| {
            let env = Env::from_pairs([("PULLCHECK_TEST_ACR_EXCHANGE", url)]);
            acr_exchange_base(|k| env.get(k))
        };
        assert_eq!(
            at("http://127.0.0.1:8080/"),
            Some("http://127.0.0.1:8080".to_string())
        );
        assert_eq!(
            at("http://[::1]:8080"),
            Some("http://[::1]:8080".to_string())
        );
        assert_eq!(at("https://login.example.com"), None);
        assert_eq!(at(""), None);
    }
}
