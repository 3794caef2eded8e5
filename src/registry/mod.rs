//! The only place that speaks HTTP to registries.
//!
//! For one image, a *probe* sends **one** `HEAD` for the manifest, as the runtime does: with
//! what the registry already asked of this run, else anonymously, and a challenged request is
//! answered (a token when the registry wants one: one per registry, credential and group of
//! repositories, shared) and sent again once. No version check (`GET /v2/`) comes first; it is
//! sent only after a 404 that nothing explained, to tell a web server from a missing image.
//! Follow-ups (in `inspect`) are sent only when they are needed: after a 404,
//! `GET /v2/<name>/tags/list` tells a missing tag from a missing repository and lists close
//! tags; after a `HEAD` that found an index, one `GET` of the index checks the node's platform;
//! when a container's spec leaves it to the image whether it starts (see [`crate::container_start`]),
//! `image_config` reads the image's config (a manifest `GET` and a blob `GET`).
//! What a probe found is returned as raw facts ([`Probed`]); [`classify`](fn@classify) turns them into a
//! verdict in one place. [`dns`] resolves names within the deadline; [`index`] reads an index
//! entry by entry.
//!
//! Layout: [`Client`] is made of parts, each a type in its own file that owns one concern:
//! `http` one request on the wire (`Wire`: redirects, bounded bodies, transport failures),
//! `token` the `Authorization` a request carries and the token cache (`TokenSource`,
//! `Tokens`), `state` what is known of each registry for the run (`Registries`,
//! `RegistryState`), [`index`] the index walk, `image_config` the image's config
//! (`ImageConfigs`), `inspect` the follow-ups after the `HEAD` (`FollowUps`, within the run's
//! `Bodies`), and `probe` the request flow of one probe (`Probe`). A part that needs another
//! is lent it, never the whole client: each file leans only on those before it in that list,
//! and `mod.rs` holds only the client's own methods, which make the parts and lend them.
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
pub(crate) mod dns;
mod http;
mod image_config;
pub mod index;
mod inspect;
mod probe;
mod state;
mod token;

pub use classify::{Verdict, classify, classify_start, wont_start};
pub use image_config::ConfigRead;

use crate::deadline::{MAX_SERVER_WAIT, instant_after};
use crate::http::error_chain;
use crate::keyring::Credential;
use crate::platform::{MatchMode, Platform};
use crate::progress::Events;
use http::{authorized, read_body, read_limited, retry_after, transport, www_authenticate};
use reqwest::header::{self, HeaderMap, HeaderValue};
use rustls_pki_types::CertificateDer;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The manifest types a runtime accepts. Without the OCI types distribution answers 404 for OCI
/// images; without the Docker schema2 type it rewrites schema2 manifests to schema1.
pub(crate) const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// The most of an error body or token answer read.
const MAX_BODY: usize = 64 * 1024;
/// Best-effort follow-ups stop this long before the attempt's deadline.
const SUGGESTION_MARGIN: Duration = Duration::from_millis(300);

/// Which request of a probe a fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// `GET /v2/`, the version check: sent only after a manifest 404 that nothing explained
    /// (is the host a registry at all?).
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
pub(crate) enum AuthUsed {
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
    pub(crate) fn describe(&self) -> String {
        match self {
            AuthUsed::Anonymous => "anonymous".to_string(),
            AuthUsed::Credential { source, .. } => source.clone(),
        }
    }
}

/// What went wrong in a TLS handshake, as far as it decides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TlsFailure {
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
pub(crate) enum Fact {
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
pub(crate) enum PlatformSeen {
    /// An index entry or the image's config matched the node's platform.
    Checked,
    /// The user turned the check off (`--platform any`, `--platform-check off`).
    NotAsked,
    /// Not checked, for this reason (and how to check it).
    Skipped(&'static str),
}

/// What one probe of one image found, and with which credentials.
#[derive(Debug)]
pub struct Probed {
    /// The decisive fact.
    pub(crate) fact: Fact,
    /// The credential in use when the fact was found.
    pub(crate) auth: AuthUsed,
    /// Every credential tried, in order (several when the first ones were refused).
    pub(crate) tried: Vec<AuthUsed>,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum PlatformCheck {
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
    pub(crate) want: Option<Platform>,
    /// Lenient (containerd CRI's `platforms.Only`) or strict matching.
    pub(crate) mode: MatchMode,
    /// How far to go.
    pub(crate) check: PlatformCheck,
}

impl PlatformPolicy {
    /// No platform check (`--platform any`): whether the reference resolves, and nothing more
    /// (the cluster side's lookups, where the node that will pull is not known).
    pub fn none() -> PlatformPolicy {
        PlatformPolicy {
            want: None,
            ..PlatformPolicy::default()
        }
    }
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

/// A client for all registries of a run: one connection pool, and one learnt challenge and one
/// token cache per registry. Each concern is a part of its own, in its own file; the client
/// only makes them and lends each request flow the parts it needs.
pub(crate) struct Client {
    /// One request on the wire, reported (`--verbose`).
    wire: http::Wire,
    /// What the run knows of each registry and endpoint, their tokens included.
    registries: state::Registries,
    /// The node's platform, and how the follow-ups check it.
    platform: PlatformPolicy,
    /// The run's bounds on manifest and config bodies.
    bodies: inspect::Bodies,
    /// Image configs, and those already read in this run.
    configs: image_config::ImageConfigs,
}

/// The client could not be built (bad TLS settings): the run cannot start.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub(crate) struct ClientError(String);

impl Client {
    /// Builds the client. The trusted roots are the Mozilla roots compiled into the binary plus
    /// the extra CA certificates, so it works in a `FROM scratch` image with no system store.
    pub(crate) fn new(options: &ClientOptions) -> Result<Client, ClientError> {
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
            wire: http::Wire::new(http.clone()),
            registries: state::Registries::new(
                http,
                roots,
                resolver,
                options.resolve.clone(),
                &options.plain_http,
            ),
            platform: options.platform.clone(),
            bodies: inspect::Bodies::default(),
            configs: image_config::ImageConfigs::new(options.platform.clone()),
        })
    }

    /// Reports every request to `events` (shown with `--verbose`).
    pub(crate) fn set_events(&mut self, events: Events) {
        self.wire.set_events(events);
    }

    /// Plans token scopes before the run (see [`state::Registries::plan`]): for each image, its
    /// API host, repository and the sources of the credentials it may try ("" for anonymous).
    pub(crate) fn plan(&mut self, images: impl IntoIterator<Item = (String, String, Vec<String>)>) {
        self.registries.plan(images);
    }

    /// Whether the registry `host` was asked in plain HTTP because it is on loopback and
    /// answered HTTPS in plain HTTP.
    pub(crate) fn fell_back_to_plain_http(&self, host: &str) -> bool {
        self.registries.fell_back_to_plain_http(host)
    }

    /// Probes one image at one endpoint of its route (see [`probe::Probe::probe_at`]).
    pub(crate) async fn probe_at(
        &self,
        endpoint: &crate::route::Endpoint,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: tokio::time::Instant,
        explain: bool,
    ) -> Probed {
        self.probe()
            .probe_at(endpoint, credentials, progress, deadline, explain)
            .await
    }

    /// Reads the config of an image the probe found (see
    /// [`image_config::ImageConfigs::image_config`]).
    pub(crate) async fn image_config(
        &self,
        reference: &crate::reference::Reference,
        found: &Fact,
        credential: Option<&Credential>,
        endpoint: Option<&crate::route::Endpoint>,
        progress: &Progress,
    ) -> ConfigRead {
        self.configs
            .image_config(
                &self.wire,
                &self.registries,
                reference,
                found,
                credential,
                endpoint,
                progress,
            )
            .await
    }

    /// The probe's flow over this client's parts.
    fn probe(&self) -> probe::Probe<'_> {
        probe::Probe {
            wire: &self.wire,
            registries: &self.registries,
            follow_ups: inspect::FollowUps {
                wire: &self.wire,
                bodies: &self.bodies,
                configs: &self.configs,
                platform: &self.platform,
            },
        }
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
        .user_agent(crate::http::USER_AGENT)
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
pub(crate) struct Progress(Mutex<String>);

impl Progress {
    fn set(&self, s: String) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = s;
    }

    /// The request in flight, or empty before the first.
    pub(crate) fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Whether `s` is a digest as a registry must send it: `algorithm:hex`, lower-case hex of the
/// algorithm's length (sha256: 64, sha384: 96, sha512: 128).
pub(crate) fn is_digest(s: &str) -> bool {
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
/// followed by the client but handed back ([`Wire::execute`](http::Wire::execute) follows it
/// without them).
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
pub(crate) fn is_loopback(host: &str) -> bool {
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
}
