//! The flags of `pullcheck doctor` (the `webhook` or `watch` cargo feature): which cluster (a
//! kubeconfig and its context), which release of the chart and where it is, where to try the
//! sample, and the output format. Values are kept as given and judged by
//! `config::DoctorConfig::from_args`.

use super::OutputFormat;
use super::values::Checked;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// What `pullcheck help` says of the subcommand.
const ABOUT: &str =
    "Say whether the chart works on a cluster: installed, healthy, reached, injecting";
/// What `pullcheck doctor --help` says of it.
const LONG_ABOUT: &str = "\
Say whether the chart works on a cluster: installed, healthy, reached, injecting.

From a kubeconfig, one line per check, `ok` or `no`, and under each `no` the fix: the chart's
Deployment found by its labels and its replicas ready; its MutatingWebhookConfiguration present
with a caBundle; in watch mode the watcher's Lease renewed; the namespaces opted in (read from
the installed webhook's namespaceSelector and the watcher's --namespace-label); and a sample Pod
(a Job in watch mode) created with a server-side dry run in an opted-in namespace, which the API
server sends through the webhook: changed, the webhook is reached; its init container (or the
Job rule) there, a pod would be injected. Nothing is created. Exit 0 when every check is ok, 1
when one is not, 2 for a usage error. Only in a build with `--features webhook` or `watch`.

With --probe NAMESPACE it also proves the install end to end on this cluster's own nodes and
runtime: it creates there a Job whose image is the install's own image repository with a random
tag that cannot exist (so the nodes already reach that registry), waits for the Job to fail,
prints the time, the verdict and the kubelet's words, and deletes what it made. It says no when
the Job did not fail within --probe-timeout.";

const CLUSTER: &str = "Cluster";
const RELEASE: &str = "Release";
const PROBE: &str = "Probe";
const OUTPUT: &str = "Output";

/// Flags of `pullcheck doctor`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct DoctorArgs {
    /// The kubeconfig to read (default: $KUBECONFIG, then ~/.kube/config, then the pod's own
    /// service account), as kubectl does.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_DOCTOR_KUBECONFIG",
        help_heading = CLUSTER
    )]
    pub(crate) kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: its current context).
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_DOCTOR_CONTEXT",
        help_heading = CLUSTER
    )]
    pub(crate) context: Option<String>,

    /// The namespace the chart is installed in (`helm install -n`).
    #[arg(
        short = 'n',
        long,
        value_name = "NAME",
        default_value = "pullcheck",
        env = "PULLCHECK_DOCTOR_NAMESPACE",
        help_heading = RELEASE
    )]
    pub(crate) namespace: String,

    /// The Helm release's name: its objects carry `app.kubernetes.io/instance=RELEASE`.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "pullcheck",
        env = "PULLCHECK_DOCTOR_RELEASE",
        help_heading = RELEASE
    )]
    pub(crate) release: String,

    /// The namespace to try the sample in (default: the first opted-in one, by name).
    ///
    /// The sample is created with a server-side dry run: nothing is stored, but it needs
    /// `create` on pods (jobs in watch mode) in that namespace.
    #[arg(
        long,
        value_name = "NAME",
        env = "PULLCHECK_DOCTOR_SAMPLE_NAMESPACE",
        help_heading = RELEASE
    )]
    pub(crate) sample_namespace: Option<String>,

    /// Prove the install end to end in this namespace: a real Job whose image tag cannot
    /// exist, which the install must fail.
    ///
    /// The namespace must be one the install acts on (labelled for the watcher, or opted in to
    /// the webhook in init mode); the Job and its pod are deleted afterwards. Needs `create`,
    /// `get` and `delete` on jobs, and `list` on pods, there.
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "PULLCHECK_DOCTOR_PROBE",
        help_heading = PROBE
    )]
    pub(crate) probe: Option<String>,

    /// How long the probe's Job may take to fail before the probe says no.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        env = "PULLCHECK_DOCTOR_PROBE_TIMEOUT",
        help_heading = PROBE,
        value_parser = Checked::parser(super::values::parse_duration)
    )]
    pub(crate) probe_timeout: Checked<Duration>,

    /// Output format on stdout.
    #[arg(
        short = 'o',
        long,
        value_enum,
        env = "PULLCHECK_DOCTOR_OUTPUT",
        default_value = "text",
        help_heading = OUTPUT
    )]
    pub(crate) output: OutputFormat,
}
