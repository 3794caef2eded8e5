//! The two ways the integration tests reach stand-ins that a user's own means cannot reach,
//! compiled only with the `test-hooks` cargo feature. The release build (`cargo build
//! --release`, as `scripts/build-image.sh` and the Dockerfile run it) leaves the feature out,
//! so the shipped binary neither reads these variables nor holds their names
//! (`tests/it/release.rs` scans it).
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

use crate::credentials::cloud::Env;
use std::net::SocketAddr;

/// The hosts pinned to addresses by `PULLCHECK_TEST_RESOLVE`; a malformed entry is a
/// configuration error. Always empty without the `test-hooks` feature.
#[cfg(feature = "test-hooks")]
pub(crate) fn pinned_hosts(env: &Env, errors: &mut Vec<String>) -> Vec<(String, SocketAddr)> {
    let mut pinned = Vec::new();
    for entry in env
        .get("PULLCHECK_TEST_RESOLVE")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
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
pub(crate) fn pinned_hosts(_env: &Env, _errors: &mut Vec<String>) -> Vec<(String, SocketAddr)> {
    Vec::new()
}

/// Where ACR's token exchange is sent instead of `https://<registry>`, by
/// `PULLCHECK_TEST_ACR_EXCHANGE` (loopback only). Always `None` without the `test-hooks`
/// feature.
#[cfg(feature = "test-hooks")]
pub(crate) fn acr_exchange_base(env: &Env) -> Option<String> {
    env.get("PULLCHECK_TEST_ACR_EXCHANGE")
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| u.starts_with("http://127.0.0.1:") || u.starts_with("http://[::1]:"))
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) fn acr_exchange_base(_env: &Env) -> Option<String> {
    None
}
