//! The only place that speaks HTTP to registries.
//!
//! For one image, one *probe* learns how the registry authenticates (one `GET /v2/` per
//! registry per run, shared by all its images), gets a token when the registry wants one (one
//! per registry, credential and repository, shared), and sends **one** `HEAD` for the manifest.
//! Follow-ups (in `inspect`) are sent only when they are needed: after a 404,
//! `GET /v2/<name>/tags/list` tells a missing tag from a missing repository and lists close
//! tags; after a `HEAD` that found an index, one `GET` of the index checks the node's platform.
//! What a probe found is returned as raw facts ([`Outcome`]); [`classify`](fn@classify) turns them into a
//! verdict in one place.
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
mod inspect;

pub use classify::{Verdict, classify};

use crate::keyring::Credential;
use crate::platform::{MatchMode, Platform};
use crate::reference::Reference;
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
    },
    /// The image exists, but has no variant for the node's platform.
    WrongPlatform {
        /// The manifest's digest.
        digest: Option<String>,
        /// The node's platform.
        wanted: String,
        /// The platforms the image has.
        available: Vec<String>,
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
        /// A certificate or TLS handshake failure: it will not heal by retrying.
        tls: bool,
        /// The request timed out.
        timeout: bool,
        /// Redirects that were refused: a loop, or from HTTPS down to plain HTTP.
        redirect: bool,
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
    plain_http: HashSet<String>,
    platform: PlatformPolicy,
    registries: Mutex<HashMap<String, Arc<RegistryState>>>,
}

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
    base: String,
    /// The repositories each credential ("" for anonymous) will ask tokens for, in groups of
    /// at most [`SCOPES_PER_TOKEN`]; see [`Client::plan`].
    scopes: HashMap<String, Vec<Vec<String>>>,
    ping: OnceCell<AuthScheme>,
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
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

        let mut builder = reqwest::Client::builder();
        for (host, addr) in &options.resolve {
            builder = builder.resolve(host, *addr);
        }
        let http = builder
            .tls_backend_preconfigured(tls)
            .user_agent(concat!("pullcheck/", env!("CARGO_PKG_VERSION")))
            .redirect(redirect_policy())
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Client {
            http,
            platform: options.platform.clone(),
            plain_http: options
                .plain_http
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            registries: Mutex::new(HashMap::new()),
        })
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
        RegistryState {
            base: format!("{scheme}://{host}"),
            scopes,
            ping: OnceCell::new(),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// Plans token scopes before the run: for each image, its API host, repository and the
    /// sources of the credentials it may try ("" for anonymous). Images of one registry and
    /// credential then share one token request (several `scope`s in one request).
    pub fn plan(&mut self, images: impl IntoIterator<Item = (String, String, Vec<String>)>) {
        let mut plan: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
        for (host, repository, cred_keys) in images {
            for key in cred_keys {
                let repos = plan
                    .entry(host.clone())
                    .or_default()
                    .entry(key)
                    .or_default();
                if !repos.contains(&repository) {
                    repos.push(repository.clone());
                }
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
        progress.set(format!("GET {}/v2/", state.base));
        let scheme = match state.ping.get_or_try_init(|| self.ping(&state)).await {
            Ok(s) => s.clone(),
            Err(fact) => {
                return Outcome {
                    fact,
                    auth: AuthUsed::Anonymous,
                    tried: Vec::new(),
                };
            }
        };
        // A registry that asks for no authentication gets no credentials: they would only leak.
        let candidates: Vec<Option<&Credential>> =
            if credentials.is_empty() || scheme == AuthScheme::None {
                vec![None]
            } else {
                credentials.iter().copied().map(Some).collect()
            };
        let mut tried = Vec::new();
        let mut last = None;
        for cred in candidates {
            let auth = AuthUsed::of(cred);
            tried.push(auth.clone());
            let (fact, authorization) = self
                .probe_with(&state, &scheme, reference, cred, progress)
                .await;
            // Refusals (401/403, a token server saying no) move on to the next credential;
            // anything else is the answer.
            let refused = matches!(
                fact,
                Fact::Status {
                    status: 401 | 403,
                    ..
                } | Fact::InsecureRealm { .. }
            );
            last = Some((fact, auth, authorization));
            if !refused {
                break;
            }
        }
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
                digest, media_type, ..
            } => {
                self.check_platform(
                    &state,
                    reference,
                    digest,
                    media_type,
                    authorization,
                    progress,
                )
                .await
            }
            Fact::Missing { url, .. } => {
                let suggest_by = deadline
                    .checked_sub(SUGGESTION_MARGIN)
                    .unwrap_or_else(Instant::now);
                self.explain_missing(&state, reference, url, authorization, progress, suggest_by)
                    .await
            }
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
    ) -> (Fact, Option<String>) {
        let url = format!(
            "{}/v2/{}/manifests/{}",
            state.base,
            reference.repository,
            reference.manifest_ref()
        );
        // An expired token is fetched again once.
        for fresh_token in [false, true] {
            let authorization = match scheme {
                AuthScheme::None => None,
                AuthScheme::Basic => cred.map(basic_auth),
                AuthScheme::Bearer { realm, service } => {
                    progress.set(format!("token from {realm}"));
                    let repository = &reference.repository;
                    match self
                        .token(
                            state,
                            realm,
                            service.as_deref(),
                            repository,
                            cred,
                            fresh_token,
                        )
                        .await
                    {
                        Ok(t) => Some(format!("Bearer {}", t.value)),
                        Err(fact) => return (fact, None),
                    }
                }
                AuthScheme::Unsupported(s) => {
                    return (Fact::UnsupportedAuth { scheme: s.clone() }, None);
                }
            };
            progress.set(format!("HEAD {url}"));
            let req = authorized(
                self.http.head(&url).header(header::ACCEPT, MANIFEST_ACCEPT),
                authorization.as_deref(),
            );
            let resp = match req.send().await {
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
                let fact = Fact::Found {
                    digest: header_text("docker-content-digest")
                        .or_else(|| reference.digest.clone()),
                    media_type: header_text("content-type"),
                    platform_digest: None,
                };
                return (fact, authorization);
            }
            if status == StatusCode::NOT_FOUND {
                let fact = Fact::Missing {
                    url,
                    repository_missing: None,
                    suggestions: Vec::new(),
                };
                return (fact, authorization);
            }
            let bearer_error =
                www_authenticate(resp.headers()).and_then(|h| auth::bearer_error(&h));
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

    async fn ping(&self, state: &RegistryState) -> Result<AuthScheme, Fact> {
        let url = format!("{}/v2/", state.base);
        let resp = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| transport(Step::Ping, "GET", &url, &e))?;
        let status = resp.status();
        if status.is_success() {
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
        let cred_key = cred.map(|c| c.source.clone()).unwrap_or_default();
        // One token for the group of repositories planned for this credential, so that a run
        // over many repositories asks the token server once, not once per repository.
        let group = state.scopes.get(&cred_key).and_then(|groups| {
            groups
                .iter()
                .position(|g| g.iter().any(|r| r == repository))
        });
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
                match self.fetch_token(realm, service, &scopes, cred).await {
                    Ok(token) => {
                        // Renew a little early so a token does not expire between cache and use.
                        let life = token.lifetime.saturating_sub(Duration::from_secs(5));
                        Ok(Ok((token, Instant::now() + life)))
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
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
        cred: Option<&Credential>,
    ) -> Result<Token, Fact> {
        let mut url = reqwest::Url::parse(realm).map_err(|_| Fact::BadTokenAnswer {
            realm: realm.to_string(),
        })?;
        let realm_host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        if cred.is_some() && url.scheme() != "https" && !self.is_plain(&realm_host) {
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
        let req = authorized(self.http.get(url), cred.map(basic_auth).as_deref());
        let resp = req
            .send()
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
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
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

fn www_authenticate(headers: &HeaderMap) -> Option<String> {
    let all: Vec<&str> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!all.is_empty()).then(|| all.join(", "))
}

/// `Retry-After` as seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Follows up to 5 redirects, never from HTTPS down to plain HTTP. reqwest itself drops the
/// `Authorization` header when a redirect leaves the host, port or scheme.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let downgrade = attempt.url().scheme() == "http"
            && attempt
                .previous()
                .last()
                .is_some_and(|u| u.scheme() == "https");
        if downgrade {
            attempt.error("refusing a redirect from HTTPS to plain HTTP")
        } else if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else {
            attempt.follow()
        }
    })
}

async fn read_limited(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::new();
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
        tls: is_tls_error(e),
        timeout: e.is_timeout(),
        redirect: e.is_redirect(),
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

/// Whether a TLS failure (a certificate that does not verify, a handshake refused) is in the
/// error's causes. `io::Error::source` skips the error it wraps, and the TLS stack nests one
/// `io::Error` in another, so each one is opened down to what it wraps.
fn is_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        let mut inner = c;
        loop {
            if inner.downcast_ref::<rustls::Error>().is_some() {
                return true;
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
    false
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn basic_auth_header_is_sensitive() {
        let v = sensitive("Basic c2VjcmV0");
        assert!(v.is_sensitive());
        assert!(!format!("{v:?}").contains("c2VjcmV0"));
    }
}
