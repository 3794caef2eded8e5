//! Name resolution for the HTTP client, bounded by the deadline.
//!
//! The system resolver (`getaddrinfo`) is what the node's runtime and every other tool use: it
//! reads `/etc/resolv.conf` (search domains, `ndots`, time-outs, attempts) as glibc or musl do,
//! and `/etc/hosts`. It blocks, and against a DNS server that never answers it blocks for
//! `timeout × attempts` per name and search domain: 20 s and more. So each lookup runs on a
//! thread of its own, and the request waits for it only as long as its attempt may last; at the
//! deadline the wait is dropped and the thread abandoned (the process does not wait for it at
//! exit). Lookups of one name in flight at the same time share one thread.
//!
//! Why not an async resolver crate (hickory-resolver): it re-implements `resolv.conf` and
//! `/etc/hosts` handling (and not nsswitch), and it would add several hundred KiB to a static
//! binary of ~2.9 MiB, for what an abandoned thread gives.
//!
//! What the resolver answered is kept: "no such host" (`EAI_NONAME`; glibc also says
//! `EAI_NODATA`) is told apart from transient failures (`EAI_AGAIN`, a time-out, `SERVFAIL`), so
//! that the check stops retrying a name the resolver says does not exist. Rust's standard
//! library gives `getaddrinfo`'s error only as `gai_strerror`'s words, so they are matched for
//! glibc and musl.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A lookup that failed, with what the resolver said.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{detail}")]
pub(crate) struct DnsError {
    /// The resolver says the name does not exist (NXDOMAIN, or no address for it).
    pub(crate) no_such_host: bool,
    detail: String,
}

type Resolved = Option<Result<Arc<Vec<SocketAddr>>, DnsError>>;

/// The resolver given to reqwest.
#[derive(Default)]
pub(crate) struct Resolver {
    inflight: Arc<Mutex<HashMap<String, watch::Receiver<Resolved>>>>,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let rx = self.lookup(host);
        Box::pin(async move {
            let mut rx = rx?;
            let answer = rx
                .wait_for(Option::is_some)
                .await
                .map_err(|_| DnsError {
                    no_such_host: false,
                    detail: "the lookup thread ended without an answer".to_string(),
                })?
                .clone();
            match answer {
                Some(Ok(addrs)) => {
                    let addrs: reqwest::dns::Addrs = Box::new(addrs.as_ref().clone().into_iter());
                    Ok(addrs)
                }
                Some(Err(e)) => Err(e.into()),
                None => Err(DnsError {
                    no_such_host: false,
                    detail: "no answer".to_string(),
                }
                .into()),
            }
        })
    }
}

impl Resolver {
    /// The answer to come for `host`: joins a lookup in flight, or starts one on a thread.
    fn lookup(&self, host: String) -> Result<watch::Receiver<Resolved>, DnsError> {
        let mut inflight = self
            .inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(rx) = inflight.get(&host) {
            return Ok(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        let map = self.inflight.clone();
        let name = host.clone();
        std::thread::Builder::new()
            .name("dns".to_string())
            .spawn(move || {
                let answer = getaddrinfo(&name);
                let _ = tx.send(Some(answer));
                map.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&name);
            })
            .map_err(|e| DnsError {
                no_such_host: false,
                detail: format!("cannot start a lookup: {e}"),
            })?;
        inflight.insert(host, rx.clone());
        Ok(rx)
    }
}

fn getaddrinfo(host: &str) -> Result<Arc<Vec<SocketAddr>>, DnsError> {
    match (host, 0).to_socket_addrs() {
        Ok(addrs) => Ok(Arc::new(addrs.collect())),
        Err(e) => {
            let detail = e.to_string();
            Err(DnsError {
                no_such_host: says_no_such_host(&detail),
                detail,
            })
        }
    }
}

/// Whether `gai_strerror`'s words say the name does not exist: glibc's `EAI_NONAME` and
/// `EAI_NODATA`, musl's `EAI_NONAME`. Everything else (`EAI_AGAIN`: "Temporary failure in name
/// resolution", "Try again") may heal.
fn says_no_such_host(message: &str) -> bool {
    [
        "Name or service not known",
        "No address associated with hostname",
        "Name does not resolve",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// The [`DnsError`] in an error's causes, if a lookup is what failed.
pub(crate) fn dns_error<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e DnsError> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(d) = c.downcast_ref::<DnsError>() {
            return Some(d);
        }
        cur = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_words_table() {
        let cases: &[(&str, bool)] = &[
            (
                "failed to lookup address information: Name or service not known",
                true,
            ),
            (
                "failed to lookup address information: No address associated with hostname",
                true,
            ),
            (
                "failed to lookup address information: Name does not resolve",
                true,
            ),
            (
                "failed to lookup address information: Temporary failure in name resolution",
                false,
            ),
            ("failed to lookup address information: Try again", false),
        ];
        for (message, want) in cases {
            assert_eq!(says_no_such_host(message), *want, "{message}");
        }
    }

    #[test]
    fn localhost_resolves_and_invalid_names_do_not() {
        assert!(!getaddrinfo("localhost").unwrap().is_empty());
        let e = getaddrinfo("pullcheck-test.invalid").unwrap_err();
        assert!(e.to_string().contains("lookup"), "{e}");
    }
}
