//! The flags of `pullcheck webhook` (the `webhook` cargo feature): what it adds (`--mode`),
//! where it listens, where its serving certificate comes from, and, flattened, every flag of
//! `pullcheck inject` for the container it adds.

use super::InjectArgs;
use super::values::Checked;
use clap::builder::FalseyValueParser;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// What `pullcheck help` says of the subcommand.
pub(super) const ABOUT: &str =
    "Serve a mutating admission webhook that adds the init container to new Pods and Jobs";
/// What `pullcheck webhook --help` says of it.
pub(super) const LONG_ABOUT: &str = "\
Serve a mutating admission webhook that adds the init container to new Pods and Jobs.

AdmissionReview v1 over HTTPS (POST /mutate; GET /healthz, /readyz, /metrics): on CREATE of a
Pod or a batch/v1 Job, answers with a JSON patch that adds what `pullcheck inject` would add,
with the same flags. With --mode watch it adds nothing to pods: to a batch/v1 Job (and a
CronJob's job template) only the podFailurePolicy rule that lets `pullcheck watch`'s condition
fail the Job. With --audit it adds nothing and answers with warnings of what it would
add. With --verdicts, a proven missing image of what is created is a warning `kubectl apply`
prints; it refuses an object only with --deny-missing. Only in a build with `--features
webhook`.";

/// `webhook --help`: the inject flags that name a file are hidden, since the webhook reads
/// objects from its requests, never manifests from a file, and each namespace's LimitRanges
/// from the API.
pub(super) fn explained(command: clap::Command) -> clap::Command {
    command
        .mut_arg("file", |a| a.hide(true))
        .mut_arg("limit_range_file", |a| a.hide(true))
}

const MODE: &str = "Mode";
const SERVING: &str = "Serving";
const CERTIFICATE: &str = "Certificate";
const VERDICTS: &str = "Verdicts at admission";

/// `--mode`: what the webhook adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WebhookMode {
    /// Nothing to pods; to Jobs and CronJobs' job templates only a podFailurePolicy rule
    /// `FailJob` on --condition-type, for `pullcheck watch` to fail them.
    Watch,
    /// The init container, as `pullcheck inject` adds it (the inject flags below).
    Init,
    /// As `init` (the watcher runs beside it: the chart's `mode: both`).
    Both,
}

/// Flags of `pullcheck webhook`.
#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// What it adds: the init container (`init`, `both`) or only the Job rule for the
    /// watcher's condition (`watch`).
    ///
    /// `init` by default, so that a webhook deployed before the modes keeps doing what it did;
    /// the chart sets its own `mode` (default `watch`, with `pullcheck watch` beside it). In
    /// `watch` Pods are admitted unchanged and the inject flags are not used.
    #[arg(
        long,
        value_enum,
        default_value = "init",
        env = "PULLCHECK_WEBHOOK_MODE",
        help_heading = MODE
    )]
    pub(crate) mode: WebhookMode,

    /// With --mode watch: the pod condition type of the rule added (`pullcheck watch
    /// --condition-type`).
    #[arg(
        long,
        value_name = "TYPE",
        default_value = "ConfigIssue",
        env = "PULLCHECK_WEBHOOK_CONDITION_TYPE",
        help_heading = MODE
    )]
    pub(crate) condition_type: String,

    /// Add nothing: answer each object it would change with warnings of what it would add.
    ///
    /// Every review is allowed unpatched; an object the webhook would have changed gets the
    /// warning `pullcheck (audit): would add …` (which kubectl prints), and the metrics count
    /// it as `outcome="audited"`. In every mode; turn it off to enforce.
    #[arg(
        long,
        env = "PULLCHECK_WEBHOOK_AUDIT",
        help_heading = MODE,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) audit: bool,

    /// The address to serve HTTPS on (`:PORT` for every IPv4 address).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = ":8443",
        env = "PULLCHECK_WEBHOOK_LISTEN",
        help_heading = SERVING
    )]
    pub(crate) listen: String,

    /// The serving certificate chain (PEM), reloaded when the file changes.
    ///
    /// For a certificate that something else renews (cert-manager): the files are read again
    /// when they change, without a restart. With --tls-key-file; not with --self-signed.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_WEBHOOK_TLS_CERT_FILE",
        help_heading = CERTIFICATE,
        requires = "tls_key_file",
        conflicts_with = "self_signed"
    )]
    pub(crate) tls_cert_file: Option<PathBuf>,

    /// The serving certificate's private key (PEM), reloaded when the file changes.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_WEBHOOK_TLS_KEY_FILE",
        help_heading = CERTIFICATE,
        requires = "tls_cert_file",
        conflicts_with = "self_signed"
    )]
    pub(crate) tls_key_file: Option<PathBuf>,

    /// Make a serving certificate and write its CA into the webhook configuration.
    ///
    /// A certificate for `<service>.<namespace>.svc`, renewed before it expires; its CA goes
    /// into the caBundle of --webhook-configuration (the service account needs `get` and
    /// `patch` on that one MutatingWebhookConfiguration).
    #[arg(
        long,
        env = "PULLCHECK_WEBHOOK_SELF_SIGNED",
        help_heading = CERTIFICATE,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) self_signed: bool,

    /// The webhook's Service: the name its certificate is made for.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "pullcheck-webhook",
        env = "PULLCHECK_WEBHOOK_SERVICE",
        help_heading = CERTIFICATE
    )]
    pub(crate) service: String,

    /// The webhook's own namespace: its pods are never changed.
    ///
    /// Set it from the downward API (`metadata.namespace`): objects created in it are
    /// admitted unchanged, so that the webhook never waits on itself.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_WEBHOOK_NAMESPACE",
        help_heading = SERVING
    )]
    pub(crate) namespace: Option<String>,

    /// The MutatingWebhookConfiguration whose caBundle --self-signed writes.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "pullcheck",
        env = "PULLCHECK_WEBHOOK_CONFIGURATION",
        help_heading = CERTIFICATE
    )]
    pub(crate) webhook_configuration: String,

    /// Judge the images of what is created: a proven miss is a warning `kubectl apply` prints.
    ///
    /// On CREATE of a Pod (one no controller owns), a batch/v1 Job or a CronJob, and on the
    /// UPDATE that releases a suspended Job, each image of the pod template is asked of its
    /// registry (one manifest HEAD, anonymously unless --read-pull-secrets, through one cache
    /// for the cluster). Only a
    /// proven miss speaks: a missing tag, digest or repository of an `Always` image, of an
    /// `IfNotPresent` image only when no node's complete image list holds it, or a reference no
    /// runtime can parse. Anything else says nothing. In every mode.
    #[arg(
        long,
        env = "PULLCHECK_WEBHOOK_VERDICTS",
        help_heading = VERDICTS,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) verdicts: bool,

    /// Refuse an object whose image is proven missing (implies --verdicts).
    ///
    /// Only a miss the registry proves for an `Always` image, or a reference that does not
    /// parse: an `IfNotPresent` miss is warned of but never refused, since a node may have been
    /// given the image since it last listed its images. With --audit: a warning of the refusal.
    #[arg(
        long,
        env = "PULLCHECK_WEBHOOK_DENY_MISSING",
        help_heading = VERDICTS,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) deny_missing: bool,

    /// Ask the registries with the pods' own pull secrets, not anonymously.
    ///
    /// The pod template's `imagePullSecrets` and, for a Job or a CronJob, its service
    /// account's, read for the one review (`get` on Secrets and ServiceAccounts in the
    /// namespaces it judges), matched as the kubelet matches them; never logged, never kept.
    /// Without it a private repository's miss is never said (its 401 proves nothing).
    #[arg(
        long,
        env = "PULLCHECK_WEBHOOK_READ_PULL_SECRETS",
        help_heading = VERDICTS,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) read_pull_secrets: bool,

    /// How long a review waits for its verdicts; past it, it is answered without those not
    /// known yet (their lookups go on and fill the cache).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        env = "PULLCHECK_WEBHOOK_VERDICT_BUDGET",
        help_heading = VERDICTS,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) verdict_budget: Checked<Duration>,

    /// How long an image found is kept in the cache.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10m",
        env = "PULLCHECK_WEBHOOK_VERDICT_TTL",
        help_heading = VERDICTS,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) verdict_ttl: Checked<Duration>,

    /// How long a miss, or an answer that proved nothing, is kept in the cache.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        env = "PULLCHECK_WEBHOOK_VERDICT_MISS_TTL",
        help_heading = VERDICTS,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) verdict_miss_ttl: Checked<Duration>,

    /// Lookups under way at once to one registry (1 to 64).
    #[arg(
        long,
        value_name = "N",
        default_value = "4",
        env = "PULLCHECK_WEBHOOK_VERDICT_REGISTRY_CONCURRENCY",
        help_heading = VERDICTS,
        value_parser = clap::value_parser!(u8).range(1..=64)
    )]
    pub(crate) verdict_registry_concurrency: u8,

    /// A registry (`host[:port]`) the verdicts ask over plain HTTP; repeatable. A registry on
    /// loopback is never asked (it is the node's, not the webhook's).
    #[arg(
        long,
        value_name = "HOST",
        env = "PULLCHECK_WEBHOOK_VERDICT_PLAIN_HTTP",
        value_delimiter = ',',
        help_heading = VERDICTS
    )]
    pub(crate) verdict_plain_http: Vec<String>,

    /// The init container the webhook adds: the flags of `pullcheck inject`.
    #[command(flatten)]
    pub(crate) inject: InjectArgs,
}
