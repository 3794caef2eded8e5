//! The command line, as clap derive types only: every flag also reads an environment variable,
//! and `--help` text comes from these doc comments. No logic lives here; `config` validates.

use crate::check::OnUnreachable;
use crate::keyring::Secret;
use crate::registry::PlatformCheck;
use crate::report::EXIT_CODES_HELP;
use crate::start::StartCheck;
use clap::builder::FalseyValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Fail a pod in seconds, not hours, when one of its images cannot be pulled.
///
/// pullcheck runs as the first init container of a pod: it asks each image's registry for the
/// manifest (one HEAD, with the pod's own pull secrets) and exits non-zero with a precise
/// message when an image is missing, private, or its registry is unreachable.
#[derive(Debug, Parser)]
#[command(name = "pullcheck", version, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that every image can be pulled.
    #[command(after_help = EXIT_CODES_HELP)]
    Check(CheckArgs),
    /// Add the pullcheck init container to every pod spec of some manifests.
    ///
    /// Reads YAML or JSON (several documents, or a List) and writes the same format to stdout.
    Inject(InjectArgs),
}

/// The default image of the injected init container.
pub const DEFAULT_INJECT_IMAGE: &str = concat!("pullcheck:", env!("CARGO_PKG_VERSION"));

/// Flags of `pullcheck inject`.
#[derive(Debug, Args)]
pub struct InjectArgs {
    /// The manifests to read; `-` reads stdin.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        default_value = "-",
        env = "PULLCHECK_INJECT_FILE"
    )]
    pub file: PathBuf,

    /// The pullcheck image the init container runs.
    #[arg(long, value_name = "REF", env = "PULLCHECK_INJECT_IMAGE", default_value = DEFAULT_INJECT_IMAGE)]
    pub image: String,

    /// A pull secret to mount besides the pod's own imagePullSecrets. Repeatable; the
    /// environment variable takes a comma-separated list.
    #[arg(
        long = "secret",
        value_name = "NAME",
        env = "PULLCHECK_INJECT_SECRETS",
        value_delimiter = ','
    )]
    pub secrets: Vec<String>,

    /// A ConfigMap that holds the `--ca-file` files of the check arguments: each `--ca-file
    /// PATH` is mounted at PATH from the key named as PATH's file name.
    #[arg(long, value_name = "NAME", env = "PULLCHECK_INJECT_CA_CONFIGMAP")]
    pub ca_configmap: Option<String>,

    /// Also add to each batch/v1 Job (and CronJob job template) the podFailurePolicy rules
    /// for pullcheck's exit codes (FailJob on 3, 4, 5, 7; on 6, Count against backoffLimit,
    /// or Ignore when the Job has activeDeadlineSeconds), unless it has rules for container
    /// `pullcheck` already, and restartPolicy: Never where none is set. Says on stderr which
    /// rule was written and why.
    #[arg(long, env = "PULLCHECK_INJECT_JOB_FAILURE_POLICY", value_parser = FalseyValueParser::new())]
    pub job_failure_policy: bool,

    /// With --job-failure-policy: write Ignore on exit 6 even for a Job without
    /// activeDeadlineSeconds. Such a Job recreates a pod every --timeout for as long as the
    /// registry stays unreachable, without end: only for Jobs something else bounds.
    #[arg(
        long,
        env = "PULLCHECK_INJECT_IGNORE_UNREACHABLE_WITHOUT_DEADLINE",
        value_parser = FalseyValueParser::new(),
        requires = "job_failure_policy"
    )]
    pub ignore_unreachable_without_deadline: bool,

    /// Look up `IfNotPresent` images on the node first: split the images into
    /// `PULLCHECK_IMAGES` (`Always`) and `PULLCHECK_IMAGES_IF_NOT_PRESENT`, pass the node's
    /// name (`PULLCHECK_NODE_NAME` from `spec.nodeName`), and where the pod sets
    /// `automountServiceAccountToken: false`, mount a service-account token for the init
    /// container alone. The pod's service account needs `get` on `nodes`.
    #[arg(long, env = "PULLCHECK_INJECT_NODE_IMAGES", value_parser = FalseyValueParser::new())]
    pub node_images: bool,

    /// A ConfigMap holding containerd's hosts directory in the flat layout (`docker.io.toml`,
    /// `registry.corp_5000.toml`): mounted read-only (optional) and passed as `--hosts-dir`.
    #[arg(long, value_name = "NAME", env = "PULLCHECK_INJECT_HOSTS_CONFIGMAP")]
    pub hosts_configmap: Option<String>,

    /// A ConfigMap holding CRI-O's `registries.conf` (key `registries.conf`, and drop-ins):
    /// mounted read-only (optional) and passed as `--registries-conf`.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_INJECT_REGISTRIES_CONFIGMAP"
    )]
    pub registries_configmap: Option<String>,

    /// Mount the node's own containerd hosts directory read-only with a hostPath volume
    /// [default PATH: /etc/containerd/certs.d]; the `baseline` Pod Security level refuses
    /// hostPath volumes.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_INJECT_HOSTS_FROM_NODE",
        num_args = 0..=1,
        default_missing_value = crate::route::inject::DEFAULT_NODE_HOSTS
    )]
    pub hosts_from_node: Option<String>,

    /// The kubelet's CredentialProviderConfig: for the providers with `tokenAttributes`, add a
    /// projected `serviceAccountToken` volume (each provider's audience), mounted by the init
    /// container alone. Only the token volume: also pass `-- --image-credential-provider-config
    /// PATH --image-credential-provider-bin-dir DIR` and mount that file and the plugins (e.g.
    /// from a ConfigMap and an image volume), since pullcheck's image holds neither.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_INJECT_CREDENTIAL_PROVIDER_CONFIG",
        // An empty value (the variable set to nothing) turns the choice off, rather than
        // being refused as an empty path.
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::OsStringValueParser::new(),
            PathBuf::from
        )
    )]
    pub credential_provider_config: Option<PathBuf>,

    /// Arguments for `pullcheck check` in the init container (after `--`); checked with
    /// `check`'s own parser now, not in every pod.
    #[arg(last = true, value_name = "CHECK_ARGS")]
    pub check_args: Vec<String>,
}

/// How index entries must match the node's platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformMatch {
    /// containerd CRI's `platforms.Only`: the platform or an older compatible one.
    Lenient,
    /// Equal after normalisation.
    Strict,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One line per image, problems first, for people.
    Text,
    /// The JSON report, for programs.
    Json,
}

/// Flags of `pullcheck check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Image references to check (`nginx`, `quay.io/org/app:v1`, `reg:5000/x@sha256:…`).
    #[arg(value_name = "IMAGE")]
    pub images: Vec<String>,

    /// More images, separated by whitespace or commas.
    #[arg(
        long = "images",
        value_name = "LIST",
        env = "PULLCHECK_IMAGES",
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub images_list: Option<std::ffi::OsString>,

    /// Images whose pull policy is `IfNotPresent`: with --node, those the node already holds
    /// are `ok` without asking their registry (images given in other ways are `Always`:
    /// checked at the registry). Repeatable; each value, like the environment variable, is
    /// separated by whitespace or commas.
    #[arg(
        long = "if-not-present",
        value_name = "IMAGE",
        env = "PULLCHECK_IMAGES_IF_NOT_PRESENT",
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub if_not_present: Vec<std::ffi::OsString>,

    /// The node the pod runs on (from the downward API's `spec.nodeName`): its image list is
    /// read from the API server, with the pod's service-account token, for the
    /// --if-not-present images.
    #[arg(long, value_name = "NAME", env = "PULLCHECK_NODE_NAME")]
    pub node: Option<String>,

    /// The kubelet's `nodeStatusMaxImages`: a node that lists this many images may hold more,
    /// so its list proves nothing about the others; -1: the kubelet lists all.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_NODE_STATUS_MAX_IMAGES",
        default_value = "50",
        allow_hyphen_values = true
    )]
    pub node_status_max_images: String,

    /// The service-account directory holding `token` and `ca.crt` (for tests).
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_SERVICE_ACCOUNT_DIR",
        default_value = crate::node::SERVICE_ACCOUNT_DIR,
        hide = true
    )]
    pub service_account_dir: PathBuf,

    /// A file of images, one per line, `#` starts a comment; `-` reads stdin.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_IMAGES_FILE")]
    pub images_file: Option<PathBuf>,

    /// Manifests (YAML or JSON, any number of documents, Lists) whose pod specs' images are all
    /// checked: Pods, workloads, Jobs and the job frameworks' kinds (Argo, Spark, KubeRay,
    /// Kubeflow, JobSet, Volcano…), as `inject` reads them, each image with its pull policy
    /// and each container with its facts for the start check; `-` reads stdin.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_POD_SPEC")]
    pub pod_spec: Option<PathBuf>,

    /// A `.dockerconfigjson`, `.dockercfg` or `config.json` file, or a folder holding one.
    /// Repeatable; the environment variable takes a `:`-separated list.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_DOCKER_CONFIG",
        value_delimiter = ':'
    )]
    pub docker_config: Vec<PathBuf>,

    /// A folder with one sub-folder per mounted pull secret; a missing folder means none.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_SECRETS_DIR",
        default_value = "/var/run/pullcheck/secrets"
    )]
    pub secrets_dir: PathBuf,

    /// Speak plain HTTP to this registry (the only way to). Repeatable; the environment
    /// variable takes a comma-separated list. `--insecure HOST` (crane's word) is the same:
    /// plain HTTP; certificate checks are never turned off (trust a CA with --ca-file).
    #[arg(
        long,
        visible_alias = "insecure",
        value_name = "HOST[:PORT]",
        env = "PULLCHECK_PLAIN_HTTP",
        value_delimiter = ','
    )]
    pub plain_http: Vec<String>,

    /// One credential for one run, as skopeo's --creds: for the registry of the images (they
    /// must all be on one registry), tried before every other source. For a person at a
    /// workstation: there is no environment variable, so that a password is never put in a
    /// pod spec (use a pull secret there). The value is never shown.
    #[arg(long, value_name = "USER:PASS", value_parser = secret_value)]
    pub creds: Option<Secret>,

    /// Registries whose nodes pull with their own credentials (ECR, GCR, ACR credential
    /// providers, a node config.json): `unauthorized` with no pod credentials for them is a
    /// warning, not a failure. Repeatable; `*` for all; the environment variable takes a
    /// comma-separated list.
    #[arg(
        long,
        value_name = "HOST[:PORT]",
        env = "PULLCHECK_ALLOW_UNAUTHENTICATED",
        value_delimiter = ','
    )]
    pub allow_unauthenticated: Vec<String>,

    /// `auto`: for ECR, Artifact Registry / GCR and ACR images, also try a registry credential
    /// from the pod's cloud identity (IRSA, EKS Pod Identity, IMDS; GKE metadata server; Azure
    /// workload identity or IMDS), after the pull secrets; when no credential at all can be
    /// had for such an image (or one a credential-provider plugin matches), `unauthorized` is
    /// a warning, since the kubelet pulls with the node's identity. `required`: the same, but
    /// that `unauthorized` fails, for clusters where every pod has an identity. `off`: never
    /// ask.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_CLOUD_CREDENTIALS",
        default_value = "auto"
    )]
    pub cloud_credentials: crate::credentials::cloud::Mode,

    /// The kubelet's CredentialProviderConfig (kubelet.config.k8s.io/v1): its exec plugins
    /// are run for the images they match, after the pull secrets. Needs
    /// --image-credential-provider-bin-dir.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_IMAGE_CREDENTIAL_PROVIDER_CONFIG"
    )]
    pub image_credential_provider_config: Option<PathBuf>,

    /// The folder of the credential-provider plugins.
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_IMAGE_CREDENTIAL_PROVIDER_BIN_DIR"
    )]
    pub image_credential_provider_bin_dir: Option<PathBuf>,

    /// Where the pod's service-account tokens for plugins with tokenAttributes are
    /// (`<DIR>/<provider name>/token`, as `pullcheck inject --credential-provider-config`
    /// mounts them).
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR",
        default_value = crate::credentials::plugin::DEFAULT_TOKEN_DIR
    )]
    pub credential_provider_token_dir: PathBuf,

    /// A PEM file of CA certificates to trust, besides the Mozilla roots built in. Repeatable;
    /// the environment variable takes a `:`-separated list.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_CA_FILE",
        value_delimiter = ':'
    )]
    pub ca_file: Vec<PathBuf>,

    /// containerd's hosts directory (its `config_path`, e.g. /etc/containerd/certs.d): images
    /// are asked where the node would pull them, mirrors first. `DIR/<host>/hosts.toml`, or the
    /// flat ConfigMap layout `DIR/<host>.toml` (`<host>_<port>.toml`). Repeatable; the
    /// environment variable takes a `:`-separated list (the first directory with an entry
    /// for a host wins).
    #[arg(
        long,
        value_name = "DIR",
        env = "PULLCHECK_HOSTS_DIR",
        value_delimiter = ':'
    )]
    pub hosts_dir: Vec<PathBuf>,

    /// CRI-O's and Podman's registries.conf (version 2), or a folder holding `registries.conf`
    /// and `*.conf` drop-ins: mirrors, rewritten and blocked prefixes, short names.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_REGISTRIES_CONF")]
    pub registries_conf: Option<PathBuf>,

    /// What an image that stays `unreachable` (exit 6), or is `unverifiable` from the pod
    /// (exit 8), means: `fail`, or `warn` for pods whose network, DNS or CAs are not their
    /// nodes' (reported, not counted).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        env = "PULLCHECK_ON_UNREACHABLE",
        default_value = "fail"
    )]
    pub on_unreachable: OnUnreachable,

    /// The node's platform, `OS/ARCH[/VARIANT]` [default: this machine's, e.g. linux/amd64];
    /// `any` turns the platform check off.
    #[arg(long, value_name = "PLATFORM", env = "PULLCHECK_PLATFORM")]
    pub platform: Option<String>,

    /// How index entries must match the platform: `lenient` as containerd's CRI (1.7, 2.0)
    /// does, also accepting older compatible platforms; `strict` as containerd 2.1+ and CRI-O.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        env = "PULLCHECK_PLATFORM_MATCH",
        default_value = "lenient"
    )]
    pub platform_match: PlatformMatch,

    /// `auto`: check indexes (one manifest GET), but not on Docker Hub, where a manifest GET
    /// counts as a pull; `full`: also single manifests (a manifest and a config GET); `off`:
    /// HEAD only.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_PLATFORM_CHECK",
        default_value = "auto"
    )]
    pub platform_check: PlatformCheck,

    /// The pod's containers, for the start check: a JSON list of `{"name", "image", "kind",
    /// "command", "args", "runAsNonRoot", "runAsUser"}` (`pullcheck inject` writes it). Their
    /// images are checked too.
    #[arg(
        long,
        value_name = "JSON",
        env = "PULLCHECK_CONTAINERS",
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub containers: Option<std::ffi::OsString>,

    /// How many containers the pod has (init, sidecar and app, pullcheck's own included),
    /// so that the termination message fits the kubelet's share of 12 KiB per container
    /// (`pullcheck inject` writes it). Unset: one more than --containers lists, or 1.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_POD_CONTAINERS",
        value_parser = clap::value_parser!(u32).range(1..=100_000)
    )]
    pub pod_containers: Option<u32>,

    /// `auto`: predict containers that will not start (runAsNonRoot against the image's user,
    /// no command), reading an image's config (a manifest and a blob GET) only when a
    /// container's spec leaves the answer to the image; `off`: no prediction, no extra request.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        env = "PULLCHECK_START_CHECK",
        default_value = "auto"
    )]
    pub start_check: StartCheck,

    /// Deadline for the whole check (`500ms`, `30s`, `2m`).
    #[arg(
        long,
        value_name = "DURATION",
        env = "PULLCHECK_TIMEOUT",
        default_value = "60s",
        allow_hyphen_values = true
    )]
    pub timeout: String,

    /// How many images are checked at once.
    #[arg(
        long,
        value_name = "N",
        env = "PULLCHECK_CONCURRENCY",
        default_value = "16",
        allow_hyphen_values = true
    )]
    pub concurrency: String,

    /// Output format on stdout.
    #[arg(
        short = 'o',
        long,
        value_enum,
        env = "PULLCHECK_OUTPUT",
        default_value = "text"
    )]
    pub output: OutputFormat,

    /// Where to write the termination message [default: /dev/termination-log when it exists;
    /// an empty PATH writes none].
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_TERMINATION_LOG",
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub termination_log: Option<std::ffi::OsString>,

    /// Print only the images that cannot be pulled (nothing when all can).
    #[arg(short, long, env = "PULLCHECK_QUIET", value_parser = FalseyValueParser::new())]
    pub quiet: bool,

    /// Show progress on stderr even when it is not a terminal (a pod's log): each verdict as it
    /// arrives, each retry with its reason and wait, and each request's method, URL and status
    /// (never its headers). On a terminal, verdicts and retries are shown without it.
    #[arg(short, long, env = "PULLCHECK_VERBOSE", value_parser = FalseyValueParser::new())]
    pub verbose: bool,
}

/// Wraps a secret value at once, so that no `Debug` of the arguments shows it.
fn secret_value(s: &str) -> Result<Secret, String> {
    Ok(Secret::new(s))
}
