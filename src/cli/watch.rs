//! The flags of `pullcheck watch` (the `watch` cargo feature): which pods it watches, how long a
//! container may wait, what it writes, where it serves its health and metrics, and the Lease
//! that elects the one replica that acts. Values are kept as given and judged by
//! `watch::Config::from_args`, so that every bad value is reported at once (exit 2).

use super::Checked;
use clap::Args;
use clap::builder::FalseyValueParser;
use std::time::Duration;

/// What `pullcheck help` says of the subcommand.
const ABOUT: &str =
    "Fail the pods that wait for ever on an image, a Secret or a command that is not there";
/// What `pullcheck watch --help` says of it.
const LONG_ABOUT: &str = "\
Fail the pods that wait for ever on an image, a Secret or a command that is not there.

Watches the pending Pods of the namespaces labelled --namespace-label. When a container (init
containers and sidecars too) waits with ErrImagePull, ImagePullBackOff, InvalidImageName,
ErrImageNeverPull, CreateContainerConfigError, CreateContainerError or RunContainerError, the
kubelet's own words are classified. A permanent cause (a missing tag or Secret, a refused
credential, a workingDir that is a file, ...) that has stood for its grace, on fresh evidence
(no pull under way, an attempt ended since the words were first seen) and, for a missing
image, not resolving when the watcher asks the registry itself, fails the pod by the kubelet's
own hand: the condition --condition-type, a Warning Event, then activeDeadlineSeconds: 1, after
which the kubelet fails the pod (DeadlineExceeded) and keeps it; a Job's podFailurePolicy
onPodConditions rule turns the condition into a failed Job. Any pod with restartPolicy Never or
OnFailure is failed, whatever owns it (a Job, nothing, Argo, Tekton, KubeRay, ...), unless it is
annotated pullcheck.dev/fail-when-stuck: \"false\"; transient causes (time-outs, refused
connections, 5xx, 429, DNS, unknown words) are only reported. Pods of Deployments,
StatefulSets, DaemonSets and ReplicationControllers, and restartPolicy Always pods, are never
failed: they get the Event. Nothing is deleted. One replica acts,
elected with a coordination.k8s.io Lease. GET /healthz, /readyz, /metrics on --listen. Only in
a build with `--features watch`.";

const WATCHING: &str = "Watching";
const ACTING: &str = "Acting";
const SERVING: &str = "Serving";
const ELECTION: &str = "Leader election";

/// Flags of `pullcheck watch` (its `about` is set here, so that `cli/mod.rs` holds one line of
/// it).
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct WatchArgs {
    /// The label of the namespaces whose pods are watched (`KEY=VALUE`, or `KEY` for any value).
    #[arg(
        long,
        value_name = "SELECTOR",
        default_value = "pullcheck.dev/watch=enabled",
        env = "PULLCHECK_WATCH_NAMESPACE_LABEL",
        help_heading = WATCHING
    )]
    pub(crate) namespace_label: String,

    /// The grace of every permanent verdict, instead of each one's default (0s for a missing
    /// image, 30s for refused credentials or a missing Secret, 10s for the start causes).
    ///
    /// Unset: each verdict's own default. `0s` acts at the first look.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PULLCHECK_WATCH_GRACE",
        help_heading = WATCHING,
        value_parser = Checked::parser(super::values::parse_duration_or_zero)
    )]
    pub(crate) grace: Option<Checked<Duration>>,

    /// The grace of one verdict or waiting reason (repeatable), e.g. manifest_missing=2m or
    /// CreateContainerConfigError=5m.
    ///
    /// KEY is one of pullcheck's reason words the kubelet's words can give (manifest_missing,
    /// secret_missing, ...) or one of the waiting reasons watched; a reason word wins over a
    /// waiting reason, which wins over --grace. Repeatable; the environment variable takes a
    /// comma-separated list.
    #[arg(
        long = "grace-for",
        value_name = "KEY=DURATION",
        env = "PULLCHECK_WATCH_GRACE_FOR",
        value_delimiter = ',',
        help_heading = WATCHING
    )]
    pub(crate) grace_for: Vec<String>,

    /// How long a transient or unknown cause (a time-out, a refused connection, a 5xx, words
    /// the watcher does not know) lasts before it is reported; it is never acted on.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "2m",
        env = "PULLCHECK_WATCH_REPORT_AFTER",
        help_heading = WATCHING,
        value_parser = Checked::parser(super::values::parse_duration_or_zero)
    )]
    pub(crate) report_after: Checked<Duration>,

    /// Do not ask the registry before failing a pod for an image said to be missing (by
    /// default one anonymous manifest HEAD spares a pod whose image resolves now).
    #[arg(
        long,
        env = "PULLCHECK_WATCH_NO_CONFIRM",
        help_heading = ACTING,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) no_confirm: bool,

    /// Ask the registry with the pod's own pull secrets (`spec.imagePullSecrets`, the service
    /// account's among them), read from the API server; by default the look is anonymous.
    ///
    /// Needs `get` on Secrets in the watched namespaces (the chart's
    /// watch.readPullSecrets). The secrets are held for the one look, never logged or kept.
    #[arg(
        long,
        env = "PULLCHECK_WATCH_CONFIRM_WITH_PULL_SECRETS",
        help_heading = ACTING,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) confirm_with_pull_secrets: bool,

    /// How many pods of one owner the watcher fails for one cause within
    /// --owner-failure-window before it stops (an owner that recreates what fails).
    #[arg(
        long,
        value_name = "N",
        default_value = "10",
        env = "PULLCHECK_WATCH_OWNER_FAILURE_LIMIT",
        help_heading = ACTING,
        value_parser = Checked::parser(super::values::owner_failure_limit_value)
    )]
    pub(crate) owner_failure_limit: Checked<usize>,

    /// The window of --owner-failure-limit.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10m",
        env = "PULLCHECK_WATCH_OWNER_FAILURE_WINDOW",
        help_heading = ACTING,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) owner_failure_window: Checked<Duration>,

    /// The type of the pod condition given before the delete (a podFailurePolicy matches it).
    #[arg(
        long,
        value_name = "TYPE",
        default_value = "ConfigIssue",
        env = "PULLCHECK_WATCH_CONDITION_TYPE",
        help_heading = ACTING
    )]
    pub(crate) condition_type: String,

    /// Only report: no condition, no Event, no delete (logs and metrics say what would be done).
    #[arg(
        long,
        env = "PULLCHECK_WATCH_DRY_RUN",
        help_heading = ACTING,
        value_parser = FalseyValueParser::new()
    )]
    pub(crate) dry_run: bool,

    /// The address of /healthz, /readyz and /metrics, in plain HTTP (`:PORT` for every IPv4
    /// address).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = ":8081",
        env = "PULLCHECK_WATCH_LISTEN",
        help_heading = SERVING
    )]
    pub(crate) listen: String,

    /// The Lease that elects the one replica that acts.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "pullcheck-watch",
        env = "PULLCHECK_WATCH_LEASE_NAME",
        help_heading = ELECTION
    )]
    pub(crate) lease_name: String,

    /// The watcher's own namespace, where its Lease is (set it from the downward API).
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_WATCH_NAMESPACE",
        help_heading = ELECTION
    )]
    pub(crate) namespace: Option<String>,

    /// How long a leader that stopped renewing keeps the Lease: another replica takes over
    /// within it.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "15s",
        env = "PULLCHECK_WATCH_LEASE_DURATION",
        help_heading = ELECTION,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) lease_duration: Checked<Duration>,

    /// This replica's name in the Lease, to which each process adds `_` and a random suffix
    /// (default: the pod's name, from HOSTNAME).
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_WATCH_IDENTITY",
        help_heading = ELECTION
    )]
    pub(crate) identity: Option<String>,
}
