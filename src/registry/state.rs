//! What the client knows of each registry, and of each endpoint of a node's route, for the
//! run: its URL and API root, its HTTP client, how it asked to be authenticated, the token
//! scopes planned for it, and containerd's plain-HTTP rule for loopback registries.
//!
//! One [`RegistryState`] per registry (by API host) or per distinct endpoint, shared by every
//! image of the run that goes there, so that what one image learns (a challenge, a token, a
//! fall-back to plain HTTP) serves all of them. [`Registries`] holds them all, and what it
//! takes to make one (the run's client, roots, resolver, `--plain-http`).

use super::auth::AuthScheme;
use super::http::Wire;
use super::token::{TokenSource, Tokens};
use super::{ClientError, Fact, TlsFailure, build_http, dns, is_loopback};
use crate::reference::Reference;
use crate::route::Endpoint;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::OnceCell;

/// The most repositories one token request asks for (each is a `scope` parameter of the URL).
const SCOPES_PER_TOKEN: usize = 64;

pub(super) struct RegistryState {
    /// `scheme://host[:port]`.
    pub(super) base: String,
    /// The API root path: `/v2`, or a node configuration's own (`override_path`).
    pub(super) root: String,
    /// The HTTP client for this registry or endpoint (its own TLS settings and headers).
    pub(super) http: reqwest::Client,
    /// A plain-HTTP token realm on this host may be sent credentials: the node's
    /// configuration speaks plain HTTP to it.
    pub(super) plain_host: Option<String>,
    /// How the registry asked to be authenticated, learnt from the first anonymous manifest
    /// request it challenged (containerd keeps a host's challenge the same way): requests sent
    /// after that carry what it asks for at once, a token from the run's cache or Basic,
    /// instead of asking anonymously first.
    pub(super) challenge: OnceLock<AuthScheme>,
    /// Whether the version check (`GET /v2/`) answers 404. Sent only after a manifest 404 that
    /// nothing explained, and at most once per registry: the runtime never sends it, so it
    /// decides nothing else (see [`Probe::not_a_registry`](super::probe::Probe::not_a_registry)).
    pub(super) version_404: OnceCell<bool>,
    /// Its token plan and the tokens fetched.
    pub(super) tokens: Tokens,
}

impl RegistryState {
    /// A registry's or endpoint's state, before any request.
    fn new(base: String, root: String, http: reqwest::Client) -> RegistryState {
        RegistryState {
            base,
            root,
            http,
            plain_host: None,
            challenge: OnceLock::new(),
            version_404: OnceCell::new(),
            tokens: Tokens::default(),
        }
    }

    /// How to authenticate a request sent now: what the registry asked for, or nothing yet
    /// (ask anonymously and answer the challenge, if one comes).
    pub(super) fn known_scheme(&self) -> AuthScheme {
        self.challenge.get().cloned().unwrap_or(AuthScheme::None)
    }

    /// Remembers how the registry asked to be authenticated. The first challenge is kept: a
    /// registry asks every repository the same way.
    pub(super) fn learn(&self, scheme: &AuthScheme) {
        // Another image of the registry may have learnt it first: same registry, same answer.
        let _ = self.challenge.set(scheme.clone());
    }
}

/// Every registry and endpoint the run has spoken to, by API host or endpoint key.
pub(super) struct Registries {
    /// The run's plain client, which a registry without TLS settings or headers of its own uses.
    http: reqwest::Client,
    /// The run's trusted roots, for endpoints with TLS settings of their own.
    roots: rustls::RootCertStore,
    /// One resolver for every client of the run (the registries' and each endpoint's): one
    /// lookup per name in flight, each bounded by the deadline (see [`dns`]).
    resolver: Arc<dns::Resolver>,
    /// Host names pinned to addresses (tests only: `test_hooks`, a build feature).
    pinned: Vec<(String, std::net::SocketAddr)>,
    /// Registries (lower-case `host[:port]`) spoken to over plain HTTP (`--plain-http`).
    plain_http: HashSet<String>,
    registries: Mutex<HashMap<String, Arc<RegistryState>>>,
    /// Loopback registries that answered HTTPS in plain HTTP and are asked in plain HTTP
    /// since, as containerd asks loopback registries (see [`Registries::loopback_fallback`]).
    fell_back: Mutex<HashSet<String>>,
}

impl Registries {
    /// No registry known yet: states are made over `http` (or, for an endpoint with TLS
    /// settings or headers of its own, a client of its own over `roots`, `resolver` and
    /// `pinned`), in plain HTTP for the `plain_http` hosts.
    pub(super) fn new(
        http: reqwest::Client,
        roots: rustls::RootCertStore,
        resolver: Arc<dns::Resolver>,
        pinned: Vec<(String, std::net::SocketAddr)>,
        plain_http: &[String],
    ) -> Registries {
        Registries {
            http,
            roots,
            resolver,
            pinned,
            plain_http: plain_http.iter().map(|h| h.to_ascii_lowercase()).collect(),
            registries: Mutex::new(HashMap::new()),
            fell_back: Mutex::new(HashSet::new()),
        }
    }

    /// What a token request for `state`'s registry needs of it, going out on `wire`.
    pub(super) fn token_source<'a>(
        &'a self,
        state: &'a RegistryState,
        wire: &'a Wire,
    ) -> TokenSource<'a> {
        TokenSource {
            wire,
            plain_http: &self.plain_http,
            tokens: &state.tokens,
            http: &state.http,
            plain_host: state.plain_host.as_deref(),
        }
    }

    /// Where an image was found: the endpoint of the node's route that answered (a mirror, a
    /// rewritten location, with its own root and client) and the reference as asked there, or
    /// else the image's own registry.
    pub(super) fn found_at<'r>(
        &self,
        reference: &'r Reference,
        endpoint: Option<&'r Endpoint>,
    ) -> Result<(Arc<RegistryState>, &'r Reference), ClientError> {
        match endpoint {
            Some(e) => Ok((self.endpoint_state(e)?, &e.reference)),
            None => Ok((self.state(reference.api_host()), reference)),
        }
    }

    pub(super) fn state(&self, host: &str) -> Arc<RegistryState> {
        let mut map = self
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(host.to_string())
            .or_insert_with(|| Arc::new(self.new_state(host, HashMap::new())))
            .clone()
    }

    fn new_state(&self, host: &str, scopes: HashMap<String, Vec<Vec<String>>>) -> RegistryState {
        let scheme = if self.is_plain(host) { "http" } else { "https" };
        let mut state = RegistryState::new(
            format!("{scheme}://{host}"),
            "/v2".to_string(),
            self.http.clone(),
        );
        state.tokens = Tokens::planned(scopes);
        state
    }

    /// Plans token scopes before the run: for each image, its API host, repository and the
    /// sources of the credentials it may try ("" for anonymous). Images of one registry and
    /// credential then share one token request (several `scope`s in one request).
    pub(super) fn plan(&mut self, images: impl IntoIterator<Item = (String, String, Vec<String>)>) {
        // Repositories in first-seen order per (host, credential); the set keeps this linear
        // for 10,000 images.
        let mut plan: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
        let mut planned: HashSet<(String, String, String)> = HashSet::new();
        for (host, repository, cred_keys) in images {
            for key in cred_keys {
                if !planned.insert((host.clone(), key.clone(), repository.clone())) {
                    continue;
                }
                plan.entry(host.clone())
                    .or_default()
                    .entry(key)
                    .or_default()
                    .push(repository.clone());
            }
        }
        for (host, by_cred) in plan {
            let scopes = by_cred
                .into_iter()
                .map(|(key, repos)| {
                    let groups = repos
                        .chunks(SCOPES_PER_TOKEN)
                        .map(<[String]>::to_vec)
                        .collect();
                    (key, groups)
                })
                .collect();
            let state = Arc::new(self.new_state(&host, scopes));
            self.registries
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(host, state);
        }
    }

    fn is_plain(&self, host: &str) -> bool {
        self.plain_http.contains(&host.to_ascii_lowercase())
    }

    /// Whether the registry `host` was asked in plain HTTP because it is on loopback and
    /// answered HTTPS in plain HTTP.
    pub(super) fn fell_back_to_plain_http(&self, host: &str) -> bool {
        self.fell_back
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&host.to_ascii_lowercase())
    }

    /// containerd's rule for a loopback registry (`localhost`, `127.0.0.0/8`, `::1`) that
    /// no configuration names: it is spoken to in plain HTTP (containerd 1.6's CRI and
    /// `ctr` ask it in plain HTTP; 1.7 and 2.x try HTTPS and fall back). pullcheck asks HTTPS
    /// first, as without the rule, and when the answer is plain HTTP it asks the same registry
    /// in plain HTTP from then on: the plain-HTTP state replaces the registry's own (the same
    /// token plan), for every image of the run. `None` when the rule does not apply: not
    /// loopback, not the registry's own state (a route's endpoint keeps its own scheme), or
    /// another failure.
    pub(super) fn loopback_fallback(
        &self,
        state: &Arc<RegistryState>,
        fact: &Fact,
    ) -> Option<Arc<RegistryState>> {
        // Only the registry's own answer counts: a token realm elsewhere is another server.
        if !matches!(
            fact,
            Fact::Transport {
                step: super::Step::Manifest,
                tls: Some(TlsFailure::PlainHttpAnswer),
                ..
            }
        ) {
            return None;
        }
        let host = state.base.strip_prefix("https://")?.to_string();
        if !is_loopback(&host) || state.root != "/v2" {
            return None;
        }
        let mut map = self
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = map.get(&host)?.clone();
        if current.base.starts_with("http://") {
            // Another image of the registry fell back already.
            return Some(current);
        }
        if !Arc::ptr_eq(&current, state) {
            return None;
        }
        let mut plain = RegistryState::new(
            format!("http://{host}"),
            state.root.clone(),
            self.http.clone(),
        );
        // The node's runtime speaks plain HTTP to it, credentials included; the traffic
        // stays on the host.
        plain.plain_host = Some(host.to_ascii_lowercase());
        plain.tokens = state.tokens.same_plan();
        let plain = Arc::new(plain);
        map.insert(host.clone(), plain.clone());
        self.fell_back
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(host.to_ascii_lowercase());
        Some(plain)
    }

    /// The state of an endpoint: the registry's own when the endpoint is the one pullcheck
    /// would ask anyway, else one per distinct endpoint (URL, TLS settings, headers).
    pub(super) fn endpoint_state(
        &self,
        endpoint: &Endpoint,
    ) -> Result<Arc<RegistryState>, ClientError> {
        let scheme = if self.is_plain(&endpoint.host) {
            "http"
        } else {
            "https"
        };
        if endpoint.is_default() && endpoint.origin == format!("{scheme}://{}", endpoint.host) {
            return Ok(self.state(&endpoint.host));
        }
        let key = endpoint.key();
        if let Some(s) = self
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return Ok(s.clone());
        }
        let http = if endpoint.tls.is_none() && endpoint.headers.is_empty() {
            self.http.clone()
        } else {
            build_http(
                self.roots.clone(),
                endpoint.tls.as_deref(),
                &endpoint.headers,
                self.resolver.clone(),
                &self.pinned,
            )?
        };
        let mut state = RegistryState::new(endpoint.origin.clone(), endpoint.root.clone(), http);
        state.plain_host = endpoint
            .origin
            .starts_with("http://")
            .then(|| endpoint.host.to_ascii_lowercase());
        let state = Arc::new(state);
        let mut map = self
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(map.entry(key).or_insert(state).clone())
    }
}
