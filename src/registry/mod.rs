//! The only place that speaks HTTP to registries.
//!
//! For one image, one *probe* learns how the registry authenticates (one `GET /v2/` per
//! registry per run, shared by all its images), gets a token when the registry wants one (one
//! per registry, credential and repository, shared), and sends **one** `HEAD` for the manifest.
//! Follow-ups (in `inspect`) are sent only when they are needed: after a 404,
//! `GET /v2/<name>/tags/list` tells a missing tag from a missing repository and lists close
//! tags; after a `HEAD` that found an index, one `GET` of the index checks the node's platform;
//! when a container's spec leaves it to the image whether it starts (see [`crate::start`]),
//! `image_config` reads the image's config (a manifest `GET` and a blob `GET`).
//! What a probe found is returned as raw facts ([`Outcome`]); [`classify`](fn@classify) turns them into a
//! verdict in one place. [`dns`] resolves names within the deadline; [`index`] reads an index
//! entry by entry.
//!
//! Everything a server sends is bounded here: bodies by size (and, for manifests and configs,
//! by a budget of bodies in memory at once), numbers by [`MAX_SERVER_WAIT`], digests by
//! [`is_digest`] before they are shown.
//!
//! Why not `oci-client`: its `fetch_manifest_digest` falls back to a manifest GET whenever the
//! HEAD has no digest (every 401/404/429/5xx), and a GET counts as a pull against Docker Hub's
//! rate limit; it swallows token errors (so "credentials rejected" cannot be told from "no
//! access"); it keeps the first credential per registry (so the kubelet's try-each-credential
//! cannot be done); it panics when no CA roots load (a `FROM scratch` image); and it does not
//! expose `Retry-After`. Each of those breaks a contract of this tool, so this module uses
//! `reqwest` directly.

pub mod auth;
pub mod classify;
pub mod dns;
mod image_config;
pub mod index;
mod inspect;

pub use classify::{Verdict, classify, classify_start, wont_start};
pub use image_config::ConfigRead;

use crate::keyring::Credential;
use crate::platform::{MatchMode, Platform};
use crate::progress::Events;
use crate::reference::Reference;
use crate::route::Endpoint;
use auth::{AuthScheme, Token};
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderValue};
use rustls_pki_types::CertificateDer;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// The manifest types a runtime accepts. Without the OCI types distribution answers 404 for OCI
/// images; without the Docker schema2 type it rewrites schema2 manifests to schema1.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// The most of an error body or token answer read.
const MAX_BODY: usize = 64 * 1024;
/// Best-effort follow-ups stop this long before the attempt's deadline.
const SUGGESTION_MARGIN: Duration = Duration::from_millis(300);

/// Which request of a probe a fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `GET /v2/`: how does the registry authenticate?
    Ping,
    /// The token request to the realm.
    Token,
    /// `HEAD /v2/<name>/manifests/<ref>`.
    Manifest,
    /// The `GET`s of an index or config that check the platform.
    Platform,
}

/// Who a probe authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthUsed {
    /// No credentials were sent (none matched, or the registry asked for none).
    Anonymous,
    /// A credential: its user name and source (never its secret).
    Credential {
        /// The user name.
        username: String,
        /// Where it came from.
        source: String,
    },
}

impl AuthUsed {
    fn of(cred: Option<&Credential>) -> AuthUsed {
        match cred {
            None => AuthUsed::Anonymous,
            Some(c) => AuthUsed::Credential {
                username: c.username.clone(),
                source: c.source.clone(),
            },
        }
    }

    /// How JSON names it: `anonymous`, or the credential's source.
    pub fn describe(&self) -> String {
        match self {
            AuthUsed::Anonymous => "anonymous".to_string(),
            AuthUsed::Credential { source, .. } => source.clone(),
        }
    }
}

/// What went wrong in a TLS handshake, as far as it decides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFailure {
    /// The server answered the TLS hello in plain HTTP (rustls: "received corrupt message of
    /// type InvalidContentType"): a plain-HTTP registry asked over HTTPS.
    PlainHttpAnswer,
    /// The certificate does not verify: an issuer this pod does not trust, another name,
    /// expired.
    Certificate,
    /// Any other handshake failure (an alert, no common protocol version or cipher suite).
    Other,
}

/// The raw facts one probe found, before classification.
#[derive(Debug)]
pub enum Fact {
    /// The manifest exists.
    Found {
        /// `Docker-Content-Digest`, or the reference's own digest.
        digest: Option<String>,
        /// The manifest's `Content-Type`.
        media_type: Option<String>,
        /// The index entry that matched the node's platform, when an index was checked.
        platform_digest: Option<String>,
        /// Whether the node's platform was checked.
        platform: PlatformSeen,
        /// The registry sent a `Docker-Content-Digest` that is not `algorithm:hex` of the
        /// right length: not shown (a registry may echo anything there, a credential too).
        digest_invalid: bool,
    },
    /// The manifest HEAD answered 404.
    Missing {
        /// The HEAD's URL.
        url: String,
        /// From `tags/list`: `Some(true)` when the repository itself is missing, `Some(false)`
        /// when it exists, `None` when the registry did not say.
        repository_missing: Option<bool>,
        /// Close tags (or repositories) the registry has: best effort, never a verdict.
        suggestions: Vec<String>,
        /// When no tag is close: a few of the tags the repository has (newest versions
        /// first), so that the message still says what exists.
        some_tags: Vec<String>,
    },
    /// The image exists, but has no variant for the node's platform.
    WrongPlatform {
        /// The manifest's digest.
        digest: Option<String>,
        /// The node's platform.
        wanted: String,
        /// The platforms the image has (the first [`index::MAX_SHOWN_PLATFORMS`]).
        available: Vec<String>,
        /// How many more distinct platforms it has.
        more_platforms: usize,
    },
    /// An HTTP answer that is not what the step needed.
    Status {
        /// The step.
        step: Step,
        /// `GET`, `HEAD`.
        method: &'static str,
        /// The URL, without query secrets (we never put secrets in URLs).
        url: String,
        /// The status code.
        status: u16,
        /// `Retry-After`, when sent.
        retry_after: Option<Duration>,
        /// The Bearer challenge's `error` on a 401 (`insufficient_scope`, `invalid_token`).
        bearer_error: Option<String>,
    },
    /// The request did not complete: DNS, connect, TLS, reset, time-out.
    Transport {
        /// The step.
        step: Step,
        /// `GET`, `HEAD`.
        method: &'static str,
        /// The URL.
        url: String,
        /// What went wrong, with its causes.
        detail: String,
        /// A certificate or TLS handshake failure (it will not heal by retrying), and which.
        tls: Option<TlsFailure>,
        /// The request timed out.
        timeout: bool,
        /// Redirects that were refused: a loop, or from HTTPS down to plain HTTP.
        redirect: bool,
        /// The resolver said the registry's name does not exist.
        no_such_host: bool,
    },
    /// The manifest is an OCI artifact (a Helm chart, a signature, an SBOM), not an image:
    /// its config is not an image config, or it names an `artifactType`. The runtime refuses
    /// to pull it.
    NotAnImage {
        /// The manifest's URL.
        url: String,
        /// What it is (`artifactType …`, `config media type …`), escaped.
        what: String,
    },
    /// The registry asks for an authentication scheme we do not speak.
    UnsupportedAuth {
        /// The scheme.
        scheme: String,
    },
    /// The token server answered 200 without a usable token.
    BadTokenAnswer {
        /// The realm.
        realm: String,
    },
    /// The `realm` of the registry's Bearer challenge is not an `http(s)` URL.
    BadRealm {
        /// The realm as sent.
        realm: String,
    },
    /// The token realm is plain HTTP and not allowed by `--plain-http`, so credentials were not sent.
    InsecureRealm {
        /// The realm.
        realm: String,
    },
    /// The attempt ran out of time.
    TimedOut {
        /// What it was waiting for.
        waiting_for: String,
        /// Whether the overall deadline (rather than one attempt's share) ran out.
        deadline: bool,
    },
}

/// Whether the platform of an image that was found was checked, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformSeen {
    /// An index entry or the image's config matched the node's platform.
    Checked,
    /// The user turned the check off (`--platform any`, `--platform-check off`).
    NotAsked,
    /// Not checked, for this reason (and how to check it).
    Skipped(&'static str),
}

/// What one probe of one image found, and with which credentials.
#[derive(Debug)]
pub struct Outcome {
    /// The decisive fact.
    pub fact: Fact,
    /// The credential in use when the fact was found.
    pub auth: AuthUsed,
    /// Every credential tried, in order (several when the first ones were refused).
    pub tried: Vec<AuthUsed>,
}

/// Settings for the HTTP client.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Registries (`host[:port]`) spoken to over plain HTTP.
    pub plain_http: Vec<String>,
    /// Extra trusted roots (`--ca-file`), added to the Mozilla roots carried in the binary.
    pub ca_certs: Vec<CertificateDer<'static>>,
    /// Whether and how to check the node's platform.
    pub platform: PlatformPolicy,
    /// Tests only: hosts connected to at a fixed address instead of resolved.
    pub resolve: Vec<(String, std::net::SocketAddr)>,
}

/// How far to go to check that an image has a variant for the node (`--platform-check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PlatformCheck {
    /// Check indexes (one manifest `GET`), except on Docker Hub, where a manifest `GET` counts
    /// as a pull against the rate limit.
    #[default]
    Auto,
    /// Check indexes everywhere, and single manifests too (a manifest and a config `GET`).
    Full,
    /// `HEAD` only.
    Off,
}

/// The platform the node needs, and how it is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformPolicy {
    /// The node's platform; `None` (`--platform any`) turns the check off.
    pub want: Option<Platform>,
    /// Lenient (containerd CRI's `platforms.Only`) or strict matching.
    pub mode: MatchMode,
    /// How far to go.
    pub check: PlatformCheck,
}

impl Default for PlatformPolicy {
    fn default() -> PlatformPolicy {
        PlatformPolicy {
            want: Some(Platform::host()),
            mode: MatchMode::Lenient,
            check: PlatformCheck::Auto,
        }
    }
}

/// A client for all registries of a run: one connection pool, one ping and one token cache per
/// registry.
pub struct Client {
    http: reqwest::Client,
    /// Where each request is reported (`--verbose`).
    events: Events,
    /// The run's trusted roots, for endpoints with TLS settings of their own.
    roots: rustls::RootCertStore,
    plain_http: HashSet<String>,
    platform: PlatformPolicy,
    registries: Mutex<HashMap<String, Arc<RegistryState>>>,
    /// Image configs already read in this run, by manifest digest: the platform check of a
    /// single manifest reads the same config the start check needs.
    configs: Mutex<HashMap<String, ConfigRead>>,
    /// The budget for manifest and config bodies in memory at once, one permit per KiB (an
    /// index may be 4 MiB): peak memory is bounded by it, not by `--concurrency`.
    bodies: tokio::sync::Semaphore,
    /// Manifest and config `GET`s in flight at once (see [`BODY_GETS`]).
    body_gets: tokio::sync::Semaphore,
    /// One resolver for every client of the run (the registries' and each endpoint's): one
    /// lookup per name in flight, each bounded by the deadline (see [`dns`]).
    resolver: Arc<dns::Resolver>,
    /// Host names pinned to addresses (tests only: `test_hooks`, a build feature).
    pinned: Vec<(String, std::net::SocketAddr)>,
    /// Loopback registries that answered HTTPS in plain HTTP and are asked in plain HTTP
    /// since, as containerd asks loopback registries (see [`Client::loopback_fallback`]).
    fell_back: Mutex<HashSet<String>>,
}

/// Manifest and config `GET`s in flight at once, whatever `--concurrency`.
const BODY_GETS: usize = 2;

/// KiB of manifest and config bodies read and parsed at once: one 4 MiB index and small ones.
const BODY_BUDGET_KIB: u32 = 5 * 1024;

/// Tokens are cached per (credential source or "", group of repositories).
type TokenKey = (String, String);

/// The most repositories one token request asks for (each is a `scope` parameter of the URL).
const SCOPES_PER_TOKEN: usize = 64;
/// One token fetch shared by all who wait for it: the token and its renewal time, or the token
/// server's refusal (kept for the run, so that rejected credentials are sent once, not once per
/// image: a registry may lock an account that fails too often).
type TokenCell = Arc<OnceCell<Result<(Token, Instant), Refusal>>>;

/// A token server's 401 or 403, as remembered for the run.
#[derive(Debug, Clone)]
struct Refusal {
    url: String,
    status: u16,
}

struct RegistryState {
    /// `scheme://host[:port]`.
    base: String,
    /// The API root path: `/v2`, or a node configuration's own (`override_path`).
    root: String,
    /// The HTTP client for this registry or endpoint (its own TLS settings and headers).
    http: reqwest::Client,
    /// A plain-HTTP token realm on this host may be sent credentials: the node's
    /// configuration speaks plain HTTP to it.
    plain_host: Option<String>,
    /// The repositories each credential ("" for anonymous) will ask tokens for, in groups of
    /// at most [`SCOPES_PER_TOKEN`]; see [`Client::plan`].
    scopes: HashMap<String, Vec<Vec<String>>>,
    /// For each credential, the group of `scopes` each repository is in.
    groups: HashMap<String, HashMap<String, usize>>,
    ping: OnceCell<AuthScheme>,
    /// The version check (`GET /v2/`) answered 404: not proof of anything (the runtime never
    /// sends it), so the manifest request decides; only when it is a 404 too, and the
    /// registry does not say which part is missing, is the host "not a registry".
    ping_404: std::sync::atomic::AtomicBool,
    tokens: Mutex<HashMap<TokenKey, TokenCell>>,
}

/// The client could not be built (bad TLS settings): the run cannot start.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub struct ClientError(String);

impl Client {
    /// Builds the client. The trusted roots are the Mozilla roots compiled into the binary plus
    /// the extra CA certificates, so it works in a `FROM scratch` image with no system store.
    pub fn new(options: &ClientOptions) -> Result<Client, ClientError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for cert in &options.ca_certs {
            roots
                .add(cert.clone())
                .map_err(|e| ClientError(format!("CA certificate not usable: {e}")))?;
        }
        let resolver = Arc::new(dns::Resolver::default());
        let http = build_http(roots.clone(), None, &[], resolver.clone(), &options.resolve)?;
        Ok(Client {
            http,
            roots,
            platform: options.platform.clone(),
            plain_http: options
                .plain_http
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            registries: Mutex::new(HashMap::new()),
            configs: Mutex::new(HashMap::new()),
            events: Events::default(),
            bodies: tokio::sync::Semaphore::new(BODY_BUDGET_KIB as usize),
            body_gets: tokio::sync::Semaphore::new(BODY_GETS),
            resolver,
            pinned: options.resolve.clone(),
            fell_back: Mutex::new(HashSet::new()),
        })
    }

    /// Reports every request to `events` (shown with `--verbose`).
    pub fn set_events(&mut self, events: Events) {
        self.events = events;
    }

    /// Sends a request and reports its method, URL and status (never its headers).
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        method: &str,
        url: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let answer = self.execute(req).await;
        if self.events.shows_requests() {
            let shown = match &answer {
                Ok(r) => Ok(r.status().as_u16()),
                Err(e) => Err(match std::error::Error::source(e) {
                    Some(cause) => error_chain(cause),
                    None => error_chain(e),
                }),
            };
            self.events.request(method, url, shown);
        }
        answer
    }

    /// Sends a request, following redirects as [`redirect_policy`] allows.
    ///
    /// An endpoint's own client (hosts.toml `header`, `ca`, `client`, `skip_verify`) stops at
    /// a redirect to another origin: those settings belong to their host, and reqwest would
    /// send the configured headers along (it strips only `Authorization` and cookies). The
    /// redirect is then followed here with the run's plain client, without them and without
    /// `Authorization`, as a registry's redirect to its storage is followed.
    pub(crate) async fn execute(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let (client, req) = req.build_split();
        let req = req?;
        let again = req.try_clone();
        let answer = client.execute(req).await;
        let (Ok(resp), Some(mut again)) = (&answer, again) else {
            return answer;
        };
        let Some(target) = elsewhere(resp) else {
            return answer;
        };
        if resp.status() == reqwest::StatusCode::SEE_OTHER
            && again.method() != reqwest::Method::HEAD
        {
            *again.method_mut() = reqwest::Method::GET;
        }
        *again.url_mut() = target;
        for name in [
            header::AUTHORIZATION,
            header::COOKIE,
            header::PROXY_AUTHORIZATION,
        ] {
            again.headers_mut().remove(name);
        }
        self.http.execute(again).await
    }

    fn state(&self, host: &str) -> Arc<RegistryState> {
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
        let groups = scopes
            .iter()
            .map(|(key, groups)| {
                let by_repo = groups
                    .iter()
                    .enumerate()
                    .flat_map(|(i, g)| g.iter().map(move |r| (r.clone(), i)))
                    .collect();
                (key.clone(), by_repo)
            })
            .collect();
        RegistryState {
            base: format!("{scheme}://{host}"),
            root: "/v2".to_string(),
            http: self.http.clone(),
            plain_host: None,
            scopes,
            groups,
            ping: OnceCell::new(),
            ping_404: std::sync::atomic::AtomicBool::new(false),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// Plans token scopes before the run: for each image, its API host, repository and the
    /// sources of the credentials it may try ("" for anonymous). Images of one registry and
    /// credential then share one token request (several `scope`s in one request).
    pub fn plan(&mut self, images: impl IntoIterator<Item = (String, String, Vec<String>)>) {
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
    pub fn fell_back_to_plain_http(&self, host: &str) -> bool {
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
    fn loopback_fallback(
        &self,
        state: &Arc<RegistryState>,
        fact: &Fact,
    ) -> Option<Arc<RegistryState>> {
        if !matches!(
            fact,
            Fact::Transport {
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
        let plain = Arc::new(RegistryState {
            base: format!("http://{host}"),
            root: state.root.clone(),
            http: self.http.clone(),
            // The node's runtime speaks plain HTTP to it, credentials included; the traffic
            // stays on the host.
            plain_host: Some(host.to_ascii_lowercase()),
            scopes: state.scopes.clone(),
            groups: state.groups.clone(),
            ping: OnceCell::new(),
            ping_404: std::sync::atomic::AtomicBool::new(false),
            tokens: Mutex::new(HashMap::new()),
        });
        map.insert(host.clone(), plain.clone());
        self.fell_back
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(host.to_ascii_lowercase());
        Some(plain)
    }

    /// Probes one image with the credentials the keyring chose (empty: anonymous). Credentials
    /// are tried in order until one is not refused, as the kubelet does.
    ///
    /// `deadline` is when this attempt will be cut short: best-effort follow-ups (suggestions)
    /// stop a little before it, so that they never cost the verdict.
    pub async fn probe(
        &self,
        reference: &Reference,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: Instant,
    ) -> Outcome {
        let state = self.state(reference.api_host());
        self.probe_state(&state, reference, credentials, progress, deadline, true)
            .await
    }

    /// [`probe`](Self::probe) at one endpoint of a node's route: its own URL, TLS settings and
    /// headers, and the reference as asked there. The caller decides which credentials the
    /// endpoint may be sent. `explain`: after a 404, learn why and what is close (`tags/list`);
    /// not needed when another endpoint will be asked next.
    pub async fn probe_at(
        &self,
        endpoint: &Endpoint,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: Instant,
        explain: bool,
    ) -> Outcome {
        let state = match self.endpoint_state(endpoint) {
            Ok(s) => s,
            Err(e) => {
                return Outcome {
                    fact: Fact::Transport {
                        step: Step::Ping,
                        method: "GET",
                        url: format!("{}/", endpoint.url()),
                        detail: e.to_string(),
                        tls: Some(TlsFailure::Other),
                        timeout: false,
                        redirect: false,
                        no_such_host: false,
                    },
                    auth: AuthUsed::Anonymous,
                    tried: Vec::new(),
                };
            }
        };
        self.probe_state(
            &state,
            &endpoint.reference,
            credentials,
            progress,
            deadline,
            explain,
        )
        .await
    }

    /// The state of an endpoint: the registry's own when the endpoint is the one pullcheck
    /// would ask anyway, else one per distinct endpoint (URL, TLS settings, headers).
    fn endpoint_state(&self, endpoint: &Endpoint) -> Result<Arc<RegistryState>, ClientError> {
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
        let state = Arc::new(RegistryState {
            base: endpoint.origin.clone(),
            root: endpoint.root.clone(),
            http,
            plain_host: endpoint
                .origin
                .starts_with("http://")
                .then(|| endpoint.host.to_ascii_lowercase()),
            scopes: HashMap::new(),
            groups: HashMap::new(),
            ping: OnceCell::new(),
            ping_404: std::sync::atomic::AtomicBool::new(false),
            tokens: Mutex::new(HashMap::new()),
        });
        let mut map = self
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(map.entry(key).or_insert(state).clone())
    }

    async fn probe_state(
        &self,
        state: &Arc<RegistryState>,
        reference: &Reference,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: Instant,
        explain: bool,
    ) -> Outcome {
        let mut state = state.clone();
        let mut scheme = loop {
            progress.set(format!("GET {}{}/", state.base, state.root));
            match state.ping.get_or_try_init(|| self.ping(&state)).await {
                Ok(s) => break s.clone(),
                Err(fact) => {
                    if let Some(plain) = self.loopback_fallback(&state, &fact) {
                        state = plain;
                        continue;
                    }
                    return Outcome {
                        fact,
                        auth: AuthUsed::Anonymous,
                        tried: Vec::new(),
                    };
                }
            }
        };
        let mut tried = Vec::new();
        // The manifest request's own challenge: a registry whose `/v2/` answers without
        // authentication may still protect its repositories, as the runtime (which never
        // pings) finds out from the manifest request. Answered once per probe.
        let mut challenge: Option<AuthScheme> = None;
        let mut challenge_answered = false;
        let last = loop {
            // A registry that asks for no authentication gets no credentials: they would only leak.
            let candidates: Vec<Option<&Credential>> =
                if credentials.is_empty() || scheme == AuthScheme::None {
                    vec![None]
                } else {
                    credentials.iter().copied().map(Some).collect()
                };
            let mut last: Option<(Fact, AuthUsed, Option<String>)> = None;
            let refusal = |f: &Fact| {
                matches!(
                    f,
                    Fact::Status {
                        status: 401 | 403,
                        ..
                    } | Fact::InsecureRealm { .. }
                )
            };
            for cred in candidates {
                let auth = AuthUsed::of(cred);
                tried.push(auth.clone());
                let (fact, authorization) = self
                    .probe_with(&state, &scheme, reference, cred, progress, &mut challenge)
                    .await;
                // As the kubelet: any failed pull moves on to the next matching credential (a
                // registry may answer 404 to a user who may not see a private repository), not
                // only a refusal. A transport failure is not the credential's: it ends the search.
                let answered = matches!(
                    fact,
                    Fact::Status { .. } | Fact::Missing { .. } | Fact::InsecureRealm { .. }
                );
                let found = matches!(fact, Fact::Found { .. });
                // What is reported when none finds it: the first answer that is not a refusal
                // (a 404 says more than a later 401), else the last refusal.
                let keep = last.as_ref().is_none_or(|(f, _, _)| refusal(f)) || found;
                if keep {
                    last = Some((fact, auth, authorization));
                }
                if found || !answered {
                    break;
                }
            }
            match challenge.take() {
                // Basic without a credential to send would only ask the same again.
                Some(asked)
                    if !challenge_answered
                        && scheme == AuthScheme::None
                        && asked != AuthScheme::None
                        && !(credentials.is_empty() && asked == AuthScheme::Basic) =>
                {
                    challenge_answered = true;
                    scheme = asked;
                }
                _ => break last,
            }
        };
        let Some((fact, auth, authorization)) = last else {
            let fact = Fact::UnsupportedAuth {
                scheme: "(no credential to try)".to_string(),
            };
            return Outcome {
                fact,
                auth: AuthUsed::Anonymous,
                tried,
            };
        };
        let authorization = authorization.as_deref();
        let fact = match fact {
            Fact::Found {
                digest,
                media_type,
                digest_invalid,
                ..
            } => {
                let mut fact = self
                    .check_platform(
                        &state,
                        reference,
                        digest,
                        media_type,
                        authorization,
                        progress,
                    )
                    .await;
                if let Fact::Found {
                    digest_invalid: flag,
                    ..
                } = &mut fact
                {
                    *flag = digest_invalid;
                }
                fact
            }
            // A host that is not the last of a route only needs to say "not here": the next
            // one is asked, and the last one explains a miss.
            Fact::Missing { url, .. } if !explain => Fact::Missing {
                url,
                repository_missing: None,
                suggestions: Vec::new(),
                some_tags: Vec::new(),
            },
            Fact::Missing { url, .. } => {
                let suggest_by = deadline
                    .checked_sub(SUGGESTION_MARGIN)
                    .unwrap_or_else(Instant::now);
                self.explain_missing(&state, reference, url, authorization, progress, suggest_by)
                    .await
            }
            other => other,
        };
        // The version check and the manifest both answered 404, and nothing said which part
        // is missing: the host is not a registry (a web server, a wrong path), not a missing
        // image. Where the manifest request was answered otherwise, it decided.
        let fact = match fact {
            Fact::Missing {
                repository_missing: None,
                ..
            } if state.ping_404.load(std::sync::atomic::Ordering::Relaxed) => Fact::Status {
                step: Step::Ping,
                method: "GET",
                url: format!("{}{}/", state.base, state.root),
                status: 404,
                retry_after: None,
                bearer_error: None,
            },
            other => other,
        };
        Outcome { fact, auth, tried }
    }

    async fn probe_with(
        &self,
        state: &RegistryState,
        scheme: &AuthScheme,
        reference: &Reference,
        cred: Option<&Credential>,
        progress: &Progress,
        challenge: &mut Option<AuthScheme>,
    ) -> (Fact, Option<String>) {
        let url = format!(
            "{}{}/{}/manifests/{}",
            state.base,
            state.root,
            reference.repository,
            reference.manifest_ref()
        );
        // An expired token is fetched again once.
        for fresh_token in [false, true] {
            let authorization = match self
                .authorization(state, scheme, reference, cred, fresh_token, progress)
                .await
            {
                Ok(a) => a,
                Err(fact) => return (fact, None),
            };
            progress.set(format!("HEAD {url}"));
            let req = authorized(
                state
                    .http
                    .head(&url)
                    .header(header::ACCEPT, MANIFEST_ACCEPT),
                authorization.as_deref(),
            );
            let resp = match self.send(req, "HEAD", &url).await {
                Ok(r) => r,
                Err(e) => return (transport(Step::Manifest, "HEAD", &url, &e), authorization),
            };
            let status = resp.status();
            let header_text = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            if status.is_success() {
                // Shown only when it reads as a digest: a registry may echo anything here.
                let sent = resp
                    .headers()
                    .get("docker-content-digest")
                    .map(|v| v.to_str().ok().filter(|d| is_digest(d)).map(str::to_string));
                let fact = Fact::Found {
                    digest_invalid: matches!(sent, Some(None)),
                    digest: sent.flatten().or_else(|| reference.digest.clone()),
                    media_type: header_text("content-type"),
                    platform_digest: None,
                    platform: PlatformSeen::NotAsked,
                };
                return (fact, authorization);
            }
            if status == StatusCode::NOT_FOUND {
                let fact = Fact::Missing {
                    url,
                    repository_missing: None,
                    suggestions: Vec::new(),
                    some_tags: Vec::new(),
                };
                return (fact, authorization);
            }
            let bearer_error =
                www_authenticate(resp.headers()).and_then(|h| auth::bearer_error(&h));
            if status == StatusCode::UNAUTHORIZED && authorization.is_none() {
                // Asked without credentials and challenged: how this request wants them.
                let challenges = www_authenticate(resp.headers())
                    .map(|h| auth::parse_www_authenticate(&h))
                    .unwrap_or_default();
                if !challenges.is_empty() {
                    *challenge = Some(AuthScheme::from_challenges(&challenges));
                }
            }
            if status == StatusCode::UNAUTHORIZED
                && bearer_error.as_deref() == Some("invalid_token")
                && !fresh_token
                && matches!(scheme, AuthScheme::Bearer { .. })
            {
                continue;
            }
            let fact = Fact::Status {
                step: Step::Manifest,
                method: "HEAD",
                url,
                status: status.as_u16(),
                retry_after: retry_after(resp.headers()),
                bearer_error,
            };
            return (fact, authorization);
        }
        // Both rounds ended in `continue` only if the fresh token was also invalid, which the
        // loop returns above; this is not reached.
        let fact = Fact::UnsupportedAuth {
            scheme: "bearer (token refused twice)".to_string(),
        };
        (fact, None)
    }

    /// The `Authorization` header for a request about `reference` with `cred`: none, Basic, or
    /// a Bearer token from the run's cache (fetched when missing, expired, or `refresh`).
    async fn authorization(
        &self,
        state: &RegistryState,
        scheme: &AuthScheme,
        reference: &Reference,
        cred: Option<&Credential>,
        refresh: bool,
        progress: &Progress,
    ) -> Result<Option<String>, Fact> {
        match scheme {
            AuthScheme::None => Ok(None),
            AuthScheme::Basic => Ok(cred.map(basic_auth)),
            AuthScheme::Bearer { realm, service } => {
                progress.set(format!("token from {realm}"));
                let token = self
                    .token(
                        state,
                        realm,
                        service.as_deref(),
                        &reference.repository,
                        cred,
                        refresh,
                    )
                    .await?;
                Ok(Some(format!("Bearer {}", token.value)))
            }
            AuthScheme::Unsupported(s) => Err(Fact::UnsupportedAuth { scheme: s.clone() }),
        }
    }

    async fn ping(&self, state: &RegistryState) -> Result<AuthScheme, Fact> {
        let url = format!("{}{}/", state.base, state.root);
        let resp = self
            .send(state.http.get(&url), "GET", &url)
            .await
            .map_err(|e| transport(Step::Ping, "GET", &url, &e))?;
        let status = resp.status();
        // A node configuration's own API root (`override_path`, a proxy project's path) need
        // not answer the version check: the runtime never sends one, it asks for the manifest.
        if status.is_success() || (status == StatusCode::NOT_FOUND && state.root != "/v2") {
            return Ok(AuthScheme::None);
        }
        if status == StatusCode::NOT_FOUND {
            // The version check is not the pull: ask for the manifest anyway (its own
            // challenge, if any, says how to authenticate).
            state
                .ping_404
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(AuthScheme::None);
        }
        if status == StatusCode::UNAUTHORIZED {
            let challenges = www_authenticate(resp.headers())
                .map(|h| auth::parse_www_authenticate(&h))
                .unwrap_or_default();
            return Ok(AuthScheme::from_challenges(&challenges));
        }
        Err(Fact::Status {
            step: Step::Ping,
            method: "GET",
            url,
            status: status.as_u16(),
            retry_after: retry_after(resp.headers()),
            bearer_error: None,
        })
    }

    async fn token(
        &self,
        state: &RegistryState,
        realm: &str,
        service: Option<&str>,
        repository: &str,
        cred: Option<&Credential>,
        refresh: bool,
    ) -> Result<Token, Fact> {
        let cred_key = cred.map(Credential::cache_key).unwrap_or_default();
        // One token for the group of repositories planned for this credential, so that a run
        // over many repositories asks the token server once, not once per repository.
        let group = state
            .groups
            .get(&cred_key)
            .and_then(|by_repo| by_repo.get(repository))
            .copied();
        let (group_key, repositories) = match group {
            Some(i) => (
                format!("group {i}"),
                state
                    .scopes
                    .get(&cred_key)
                    .and_then(|g| g.get(i))
                    .cloned()
                    .unwrap_or_default(),
            ),
            None => (
                format!("repository {repository}"),
                vec![repository.to_string()],
            ),
        };
        let scopes: Vec<String> = repositories
            .iter()
            .map(|r| format!("repository:{r}:pull"))
            .collect();
        let key = (cred_key, group_key);
        let cell = {
            let mut tokens = state
                .tokens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let cell = tokens.entry(key.clone()).or_default();
            let expired = cell
                .get()
                .is_some_and(|t| matches!(t, Ok((_, expires)) if *expires <= Instant::now()));
            let refused = cell.get().is_some_and(Result::is_err);
            if (refresh && !refused) || expired {
                *cell = Arc::new(OnceCell::new());
            }
            cell.clone()
        };
        let answer = cell
            .get_or_try_init(|| async {
                match self.fetch_token(state, realm, service, &scopes, cred).await {
                    Ok(token) => {
                        // Renew a little early so a token does not expire between cache and use.
                        let life = token.lifetime.saturating_sub(Duration::from_secs(5));
                        Ok(Ok((token, instant_after(Instant::now(), life))))
                    }
                    Err(Fact::Status {
                        status: status @ (401 | 403),
                        url,
                        ..
                    }) => Ok(Err(Refusal { url, status })),
                    // Transient failures are not kept: the next attempt asks again.
                    Err(other) => Err(other),
                }
            })
            .await?;
        match answer {
            Ok((token, _)) => Ok(token.clone()),
            Err(refusal) => Err(Fact::Status {
                step: Step::Token,
                method: "GET",
                url: refusal.url.clone(),
                status: refusal.status,
                retry_after: None,
                bearer_error: None,
            }),
        }
    }

    async fn fetch_token(
        &self,
        state: &RegistryState,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
        cred: Option<&Credential>,
    ) -> Result<Token, Fact> {
        // The realm is judged on its own: a URL that does not parse (an odd byte in its host)
        // is the registry's set-up, said as such.
        let mut url = reqwest::Url::parse(realm)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http") && u.host_str().is_some())
            .ok_or_else(|| Fact::BadRealm {
                realm: realm.to_string(),
            })?;
        let realm_host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let plain_ok = self.is_plain(&realm_host)
            || state.plain_host.as_deref() == Some(realm_host.to_ascii_lowercase().as_str());
        if cred.is_some() && url.scheme() != "https" && !plain_ok {
            return Err(Fact::InsecureRealm {
                realm: realm.to_string(),
            });
        }
        {
            let mut q = url.query_pairs_mut();
            if let Some(s) = service {
                q.append_pair("service", s);
            }
            for scope in scopes {
                q.append_pair("scope", scope);
            }
        }
        let shown = url.to_string();
        let req = authorized(state.http.get(url), cred.map(basic_auth).as_deref());
        let resp = self
            .send(req, "GET", &shown)
            .await
            .map_err(|e| transport(Step::Token, "GET", &shown, &e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(Fact::Status {
                step: Step::Token,
                method: "GET",
                url: shown,
                status: status.as_u16(),
                retry_after: retry_after(resp.headers()),
                bearer_error: None,
            });
        }
        let body = read_limited(resp, MAX_BODY)
            .await
            .map_err(|e| transport(Step::Token, "GET", &shown, &e))?;
        auth::parse_token_answer(&body).ok_or(Fact::BadTokenAnswer {
            realm: realm.to_string(),
        })
    }
}

/// An HTTP client over `roots` (plus an endpoint's own CA, client certificate or
/// `skip_verify`), sending `headers` with every request.
fn build_http(
    mut roots: rustls::RootCertStore,
    tls: Option<&crate::route::Tls>,
    headers: &[(String, String)],
    resolver: Arc<dns::Resolver>,
    pinned: &[(String, std::net::SocketAddr)],
) -> Result<reqwest::Client, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    if let Some(t) = tls {
        for cert in &t.ca {
            roots
                .add(cert.clone())
                .map_err(|e| ClientError(format!("CA certificate not usable: {e}")))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError(e.to_string()))?;
    let builder = if tls.is_some_and(|t| t.skip_verify) {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        builder.with_root_certificates(roots)
    };
    let mut config = match tls.and_then(|t| t.identity.as_ref()) {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(|e| ClientError(format!("client certificate not usable: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let mut default_headers = HeaderMap::new();
    for (name, value) in headers {
        let name = header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError(format!("header name {name:?} not usable")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| ClientError(format!("header {name} value not usable")))?;
        // A mirror's header may carry its own token: never shown in a Debug of a request.
        value.set_sensitive(true);
        default_headers.append(name, value);
    }
    let mut builder = reqwest::Client::builder();
    for (host, addr) in pinned {
        builder = builder.resolve(host, *addr);
    }
    builder
        .tls_backend_preconfigured(config)
        .user_agent(concat!("pullcheck/", env!("CARGO_PKG_VERSION")))
        .redirect(redirect_policy(tls.is_some() || !headers.is_empty()))
        .default_headers(default_headers)
        .pool_idle_timeout(Duration::from_secs(30))
        .dns_resolver(resolver)
        .build()
        .map_err(|e| ClientError(error_chain(&e)))
}

/// `skip_verify` (hosts.toml) and `insecure` (registries.conf): any server certificate is
/// accepted, as the node's runtime accepts it; signatures are still checked, so the
/// handshake itself is sound.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Where a probe is, so that a time-out can say what it was waiting for.
#[derive(Debug, Default)]
pub struct Progress(Mutex<String>);

impl Progress {
    fn set(&self, s: String) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = s;
    }

    /// The request in flight, or empty before the first.
    pub fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

fn basic_auth(c: &Credential) -> String {
    use base64::Engine;
    let raw = format!("{}:{}", c.username, c.password.expose());
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    crate::redact::register(&encoded);
    format!("Basic {encoded}")
}

/// Adds an `Authorization` header, when there is one, marked sensitive.
fn authorized(
    req: reqwest::RequestBuilder,
    authorization: Option<&str>,
) -> reqwest::RequestBuilder {
    match authorization {
        Some(a) => req.header(header::AUTHORIZATION, sensitive(a)),
        None => req,
    }
}

/// A header value marked sensitive, so that no `Debug` of a request shows it.
fn sensitive(value: &str) -> HeaderValue {
    let mut v = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    v.set_sensitive(true);
    v
}

/// Every `WWW-Authenticate` header, joined, as bytes: `HeaderValue::to_str` refuses any
/// non-ASCII byte, which would drop a whole challenge for one odd byte in its realm.
fn www_authenticate(headers: &HeaderMap) -> Option<Vec<u8>> {
    let all: Vec<&[u8]> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .map(HeaderValue::as_bytes)
        .collect();
    (!all.is_empty()).then(|| all.join(&b", "[..]))
}

/// `Retry-After` as seconds or an HTTP date, at most [`MAX_SERVER_WAIT`]: the number is the
/// server's, and `Instant + Duration` panics on overflow.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() {
        // More digits than a u64 holds is still "a very long time", not "no header".
        Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX))
    } else {
        let when = httpdate::parse_http_date(v).ok()?;
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_SERVER_WAIT))
}

/// The longest wait or lifetime taken from a server's number (`Retry-After`, `expires_in`): a
/// day, the longest `--timeout`. Anything longer means the same to a run, and a clamped
/// duration keeps every `Instant + Duration` far from overflow.
pub const MAX_SERVER_WAIT: Duration = crate::check::MAX_TIMEOUT;

/// `now + d`, saturating: `Instant + Duration` panics on overflow, and `d` may come from a
/// server. A far-off instant (a day past the longest deadline) stands in for "never".
pub fn instant_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(MAX_SERVER_WAIT.saturating_mul(2)))
        .or_else(|| now.checked_add(MAX_SERVER_WAIT))
        .unwrap_or(now)
}

/// Whether `s` is a digest as a registry must send it: `algorithm:hex`, lower-case hex of the
/// algorithm's length (sha256: 64, sha384: 96, sha512: 128).
pub fn is_digest(s: &str) -> bool {
    let Some((algorithm, hex)) = s.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Follows up to 5 redirects, never from HTTPS down to plain HTTP. reqwest itself drops the
/// `Authorization` header when a redirect leaves the host, port or scheme.
/// Redirects: never from HTTPS to plain HTTP, at most 5. With `same_origin_only` (a client
/// with an endpoint's own headers or TLS settings), a redirect to another origin is not
/// followed by the client but handed back ([`Client::send`] follows it without them).
fn redirect_policy(same_origin_only: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let downgrade = attempt.url().scheme() == "http"
            && attempt
                .previous()
                .last()
                .is_some_and(|u| u.scheme() == "https");
        let elsewhere = same_origin_only
            && attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() != attempt.url().origin());
        if downgrade {
            attempt.error("refusing a redirect from HTTPS to plain HTTP")
        } else if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else if elsewhere {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

/// The target of a redirect that an endpoint's client handed back ([`redirect_policy`]): a
/// 301, 302, 303, 307 or 308 whose `Location` is on another origin than the answer's, and
/// not a downgrade from HTTPS to plain HTTP (which is left as the answer, refused).
fn elsewhere(resp: &reqwest::Response) -> Option<reqwest::Url> {
    if !matches!(resp.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = resp.headers().get(header::LOCATION)?.to_str().ok()?;
    let target = resp.url().join(location).ok()?;
    let downgrade = resp.url().scheme() == "https" && target.scheme() == "http";
    (target.origin() != resp.url().origin() && !downgrade).then_some(target)
}

async fn read_limited(resp: reqwest::Response, max: usize) -> Result<Vec<u8>, reqwest::Error> {
    read_body(resp, max, 0).await
}

/// Reads at most `max` bytes of a body into a buffer sized for `expected` (its announced
/// length): one allocation of the right size rather than doublings that leave a large body's
/// memory fragmented.
async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
    expected: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::with_capacity(expected.min(max));
    while let Some(chunk) = resp.chunk().await? {
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= max {
            break;
        }
    }
    Ok(out)
}

fn transport(step: Step, method: &'static str, url: &str, e: &reqwest::Error) -> Fact {
    // reqwest's own message repeats the URL, which the verdict already names: start at its cause.
    let detail = match std::error::Error::source(e) {
        Some(cause) => error_chain(cause),
        None => error_chain(e),
    };
    Fact::Transport {
        step,
        method,
        url: url.to_string(),
        detail,
        tls: tls_failure(e),
        timeout: e.is_timeout(),
        redirect: e.is_redirect(),
        no_such_host: dns::dns_error(e).is_some_and(|d| d.no_such_host),
    }
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

/// The config media types of images (OCI, Docker schema 2): any other config, or an
/// `artifactType`, makes a manifest an artifact that no runtime runs.
const IMAGE_CONFIG_TYPES: [&str; 2] = [
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];

/// What a single manifest is when it is not an image (`artifactType application/…`, `config
/// media type application/vnd.cncf.helm.config.v1+json`); `None` for an image, and for a body
/// that says nothing either way (no config media type: old manifests leave it out).
pub(crate) fn artifact_kind(manifest: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(rename = "artifactType")]
        artifact_type: Option<String>,
        config: Option<ConfigShape>,
    }
    #[derive(serde::Deserialize)]
    struct ConfigShape {
        #[serde(rename = "mediaType")]
        media_type: Option<String>,
    }
    let shape: Shape = serde_json::from_slice(manifest).ok()?;
    if let Some(t) = shape.artifact_type.filter(|t| !t.is_empty()) {
        return Some(format!("artifactType {}", t.escape_default()));
    }
    let media = shape.config?.media_type?;
    (!IMAGE_CONFIG_TYPES.contains(&media.as_str()))
        .then(|| format!("config media type {}", media.escape_default()))
}

/// Whether `host[:port]` is a loopback registry in containerd's sense (`docker.IsLocalhost`):
/// `localhost`, an address in `127.0.0.0/8`, or `::1` (bracketed, with or without a port).
pub fn is_loopback(host: &str) -> bool {
    let name = if host.parse::<std::net::IpAddr>().is_ok() {
        host
    } else if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The TLS failure (a plain-HTTP answer, a certificate that does not verify, a handshake
/// refused) in the error's causes, if any. `io::Error::source` skips the error it wraps, and
/// the TLS stack nests one `io::Error` in another, so each one is opened down to what it wraps.
fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<TlsFailure> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        let mut inner = c;
        loop {
            if let Some(r) = inner.downcast_ref::<rustls::Error>() {
                return Some(match r {
                    rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
                        TlsFailure::PlainHttpAnswer
                    }
                    rustls::Error::InvalidCertificate(_) => TlsFailure::Certificate,
                    _ => TlsFailure::Other,
                });
            }
            match inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
            {
                Some(wrapped) => inner = wrapped,
                None => break,
            }
        }
        cur = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_told_from_images() {
        let cases: [(&str, Option<&str>); 6] = [
            (
                r#"{"config":{"mediaType":"application/vnd.oci.image.config.v1+json"}}"#,
                None,
            ),
            (
                r#"{"config":{"mediaType":"application/vnd.docker.container.image.v1+json"}}"#,
                None,
            ),
            (r#"{"config":{"digest":"sha256:0"}}"#, None),
            (
                r#"{"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json"}}"#,
                Some("config media type application/vnd.cncf.helm.config.v1+json"),
            ),
            (
                r#"{"artifactType":"application/vnd.example.sbom","config":{"mediaType":"application/vnd.oci.empty.v1+json"}}"#,
                Some("artifactType application/vnd.example.sbom"),
            ),
            ("not json", None),
        ];
        for (body, want) in cases {
            assert_eq!(artifact_kind(body.as_bytes()).as_deref(), want, "{body}");
        }
    }

    #[test]
    fn loopback_hosts_as_containerd_counts_them() {
        for (host, want) in [
            ("localhost", true),
            ("localhost:5000", true),
            ("LOCALHOST:5000", true),
            ("127.0.0.1", true),
            ("127.0.0.1:5000", true),
            ("127.1.2.3:80", true),
            ("[::1]:5000", true),
            ("[::1]", true),
            ("::1", true),
            ("128.0.0.1:5000", false),
            ("localhost.example.com", false),
            ("registry.local:5000", false),
            ("[::2]:5000", false),
            ("10.0.0.1", false),
        ] {
            assert_eq!(is_loopback(host), want, "{host}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        for huge in ["18446744073709551615", "99999999999999999999999999"] {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static(huge));
            assert_eq!(retry_after(&h), Some(MAX_SERVER_WAIT), "{huge}");
        }
    }

    #[test]
    fn digest_table() {
        let hex64 = "a".repeat(64);
        let cases: Vec<(&str, String, bool)> = vec![
            ("sha256", format!("sha256:{hex64}"), true),
            ("sha512", format!("sha512:{}", "0".repeat(128)), true),
            ("sha384", format!("sha384:{}", "f".repeat(96)), true),
            ("short", format!("sha256:{}", &hex64[1..]), false),
            ("upper-case", format!("sha256:{}", "A".repeat(64)), false),
            (
                "sha512 length on sha256",
                format!("sha256:{}", "0".repeat(128)),
                false,
            ),
            ("unknown algorithm", format!("md5:{hex64}"), false),
            ("a credential", "Basic YWxpY2U6czNjcmV0".to_string(), false),
            ("empty", String::new(), false),
        ];
        for (name, digest, want) in cases {
            assert_eq!(is_digest(&digest), want, "{name}");
        }
    }

    #[test]
    fn instants_from_server_numbers_saturate() {
        let now = Instant::now();
        assert!(instant_after(now, Duration::MAX) > now);
        assert_eq!(
            instant_after(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }

    #[test]
    fn endpoint_clients_build_with_their_own_settings() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let tls = crate::route::Tls {
            ca: vec![cert.der().clone()],
            identity: Some((vec![cert.der().clone()], key_der)),
            skip_verify: true,
            files: Vec::new(),
        };
        let headers = [("x-mirror-token".to_string(), "abc".to_string())];
        assert!(
            build_http(
                rustls::RootCertStore::empty(),
                Some(&tls),
                &headers,
                Arc::default(),
                &[]
            )
            .is_ok()
        );
        let bad = [("bad header".to_string(), "x".to_string())];
        assert!(
            build_http(
                rustls::RootCertStore::empty(),
                None,
                &bad,
                Arc::default(),
                &[]
            )
            .is_err()
        );
    }

    #[test]
    fn basic_auth_header_is_sensitive() {
        let v = sensitive("Basic c2VjcmV0");
        assert!(v.is_sensitive());
        assert!(!format!("{v:?}").contains("c2VjcmV0"));
    }
}
