//! `pullcheck inject`'s flags and the help text around them.

use super::limit_range;
use super::{CREDENTIALS, INJECT_INPUT, INJECT_JOBS, NODE, ROUTING};
use clap::Args;
use clap::builder::FalseyValueParser;
use std::path::PathBuf;

/// What `inject -h` says after the flags.
pub(super) const SHORT_AFTER: &str = "\
Example: pullcheck inject -f job.yaml --image YOUR/IMAGE --job-failure-policy | kubectl apply -f -
`--help` explains each flag and names its environment variable.";

/// What `inject --help` says after the flags.
pub(super) const LONG_AFTER: &str = "\
Examples:
  pullcheck inject -f job.yaml --image registry.example.com/pullcheck:0.1.0 --job-failure-policy | kubectl apply -f -
      Add the init container and the Job's podFailurePolicy rules, then create the Job.
  helm template ./chart | pullcheck inject --image registry.example.com/pullcheck:0.1.0 -- --timeout 30s
      Rendered manifests from stdin; the arguments after `--` are the check's.
  pullcheck inject -f job.yaml --image registry.example.com/pullcheck:0.1.0 --node-images
      Look IfNotPresent images up on the node first (the pod needs `get` on nodes).

There is no published pullcheck image: build it (scripts/build-image.sh) and push it to a
registry every node can pull from, then pass that reference as --image.";

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
    /// `--registries-conf`; not with --registries-from-node or the two flags for containerd.
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

    /// Mount the node's own CRI-O registry configuration (hostPath).
    ///
    /// The node's containers folder [default PATH: /etc/containers], read-only with a hostPath
    /// volume at /etc/pullcheck/node-containers, and passed as `--registries-conf
    /// <mount>/registries.conf --registries-conf-dir <mount>/registries.conf.d --certs-dir
    /// <mount>/certs.d` (each may be absent on the node: no configuration, no drop-ins, no
    /// certificates); not with --registries-configmap or the two flags for containerd. Warns
    /// that the `baseline` and `restricted` Pod Security levels refuse hostPath volumes.
    #[arg(
        long,
        value_name = "PATH",
        env = "PULLCHECK_INJECT_REGISTRIES_FROM_NODE",
        num_args = 0..=1,
        help_heading = ROUTING,
        default_missing_value = crate::route::inject::DEFAULT_NODE_CONTAINERS
    )]
    pub(crate) registries_from_node: Option<String>,

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
