//! Built-in cloud credential providers: for an image of ECR, Artifact Registry / GCR or ACR,
//! a registry credential from the identity the pod has, as the node's credential-provider
//! plugins (`ecr-credential-provider`, `auth-provider-gcp`, `acr-credential-provider`) would
//! get one.
//!
//! Which registries each provider serves are the upstream plugins' default `matchImages`
//! ([`Provider::for_host`]). Each provider is asked once per run (AWS: the identity once, the
//! ECR token once per region; Google: once; Azure: the Entra token once, the refresh token
//! once per registry), from whichever image needs it first; the other images wait for that
//! answer. Metadata endpoints (IMDS, the GKE metadata server, Azure IMDS, Pod Identity's agent)
//! get one second in all (IMDS: half a second for IMDSv2's token, half for the IMDSv1 fallback
//! when the token answer never came), then the provider is "unavailable".
//!
//! No cloud SDK: the three exchanges are a few HTTP requests each, and AWS's SigV4 is ~100 lines
//! over `ring` (already in the binary for TLS); the SDKs would add megabytes to a binary whose
//! budget is 4 MiB.

pub(crate) mod aws;
pub(crate) mod azure;
pub(crate) mod google;

use super::Lookup;
use crate::keyring::Credential;
use crate::reference::Reference;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;

/// `--cloud-credentials`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// Ask the cloud for ECR, Artifact Registry / GCR and ACR images.
    #[default]
    Auto,
    /// Never.
    Off,
    /// As `auto`, and an image a provider serves that gets no credential at all (no pull
    /// secret, every provider unavailable) fails: for clusters where every pod has an identity.
    Required,
}

/// A cloud service's own words for a message: its first 200 characters, escaped, and scrubbed
/// of the secrets known, since an answer may quote the token it was sent.
pub(crate) fn server_words(s: &str) -> String {
    crate::redact::foreign(
        &s.chars()
            .take(200)
            .collect::<String>()
            .escape_default()
            .to_string(),
    )
}

/// How long a metadata endpoint gets to accept a connection and answer.
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a cloud API (STS, ECR, Entra ID, a registry's exchange) gets to accept a connection.
const API_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a cloud answer read.
const MAX_ANSWER: usize = 256 * 1024;

/// The registries a provider serves, with what the provider needs to know of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Provider {
    /// `<account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]`.
    Aws(aws::EcrHost),
    /// `gcr.io`, `*.gcr.io`, `*.pkg.dev`, `container.cloud.google.com`.
    Google,
    /// `*.azurecr.io`, `.cn`, `.de`, `.us`: the registry's host.
    Azure(String),
}

impl Provider {
    /// Its name in messages and JSON: `aws`, `google`, `azure`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Provider::Aws(_) => "aws",
            Provider::Google => "google",
            Provider::Azure(_) => "azure",
        }
    }

    /// The provider whose default `matchImages` match a registry host (no port: the upstream
    /// patterns have none, and the kubelet compares ports exactly).
    pub(crate) fn for_host(host: &str) -> Option<Provider> {
        let host = host.to_ascii_lowercase();
        if host.contains(':') {
            return None;
        }
        if let Some(ecr) = aws::EcrHost::parse(&host) {
            return Some(Provider::Aws(ecr));
        }
        let labels: Vec<&str> = host.split('.').collect();
        let one_label_under = |suffix: &[&str]| {
            labels.len() == suffix.len() + 1
                && labels[1..] == *suffix
                && labels.first().is_some_and(|l| !l.is_empty())
        };
        if host == "gcr.io"
            || host == "container.cloud.google.com"
            || one_label_under(&["gcr", "io"])
            || one_label_under(&["pkg", "dev"])
        {
            return Some(Provider::Google);
        }
        if ["io", "cn", "de", "us"]
            .iter()
            .any(|tld| one_label_under(&["azurecr", tld]))
        {
            return Some(Provider::Azure(host));
        }
        None
    }
}

/// A snapshot of the environment variables the providers read, so that tests can give their
/// own and a run sees one consistent set.
#[derive(Clone, Default)]
pub(crate) struct Env(HashMap<String, String>);

impl Env {
    /// The process's environment (variables that are not UTF-8 are left out: none of the
    /// ones read here can be).
    pub(crate) fn from_process() -> Env {
        Env(std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect())
    }

    #[cfg(test)]
    /// The given variables only.
    pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        Env(pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    /// A variable, when set and not empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }
}

/// A registry credential, or why there is none (shown to the user: never a secret).
type CloudAnswer = Result<Credential, CloudError>;

/// Why a cloud provider gives no credential (shown to the user: never a secret). Cloned, as
/// one answer serves every image of a registry: the causes are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CloudError {
    /// None of the provider's sources is configured, and the last one tried (the sources
    /// looked at say which) did not answer.
    #[error("{sources}: {why}")]
    NoSource {
        sources: &'static str,
        why: Arc<TransportError>,
    },
    /// AWS: no source configured, and the instance metadata service turned off.
    #[error(
        "no AWS credential source: no AWS_ACCESS_KEY_ID, no AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (IRSA), no AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity), and AWS_EC2_METADATA_DISABLED is set"
    )]
    AwsDisabled,
    /// AWS: the instance metadata service's three steps took longer than their limit in all.
    #[error(
        "instance metadata (session token, role and keys: {}s in all) did not answer in time",
        .0.as_secs_f64()
    )]
    MetadataTimeout(Duration),
    /// AWS: the instance metadata service gives no role to ask.
    #[error(transparent)]
    Imds(#[from] aws::ImdsError),
    /// AWS: the container credentials variables name no endpoint.
    #[error("no container credentials endpoint")]
    NoContainerEndpoint,
    /// AWS: ECR's API endpoint (escaped) is not a URL.
    #[error("ECR endpoint {0} is not a URL")]
    EcrEndpoint(String),
    /// One step of an identity (`aws web identity arn:…`, `azure managed identity`) failed.
    #[error("{identity}: {why}")]
    Identity { identity: String, why: Step },
}

/// The step of an identity that failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Step {
    /// Its token file gives no token.
    #[error(transparent)]
    TokenFile(Arc<TokenFileError>),
    /// The endpoint, unnamed (the identity names it), did not answer.
    #[error(transparent)]
    Transport(Arc<TransportError>),
    /// The endpoint (`STS`, `Entra ID`) did not answer.
    #[error("{endpoint}: {why}")]
    Unanswered {
        endpoint: String,
        why: Arc<TransportError>,
    },
    /// The endpoint (with its URL or region) answered with an error status, and what the
    /// answer says (` (Code: Message)`, or nothing).
    #[error("{endpoint} answered {status}{detail}")]
    Refused {
        endpoint: String,
        status: u16,
        detail: String,
    },
    /// A 200 answer that gives nothing usable, in the provider's words (`STS answered 200
    /// without credentials`, `ECR's token is not base64 text`).
    #[error("{0}")]
    Empty(String),
    /// The endpoint's URL (`AWS_CONTAINER_CREDENTIALS_FULL_URI`) is not a URL.
    #[error("AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL")]
    NotUrl,
    /// A credentials endpoint (escaped) over plain HTTP to a host that may not have a token.
    #[error(
        "{0} is plain HTTP to a host other than the EKS Pod Identity agent or loopback; refused"
    )]
    PlainHttp(String),
}

impl Step {
    /// The transport error of an endpoint the identity names.
    pub(crate) fn transport(e: TransportError) -> Step {
        Step::Transport(Arc::new(e))
    }

    /// The transport error of a named endpoint.
    pub(crate) fn unanswered(endpoint: impl Into<String>, e: TransportError) -> Step {
        Step::Unanswered {
            endpoint: endpoint.into(),
            why: Arc::new(e),
        }
    }

    /// An error status of a named endpoint, with what the answer says.
    pub(crate) fn refused(endpoint: impl Into<String>, status: u16, detail: String) -> Step {
        Step::Refused {
            endpoint: endpoint.into(),
            status,
            detail,
        }
    }

    /// This step, failed for `identity`.
    pub(crate) fn of(self, identity: &str) -> CloudError {
        CloudError::Identity {
            identity: identity.to_string(),
            why: self,
        }
    }
}

impl From<TokenFileError> for Step {
    fn from(e: TokenFileError) -> Step {
        Step::TokenFile(Arc::new(e))
    }
}
type Cell<T> = Arc<OnceCell<T>>;

/// The built-in providers of a run.
pub(crate) struct Cloud {
    env: Env,
    /// Built on first use: a run without cloud images pays nothing for it.
    http: std::sync::OnceLock<Result<Http, SetupError>>,
    extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    aws_identity: OnceCell<Result<aws::Keys, CloudError>>,
    ecr: Mutex<HashMap<String, Cell<CloudAnswer>>>,
    google: OnceCell<CloudAnswer>,
    azure_token: OnceCell<Result<azure::EntraToken, CloudError>>,
    acr: Mutex<HashMap<String, Cell<CloudAnswer>>>,
}

impl Cloud {
    /// The providers, reading `env`. `extra_roots` are trusted besides the Mozilla roots (for
    /// endpoints behind a private CA). Nothing is set up until an image needs a provider.
    pub(crate) fn new(
        env: Env,
        extra_roots: &[rustls_pki_types::CertificateDer<'static>],
    ) -> Cloud {
        Cloud {
            env,
            http: std::sync::OnceLock::new(),
            extra_roots: extra_roots.to_vec(),
            aws_identity: OnceCell::new(),
            ecr: Mutex::new(HashMap::new()),
            google: OnceCell::new(),
            azure_token: OnceCell::new(),
            acr: Mutex::new(HashMap::new()),
        }
    }

    /// The credential for one image, or a note on why there is none; nothing for a registry
    /// no provider serves. The caller bounds it by the run's deadline.
    pub(crate) async fn lookup(&self, reference: &Reference) -> Lookup {
        let Some(provider) = Provider::for_host(reference.api_host()) else {
            return Lookup::default();
        };
        let http = match self.http.get_or_init(|| Http::new(&self.extra_roots)) {
            Ok(h) => h,
            Err(e) => {
                return Lookup {
                    notes: vec![format!("cloud credentials unavailable: {e}")],
                    unavailable: vec![super::ProviderTried {
                        provider: provider.name().to_string(),
                        kind: super::ProviderKind::Cloud,
                        why: e.to_string(),
                    }],
                    ..Lookup::default()
                };
            }
        };
        let (name, answer) = match &provider {
            Provider::Aws(host) => ("aws", self.ecr_credential(http, host).await),
            Provider::Google => (
                "google",
                self.google
                    .get_or_init(|| google::credential(&self.env, http))
                    .await
                    .clone(),
            ),
            Provider::Azure(registry) => ("azure", self.acr_credential(http, registry).await),
        };
        match answer {
            Ok(c) => Lookup {
                credentials: vec![c],
                ..Lookup::default()
            },
            Err(why) => Lookup {
                notes: vec![format!("{name} cloud credentials unavailable: {why}")],
                unavailable: vec![super::ProviderTried {
                    provider: name.to_string(),
                    kind: super::ProviderKind::Cloud,
                    why: why.to_string(),
                }],
                ..Lookup::default()
            },
        }
    }

    async fn ecr_credential(&self, http: &Http, host: &aws::EcrHost) -> CloudAnswer {
        let cell = cell_for(&self.ecr, &host.api_key());
        cell.get_or_init(|| async {
            let keys = self
                .aws_identity
                .get_or_init(|| aws::identity(&self.env, http, &host.region))
                .await
                .clone()?;
            aws::ecr_token(&self.env, http, host, &keys).await
        })
        .await
        .clone()
    }

    async fn acr_credential(&self, http: &Http, registry: &str) -> CloudAnswer {
        let cell = cell_for(&self.acr, registry);
        cell.get_or_init(|| async {
            let token = self
                .azure_token
                .get_or_init(|| azure::entra_token(&self.env, http))
                .await
                .clone()?;
            azure::exchange(&self.env, http, registry, &token).await
        })
        .await
        .clone()
    }
}

fn cell_for<T>(map: &Mutex<HashMap<String, Cell<T>>>, key: &str) -> Cell<T> {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(key.to_string())
        .or_default()
        .clone()
}

/// The two HTTP clients of the providers: one for metadata endpoints on the node's link
/// (short time-outs, never through a proxy), one for cloud APIs (proxies as the SDKs honour
/// them). Neither follows redirects: a credential answer that moves is not trusted.
pub(crate) struct Http {
    metadata: reqwest::Client,
    api: reqwest::Client,
}

/// Why the providers' HTTP clients cannot be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    /// A root (`--ca-file`) or the TLS versions are refused.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    /// The client itself, with its causes.
    #[error("{}", crate::http::error_chain(.0))]
    Client(reqwest::Error),
}

/// A request to a provider's endpoint that got no answer, said plainly: "did not answer in
/// time" for time-outs.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.0))]
pub(crate) struct TransportError(reqwest::Error);

impl TransportError {
    /// Whether it was a time-out after connecting (IMDSv2's hop limit).
    pub(crate) fn is_timeout(&self) -> bool {
        self.0.is_timeout()
    }
}

/// An HTTP answer: status and (bounded) body.
pub(crate) struct Answered {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Answered {
    /// The body as text, cut and escaped for a message (error answers only: never a success
    /// body, which holds credentials).
    pub(crate) fn shown(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let cut: String = text.chars().take(200).collect();
        // The server's words: it may quote the credential it was sent.
        crate::redact::foreign(&cut.escape_default().to_string())
    }
}

impl Http {
    fn new(extra_roots: &[rustls_pki_types::CertificateDer<'static>]) -> Result<Http, SetupError> {
        let tls = || -> Result<rustls::ClientConfig, rustls::Error> {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            for cert in extra_roots {
                roots.add(cert.clone())?;
            }
            crate::http::tls_config(roots)
        };
        let metadata = crate::http::client_builder(tls()?)
            .no_proxy()
            .connect_timeout(METADATA_TIMEOUT)
            .build()
            .map_err(SetupError::Client)?;
        let api = crate::http::client_builder(tls()?)
            .connect_timeout(API_CONNECT_TIMEOUT)
            .build()
            .map_err(SetupError::Client)?;
        Ok(Http { metadata, api })
    }

    /// Sends a request to a metadata endpoint: one second in all.
    pub(crate) async fn metadata(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Answered, TransportError> {
        self.metadata_within(METADATA_TIMEOUT, build).await
    }

    /// Sends a request to a metadata endpoint, with its own time limit.
    pub(crate) async fn metadata_within(
        &self,
        limit: Duration,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Answered, TransportError> {
        send(build(&self.metadata).timeout(limit)).await
    }

    /// Sends a request to a cloud API.
    pub(crate) async fn api(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Answered, TransportError> {
        send(build(&self.api).timeout(Duration::from_secs(20))).await
    }
}

async fn send(req: reqwest::RequestBuilder) -> Result<Answered, TransportError> {
    let mut resp = req.send().await.map_err(TransportError)?;
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_ANSWER.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_ANSWER {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(TransportError(e)),
        }
    }
    Ok(Answered { status, body })
}

/// A transport error, said plainly: "did not answer in time" for time-outs.
fn describe(e: &reqwest::Error) -> String {
    let url = e.url().map(|u| u.to_string()).unwrap_or_default();
    if e.is_timeout() {
        format!("{url} did not answer in time")
    } else if e.is_connect() {
        format!(
            "cannot connect to {url}: {}",
            std::error::Error::source(e)
                .map(crate::http::error_chain)
                .unwrap_or_default()
        )
    } else {
        format!(
            "{url}: {}",
            std::error::Error::source(e)
                .map(crate::http::error_chain)
                .unwrap_or_else(|| e.to_string())
        )
    }
}

/// RFC 3986 encoding of everything but the unreserved characters, as SigV4 wants.
pub(crate) fn uri_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `application/x-www-form-urlencoded`, with SigV4's encoding (which form decoders accept).
pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k), uri_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A header value marked sensitive, so that no `Debug` of a request shows it.
pub(crate) fn sensitive(value: &str) -> reqwest::header::HeaderValue {
    let mut v = reqwest::header::HeaderValue::from_str(value.trim())
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
    v.set_sensitive(true);
    v
}

/// A string field of a JSON answer.
pub(crate) fn json_str(body: &[u8], field: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v.get(field)?.as_str().map(str::to_string)
}

/// Why a token file gives no token; the path is shown escaped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenFileError {
    #[error("{0} is larger than 64 KiB")]
    TooLarge(String),
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is empty")]
    Empty(String),
}

/// Reads a small token file (a projected service-account token, a federated token).
pub(crate) fn read_token_file(path: &str) -> Result<String, TokenFileError> {
    use crate::input::LimitedReadError;
    let shown = || path.escape_default().to_string();
    let text = match crate::input::read_limited_file(std::path::Path::new(path), 64 * 1024) {
        Ok(t) => t,
        Err(LimitedReadError::TooLarge) => return Err(TokenFileError::TooLarge(shown())),
        Err(LimitedReadError::Io(e)) => return Err(TokenFileError::Io(shown(), e)),
    };
    let token = String::from_utf8_lossy(&text).trim().to_string();
    if token.is_empty() {
        return Err(TokenFileError::Empty(shown()));
    }
    crate::redact::register(&token);
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_match_images() {
        let table: &[(&str, Option<&str>)] = &[
            ("123456789012.dkr.ecr.us-east-1.amazonaws.com", Some("aws")),
            (
                "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
                Some("aws"),
            ),
            (
                "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
                Some("aws"),
            ),
            ("a.b.dkr.ecr.us-east-1.amazonaws.com", None),
            ("dkr.ecr.us-east-1.amazonaws.com", None),
            ("123456789012.dkr.ecr.us-east-1.amazonaws.com:443", None),
            ("gcr.io", Some("google")),
            ("eu.gcr.io", Some("google")),
            ("europe-west1-docker.pkg.dev", Some("google")),
            ("container.cloud.google.com", Some("google")),
            ("a.b.gcr.io", None),
            ("pkg.dev", None),
            ("myreg.azurecr.io", Some("azure")),
            ("myreg.azurecr.cn", Some("azure")),
            ("myreg.azurecr.de", Some("azure")),
            ("myreg.azurecr.us", Some("azure")),
            ("azurecr.io", None),
            ("docker.io", None),
            ("quay.io", None),
        ];
        for (host, want) in table {
            let got = Provider::for_host(host).map(|p| match p {
                Provider::Aws(_) => "aws",
                Provider::Google => "google",
                Provider::Azure(_) => "azure",
            });
            assert_eq!(got, *want, "{host}");
        }
    }
}
