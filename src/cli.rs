//! The command line, as clap derive types only: every flag also reads an environment variable,
//! and `--help` text comes from these doc comments. No logic lives here; `config` validates.

use crate::registry::PlatformCheck;
use crate::report::EXIT_CODES_HELP;
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

    /// Arguments for `pullcheck check` in the init container (after `--`).
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

    /// A file of images, one per line, `#` starts a comment; `-` reads stdin.
    #[arg(long, value_name = "PATH", env = "PULLCHECK_IMAGES_FILE")]
    pub images_file: Option<PathBuf>,

    /// A Pod, workload (Deployment, Job, CronJob, StatefulSet, DaemonSet, ReplicaSet) or List,
    /// YAML or JSON, whose images are all checked; `-` reads stdin.
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
    /// variable takes a comma-separated list.
    #[arg(
        long,
        value_name = "HOST[:PORT]",
        env = "PULLCHECK_PLAIN_HTTP",
        value_delimiter = ','
    )]
    pub plain_http: Vec<String>,

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
    /// workload identity or IMDS), after the pull secrets; `off`: never.
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

    /// Tests only: connect to HOST at ADDR instead of resolving it (`HOST=IP:PORT,…`), so that
    /// cloud registry names reach a registry on loopback.
    #[arg(
        long,
        hide = true,
        value_name = "MAP",
        env = "PULLCHECK_TEST_RESOLVE",
        value_delimiter = ','
    )]
    pub test_resolve: Vec<String>,

    /// A PEM file of CA certificates to trust, besides the Mozilla roots built in. Repeatable;
    /// the environment variable takes a `:`-separated list.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_CA_FILE",
        value_delimiter = ':'
    )]
    pub ca_file: Vec<PathBuf>,

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
}
