//! The words of every outcome: each reason a verdict can give, in one table (its JSON word, the
//! status it belongs to and so its exit code, what it means, and what to do next), the reasons
//! of a container's start prediction, and why a failure may not count.
//!
//! Adding a [`Reason`] is a compile error until [`Reason::about`] gives it a word, a status, a
//! meaning and a hint: the match has no catch-all arm. [`Reason::ALL`] is made by the same macro
//! as the enum, so it cannot miss one; `docs/reference/reasons.md` is generated from it (a test
//! fails when the committed page differs).

use super::Status;
use serde::Serialize;

/// What [`Reason::about`] says of one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct About {
    /// The word in JSON, the text report and the termination message (`tag_missing`).
    pub word: &'static str,
    /// The status it gives.
    pub status: Status,
    /// What it means, for the reference page.
    pub means: &'static str,
    /// What to do next: the hint a verdict with this reason carries unless its context gives a
    /// more precise one. `None` on the reasons of `ok`.
    pub hint: Option<&'static str>,
}

/// Declares [`Reason`], [`Reason::ALL`] and [`Reason::about`] from one table, one row per
/// reason (its doc, then its word, status, meaning and hint), so that the list of all variants
/// is complete by construction and a new reason is a compile error until it has all four.
macro_rules! reasons {
    ($($(#[$doc:meta])* $variant:ident => $row:expr,)*) => {
        /// A finer, machine-readable reason within a [`Status`]: `tag_missing`,
        /// `credentials_rejected`, `timeout`, … Each reason belongs to one status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $($(#[$doc])* $variant,)*
        }

        impl Reason {
            /// Every reason, in the order of the reference page.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)*];

            /// The one table: word, status, meaning and hint of every reason.
            pub fn about(self) -> About {
                let (word, status, means, hint): Row = match self {
                    $(Reason::$variant => $row,)*
                };
                About {
                    word,
                    status,
                    means,
                    hint,
                }
            }
        }
    };
}

reasons! {
    /// The manifest was found.
    Found => (
        "found",
        Status::Ok,
        "The manifest exists and the credentials in use may read it.",
        None,
    ),
    /// An `IfNotPresent` image the node holds, on a kubelet that starts it for any pod.
    PresentOnNode => (
        "present_on_node",
        Status::Ok,
        "An `IfNotPresent` image the node holds, whose kubelet starts it for any pod (before Kubernetes 1.35, or `--image-pull-credentials-verification never-verify`): the kubelet will not pull it, and its registry was not asked.",
        None,
    ),
    /// The tag does not exist in a repository that does.
    TagMissing => (
        "tag_missing",
        Status::NotFound,
        "The tag does not exist in a repository that does.",
        Some(CHECK_TAG),
    ),
    /// The digest does not exist in a repository that does.
    DigestMissing => (
        "digest_missing",
        Status::NotFound,
        "The digest does not exist in a repository that does.",
        Some(CHECK_TAG),
    ),
    /// The repository does not exist.
    RepositoryMissing => (
        "repository_missing",
        Status::NotFound,
        "The repository does not exist (its tags list answered `NAME_UNKNOWN`).",
        Some(
            "Check the image name and registry; a typo in the repository path is the usual cause.",
        ),
    ),
    /// The manifest does not exist; the registry did not say whether the repository does.
    ManifestMissing => (
        "manifest_missing",
        Status::NotFound,
        "The manifest does not exist, and the registry did not say whether the repository does.",
        Some("Check the image name, tag and digest for a typo, or push the image."),
    ),
    /// The manifest HEAD answered, its GET 404.
    IndexMissing => (
        "index_missing",
        Status::NotFound,
        "The manifest `HEAD` answered, but the `GET` of the same index answered 404: a pull would fail.",
        Some(
            "The registry is inconsistent (an interrupted push, or garbage collection): push the image again.",
        ),
    ),
    /// The manifest is an OCI artifact, not an image.
    NotAnImage => (
        "not_an_image",
        Status::NotFound,
        "The manifest is an OCI artifact (a Helm chart, a signature, an SBOM): its config is not an image config, or it names an `artifactType`; containerd refuses it with `mismatched image rootfs and manifest layers`.",
        Some(
            "Point the container at an image: an artifact (a Helm chart, a signature, an SBOM) cannot run as one.",
        ),
    ),
    /// The node's configuration leaves no host with the needed capability.
    NoEndpoint => (
        "no_endpoint",
        Status::NotFound,
        "The node's hosts directory leaves no host with the needed capability (a tag needs `pull` and `resolve`).",
        Some(
            "Give a host the needed capabilities (a tag needs pull and resolve) in the node's configuration.",
        ),
    ),
    /// The reference cannot be parsed.
    InvalidReference => (
        "invalid_reference",
        Status::InvalidReference,
        "The reference cannot be parsed (the kubelet's `InvalidImageName`).",
        Some(
            "Fix the image reference: lower-case repository, valid tag (up to 128 characters) or digest (sha256:<64 hex>).",
        ),
    ),
    /// No variant for the node's platform.
    NoMatchingPlatform => (
        "no_matching_platform",
        Status::WrongPlatform,
        "The image has no variant for the node's platform.",
        Some(
            "Build and push the image for this platform (e.g. `docker buildx build --platform`), or run the pod on nodes of an available platform (nodeSelector kubernetes.io/arch).",
        ),
    ),
    /// A 401 with no credential.
    NoCredentials => (
        "no_credentials",
        Status::Unauthorized,
        "The registry (or its token server) asks for credentials, and none matched it.",
        Some(
            "Mount the pod's imagePullSecrets under --secrets-dir or pass --docker-config; if the node pulls with its own credentials, use --allow-unauthenticated.",
        ),
    ),
    /// A 401 with a credential.
    CredentialsRejected => (
        "credentials_rejected",
        Status::Unauthorized,
        "The registry (or its token server) rejected the credentials tried.",
        Some(
            "The pull secret's user name or password is wrong or expired: renew the secret.",
        ),
    ),
    /// A credential-provider plugin failed.
    ProviderFailed => (
        "provider_failed",
        Status::Unauthorized,
        "A credential-provider plugin failed, hung or printed garbage, and no other credential was had.",
        Some(
            "Check the plugin and its configuration (--image-credential-provider-config, --image-credential-provider-bin-dir); its output is not shown, as it may hold secrets.",
        ),
    ),
    /// A token without access (`insufficient_scope`).
    InsufficientScope => (
        "insufficient_scope",
        Status::Unauthorized,
        "A token without access: the repository is missing, or private and the credentials have no access (Docker Hub answers the same for both).",
        Some(
            "If the image is private, give pullcheck the pod's pull secret for this registry; if it is public, check the name (registries such as Docker Hub answer this way for missing repositories too).",
        ),
    ),
    /// An authentication scheme other than Basic and Bearer.
    UnsupportedAuth => (
        "unsupported_auth",
        Status::Unauthorized,
        "The registry asks for an authentication scheme other than Basic and Bearer.",
        Some(
            "Use --allow-unauthenticated for this registry if the node has its own credentials.",
        ),
    ),
    /// A plain-HTTP token server.
    InsecureRealm => (
        "insecure_realm",
        Status::Unauthorized,
        "The registry sends credentials to a plain-HTTP token server; they were not sent.",
        Some(
            "Allow plain HTTP to that host with --plain-http only if the network is trusted.",
        ),
    ),
    /// A token realm that is not a URL.
    BadRealm => (
        "bad_realm",
        Status::Unauthorized,
        "The registry names a token server (`realm`) that is not a valid URL.",
        Some(
            "The registry's token auth is misconfigured (its WWW-Authenticate realm): report it to the registry's operator.",
        ),
    ),
    /// The manifest HEAD answered, its GET 401.
    IndexUnauthorized => (
        "index_unauthorized",
        Status::Unauthorized,
        "The manifest `HEAD` answered, but the `GET` that reads the index answered 401: a pull would fail.",
        Some(
            "Give the credentials pull access to the repository (HEAD and GET), or use --platform-check off to skip reading the index.",
        ),
    ),
    /// A 403.
    Denied => (
        "denied",
        Status::Denied,
        "The registry answered 403: the credentials may not pull this repository.",
        Some(
            "The credentials are valid but may not pull this repository: grant them pull access.",
        ),
    ),
    /// The manifest HEAD answered, its GET 403.
    IndexDenied => (
        "index_denied",
        Status::Denied,
        "The manifest `HEAD` answered, but the `GET` that reads the index answered 403: a pull would fail.",
        Some(
            "Grant the credentials pull access to the repository (HEAD and GET), or use --platform-check off to skip reading the index.",
        ),
    ),
    /// A registries.conf `blocked` entry.
    Blocked => (
        "blocked",
        Status::Denied,
        "A registries.conf `blocked = true` prefix: the node's runtime refuses it, and no request is sent.",
        Some(
            "Pull from an allowed registry, or change the blocked entry in the node's registries.conf.",
        ),
    ),
    /// The connection failed.
    Connect => (
        "connect",
        Status::Unreachable,
        "The connection to the registry failed.",
        Some(
            "Check the registry host name and that it is reachable from the node (DNS, network policy, proxy).",
        ),
    ),
    /// No answer in time.
    Timeout => (
        "timeout",
        Status::Unreachable,
        "The registry did not answer in time.",
        Some("Check that the registry is reachable from the node, or raise --timeout."),
    ),
    /// A 5xx.
    ServerError => (
        "server_error",
        Status::Unreachable,
        "The registry answered 5xx until the deadline.",
        Some("The registry is failing; retry later or check its status."),
    ),
    /// A 429.
    RateLimited => (
        "rate_limited",
        Status::Unreachable,
        "The registry answered 429 (retried once, after its `Retry-After` when that fits the deadline; a registry's second 429 in a run ends the retries of all its images).",
        Some(
            "Wait and retry, or pull through a mirror; Docker Hub limits anonymous pulls per IP.",
        ),
    ),
    /// A manifest 404 that nothing explained, at a host whose `/v2/` answers 404 too.
    NotARegistry => (
        "not_a_registry",
        Status::Unreachable,
        "The manifest request answered 404 with nothing saying what is missing, and `GET /v2/` (sent only then) answers 404 too: the host is no OCI registry (one answers 200 or 401).",
        Some("Check the registry host and port in the image reference."),
    ),
    /// A token server answered without a token.
    BadTokenAnswer => (
        "bad_token_answer",
        Status::Unreachable,
        "The registry's token server answered without a token.",
        Some("The registry's token service is misbehaving; retry later."),
    ),
    /// An answer the registry API does not give.
    UnexpectedStatus => (
        "unexpected_status",
        Status::Unreachable,
        "The registry gave an answer the registry API does not give.",
        Some("Check the image reference; run with -o json for details."),
    ),
    /// A redirect loop or a downgrade to plain HTTP.
    Redirect => (
        "redirect",
        Status::Unreachable,
        "The registry redirects in a loop, or from HTTPS to plain HTTP.",
        Some(
            "The registry redirects in a loop, or from HTTPS to plain HTTP: check its configuration or the proxy in front of it.",
        ),
    ),
    /// The node's registry configuration cannot be used.
    NodeConfiguration => (
        "node_configuration",
        Status::Unreachable,
        "The node's registry configuration could not be used for this image.",
        Some("Fix the file named; the node's runtime cannot use it either."),
    ),
    /// The HTTP client could not be built.
    Client => (
        "client",
        Status::Unreachable,
        "The HTTP client could not be built from the TLS options; nothing was asked.",
        Some(
            "Check the TLS options (--ca-file): the HTTP client could not be built with them.",
        ),
    ),
    /// The run was stopped before the image was checked.
    Stopped => (
        "stopped",
        Status::Unreachable,
        "A signal (SIGTERM, SIGINT) stopped the run before the image was checked.",
        Some("Nothing to do: the check was stopped before it finished."),
    ),
    /// A plain-HTTP registry asked over TLS.
    PlainHttp => (
        "plain_http",
        Status::Unverifiable,
        "A plain-HTTP registry asked over TLS.",
        Some(
            "Add --plain-http with the registry's host, or let pullcheck read the node's configuration (inject --hosts-from-node for containerd, --registries-from-node for CRI-O; by hand --hosts-dir or --registries-conf); the node pulls it only if its runtime is told so too (containerd: an http:// host in its hosts.toml; CRI-O: insecure = true in registries.conf).",
        ),
    ),
    /// A TLS failure.
    Tls => (
        "tls",
        Status::Unverifiable,
        "A certificate this pod does not trust, or a failed TLS handshake.",
        Some(
            "Trust the registry's CA with --ca-file (inject: --ca-configmap mounts it), check that its certificate names this host, or use --plain-http if it serves plain HTTP; the node may trust a CA this pod lacks (its system store, containerd's certs.d or CRI-O's /etc/containers/certs.d: inject --hosts-from-node or --registries-from-node reads them).",
        ),
    ),
    /// The resolver says the host does not exist.
    NoSuchHost => (
        "no_such_host",
        Status::Unverifiable,
        "The pod's resolver says the registry's host does not exist (twice for a registry, then its images are not retried).",
        Some(
            "Check the registry's host name for a typo, and the pod's DNS (search domains, CoreDNS); the node may resolve it through its own DNS or /etc/hosts, which this pod does not see.",
        ),
    ),
    /// A registry on loopback, seen from a pod that is not `hostNetwork`: not asked.
    PodLoopback => (
        "loopback",
        Status::Unverifiable,
        "The registry is on loopback (127.0.0.0/8, `::1`, `localhost`) and the pod is not `hostNetwork`: the pod's loopback is its own, while the node's runtime pulls from the node's (the kind, k3d and minikube local-registry pattern). Not asked, never counted.",
        Some(
            "Nothing to do if the node serves this registry on its loopback; to have it checked, run the pod with hostNetwork, or name the registry by an address the pod reaches too (a Service, the node's IP).",
        ),
    ),
    /// `runAsNonRoot` and an image that runs as root.
    RunsAsRoot => (
        "runs_as_root",
        Status::WontStart,
        "`runAsNonRoot: true`, no `runAsUser`, and the image runs as root (no user, or uid 0).",
        Some(SET_NON_ROOT_USER),
    ),
    /// `runAsNonRoot` and an image whose user is a name.
    NonNumericUser => (
        "non_numeric_user",
        Status::WontStart,
        "`runAsNonRoot: true`, no `runAsUser`, and the image names its user by name.",
        Some(SET_NON_ROOT_USER),
    ),
    /// `runAsNonRoot` and an image whose uid is out of range.
    InvalidUserId => (
        "invalid_user_id",
        Status::WontStart,
        "`runAsNonRoot: true`, no `runAsUser`, and the image's uid is negative or above 2147483647.",
        Some(SET_NON_ROOT_USER),
    ),
    /// `runAsNonRoot` with `runAsUser: 0`.
    RunAsUserZero => (
        "run_as_user_zero",
        Status::WontStart,
        "`runAsNonRoot: true` with `runAsUser: 0`.",
        Some(
            "Set runAsUser to a non-root uid the image can run as (e.g. `runAsUser: 1000`), or drop `runAsNonRoot: true`.",
        ),
    ),
    /// No command in the spec or the image.
    NoCommand => (
        "no_command",
        Status::WontStart,
        "Neither the pod spec nor the image gives a command (\"no command specified\").",
        Some(
            "Add a command (or args) to the container, or an ENTRYPOINT or CMD to the image.",
        ),
    ),
    /// `imagePullPolicy: Never` and the kubelet will not start the image (its
    /// `ErrImageNeverPull`): the node does not hold it, or, from Kubernetes 1.35 (whose kubelet
    /// re-verifies credentials), holds a copy its records do not let this pod use. The kubelet
    /// words both alike on purpose, so as not to tell a pod what the node holds; under `Never`
    /// it pulls in neither case, so both are permanent.
    NotOnNode => (
        "not_on_node",
        Status::NotFound,
        "`pullcheck watch`, from the kubelet's words: `imagePullPolicy: Never`, and the kubelet will not start the image (its `ErrImageNeverPull`, \"not present\"): the node does not hold it, or, from Kubernetes 1.35, holds a copy that its records do not let this pod use (pulled with credentials this pod lacks); it is never pulled.",
        Some(
            "Load the image onto the node, or set imagePullPolicy to IfNotPresent so that the kubelet pulls it; from Kubernetes 1.35 a node that holds it says the same when the pod lacks the credentials it was pulled with: give the pod that pull secret, or use IfNotPresent.",
        ),
    ),
    /// The node's pull answered 401, and the kubelet's words do not say whether a credential
    /// was sent.
    PullUnauthorized => (
        "pull_unauthorized",
        Status::Unauthorized,
        "`pullcheck watch`, from the kubelet's words: the node's pull answered 401, and the words do not say whether a credential was sent.",
        Some(
            "Give the pod an imagePullSecret for this registry, or renew the one it has; run `pullcheck check` in the pod to see which credential is tried.",
        ),
    ),
    /// A Secret the container's environment or volumes name does not exist.
    SecretMissing => (
        "secret_missing",
        Status::WontStart,
        "`pullcheck watch`, from the kubelet's words: a Secret that the container's environment (`secretKeyRef`, `envFrom`) names does not exist (the kubelet's `CreateContainerConfigError`).",
        Some(
            "Create the Secret in the pod's namespace, fix its name in the pod spec, or mark the reference `optional: true`.",
        ),
    ),
    /// A ConfigMap the container's environment or volumes name does not exist.
    ConfigMapMissing => (
        "config_map_missing",
        Status::WontStart,
        "`pullcheck watch`, from the kubelet's words: a ConfigMap that the container's environment (`configMapKeyRef`, `envFrom`) names does not exist (the kubelet's `CreateContainerConfigError`).",
        Some(
            "Create the ConfigMap in the pod's namespace, fix its name in the pod spec, or mark the reference `optional: true`.",
        ),
    ),
    /// A key of a Secret or ConfigMap that an environment variable names does not exist.
    KeyMissing => (
        "key_missing",
        Status::WontStart,
        "`pullcheck watch`, from the kubelet's words: an environment variable names a key that its Secret or ConfigMap does not hold (the kubelet's `CreateContainerConfigError`).",
        Some(
            "Add the key to the Secret or ConfigMap, fix the key's name in the pod spec, or mark the reference `optional: true`.",
        ),
    ),
    /// The container's `workingDir` is a file in the image, not a directory.
    WorkingDirNotADirectory => (
        "working_dir_not_a_directory",
        Status::WontStart,
        "`pullcheck watch`, from the kubelet's words: the container's `workingDir` is a file in the image, not a directory: the runtime cannot change into it (`chdir to cwd ... not a directory`).",
        Some(
            "Point workingDir at a directory of the image (or one a volume mounts), or leave it out to use the image's WORKDIR.",
        ),
    ),
    /// The container's command is not in the image.
    CommandNotFound => (
        "command_not_found",
        Status::WontStart,
        "`pullcheck watch`, from the kubelet's words: the container's command is not in the image (`executable file not found in $PATH`, or no such file).",
        Some(
            "Fix the command (or the image's ENTRYPOINT) to name a program the image holds, with its full path if it is not on the image's PATH.",
        ),
    ),
}

/// The hint of the `runAsNonRoot` rules that the image's user breaks.
const SET_NON_ROOT_USER: &str = "Set runAsUser: 1000 (a non-root uid the image can run as) in the container's securityContext, or build the image with a numeric non-root USER (e.g. `USER 1000`).";
/// The hint of a missing tag or digest.
const CHECK_TAG: &str = "Check the tag or digest for a typo, or push the image; list the tags with `skopeo list-tags` or `crane ls`.";

/// One row of the table: word, status, meaning and hint.
type Row = (&'static str, Status, &'static str, Option<&'static str>);

impl Reason {
    /// The word in JSON and text (`tag_missing`).
    pub(crate) fn as_str(self) -> &'static str {
        self.about().word
    }

    /// The status this reason gives.
    pub fn status(self) -> Status {
        self.about().status
    }

    /// The hint a verdict with this reason carries by default; empty on `ok`.
    pub(crate) fn hint(self) -> &'static str {
        self.about().hint.unwrap_or_default()
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why a container's start was predicted as it was (JSON `containers[].reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartReason {
    /// It will not start, for this reason (one whose status is `wont_start`).
    WontStart(Reason),
    /// It starts: the pod spec alone settles it.
    Spec,
    /// It starts: the image's config settles it.
    ImageConfig,
    /// Not predicted: `--start-check off`.
    StartCheckOff,
    /// Not predicted: the image cannot be pulled.
    NotPulled,
    /// Not predicted: the image's config is for another OS.
    NotLinux,
    /// Not predicted: the image's config could not be read.
    ConfigNotRead,
}

impl StartReason {
    /// The word in JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StartReason::WontStart(r) => r.as_str(),
            StartReason::Spec => "spec",
            StartReason::ImageConfig => "image_config",
            StartReason::StartCheckOff => "start_check_off",
            StartReason::NotPulled => "not_pulled",
            StartReason::NotLinux => "not_linux",
            StartReason::ConfigNotRead => "config_not_read",
        }
    }

    /// The image's reason when the container will not start.
    pub(crate) fn refused(self) -> Option<Reason> {
        match self {
            StartReason::WontStart(r) => Some(r),
            _ => None,
        }
    }
}

impl std::fmt::Display for StartReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StartReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Whether a verdict counts towards the exit code. A failure that does not count is a warning
/// (JSON `"fatal": false`), always for a named reason: the run's summary, the JSON and the
/// termination message say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counted {
    /// It counts (JSON `"fatal": true` on a failure).
    Yes,
    /// It does not count, for this reason.
    No(NotCounted),
}

/// Why a failure does not count: each a flag given or a fact of the node that may let the pod
/// start although pullcheck could not show that its image can be pulled. A verdict counts only
/// when it is proven (the registry's own answer to the request the node would make, from where
/// the node would make it, with every credential the kubelet would use); each of these names
/// what is missing from that proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotCounted {
    /// `--allow-unauthenticated` names the registry, and no credential at all was tried.
    AllowUnauthenticated,
    /// `--on-unreachable warn`, and the registry could not be reached.
    OnUnreachableWarn,
    /// `--on-unverifiable warn` (the default), and the registry could not be checked from the
    /// pod (its CA, plain HTTP, its name): the node may trust, speak or resolve what the pod
    /// cannot.
    OnUnverifiableWarn,
    /// The image is served by a built-in cloud provider (ECR, Artifact Registry / GCR, ACR),
    /// no pull secret matched, and the provider gave nothing from the pod's identity: the
    /// kubelet pulls with the node's own.
    CloudIdentityUnavailable,
    /// A credential-provider plugin matched the image and gave nothing in the pod (it failed,
    /// or had no entry for it): on the node the kubelet runs it with the node's identity.
    CredentialProviderUnavailable,
    /// Only node-side credentials (a cloud identity, a plugin's answer) were tried and the
    /// registry refused them: the node's own identity may have access.
    NodeCredentialsRefused,
    /// An `IfNotPresent` image missing at its registry, and the node's image list does not
    /// prove that the node lacks it (the lookup was refused or failed, or the list is cut at
    /// `nodeStatusMaxImages`): the node may hold it, and the kubelet would then start the pod.
    MayBeOnNode,
    /// A registry on loopback seen from a pod that is not `hostNetwork`: the pod's loopback
    /// is not the node's, so it was not asked.
    PodLoopback,
    /// An `IfNotPresent` image the node holds, on a node whose kubelet re-verifies a pod's
    /// credentials before it uses its copy (Kubernetes 1.35+, KEP-2535), and the registry did
    /// not serve it to this pod's credentials: the kubelet still starts it without a pull when
    /// its own records allow (the copy was preloaded, pulled anonymously or with the
    /// credentials this pod has, or its policy exempts it), and those records are the node's
    /// alone.
    HeldByNode,
}

impl NotCounted {
    /// Every cause, in the order the summary names them.
    pub const ALL: [NotCounted; 9] = [
        NotCounted::AllowUnauthenticated,
        NotCounted::CloudIdentityUnavailable,
        NotCounted::CredentialProviderUnavailable,
        NotCounted::NodeCredentialsRefused,
        NotCounted::OnUnreachableWarn,
        NotCounted::OnUnverifiableWarn,
        NotCounted::PodLoopback,
        NotCounted::MayBeOnNode,
        NotCounted::HeldByNode,
    ];

    /// The JSON value of `not_counted`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotCounted::AllowUnauthenticated => "allow_unauthenticated",
            NotCounted::OnUnreachableWarn => "on_unreachable_warn",
            NotCounted::OnUnverifiableWarn => "on_unverifiable_warn",
            NotCounted::CloudIdentityUnavailable => "cloud_identity_unavailable",
            NotCounted::CredentialProviderUnavailable => "credential_provider_unavailable",
            NotCounted::NodeCredentialsRefused => "node_credentials_refused",
            NotCounted::MayBeOnNode => "may_be_on_node",
            NotCounted::PodLoopback => "pod_loopback",
            NotCounted::HeldByNode => "held_by_node",
        }
    }

    /// Whether this cause may apply to a failure of `status`.
    pub fn applies_to(self, status: Status) -> bool {
        match self {
            NotCounted::AllowUnauthenticated
            | NotCounted::CloudIdentityUnavailable
            | NotCounted::CredentialProviderUnavailable => status == Status::Unauthorized,
            NotCounted::NodeCredentialsRefused => {
                matches!(status, Status::Unauthorized | Status::Denied)
            }
            NotCounted::OnUnreachableWarn => status == Status::Unreachable,
            NotCounted::OnUnverifiableWarn | NotCounted::PodLoopback => {
                status == Status::Unverifiable
            }
            NotCounted::MayBeOnNode => status == Status::NotFound,
            // Whatever the registry refuses the pod, the kubelet may not ask it: a start
            // prediction stands on the pod spec alone and is not among these.
            NotCounted::HeldByNode => matches!(
                status,
                Status::NotFound
                    | Status::WrongPlatform
                    | Status::Unauthorized
                    | Status::Denied
                    | Status::Unreachable
                    | Status::Unverifiable
            ),
        }
    }

    /// Whether a flag asks for it (else a fact of the node makes it, with the default flags).
    pub fn by_flag(self) -> bool {
        match self {
            NotCounted::AllowUnauthenticated
            | NotCounted::OnUnreachableWarn
            | NotCounted::OnUnverifiableWarn => true,
            NotCounted::CloudIdentityUnavailable
            | NotCounted::CredentialProviderUnavailable
            | NotCounted::NodeCredentialsRefused
            | NotCounted::MayBeOnNode
            | NotCounted::PodLoopback
            | NotCounted::HeldByNode => false,
        }
    }

    /// Whether `check`'s default flags ask for it: a failure of its status then never counts
    /// unless a flag says otherwise (`--on-unverifiable fail`).
    pub fn by_default(self) -> bool {
        self == NotCounted::OnUnverifiableWarn
    }

    /// What was not verified, for the summary.
    pub fn what(self) -> &'static str {
        match self {
            NotCounted::AllowUnauthenticated
            | NotCounted::CloudIdentityUnavailable
            | NotCounted::CredentialProviderUnavailable => "no credentials",
            NotCounted::NodeCredentialsRefused => "node-side credentials refused",
            NotCounted::OnUnreachableWarn => "unreachable",
            NotCounted::OnUnverifiableWarn => "cannot be checked from this pod",
            NotCounted::MayBeOnNode => "not found at the registry",
            NotCounted::PodLoopback => "not checked",
            NotCounted::HeldByNode => "on the node, its registry did not serve it to this pod",
        }
    }

    /// The flag or the fact behind it, for the summary and the termination message.
    pub fn because(self) -> &'static str {
        match self {
            NotCounted::AllowUnauthenticated => "--allow-unauthenticated",
            NotCounted::OnUnreachableWarn => "--on-unreachable warn",
            NotCounted::OnUnverifiableWarn => "--on-unverifiable warn",
            NotCounted::CloudIdentityUnavailable => {
                "no cloud identity in the pod, the node pulls with its own"
            }
            NotCounted::CredentialProviderUnavailable => {
                "the credential provider gave nothing in the pod, the node runs it with its own identity"
            }
            NotCounted::NodeCredentialsRefused => "the node's own identity may have access",
            NotCounted::MayBeOnNode => "IfNotPresent, and nothing proves the node lacks it",
            NotCounted::PodLoopback => "a registry on the node's loopback, not the pod's",
            NotCounted::HeldByNode => {
                "the node holds it, and only the kubelet's records say whether this pod may use it (Kubernetes 1.35+ re-verifies credentials)"
            }
        }
    }

    /// What would prove the failure, where something can: for the termination message, whose
    /// hint keeps only its first clause. A miss of an `IfNotPresent` image is proven by the
    /// node's complete image list (read with `get` on nodes) or, once the kubelet's own pull
    /// fails, by the stuck-pod controller. An image the node holds is proven unusable only by
    /// the kubelet's own attempt, which the stuck-pod controller reads.
    pub fn to_prove(self) -> Option<&'static str> {
        match self {
            NotCounted::MayBeOnNode => Some(
                "to prove it: get on nodes (examples/node-images-rbac.yaml), or the stuck-pod \
                 controller, pullcheck watch",
            ),
            NotCounted::HeldByNode => Some(
                "to prove it: the kubelet's own pull, which the stuck-pod controller, pullcheck \
                 watch, reads",
            ),
            NotCounted::AllowUnauthenticated
            | NotCounted::CloudIdentityUnavailable
            | NotCounted::CredentialProviderUnavailable
            | NotCounted::NodeCredentialsRefused
            | NotCounted::OnUnreachableWarn
            | NotCounted::OnUnverifiableWarn
            | NotCounted::PodLoopback => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_snake_case_and_failures_have_hints() {
        let mut seen = std::collections::HashSet::new();
        for r in Reason::ALL {
            let a = r.about();
            assert!(seen.insert(a.word), "{r:?}: {} twice", a.word);
            assert!(
                a.word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{r:?}"
            );
            assert_eq!(a.hint.is_none(), a.status == Status::Ok, "{r:?}");
            assert_eq!(serde_json::to_value(r).unwrap(), a.word);
        }
    }
}
