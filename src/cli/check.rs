//! `pullcheck check`'s flags and the help text around them.

use super::PullCredentialsVerification;
use super::values::{self, Checked, secret_value};
use super::{CREDENTIALS, IMAGES, LIMITS, NODE, OUTPUT, ROUTING};
use super::{CloudCredentials, Network, OnUnreachable, OnUnverifiable, OutputFormat};
use super::{PlatformCheck, PlatformMatch, StartCheck};
use crate::keyring::Secret;
use crate::report::EXIT_CODES_HELP;
use clap::Args;
use clap::builder::FalseyValueParser;
use std::path::PathBuf;

/// What `check -h` says after the flags: the exit codes, and where the rest is.
pub(super) fn short_after() -> String {
    format!("{EXIT_CODES_HELP}\n\n{CHECK_SHORT_AFTER}")
}

/// Where the rest of `check -h` is.
const CHECK_SHORT_AFTER: &str = "\
Examples: pullcheck check nginx:1.27; pullcheck check --pod-spec job.yaml -o json
Every flag also reads its environment variable; `--help` names them, explains each flag and
lists the exit codes.";

/// What `check --help` says after the flags: examples a newcomer needs, then the exit codes.
pub(super) fn long_after() -> String {
    format!("{CHECK_EXAMPLES}\n\n{EXIT_CODES_HELP}")
}

/// The examples of `check --help`.
const CHECK_EXAMPLES: &str = "\
Examples:
  pullcheck check nginx:1.27
      One image, a text report, the exit code.
  pullcheck check nginx:1.27 quay.io/org/app:v1 --timeout 30s
      Several images at once, within 30 seconds.
  kubectl get job train -o yaml | pullcheck check --pod-spec -
      Every image of a workload's pod specs, read from stdin, each with its pull policy.
  pullcheck check -o json --pod-spec job.yaml
      The same as JSON, for programs.
  pullcheck check --plain-http 127.0.0.1:5000 127.0.0.1:5000/team/app:v1
      A registry that speaks plain HTTP.

In a pod, the init container reads its images from PULLCHECK_IMAGES and its pull secrets
from /var/run/pullcheck/secrets/<name>; `pullcheck inject` writes both.";

/// Flags of `pullcheck check`, grouped under the headings `-h` shows.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Image references to check (`nginx`, `quay.io/org/app:v1`, `reg:5000/x@sha256:…`).
    #[arg(value_name = "IMAGE", help_heading = IMAGES)]
    pub(crate) images: Vec<String>,

    /// More images, separated by whitespace or commas.
    #[arg(
        long = "images",
        value_name = "LIST",
        env = "PULLCHECK_IMAGES",
        help_heading = IMAGES,
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub(crate) images_list: Option<std::ffi::OsString>,

    /// Images pulled only when the node lacks them (`IfNotPresent`).
    ///
    /// With --node, those the node already holds are `ok` (`present_on_node`) without asking
    /// their registry, unless its kubelet re-verifies credentials (see
    /// --image-pull-credentials-verification); images given in other ways are `Always`: checked
    /// at the registry. Repeatable; each value, like the environment variable, is separated by
    /// whitespace or commas.
    #[arg(
        long = "if-not-present",
        value_name = "IMAGE",
        env = "PULLCHECK_IMAGES_IF_NOT_PRESENT",
        help_heading = IMAGES,
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub(crate) if_not_present: Vec<std::ffi::OsString>,

    /// A file of images, one per line (`-`: stdin).
    ///
    /// `#` starts a comment; `-` reads stdin.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_IMAGES_FILE", help_heading = IMAGES)]
    pub(crate) images_file: Option<PathBuf>,

    /// Manifests whose pod specs' images are checked (`-`: stdin).
    ///
    /// YAML or JSON, any number of documents, Lists: Pods, workloads, Jobs and the job
    /// frameworks' kinds (Argo, Spark, KubeRay, Kubeflow, JobSet, Volcano…), as `inject` reads
    /// them, each image with its pull policy and each container with its facts for the start
    /// check; `-` reads stdin.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_POD_SPEC", help_heading = IMAGES)]
    pub(crate) pod_spec: Option<PathBuf>,

    /// A docker config file or folder (repeatable).
    ///
    /// A `.dockerconfigjson`, `.dockercfg` or `config.json` file, or a folder holding one.
    /// Repeatable; the environment variable takes a `:`-separated list.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_DOCKER_CONFIG",
        help_heading = CREDENTIALS,
        value_delimiter = ':'
    )]
    pub(crate) docker_config: Vec<PathBuf>,

    /// One sub-folder per mounted pull secret.
    ///
    /// A folder with one sub-folder per mounted pull secret (`<DIR>/<secret>/.dockerconfigjson`
    /// or `.dockercfg`); a missing folder means none.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_SECRETS_DIR",
        default_value = "/var/run/pullcheck/secrets",
        help_heading = CREDENTIALS
    )]
    pub(crate) secrets_dir: PathBuf,

    /// The node the pod runs on (`spec.nodeName`).
    ///
    /// From the downward API: the node's image list is read from the API server, with the
    /// pod's service-account token, for the --if-not-present images.
    #[arg(long, value_name = "NAME", env = "PULLCHECK_NODE_NAME", help_heading = NODE)]
    pub(crate) node: Option<String>,

    /// The kubelet's `nodeStatusMaxImages` (-1: no cap).
    ///
    /// A node that lists this many images may hold more, so its list proves nothing about
    /// the others; -1: the kubelet lists all. A whole number from -1 to 1000000.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_NODE_STATUS_MAX_IMAGES",
        default_value = "50",
        help_heading = NODE,
        allow_hyphen_values = true,
        value_parser = Checked::parser(values::node_status_max_images_value)
    )]
    pub(crate) node_status_max_images: Checked<Option<usize>>,

    /// Whether the node's kubelet re-verifies credentials of images it holds.
    ///
    /// Kubernetes 1.35+ (KEP-2535, feature gate KubeletEnsureSecretPulledImages, on by
    /// default) starts an IfNotPresent image the node holds only if its records let this pod
    /// use it, else pulls it with the pod's credentials: a held image is then asked of its
    /// registry with the pod's credentials, and a refusal is not counted (`held_by_node`).
    /// `auto`: from the Node's kubeletVersion (v1.35+, or unreadable: verifies). `never-verify`
    /// (or `NeverVerify`): the gate off, or imagePullCredentialsVerificationPolicy NeverVerify:
    /// a held image is `present_on_node`, its registry not asked. `verify` (or the policy names
    /// NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify): the gate on.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_IMAGE_PULL_CREDENTIALS_VERIFICATION",
        default_value = "auto",
        help_heading = NODE
    )]
    pub(crate) image_pull_credentials_verification: PullCredentialsVerification,

    /// The service-account directory holding `token` and `ca.crt` (for tests).
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_SERVICE_ACCOUNT_DIR",
        default_value = crate::node::SERVICE_ACCOUNT_DIR,
        hide = true
    )]
    pub(crate) service_account_dir: PathBuf,

    /// Speak plain HTTP to this registry (repeatable).
    ///
    /// Without it, plain HTTP is spoken only where the node's runtime would speak it too: to a
    /// loopback registry (`localhost`, 127.0.0.0/8, `::1`) that answers HTTPS in plain HTTP
    /// (containerd's rule), and to the hosts the node's configuration names so (a hosts.toml
    /// `http://` host, a registries.conf `insecure = true` entry, after HTTPS fails).
    /// Repeatable; the environment variable takes a comma-separated list. The report says
    /// `(plain HTTP)`, JSON `"plain_http": true`. `--insecure HOST` (crane's word) is the same: plain HTTP. crane's --insecure also
    /// accepts HTTPS without checking the certificate; pullcheck never turns certificate checks
    /// off (trust the registry's CA with --ca-file).
    #[arg(
        long,
        visible_alias = "insecure",
        value_name = "HOST[:PORT]",
        env = "PULLCHECK_PLAIN_HTTP",
        help_heading = ROUTING,
        value_delimiter = ','
    )]
    pub(crate) plain_http: Vec<String>,

    /// One credential for the images' one registry.
    ///
    /// As skopeo's --creds: for the registry of the images (they must all be on one
    /// registry, or it is a usage error), tried before every other source, also before a pull
    /// secret's more specific key for the same registry (`registry/team`), which the kubelet's
    /// key order would try first. For a person at a workstation: there is no environment
    /// variable, so that a password is never put in a pod spec or a Deployment's `env` (a pod
    /// uses its pull secrets there). The value is never printed (not in errors, --verbose, JSON
    /// or `Debug`), but a command line is visible to `ps` and shell history.
    #[arg(long, value_name = "USER:PASS", value_parser = secret_value, help_heading = CREDENTIALS)]
    pub(crate) creds: Option<Secret>,

    /// Registries whose nodes pull with their own credentials.
    ///
    /// A node config.json, a credential provider pullcheck cannot run: `unauthorized` with no
    /// credential at all for them is a warning (`"fatal": false`), not a failure. Repeatable;
    /// `*` for all; the environment variable takes a comma-separated list.
    #[arg(
        long,
        value_name = "HOST[:PORT]",
        env = "PULLCHECK_ALLOW_UNAUTHENTICATED",
        help_heading = CREDENTIALS,
        value_delimiter = ','
    )]
    pub(crate) allow_unauthenticated: Vec<String>,

    /// Ask the pod's cloud identity for ECR, GCR and ACR credentials.
    ///
    /// `auto`: for ECR, Artifact Registry / GCR and ACR images, also try a registry credential
    /// from the pod's cloud identity (IRSA, EKS Pod Identity, IMDS; GKE metadata server; Azure
    /// workload identity or IMDS), after the pull secrets; when no credential at all can be
    /// had for such an image (or one a credential-provider plugin matches), `unauthorized` is
    /// a warning (`not_counted`), since the kubelet asks with the node's identity. `required`:
    /// the same, but that `unauthorized` fails (exit 5), for clusters where every pod has an
    /// identity. `off`: never ask the cloud (an image then gets `no_credentials`, fatal unless
    /// --allow-unauthenticated).
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_CLOUD_CREDENTIALS",
        default_value = "auto",
        help_heading = CREDENTIALS
    )]
    pub(crate) cloud_credentials: CloudCredentials,

    /// The kubelet's CredentialProviderConfig.
    ///
    /// `kubelet.config.k8s.io/v1`: its exec plugins are run for the images they match, after
    /// the pull secrets. Needs --image-credential-provider-bin-dir.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_IMAGE_CREDENTIAL_PROVIDER_CONFIG",
        help_heading = CREDENTIALS
    )]
    pub(crate) image_credential_provider_config: Option<PathBuf>,

    /// The folder of the credential-provider plugins.
    ///
    /// The plugins' folder, given with --image-credential-provider-config, as on the kubelet.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_IMAGE_CREDENTIAL_PROVIDER_BIN_DIR",
        help_heading = CREDENTIALS
    )]
    pub(crate) image_credential_provider_bin_dir: Option<PathBuf>,

    /// Service-account tokens for plugins with tokenAttributes.
    ///
    /// `<DIR>/<provider name>/token`, as `pullcheck inject --credential-provider-config`
    /// mounts them.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR",
        default_value = crate::credentials::plugin::DEFAULT_TOKEN_DIR,
        help_heading = CREDENTIALS
    )]
    pub(crate) credential_provider_token_dir: PathBuf,

    /// A PEM file of CA certificates to trust, besides the Mozilla roots built in. Repeatable;
    /// the environment variable takes a `:`-separated list.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_CA_FILE",
        help_heading = ROUTING,
        long_help = "A PEM file of CA certificates to trust, besides the Mozilla roots built in \
                     (the system store is not read). Repeatable; the environment variable takes \
                     a `:`-separated list.",
        help = "CA certificates to trust (PEM, repeatable)",
        value_delimiter = ':'
    )]
    pub(crate) ca_file: Vec<PathBuf>,

    /// containerd's hosts directory (`config_path`).
    ///
    /// E.g. /etc/containerd/certs.d: images are asked where the node would pull them, mirrors
    /// first. `DIR/<host>/hosts.toml`, or the flat ConfigMap layout `DIR/<host>.toml`
    /// (`<host>_<port>.toml`). Repeatable; the environment variable takes a `:`-separated list
    /// (the first directory with an entry for a host wins).
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_HOSTS_DIR",
        help_heading = ROUTING,
        value_delimiter = ':'
    )]
    pub(crate) hosts_dir: Vec<PathBuf>,

    /// CRI-O's and Podman's registries.conf.
    ///
    /// Version 2: mirrors, rewritten and blocked prefixes, short names. A file; a node's
    /// folder (/etc/containers, recognised by its `registries.conf.d/`): its `registries.conf`
    /// (absent: an empty configuration), then the `*.conf` drop-ins of `registries.conf.d/` in
    /// name order, no other file; or a flat folder (a ConfigMap): `registries.conf`, then its
    /// other `*.conf` files in name order. Not together with --hosts-dir.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_REGISTRIES_CONF",
        help_heading = ROUTING
    )]
    pub(crate) registries_conf: Option<PathBuf>,

    /// The drop-in folder of registries.conf (registries.conf.d).
    ///
    /// Its `*.conf` files are read in name order after --registries-conf, which is then a
    /// file: the two are read as CRI-O reads the node's /etc/containers/registries.conf and
    /// registries.conf.d, an absent file being an empty configuration and an absent folder
    /// having no drop-ins. `inject --registries-from-node` passes both.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_REGISTRIES_CONF_DIR",
        help_heading = ROUTING
    )]
    pub(crate) registries_conf_dir: Option<PathBuf>,

    /// containers-certs.d folders: per-host CAs and client certificates (CRI-O, Podman).
    ///
    /// E.g. /etc/containers/certs.d: for every host asked (mirrors and locations included),
    /// `DIR/<host[:port]>/*.crt` are CAs trusted besides the others, and `X.cert` with `X.key`
    /// a client certificate, as containers/image reads them. Repeatable; the environment
    /// variable takes a `:`-separated list (the first folder with an entry for a host wins).
    /// An absent folder holds no certificates. Not together with --hosts-dir.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_CERTS_DIR",
        help_heading = ROUTING,
        value_delimiter = ':'
    )]
    pub(crate) certs_dir: Vec<PathBuf>,

    /// Whether an unreachable registry fails the run.
    ///
    /// What an image that stays `unreachable` (exit 6: refused, timed out or 5xx until the
    /// deadline, or 429, retried once at most) means: `fail`, or `warn`: reported with
    /// `"fatal": false` and not counted (`not_counted: on_unreachable_warn`), so that the
    /// kubelet's own back-off waits an outage out. `pullcheck inject` and the webhook write
    /// `warn` (PULLCHECK_ON_UNREACHABLE).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        env = "PULLCHECK_ON_UNREACHABLE",
        default_value = "fail",
        help_heading = ROUTING
    )]
    pub(crate) on_unreachable: OnUnreachable,

    /// Whether a registry that cannot be checked from here fails the run.
    ///
    /// What an image that is `unverifiable` from here (exit 8: `tls`, `plain_http`,
    /// `no_such_host`) means: `warn` (the default): reported with `"fatal": false` and not
    /// counted (`not_counted: on_unverifiable_warn`), since the node may trust a CA, speak
    /// plain HTTP to a host or resolve a name that the pod cannot; `fail`: exit 8.
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        env = "PULLCHECK_ON_UNVERIFIABLE",
        default_value = "warn",
        help_heading = ROUTING
    )]
    pub(crate) on_unverifiable: OnUnverifiable,

    /// Whose network this run is in: `host` or `pod`.
    ///
    /// `host` (the default: a workstation, a `hostNetwork` pod): registries on loopback are
    /// checked. `pod`: a pod's own network, whose loopback is not the node's: an image on a
    /// loopback registry (127.0.0.0/8, ::1, localhost; the kind, k3d and minikube local
    /// registries) is not asked, and reported (`loopback`, not counted: `pod_loopback`).
    /// `pullcheck inject` writes it (PULLCHECK_NETWORK) from the pod's `hostNetwork`.
    #[arg(
        long,
        value_enum,
        value_name = "WHOSE",
        env = "PULLCHECK_NETWORK",
        default_value = "host",
        help_heading = ROUTING
    )]
    pub(crate) network: Network,

    /// The node's platform, `OS/ARCH[/VARIANT]` or `any`.
    ///
    /// Default: this machine's, e.g. linux/amd64; `any` turns the platform check off. An
    /// unknown variant of amd64 (v1–v4), arm64 (v8–v8.9, v9–v9.7) or arm (v5–v8), such as
    /// linux/amd64/v9, is a usage error (exit 2) listing the known ones, unless
    /// --platform-match strict (then a warning: the user means exactly that string).
    #[arg(
        long,
        value_name = "PLATFORM",
        env = "PULLCHECK_PLATFORM",
        help_heading = NODE
    )]
    pub(crate) platform: Option<String>,

    /// How index entries must match the platform.
    ///
    /// `lenient` as containerd's CRI (1.7, 2.0: `platforms.Only`) does, also accepting older
    /// compatible platforms; `strict` as containerd 2.1+ and CRI-O.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        env = "PULLCHECK_PLATFORM_MATCH",
        default_value = "lenient",
        help_heading = NODE
    )]
    pub(crate) platform_match: PlatformMatch,

    /// Which manifests are read for the platform check.
    ///
    /// `auto`: check indexes (one manifest GET), but not on Docker Hub, where a manifest GET
    /// counts as a pull; `full`: also single manifests (a manifest and a config GET); `off`:
    /// HEAD only.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_PLATFORM_CHECK",
        default_value = "auto",
        help_heading = NODE
    )]
    pub(crate) platform_check: PlatformCheck,

    /// The pod's containers, for the start check (JSON).
    ///
    /// A JSON list of `{"name", "image", "kind", "command", "args", "runAsNonRoot",
    /// "runAsUser"}` (`pullcheck inject` writes it). Their images are checked too.
    #[arg(
        long,
        value_name = "JSON",
        env = "PULLCHECK_CONTAINERS",
        help_heading = IMAGES,
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub(crate) containers: Option<std::ffi::OsString>,

    /// How many containers the pod has (1–100000).
    ///
    /// Init, sidecar and app, pullcheck's own included, so that the termination message fits
    /// the kubelet's share, 12288 / N bytes (`pullcheck inject` writes it). Unset: one more
    /// than --containers lists, or 1. A whole number from 1 to 100000.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_POD_CONTAINERS",
        help_heading = OUTPUT,
        value_parser = clap::value_parser!(u32).range(1..=100_000)
    )]
    pub(crate) pod_containers: Option<u32>,

    /// Predict containers that will not start.
    ///
    /// `auto`: predict containers that will not start (runAsNonRoot against the image's user,
    /// no command), reading an image's config (a manifest and a blob GET) only when a
    /// container's spec leaves the answer to the image; `off`: no prediction, no extra request.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_START_CHECK",
        default_value = "auto",
        help_heading = IMAGES
    )]
    pub(crate) start_check: StartCheck,

    /// Deadline for the whole check (at most 24h).
    ///
    /// `500ms`, `30s`, `2m`, `1h30m`: longer than zero and at most 24h.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PULLCHECK_TIMEOUT",
        default_value = "60s",
        help_heading = LIMITS,
        allow_hyphen_values = true,
        value_parser = Checked::parser(values::timeout_value)
    )]
    pub(crate) timeout: Checked<std::time::Duration>,

    /// How many images are checked at once (1–1024).
    ///
    /// A whole number from 1 to 1024.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_CONCURRENCY",
        default_value = "16",
        help_heading = LIMITS,
        allow_hyphen_values = true,
        value_parser = Checked::parser(values::concurrency_value)
    )]
    pub(crate) concurrency: Checked<usize>,

    /// Output format on stdout.
    #[arg(
        short = 'o',
        long,
        value_enum,
        env = "PULLCHECK_OUTPUT",
        default_value = "text",
        help_heading = OUTPUT
    )]
    pub(crate) output: OutputFormat,

    /// Where to write the termination message.
    ///
    /// Default: /dev/termination-log when it exists; an empty PATH writes none.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_TERMINATION_LOG",
        help_heading = OUTPUT,
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub(crate) termination_log: Option<std::ffi::OsString>,

    /// Print only the images that cannot be pulled (nothing when all can).
    #[arg(
        short,
        long,
        env = "PULLCHECK_QUIET",
        help_heading = OUTPUT,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) quiet: bool,

    /// Show progress and every request on stderr.
    ///
    /// Even when stderr is not a terminal (a pod's log): each verdict as it arrives, each
    /// retry with its reason and wait, and each request's method, URL and status (never a
    /// header, a credential or a token). On a terminal, verdicts and retries are shown without
    /// it, and the verdicts give way to the report at the end.
    #[arg(
        short,
        long,
        env = "PULLCHECK_VERBOSE",
        help_heading = OUTPUT,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) verbose: bool,
}
