//! What the node already holds: the images the kubelet lists in its Node object
//! (`status.images[].names`), read from the API server in-cluster, once per run, so that an
//! `IfNotPresent` image the node has is `ok` without asking its registry, as the kubelet would
//! start it without pulling. Where the node's kubelet re-verifies a pod's credentials before
//! it uses an image it holds (Kubernetes 1.35+: [`crate::proof::node_reverifies`], from the
//! same Node's `status.nodeInfo.kubeletVersion`), holding it proves nothing by itself: the
//! registry is asked with the pod's credentials, its `ok` is proof, and its refusal is not
//! counted ([`NotCounted::HeldByNode`]), since the kubelet's records may still let the pod use
//! the node's copy.
//!
//! The request is `GET /api/v1/nodes/NAME` to `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`
//! with the pod's service-account token (read afresh each run: the kubelet rotates it) and the
//! cluster CA from the service-account directory, trusting that CA alone. The answer is read up
//! to [`MAX_NODE_BYTES`], then in one pass on a blocking thread that keeps only the names of
//! the run's images ([`Wanted`]): a Node of a million names costs a scan of each. Whatever goes wrong (no token, 401,
//! 403, no API server) is a [`NodeError`]: the run then says so once and asks the registries as
//! it would without a node.
//!
//! `read` holds the one-pass reader of the Node object ([`NodeImages`]); this file the lookup
//! over HTTP and what the list says of each image ([`NodeLookup`]).

use crate::http::error_chain;
use crate::input::{LimitedReadError, read_limited_file};
use crate::proof::{CredentialVerification, NodeProof};
use crate::pull_policy::PullPolicy;
use crate::reference::Reference;
use crate::report::{ImageResult, NotCounted, Reason, Status};
pub use read::{NodeImages, Wanted};
use reqwest::header::{self, HeaderValue};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use tokio::time::Instant;

mod read;

/// Where Kubernetes mounts the pod's service-account token, namespace and cluster CA.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The kubelet's default `nodeStatusMaxImages`: it lists at most this many images, largest
/// first.
pub(crate) const DEFAULT_MAX_IMAGES: usize = 50;
/// The kubelet's `MaxNamesPerImageInNodeStatus`: it lists at most this many names of each
/// image (`pkg/kubelet/nodestatus/setters.go`), so an image listed with this many may have more
/// names than the list shows, the one asked about among them.
pub(crate) const MAX_NAMES_PER_IMAGE: usize = 5;
/// The largest Node object read. A node listing 50 images with a few names each is tens of
/// KiB; an object is at most ~1.5 MiB in etcd.
pub(crate) const MAX_NODE_BYTES: usize = 4 * 1024 * 1024;
/// The largest token file read (a projected token is about 1 KiB).
const MAX_TOKEN_BYTES: u64 = 64 * 1024;
/// The largest CA file read.
const MAX_CA_BYTES: u64 = 1024 * 1024;
/// The longest node name (a DNS subdomain).
const MAX_NODE_NAME: usize = 253;

/// Where and how to read the node's images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOptions {
    /// The node's name (`--node`, from the downward API's `spec.nodeName`); `None`: not given,
    /// nothing is looked up.
    pub name: Option<String>,
    /// The kubelet's `nodeStatusMaxImages`; `None`: no cap (`-1`).
    pub max_images: Option<usize>,
    /// The service-account directory holding `token` and `ca.crt`.
    pub service_account_dir: PathBuf,
    /// `KUBERNETES_SERVICE_HOST`: an IP address (IPv6 without brackets) or a name.
    pub api_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub api_port: Option<String>,
    /// Of the node's names, only those that can be one of the run's images are kept
    /// ([`Wanted`], [`NodeOptions::for_images`]). `None`: every name.
    pub wanted: Option<Wanted>,
    /// Whether the node's kubelet re-verifies a pod's credentials before it uses an image it
    /// holds (`--image-pull-credentials-verification`): from its version by default.
    pub verification: CredentialVerification,
}

impl NodeOptions {
    /// Keeps, of the node's names, only those that can be one of `images` (the run's).
    pub(crate) fn for_images<'a>(
        mut self,
        images: impl IntoIterator<Item = &'a Reference>,
    ) -> Self {
        self.wanted = Some(Wanted::of(images));
        self
    }
}

impl Default for NodeOptions {
    fn default() -> NodeOptions {
        NodeOptions {
            name: None,
            max_images: Some(DEFAULT_MAX_IMAGES),
            service_account_dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
            api_host: None,
            api_port: None,
            wanted: None,
            verification: CredentialVerification::Auto,
        }
    }
}

/// Why the node's images were not looked up. Each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// No `--node`.
    #[error(
        "no node name (give --node NAME or PULLCHECK_NODE_NAME, from the downward API's spec.nodeName)"
    )]
    NoNode,
    /// A name that is not a DNS subdomain.
    #[error("{0:?} is not a node name (a DNS subdomain: lower-case letters, digits, '-' and '.')")]
    BadName(String),
    /// No `KUBERNETES_SERVICE_HOST` or `KUBERNETES_SERVICE_PORT`.
    #[error(
        "not running in a cluster (KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not set)"
    )]
    NotInCluster,
    /// The API address does not make a URL.
    #[error("KUBERNETES_SERVICE_HOST/PORT {0:?} is not a usable address")]
    BadAddress(String),
    /// The token file is missing or unusable.
    #[error(
        "no service-account token at {path}: {why} (keep automountServiceAccountToken on for the pod)"
    )]
    Token {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The CA file is missing or unusable.
    #[error("no cluster CA at {path}: {why}")]
    Ca {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    /// No answer: DNS, connect, TLS, reset.
    #[error("cannot reach the API server at {url}: {detail}")]
    Unreachable {
        /// The request's URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// No answer in time.
    #[error("the API server did not answer within {:.1}s", .0.as_secs_f64())]
    TimedOut(std::time::Duration),
    /// 401: the token was refused.
    #[error("the API server refused the service-account token (401 Unauthorized)")]
    Unauthorized,
    /// 403: the service account may not read the node.
    #[error(
        "the service account may not get node {0} (403 Forbidden): bind a ClusterRole with get on nodes to it (see examples/node-images-rbac.yaml)"
    )]
    Forbidden(String),
    /// 404.
    #[error("node {0} does not exist (404)")]
    NoSuchNode(String),
    /// Any other status.
    #[error("GET {url} answered {status}")]
    Status {
        /// The request's URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The answer is larger than [`MAX_NODE_BYTES`].
    #[error("the Node object is larger than {} MiB", MAX_NODE_BYTES >> 20)]
    TooLarge,
    /// The answer is not a Node object.
    #[error("the answer is not a Node object: {0}")]
    NotANode(String),
}

/// What a run knows about the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeLookup {
    /// No `IfNotPresent` image: nothing was asked.
    NotNeeded,
    /// The node's list.
    Found(NodeImages),
    /// The lookup failed; the registries are asked instead.
    Failed(NodeError),
}

impl NodeLookup {
    /// `Some(true)` when the node lists the image; `Some(false)` when its complete list does
    /// not; `None` when unknown (not looked up, or a list without it that is truncated: in
    /// images, or in the names of one image).
    pub(crate) fn presence(&self, reference: &Reference) -> Option<bool> {
        match self {
            NodeLookup::Found(images) if images.has(reference) => Some(true),
            NodeLookup::Found(images) if images.complete() => Some(false),
            _ => None,
        }
    }

    /// Whether the node's kubelet re-verifies a pod's credentials before it uses an image it
    /// holds, under `setting`, by the version its Node reports; `false` without a list (nothing
    /// is then known to be held).
    pub(crate) fn reverifies(&self, setting: CredentialVerification) -> bool {
        match self {
            NodeLookup::Found(images) => {
                crate::proof::node_reverifies(setting, images.kubelet_version.as_deref())
            }
            _ => false,
        }
    }

    /// Why a registry's refusal of an `IfNotPresent` image the node holds does not count, in
    /// words, when its kubelet re-verifies: `None` when the image is not held, not
    /// `IfNotPresent`, or the kubelet starts it for any pod (then its registry is not asked).
    pub(crate) fn held_unverified(
        &self,
        reference: &Reference,
        policy: PullPolicy,
        setting: CredentialVerification,
    ) -> Option<String> {
        let NodeLookup::Found(images) = self else {
            return None;
        };
        (policy == PullPolicy::IfNotPresent
            && self.proof(reference, setting) == NodeProof::HoldsReverified)
            .then(|| reverified_words(images))
    }

    /// The one line for stderr when the lookup failed.
    pub(crate) fn warning(&self) -> Option<String> {
        match self {
            NodeLookup::Failed(e) => Some(format!(
                "node images not looked up: {e}; every image is checked at its registry"
            )),
            _ => None,
        }
    }

    /// The result of an `IfNotPresent` image the node lists: no registry request is made.
    pub(crate) fn present_result(&self, image: &str, reference: &Reference) -> ImageResult {
        let node = match self {
            NodeLookup::Found(images) => images.node.as_str(),
            _ => "",
        };
        let mut result = ImageResult::new(
            image,
            Reason::PresentOnNode,
            format!(
                "{reference}: node {node} holds it and imagePullPolicy is IfNotPresent, so the kubelet will not pull it; its registry was not asked"
            ),
        )
        .of_reference(reference);
        result.digest = reference.digest.clone();
        result.platform_checked = Some(false);
        result.pull_policy = PullPolicy::IfNotPresent;
        result.present_on_node = Some(true);
        result
    }

    /// What the node's list proves of an image ([`NodeProof`]): nothing asked when no node was
    /// named (a run about the registry alone); unknown when the lookup failed or the list is
    /// truncated; held, and whether the kubelet re-verifies the pod's credentials first, under
    /// `setting`.
    pub(crate) fn proof(
        &self,
        reference: &Reference,
        setting: CredentialVerification,
    ) -> NodeProof {
        match (self, self.presence(reference)) {
            (NodeLookup::NotNeeded | NodeLookup::Failed(NodeError::NoNode), _) => {
                NodeProof::NotAsked
            }
            (_, Some(true)) if self.reverifies(setting) => NodeProof::HoldsReverified,
            (_, Some(true)) => NodeProof::Holds,
            (_, Some(false)) => NodeProof::Lacks,
            (_, None) => NodeProof::Unknown,
        }
    }

    /// Completes a registry result with the image's policy and what the node says: an
    /// `IfNotPresent` image missing at its registry counts only when the node's complete list
    /// proves the node lacks it (else the node may hold it, and the kubelet would then start
    /// the pod without pulling); one the node holds, asked because its kubelet re-verifies
    /// credentials (`setting`), counts only when the registry serves it, and then says so.
    pub(crate) fn annotate(
        &self,
        result: &mut ImageResult,
        policy: PullPolicy,
        setting: CredentialVerification,
    ) {
        result.pull_policy = policy;
        let Ok(reference) = Reference::parse(&result.reference) else {
            return;
        };
        let proof = self.proof(&reference, setting);
        if result.fatal()
            && let Some(why) = crate::proof::by_node(result.status, policy, proof)
        {
            let words = match self {
                NodeLookup::Found(images) if why == NotCounted::HeldByNode => {
                    reverified_words(images)
                }
                NodeLookup::Found(images) => format!(
                    "imagePullPolicy is IfNotPresent and {}, and the kubelet would then start the pod without pulling",
                    images.why_incomplete().unwrap_or_default()
                ),
                NodeLookup::Failed(e) => format!(
                    "imagePullPolicy is IfNotPresent and the node's images could not be read ({e}), so the node may hold it; to make this provable, let the pod's service account get nodes (examples/node-images-rbac.yaml), or run the stuck-pod controller (pullcheck watch) to fail the pod if its pull does"
                ),
                NodeLookup::NotNeeded => String::new(),
            };
            result.not_counted(why, &words);
            if let NodeLookup::Failed(_) = self {
                result.hint = "If the image should exist, push it or fix its tag; if the node holds it, nothing to do. To have such a miss proven, give the pod's service account `get` on nodes (examples/node-images-rbac.yaml); the stuck-pod controller (pullcheck watch) ends the pod if its pull fails.".to_string();
            }
        }
        // Without a list there is nothing more to say.
        let NodeLookup::Found(images) = self else {
            return;
        };
        result.present_on_node = self.presence(&reference);
        match (policy, result.present_on_node, result.status) {
            (PullPolicy::IfNotPresent, Some(false), Status::NotFound) => {
                result.message.push_str(&format!(
                    "; node {} does not hold it either (its list of {} images is complete)",
                    images.node, images.listed
                ));
            }
            (PullPolicy::Always, Some(true), s) if s != Status::Ok => {
                result.message.push_str(&format!(
                    "; node {} holds it, but imagePullPolicy Always makes the kubelet pull it",
                    images.node
                ));
            }
            // Asked although held: the kubelet re-verifies, and the registry serves it to the
            // pod's credentials, which is what the kubelet's pull would meet.
            (PullPolicy::IfNotPresent, Some(true), Status::Ok)
                if proof == NodeProof::HoldsReverified
                    && result.reason != Reason::PresentOnNode =>
            {
                result.message.push_str(&format!(
                    "; node {} holds it, and its kubelet ({}) re-verifies a pod's credentials before it uses its copy (Kubernetes 1.35+): the registry serves it to this pod's credentials",
                    images.node,
                    kubelet_of(images)
                ));
            }
            _ => {}
        }
    }
}

/// The kubelet's version for a message (foreign text, scrubbed like any; the report escapes
/// it where it is written), or "version unknown".
fn kubelet_of(images: &NodeImages) -> String {
    match &images.kubelet_version {
        Some(v) => crate::redact::foreign(v),
        None => "version unknown".to_string(),
    }
}

/// Why a refusal of an `IfNotPresent` image that node `images` holds, with a kubelet that
/// re-verifies credentials, is not counted: what the kubelet does, and what only it knows.
fn reverified_words(images: &NodeImages) -> String {
    format!(
        "node {} holds it and imagePullPolicy is IfNotPresent, but its kubelet ({}) re-verifies credentials before a pod uses an image it holds (Kubernetes 1.35+, KubeletEnsureSecretPulledImages): it starts this pod from its copy without a pull if the copy was preloaded, pulled anonymously or with the credentials this pod has, or its imagePullCredentialsVerificationPolicy exempts it, and pulls it with this pod's credentials otherwise; which of these holds is in the kubelet's records only, which a pod cannot read (where the kubelets never verify, --image-pull-credentials-verification never-verify)",
        images.node,
        kubelet_of(images)
    )
}

/// What the run knows about the node by `until`: nothing asked when no image `needed` it, else
/// the node's list, or why there is none.
pub(crate) async fn lookup_until(
    options: &NodeOptions,
    needed: bool,
    until: Instant,
) -> NodeLookup {
    if !needed {
        return NodeLookup::NotNeeded;
    }
    let started = Instant::now();
    match tokio::time::timeout_at(until, lookup(options)).await {
        Ok(Ok(images)) => NodeLookup::Found(images),
        Ok(Err(e)) => NodeLookup::Failed(e),
        // The time it was given, not the time measured: the same words on every run.
        Err(_) => NodeLookup::Failed(NodeError::TimedOut(
            until.saturating_duration_since(started),
        )),
    }
}

/// Reads the node's images from the API server: one request. Bound its time from outside.
pub(crate) async fn lookup(options: &NodeOptions) -> Result<NodeImages, NodeError> {
    let name = options.name.as_deref().ok_or(NodeError::NoNode)?;
    if !is_node_name(name) {
        return Err(NodeError::BadName(name.chars().take(80).collect()));
    }
    let (Some(host), Some(port)) = (
        options
            .api_host
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty()),
        options
            .api_port
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty()),
    ) else {
        return Err(NodeError::NotInCluster);
    };
    let base = api_base(host, port)?;
    let dir = &options.service_account_dir;
    let token = read_token(&dir.join("token"))?;
    let ca = read_ca(&dir.join("ca.crt"))?;
    let client = http_client(ca)?;

    let url = format!("{base}/api/v1/nodes/{name}");
    let mut bearer =
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| NodeError::Token {
            path: dir.join("token").display().to_string(),
            why: "not a valid token".to_string(),
        })?;
    bearer.set_sensitive(true);
    let unreachable = |e: reqwest::Error| NodeError::Unreachable {
        url: url.clone(),
        detail: match std::error::Error::source(&e) {
            Some(cause) => error_chain(cause),
            None => error_chain(&e),
        },
    };
    let mut resp = client
        .get(&url)
        .header(header::AUTHORIZATION, bearer)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(unreachable)?;
    match resp.status().as_u16() {
        200 => {}
        401 => return Err(NodeError::Unauthorized),
        403 => return Err(NodeError::Forbidden(name.to_string())),
        404 => return Err(NodeError::NoSuchNode(name.to_string())),
        status => return Err(NodeError::Status { url, status }),
    }
    // A stated length says at once what the read below would find out at its end.
    let stated = resp.content_length().unwrap_or(0);
    if stated > MAX_NODE_BYTES as u64 {
        return Err(NodeError::TooLarge);
    }
    // One allocation of the stated size rather than doublings past it.
    let mut body = Vec::with_capacity(usize::try_from(stated).unwrap_or(0));
    while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_NODE_BYTES {
            return Err(NodeError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    // A million names are a few hundred milliseconds of work: on a blocking thread, so that
    // the deadline and a signal (the caller's `select!`) end the wait at once.
    let (name, max, wanted) = (name.to_string(), options.max_images, options.wanted.clone());
    tokio::task::spawn_blocking(move || NodeImages::read(&name, &body, max, wanted.as_ref()))
        .await
        .unwrap_or_else(|e| Err(NodeError::NotANode(format!("reading it failed: {e}"))))
}

/// `https://HOST:PORT`, with an IPv6 address in brackets.
fn api_base(host: &str, port: &str) -> Result<String, NodeError> {
    let bad = || NodeError::BadAddress(format!("{host}:{port}").chars().take(80).collect());
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let base = format!("https://{host}:{port}");
    match reqwest::Url::parse(&base) {
        Ok(url) if url.path() == "/" && url.query().is_none() && url.username().is_empty() => {
            Ok(base)
        }
        _ => Err(bad()),
    }
}

/// A node name as the API server accepts it (a DNS-1123 subdomain): it becomes a URL path
/// segment, so nothing else may pass.
pub(crate) fn is_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NODE_NAME
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The bytes of `path`, at most `max` (`limit` says it in words), its errors made by `err`.
fn read_bounded(
    path: &Path,
    max: u64,
    limit: &str,
    err: impl Fn(String) -> NodeError,
) -> Result<Vec<u8>, NodeError> {
    read_limited_file(path, max).map_err(|e| match e {
        LimitedReadError::TooLarge => err(format!("larger than {limit}")),
        LimitedReadError::Io(e) => err(e.to_string()),
    })
}

fn read_token(path: &Path) -> Result<String, NodeError> {
    let err = |why: String| NodeError::Token {
        path: path.display().to_string(),
        why,
    };
    let limit = format!("{} KiB", MAX_TOKEN_BYTES >> 10);
    let bytes = read_bounded(path, MAX_TOKEN_BYTES, &limit, err)?;
    let token = String::from_utf8(bytes).map_err(|_| err("not text".to_string()))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(err("empty".to_string()));
    }
    crate::redact::register(token);
    Ok(token.to_string())
}

fn read_ca(path: &Path) -> Result<Vec<CertificateDer<'static>>, NodeError> {
    let err = |why: String| NodeError::Ca {
        path: path.display().to_string(),
        why,
    };
    let limit = format!("{} MiB", MAX_CA_BYTES >> 20);
    let bytes = read_bounded(path, MAX_CA_BYTES, &limit, err)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("not a valid PEM file: {e}")))?;
    if certs.is_empty() {
        return Err(err("holds no PEM certificate".to_string()));
    }
    Ok(certs)
}

/// A client that trusts the cluster CA alone and follows no redirect (the token is for the
/// API server only).
fn http_client(ca: Vec<CertificateDer<'static>>) -> Result<reqwest::Client, NodeError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in ca {
        roots
            .add(cert)
            .map_err(|e| NodeError::Client(format!("cluster CA not usable: {e}")))?;
    }
    let mut tls = crate::http::tls_config(roots).map_err(|e| NodeError::Client(e.to_string()))?;
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    crate::http::client_builder(tls)
        .build()
        .map_err(|e| NodeError::Client(error_chain(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Node as `kubectl get node -o json` shows a kind node (abridged), with two images
    /// loaded by `kind load docker-image`.
    const KIND_NODE: &str = r#"{
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {"name": "ci-control-plane", "labels": {"kubernetes.io/hostname": "ci-control-plane"}},
  "spec": {"podCIDR": "10.244.0.0/24", "providerID": "kind://docker/ci/ci-control-plane"},
  "status": {
    "images": [
      {"names": ["registry.k8s.io/etcd:3.5.15-0"], "sizeBytes": 56909194},
      {"names": ["docker.io/library/app:v1.0"], "sizeBytes": 7820000},
      {"names": ["docker.io/library/tool@sha256:1111111111111111111111111111111111111111111111111111111111111111", "docker.io/library/tool:2"], "sizeBytes": 512000},
      {"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368},
      {"sizeBytes": 1},
      {"names": null, "sizeBytes": 1}
    ],
    "nodeInfo": {"kubeletVersion": "v1.31.0", "containerRuntimeVersion": "containerd://1.7.18"}
  }
}"#;

    fn r(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    #[test]
    fn names_are_normalised_and_matched_by_reference_or_digest() {
        let node =
            NodeImages::from_json("ci-control-plane", KIND_NODE.as_bytes(), Some(50)).unwrap();
        assert_eq!(node.listed, 6);
        assert!(!node.truncated);
        let d = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let cases: &[(&str, String, bool)] = &[
            ("short name as loaded by kind", "app:v1.0".into(), true),
            ("full name", "docker.io/library/app:v1.0".into(), true),
            (
                "registry-1.docker.io alias",
                "registry-1.docker.io/library/app:v1.0".into(),
                true,
            ),
            ("another tag", "app:v1.1".into(), false),
            ("no tag is latest", "app".into(), false),
            ("by digest", format!("tool@{d}"), true),
            (
                "tag and digest: the digest decides",
                format!("tool:9@{d}"),
                true,
            ),
            ("digest of another repository", format!("app@{d}"), false),
            (
                "another registry",
                "registry.k8s.io/pause:3.10".into(),
                true,
            ),
            ("not there", "quay.io/x/y:1".into(), false),
        ];
        for (name, image, want) in cases {
            assert_eq!(node.has(&r(image)), *want, "{name}: {image}");
        }
    }

    #[test]
    fn a_full_list_is_truncated_and_proves_nothing() {
        let cases: &[(Option<usize>, bool)] = &[
            (Some(50), false),
            (Some(6), true),
            (Some(5), true),
            (Some(7), false),
            (None, false),
            (Some(0), true),
        ];
        for (max, truncated) in cases {
            let node = NodeImages::from_json("n", KIND_NODE.as_bytes(), *max).unwrap();
            assert_eq!(node.truncated, *truncated, "{max:?}");
            let lookup = NodeLookup::Found(node);
            assert_eq!(lookup.presence(&r("app:v1.0")), Some(true));
            let absent = if *truncated { None } else { Some(false) };
            assert_eq!(lookup.presence(&r("app:v9")), absent, "{max:?}");
        }
        let failed = NodeLookup::Failed(NodeError::Unauthorized);
        assert_eq!(failed.presence(&r("app:v1.0")), None);
        assert!(failed.warning().unwrap().contains("401"));
        assert_eq!(NodeLookup::NotNeeded.warning(), None);
    }

    /// A Node whose second image is listed with `names` names of another repository.
    fn node_with_names(names: usize) -> String {
        let list: Vec<String> = (0..names)
            .map(|i| format!("\"docker.io/library/other:{i}\""))
            .collect();
        format!(
            r#"{{"kind": "Node", "status": {{"images": [{{"names": ["docker.io/library/app:v1.0"]}}, {{"names": [{}]}}]}}}}"#,
            list.join(", ")
        )
    }

    #[test]
    fn an_image_listed_with_five_names_may_have_more_and_proves_nothing() {
        use crate::report::tests::result;
        let wanted = Wanted::of(&[r("app:v9")]);
        for (names, capped) in [(0, 0), (4, 0), (5, 1), (6, 1)] {
            let body = node_with_names(names);
            for keep in [None, Some(&wanted)] {
                let node = NodeImages::read("n", body.as_bytes(), Some(50), keep).unwrap();
                assert!(!node.truncated, "{names}");
                assert_eq!(node.names_capped, capped, "{names} names, kept {keep:?}");
                let lookup = NodeLookup::Found(node);
                let absent = if capped > 0 { None } else { Some(false) };
                assert_eq!(lookup.presence(&r("app:v9")), absent, "{names}");
                if keep.is_none() {
                    assert_eq!(lookup.presence(&r("app:v1.0")), Some(true), "{names}");
                }
                let mut missing = result("app:v9", Status::NotFound);
                missing.reference = r("app:v9").to_string();
                lookup.annotate(
                    &mut missing,
                    PullPolicy::IfNotPresent,
                    CredentialVerification::Auto,
                );
                assert_eq!(missing.fatal(), capped == 0, "{names}: {}", missing.message);
                if capped > 0 {
                    assert!(
                        missing.message.contains(
                            "node n lists at most 5 names of each image (the kubelet's limit) and one of its images is listed with 5"
                        ),
                        "{}",
                        missing.message
                    );
                }
            }
        }
    }

    /// (name, lookup, image, policy, registry status) -> (fatal, present_on_node, message part).
    type Case<'a> = (
        &'a str,
        &'a NodeLookup,
        &'a str,
        PullPolicy,
        Status,
        bool,
        Option<bool>,
        &'a str,
    );

    #[test]
    fn registry_verdicts_completed_with_what_the_node_says() {
        use crate::report::tests::result;
        let complete =
            NodeLookup::Found(NodeImages::from_json("n1", KIND_NODE.as_bytes(), Some(50)).unwrap());
        let truncated =
            NodeLookup::Found(NodeImages::from_json("n1", KIND_NODE.as_bytes(), Some(6)).unwrap());
        let failed = NodeLookup::Failed(NodeError::Forbidden("n1".into()));
        let no_node = NodeLookup::Failed(NodeError::NoNode);
        let cases: &[Case<'_>] = &[
            (
                "missing everywhere",
                &complete,
                "app:v9",
                PullPolicy::IfNotPresent,
                Status::NotFound,
                true,
                Some(false),
                "does not hold it either (its list of 6 images is complete)",
            ),
            (
                "truncated list",
                &truncated,
                "app:v9",
                PullPolicy::IfNotPresent,
                Status::NotFound,
                false,
                None,
                "lists only its 6 largest images (--node-status-max-images 6)",
            ),
            (
                "truncated, but Always",
                &truncated,
                "app:v9",
                PullPolicy::Always,
                Status::NotFound,
                true,
                None,
                "",
            ),
            (
                "truncated, unauthorized stays",
                &truncated,
                "app:v9",
                PullPolicy::IfNotPresent,
                Status::Unauthorized,
                true,
                None,
                "",
            ),
            (
                "Always on the node",
                &complete,
                "app:v1.0",
                PullPolicy::Always,
                Status::NotFound,
                true,
                Some(true),
                "imagePullPolicy Always makes the kubelet pull it",
            ),
            (
                "no list: the node may hold it",
                &failed,
                "app:v9",
                PullPolicy::IfNotPresent,
                Status::NotFound,
                false,
                None,
                "let the pod's service account get nodes",
            ),
            (
                "no list, but Always",
                &failed,
                "app:v9",
                PullPolicy::Always,
                Status::NotFound,
                true,
                None,
                "",
            ),
            (
                "no node named: a run about the registry alone",
                &no_node,
                "app:v9",
                PullPolicy::IfNotPresent,
                Status::NotFound,
                true,
                None,
                "",
            ),
            (
                "not needed",
                &NodeLookup::NotNeeded,
                "app:v9",
                PullPolicy::Always,
                Status::Ok,
                true,
                None,
                "",
            ),
        ];
        for (name, lookup, image, policy, status, fatal, present, part) in cases {
            let mut r = result(image, *status);
            r.reference = Reference::parse(image).unwrap().to_string();
            let before = r.message.clone();
            lookup.annotate(&mut r, *policy, CredentialVerification::Auto);
            assert_eq!(r.pull_policy, *policy, "{name}");
            assert_eq!((r.fatal(), r.present_on_node), (*fatal, *present), "{name}");
            if part.is_empty() {
                assert_eq!(r.message, before, "{name}");
            } else {
                assert!(r.message.contains(part), "{name}: {}", r.message);
            }
        }
        let present = complete.present_result("app:v1.0", &r("app:v1.0"));
        assert_eq!(
            (present.status, present.reason),
            (Status::Ok, Reason::PresentOnNode)
        );
        assert_eq!(present.attempts, 0);
        assert!(
            present.message.contains("node n1 holds it"),
            "{}",
            present.message
        );
    }

    /// KIND_NODE with its kubelet's version replaced.
    fn node_of_kubelet(version: &str) -> NodeLookup {
        let body = KIND_NODE.replace("v1.31.0", version);
        NodeLookup::Found(NodeImages::from_json("n1", body.as_bytes(), Some(50)).unwrap())
    }

    #[test]
    fn the_kubelets_version_is_read_in_the_same_pass_and_bounded() {
        let node = NodeImages::from_json("n", KIND_NODE.as_bytes(), Some(50)).unwrap();
        assert_eq!(node.kubelet_version.as_deref(), Some("v1.31.0"));
        // Kept whatever names are wanted.
        let wanted = Wanted::of(&[r("nothing:1")]);
        let node = NodeImages::read("n", KIND_NODE.as_bytes(), Some(50), Some(&wanted)).unwrap();
        assert_eq!(node.kubelet_version.as_deref(), Some("v1.31.0"));
        assert!(node.names.is_empty());
        let long = format!("v1.35.0-{}", "x".repeat(10_000));
        let cases: Vec<(&str, String, Option<String>)> = vec![
            (
                "nodeInfo before images",
                r#"{"kind":"Node","status":{"nodeInfo":{"kubeletVersion":"v1.37.2"},"images":[{"names":["docker.io/library/app:v1.0"]}]}}"#.into(),
                Some("v1.37.2".into()),
            ),
            (
                "no nodeInfo",
                r#"{"kind":"Node","status":{"images":[]}}"#.into(),
                None,
            ),
            (
                "nodeInfo null",
                r#"{"kind":"Node","status":{"nodeInfo":null}}"#.into(),
                None,
            ),
            (
                "kubeletVersion null",
                r#"{"kind":"Node","status":{"nodeInfo":{"kubeletVersion":null}}}"#.into(),
                None,
            ),
            (
                "an escaped string",
                r#"{"kind":"Node","status":{"nodeInfo":{"kubeletVersion":"v1.35.0\u002dgke.1"}}}"#.into(),
                Some("v1.35.0-gke.1".into()),
            ),
            (
                "a version of 10,000 characters is cut",
                format!(r#"{{"kind":"Node","status":{{"nodeInfo":{{"kubeletVersion":"{long}"}}}}}}"#),
                Some(long.chars().take(64).collect()),
            ),
            (
                "kubeletVersion outside nodeInfo is not it",
                r#"{"kind":"Node","kubeletVersion":"v1.37.2","status":{"kubeletVersion":"v1.37.2"}}"#.into(),
                None,
            ),
        ];
        for (name, body, want) in cases {
            let node = NodeImages::from_json("n", body.as_bytes(), Some(50))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(node.kubelet_version, want, "{name}");
        }
        for bad in [
            r#"{"kind":"Node","status":{"nodeInfo":{"kubeletVersion":135}}}"#,
            r#"{"kind":"Node","status":{"nodeInfo":"v1.35.0"}}"#,
        ] {
            let e = NodeImages::from_json("n", bad.as_bytes(), Some(50)).unwrap_err();
            assert!(e.to_string().contains("not a Node"), "{bad}: {e}");
        }
    }

    #[test]
    fn what_holding_an_image_proves_depends_on_the_kubelet() {
        use CredentialVerification::{Auto, NeverVerify, Verify};
        let held = r("app:v1.0");
        let cases: &[(&str, CredentialVerification, NodeProof)] = &[
            ("v1.34.4", Auto, NodeProof::Holds),
            ("v1.35.0", Auto, NodeProof::HoldsReverified),
            ("v1.37.2", Auto, NodeProof::HoldsReverified),
            ("v1.35.0-gke.123", Auto, NodeProof::HoldsReverified),
            ("garbage", Auto, NodeProof::HoldsReverified),
            ("v1.37.2", NeverVerify, NodeProof::Holds),
            ("v1.34.4", Verify, NodeProof::HoldsReverified),
        ];
        for (version, setting, want) in cases {
            let node = node_of_kubelet(version);
            assert_eq!(node.proof(&held, *setting), *want, "{version} {setting:?}");
            let words = node.held_unverified(&held, PullPolicy::IfNotPresent, *setting);
            assert_eq!(
                words.is_some(),
                *want == NodeProof::HoldsReverified,
                "{version}"
            );
            // Always is pulled whatever the node holds; an image not held is not in question.
            assert_eq!(
                node.held_unverified(&held, PullPolicy::Always, *setting),
                None
            );
            assert_eq!(
                node.held_unverified(&r("app:v9"), PullPolicy::IfNotPresent, *setting),
                None
            );
            // A missing image the complete list lacks is proven missing on every version.
            assert_eq!(node.proof(&r("app:v9"), *setting), NodeProof::Lacks);
        }
        let failed = NodeLookup::Failed(NodeError::Unauthorized);
        assert!(!failed.reverifies(Verify));
        assert_eq!(
            failed.held_unverified(&held, PullPolicy::IfNotPresent, Verify),
            None
        );
    }

    /// A registry's answer for an `IfNotPresent` image the node holds, on a node that
    /// re-verifies credentials: `ok` says the registry serves the pod, a refusal or a miss is
    /// not counted and says why; on a 1.34 node the same refusal counts as before (such an
    /// image is never asked there: `present_result`).
    #[test]
    fn a_held_image_asked_of_its_registry_is_counted_only_on_its_ok() {
        use crate::report::tests::result;
        let auto = CredentialVerification::Auto;
        let new = node_of_kubelet("v1.37.2");
        let mut ok = result("app:v1.0", Status::Ok);
        ok.reference = r("app:v1.0").to_string();
        new.annotate(&mut ok, PullPolicy::IfNotPresent, auto);
        assert_eq!((ok.status, ok.present_on_node), (Status::Ok, Some(true)));
        assert!(
            ok.message.ends_with(
                "; node n1 holds it, and its kubelet (v1.37.2) re-verifies a pod's credentials before it uses its copy (Kubernetes 1.35+): the registry serves it to this pod's credentials"
            ),
            "{}",
            ok.message
        );
        for status in [Status::NotFound, Status::Unauthorized, Status::Denied] {
            let mut refused = result("app:v1.0", status);
            refused.reference = r("app:v1.0").to_string();
            new.annotate(&mut refused, PullPolicy::IfNotPresent, auto);
            assert_eq!(
                refused.counted,
                crate::report::Counted::No(NotCounted::HeldByNode),
                "{status:?}"
            );
            for words in [
                "node n1 holds it and imagePullPolicy is IfNotPresent, but its kubelet (v1.37.2) re-verifies credentials",
                "preloaded, pulled anonymously or with the credentials this pod has",
                "is in the kubelet's records only",
            ] {
                assert!(
                    refused.message.contains(words),
                    "{status:?}: {}",
                    refused.message
                );
            }
        }
        // The same refusal on a kubelet that does not re-verify: no fact of the node takes it
        // out, and no registry word is added.
        let old = node_of_kubelet("v1.34.4");
        let mut refused = result("app:v1.0", Status::Unauthorized);
        refused.reference = r("app:v1.0").to_string();
        let before = refused.message.clone();
        old.annotate(&mut refused, PullPolicy::IfNotPresent, auto);
        assert!(refused.fatal());
        assert_eq!(refused.message, before);
        // What the 1.34 node's image gets instead: present_on_node, no request.
        let present = old.present_result("app:v1.0", &r("app:v1.0"));
        assert_eq!(present.reason, Reason::PresentOnNode);
        assert_eq!(present.attempts, 0);
        // A missing image the complete list lacks counts on the 1.37 node as on any.
        let mut missing = result("app:v9", Status::NotFound);
        missing.reference = r("app:v9").to_string();
        new.annotate(&mut missing, PullPolicy::IfNotPresent, auto);
        assert!(missing.fatal());
        assert!(
            missing.message.contains("does not hold it either"),
            "{}",
            missing.message
        );
    }

    #[test]
    fn only_the_names_of_the_run_are_kept_and_every_image_is_counted() {
        let d = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let asked = [r("app:v1.0"), r(&format!("tool:9@{d}")), r("app:v9")];
        let wanted = Wanted::of(&asked);
        let node = NodeImages::read("n", KIND_NODE.as_bytes(), Some(50), Some(&wanted)).unwrap();
        assert_eq!(node.listed, 6);
        let mut kept: Vec<&str> = node.names.iter().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(
            kept,
            [
                "docker.io/library/app:v1.0",
                &format!("docker.io/library/tool@{d}")
            ]
        );
        assert!(node.has(&asked[0]) && node.has(&asked[1]) && !node.has(&asked[2]));
        // Listed, but not asked about: not kept.
        assert!(!node.has(&r("registry.k8s.io/pause:3.10")));
        // Names of the wrong type are still refused.
        let e = NodeImages::read(
            "n",
            br#"{"kind":"Node","status":{"images":[{"names":[1]}]}}"#,
            None,
            Some(&wanted),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a Node"), "{e}");
    }

    #[test]
    fn other_objects_are_refused() {
        for (body, want) in [
            (r#"{"kind":"Status","status":"Failure"}"#, "not a Node"),
            (r#"{"kind":"Status","status":{}}"#, "kind is \"Status\""),
            ("not json", "not a Node"),
            ("[]", "not a Node"),
        ] {
            let e = NodeImages::from_json("n", body.as_bytes(), Some(50)).unwrap_err();
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
        let empty =
            NodeImages::from_json("n", br#"{"kind":"Node","status":{}}"#, Some(50)).unwrap();
        assert_eq!(empty.listed, 0);
    }

    #[test]
    fn node_names() {
        for ok in ["kind-worker", "ip-10-0-1-2.ec2.internal", "a", "n1"] {
            assert!(is_node_name(ok), "{ok}");
        }
        let long = "a".repeat(254);
        for bad in [
            "",
            "Kind",
            "a/b",
            "a?b",
            "-a",
            "a-",
            "a..b",
            "..",
            "a b",
            "ä",
            long.as_str(),
        ] {
            assert!(!is_node_name(bad), "{bad}");
        }
    }

    #[test]
    fn api_addresses() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("10.96.0.1", "443", Some("https://10.96.0.1:443")),
            ("fd00:10:96::1", "443", Some("https://[fd00:10:96::1]:443")),
            ("[::1]", "6443", Some("https://[::1]:6443")),
            (
                "kubernetes.default.svc",
                "443",
                Some("https://kubernetes.default.svc:443"),
            ),
            ("10.96.0.1", "https", None),
            ("10.96.0.1", "70000", None),
            ("evil.example/x?", "443", None),
            ("user@host", "443", None),
        ];
        for (host, port, want) in cases {
            assert_eq!(api_base(host, port).ok().as_deref(), *want, "{host} {port}");
        }
    }

    #[tokio::test]
    async fn what_is_missing_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = NodeOptions {
            service_account_dir: dir.path().to_path_buf(),
            ..NodeOptions::default()
        };
        assert_eq!(lookup(&options).await, Err(NodeError::NoNode));
        options.name = Some("Bad/Name".into());
        assert!(matches!(lookup(&options).await, Err(NodeError::BadName(_))));
        options.name = Some("kind-worker".into());
        assert_eq!(lookup(&options).await, Err(NodeError::NotInCluster));
        options.api_host = Some("127.0.0.1".into());
        options.api_port = Some("1".into());
        assert!(matches!(
            lookup(&options).await,
            Err(NodeError::Token { .. })
        ));
        std::fs::write(dir.path().join("token"), "\n").unwrap();
        let e = lookup(&options).await.unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        std::fs::write(dir.path().join("token"), "t0ken\n").unwrap();
        assert!(matches!(lookup(&options).await, Err(NodeError::Ca { .. })));
    }
}
