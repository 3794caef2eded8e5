//! The command line, as clap derive types only: every flag also reads an environment variable,
//! and `--help` text comes from these doc comments. No logic lives here; `config` validates.

use crate::keyring::Secret;
use crate::report::EXIT_CODES_HELP;
use clap::builder::FalseyValueParser;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod choices;
mod limit_range;
pub(crate) mod values;
#[cfg(feature = "watch")]
pub mod watch;
#[cfg(feature = "webhook")]
pub mod webhook;

pub(crate) use choices::{CloudCredentials, OutputFormat, PlatformCheck, PlatformMatch};
pub use choices::{Network, OnUnreachable, OnUnverifiable, StartCheck};
pub use values::Checked;
use values::secret_value;
// The headings `-h` groups the flags under, in the order they are shown.
const IMAGES: &str = "Images";
const CREDENTIALS: &str = "Credentials";
const NODE: &str = "The node";
const ROUTING: &str = "Routing";
const OUTPUT: &str = "Output";
const LIMITS: &str = "Limits";
const INJECT_INPUT: &str = "Input and image";
const INJECT_JOBS: &str = "Jobs";

/// What `check -h` says after the flags: the exit codes, and where the rest is.
fn check_short_after() -> String {
    format!("{EXIT_CODES_HELP}\n\n{CHECK_SHORT_AFTER}")
}

/// Where the rest of `check -h` is.
const CHECK_SHORT_AFTER: &str = "\
Examples: pullcheck check nginx:1.27; pullcheck check --pod-spec job.yaml -o json
Every flag also reads its environment variable; `--help` names them, explains each flag and
lists the exit codes.";

/// What `check --help` says after the flags: examples a newcomer needs, then the exit codes.
fn check_long_after() -> String {
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

/// What `inject -h` says after the flags.
const INJECT_SHORT_AFTER: &str = "\
Example: pullcheck inject -f job.yaml --image YOUR/IMAGE --job-failure-policy | kubectl apply -f -
`--help` explains each flag and names its environment variable.";

/// What `inject --help` says after the flags.
const INJECT_LONG_AFTER: &str = "\
Examples:
  pullcheck inject -f job.yaml --image registry.example.com/pullcheck:0.1.0 --job-failure-policy | kubectl apply -f -
      Add the init container and the Job's podFailurePolicy rules, then create the Job.
  helm template ./chart | pullcheck inject --image registry.example.com/pullcheck:0.1.0 -- --timeout 30s
      Rendered manifests from stdin; the arguments after `--` are the check's.
  pullcheck inject -f job.yaml --image registry.example.com/pullcheck:0.1.0 --node-images
      Look IfNotPresent images up on the node first (the pod needs `get` on nodes).

There is no published pullcheck image: build it (scripts/build-image.sh) and push it to a
registry every node can pull from, then pass that reference as --image.";

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
    ///
    /// Asks each image's registry for its manifest (one HEAD per image, with the pull
    /// secrets that match it, as the kubelet would), for the node's platform, and exits with
    /// the code of the worst failure.
    #[command(after_help = check_short_after(), after_long_help = check_long_after())]
    Check(CheckArgs),
    /// Add the pullcheck init container to every pod spec of some manifests.
    ///
    /// Reads YAML or JSON (several documents, or a List) and writes the same format to stdout,
    /// every byte it does not edit kept as it was.
    #[command(after_help = INJECT_SHORT_AFTER, after_long_help = INJECT_LONG_AFTER)]
    Inject(InjectArgs),
    #[cfg(feature = "webhook")]
    #[command(about = webhook::ABOUT, long_about = webhook::LONG_ABOUT)]
    Webhook(webhook::WebhookArgs),
    #[cfg(feature = "watch")]
    Watch(watch::WatchArgs),
}

/// The default image of the injected init container.
pub(crate) const DEFAULT_INJECT_IMAGE: &str = concat!("pullcheck:", env!("CARGO_PKG_VERSION"));

/// Flags of `pullcheck inject`, grouped under the headings `-h` shows.
#[derive(Debug, Args)]
pub struct InjectArgs {
    /// The manifests to read (`-`: stdin).
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        default_value = "-",
        env = "PULLCHECK_INJECT_FILE",
        help_heading = INJECT_INPUT
    )]
    pub(crate) file: PathBuf,

    /// The pullcheck image the init container runs: where you pushed it.
    ///
    /// No registry holds the default: build the image (`scripts/build-image.sh`), push it to a
    /// registry every node can pull from, and pass that reference.
    #[arg(
        long,
        value_name = "REF",
        env = "PULLCHECK_INJECT_IMAGE",
        default_value = DEFAULT_INJECT_IMAGE,
        help_heading = INJECT_INPUT
    )]
    pub(crate) image: String,

    /// Another pull secret to mount (repeatable).
    ///
    /// A pull secret to mount besides the pod's own imagePullSecrets. Repeatable; the
    /// environment variable takes a comma-separated list.
    #[arg(
        long = "secret",
        value_name = "NAME",
        env = "PULLCHECK_INJECT_SECRETS",
        help_heading = CREDENTIALS,
        value_delimiter = ','
    )]
    pub(crate) secrets: Vec<String>,

    /// A ConfigMap holding the check's --ca-file files.
    ///
    /// Each `--ca-file PATH` of the check arguments is mounted at PATH from the key named as
    /// PATH's file name.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_INJECT_CA_CONFIGMAP",
        help_heading = CREDENTIALS
    )]
    pub(crate) ca_configmap: Option<String>,

    /// Add podFailurePolicy rules for pullcheck's exit codes to Jobs.
    ///
    /// Also add to each batch/v1 Job (and CronJob job template) the podFailurePolicy rule
    /// for pullcheck's proven exit codes, FailJob on 3, 4, 5, 7, unless it has rules for
    /// container `pullcheck` already, and restartPolicy: Never where none is set. Exits 6 and
    /// 8 are not written by default (the init container warns on them); with `--
    /// --on-unreachable fail`, on 6 Count against backoffLimit, or Ignore when the Job has
    /// activeDeadlineSeconds; with `-- --on-unverifiable fail`, Count on 8. Says on stderr
    /// which rules were written and why.
    #[arg(
        long,
        env = "PULLCHECK_INJECT_JOB_FAILURE_POLICY",
        help_heading = INJECT_JOBS,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) job_failure_policy: bool,

    /// Ignore exit 6 even in Jobs without a deadline.
    ///
    /// With --job-failure-policy and `-- --on-unreachable fail`: write Ignore on exit 6 even
    /// for a Job without activeDeadlineSeconds. Such a Job recreates a pod every --timeout for as long as the
    /// registry stays unreachable, without end: only for Jobs something else bounds.
    #[arg(
        long,
        env = "PULLCHECK_INJECT_IGNORE_UNREACHABLE_WITHOUT_DEADLINE",
        value_parser = FalseyValueParser::new(),
        help_heading = INJECT_JOBS,
        requires = "job_failure_policy"
    )]
    pub(crate) ignore_unreachable_without_deadline: bool,

    /// Look IfNotPresent images up on the node first (the default).
    ///
    /// For a pod with an `IfNotPresent` image: split the images into `PULLCHECK_IMAGES`
    /// (`Always`) and `PULLCHECK_IMAGES_IF_NOT_PRESENT`, pass the node's name
    /// (`PULLCHECK_NODE_NAME` from `spec.nodeName`), and where the pod sets
    /// `automountServiceAccountToken: false`, mount a service-account token for the init
    /// container alone. A registry miss of such an image then counts only when the node's
    /// list proves the node lacks it: with `get` on `nodes` for the pod's service account
    /// (examples/node-images-rbac.yaml); without it, the miss is a warning (`may_be_on_node`).
    /// On by default; this flag is kept (hidden) for command lines that name it.
    #[arg(
        long,
        env = "PULLCHECK_INJECT_NODE_IMAGES",
        help_heading = NODE,
        hide = true,
        value_parser = FalseyValueParser::new(),
        overrides_with = "no_node_images"
    )]
    pub(crate) node_images: bool,

    /// Do not look the node up: IfNotPresent images are checked as Always.
    ///
    /// By default, for a pod with an `IfNotPresent` image, the images are split by pull policy
    /// (`PULLCHECK_IMAGES_IF_NOT_PRESENT`), the node's name is passed (`PULLCHECK_NODE_NAME`),
    /// a token mounted where the pod has none, and a miss counts only when the node's list
    /// proves the node lacks the image (its service account needs `get` on `nodes`:
    /// examples/node-images-rbac.yaml; else the miss warns, `may_be_on_node`). With this flag,
    /// every image is checked as Always: a miss fails the pod even where the node holds it.
    #[arg(
        long,
        env = "PULLCHECK_INJECT_NO_NODE_IMAGES",
        help_heading = NODE,
        value_parser = FalseyValueParser::new(),
        overrides_with = "node_images"
    )]
    pub(crate) no_node_images: bool,

    /// Mount containerd's hosts directory from a ConfigMap.
    ///
    /// A ConfigMap holding containerd's hosts directory in the flat layout (`docker.io.toml`,
    /// `registry.corp_5000.toml`): mounted read-only at /etc/pullcheck/hosts.d from an
    /// `optional` volume, and passed as `--hosts-dir`.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_INJECT_HOSTS_CONFIGMAP",
        help_heading = ROUTING
    )]
    pub(crate) hosts_configmap: Option<String>,

    /// Mount CRI-O's registries.conf from a ConfigMap.
    ///
    /// A ConfigMap holding CRI-O's `registries.conf` (key `registries.conf`, and drop-ins):
    /// mounted read-only at /etc/pullcheck/registries from an `optional` volume, and passed as
    /// `--registries-conf`; not with the two flags for containerd.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_INJECT_REGISTRIES_CONFIGMAP",
        help_heading = ROUTING
    )]
    pub(crate) registries_configmap: Option<String>,

    /// Mount the node's own containerd hosts directory (hostPath).
    ///
    /// Read-only, with a hostPath volume [default PATH: /etc/containerd/certs.d], and passed
    /// as `--hosts-dir`; warns that the `baseline` and `restricted` Pod Security levels refuse
    /// hostPath volumes.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_INJECT_HOSTS_FROM_NODE",
        num_args = 0..=1,
        help_heading = ROUTING,
        default_missing_value = crate::route::inject::DEFAULT_NODE_HOSTS
    )]
    pub(crate) hosts_from_node: Option<String>,

    /// Mount service-account tokens for the kubelet's credential providers.
    ///
    /// The kubelet's CredentialProviderConfig (a malformed one is exit 2, naming FILE): for the
    /// providers with `tokenAttributes`, add one projected volume `pullcheck-provider-tokens`
    /// with a `serviceAccountToken` per provider (its audience, at `<provider>/token`), mounted
    /// read-only by the init container alone at /var/run/secrets/pullcheck/credential-providers
    /// (PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR); nothing when no provider has them. Only the token volume: also pass `-- --image-credential-provider-config
    /// PATH --image-credential-provider-bin-dir DIR` and mount that file and the plugins (e.g.
    /// from a ConfigMap and an image volume), since pullcheck's image holds neither.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_INJECT_CREDENTIAL_PROVIDER_CONFIG",
        help_heading = CREDENTIALS,
        // An empty value (the variable set to nothing) turns the choice off, rather than
        // being refused as an empty path.
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::OsStringValueParser::new(),
            PathBuf::from
        )
    )]
    pub(crate) credential_provider_config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) limit_range: limit_range::LimitRangeArgs,
    /// Arguments for `pullcheck check` in the init container.
    ///
    /// After `--`; checked with `check`'s own parser now, not in every pod: `-- --timout 30s`
    /// is exit 2 here.
    #[arg(last = true, value_name = "CHECK_ARGS")]
    pub(crate) check_args: Vec<String>,
}

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
    /// their registry (images given in other ways are `Always`: checked at the registry). Repeatable; each
    /// value, like the environment variable, is separated by whitespace or commas.
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
    /// The only way to speak plain HTTP to a registry. Repeatable; the environment variable
    /// takes a comma-separated list. The report says `(plain HTTP)`, JSON `"plain_http":
    /// true`. `--insecure HOST` (crane's word) is the same: plain HTTP. crane's --insecure also
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
    /// Version 2, or a folder holding `registries.conf` and `*.conf` drop-ins: mirrors,
    /// rewritten and blocked prefixes, short names. Not together with --hosts-dir.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_REGISTRIES_CONF",
        help_heading = ROUTING
    )]
    pub(crate) registries_conf: Option<PathBuf>,

    /// Whether an unreachable registry fails the run.
    ///
    /// What an image that stays `unreachable` (exit 6: refused, timed out, 5xx or 429 until
    /// the deadline) means: `fail`, or `warn`: reported with `"fatal": false` and not counted
    /// (`not_counted: on_unreachable_warn`), so that the kubelet's own back-off waits an outage
    /// out. `pullcheck inject` and the webhook write `warn` (PULLCHECK_ON_UNREACHABLE).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        env = "PULLCHECK_ON_UNREACHABLE",
        default_value = "fail",
        help_heading = ROUTING
    )]
    pub(crate) on_unreachable: OnUnreachable,

    /// Whether a registry this pod cannot check fails the run.
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

/// The command line as `main` parses it: the derive's, with each flag's environment variable
/// moved from `-h` to `--help`, so that `-h` keeps one line per flag.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let explain = |c: clap::Command| c.mut_args(explained);
    let command = Cli::command()
        .mut_subcommand("check", explain)
        .mut_subcommand("inject", explain);
    #[cfg(feature = "webhook")]
    let command = command.mut_subcommand("webhook", |c| webhook::explained(explain(c)));
    #[cfg(feature = "watch")]
    let command = command.mut_subcommand("watch", explain);
    command
}

/// One flag's long help: its text, then the environment variable it reads.
fn explained(arg: clap::Arg) -> clap::Arg {
    let Some(env) = arg.get_env().map(|e| e.to_string_lossy().into_owned()) else {
        return arg;
    };
    let text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    arg.hide_env(true)
        .long_help(format!("{text}\n\n[env: {env}]"))
}
