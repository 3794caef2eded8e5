//! The cluster tests: pullcheck on a real Kubernetes v1.34.4 (API server, controller manager,
//! scheduler, kubelet on containerd), built from its Go modules by `tests/cluster/build.sh` and
//! run by `tests/cluster/cluster.sh` on this machine. Run with `tests/cluster/test.sh` (or
//! `cargo test --test cluster`, which starts the cluster when it is not running).
//!
//! - `harness`: the cluster, kubectl, namespaces, bounded waits.
//! - `jobs`: the seed case (a missing tag fails the Job through `podFailurePolicy`; without
//!   pullcheck it waits), and a good Job.
//! - `proof`: a pod is failed only on proof: the cases where the pod sees less than its node
//!   end as without pullcheck, put in by `inject` and by the webhook alike, and the seed case
//!   still fails fast.
//! - `kubelet_words`: the kubelet's own words for each cause, against
//!   `tests/fixtures/kubelet-recorded/<runtime>.tsv`.
//! - `watch_mode`: the chart's default `mode: watch` (nothing added to pods, the Job rule, the
//!   watcher): time to `Failed` of a missing tag, a good Job's cost, Jobs left as written.
//! - `frameworks`: the frameworks' own controllers (Argo Workflows, ...), built from their Go
//!   modules: a workload whose image tag is missing ends failed in the framework's own status in
//!   `mode: watch` and `mode: init`, a good one runs untouched, and without pullcheck it waits.
//! - `doctor`: `pullcheck doctor`'s answers, ok and each no with its fix, on a real release.
//! - `release`: `scripts/release.sh` against the cluster's registry, and the cluster pulling
//!   the release (a Pod of its image, its chart from the OCI registry), SBOM and provenance.
//! - `verdicts`: `kubectl apply` prints the webhook's verdict of a missing image, and with
//!   `admission.deny` the Job is refused.
//! - `scale`: 300 pods of one Job at once in each mode against a rate-limiting registry: the
//!   requests pullcheck adds, the time to the first and last pod, no false failure.
//! - `resources`: a LimitRange and a ResourceQuota admit the Job with pullcheck as without.
//! - `alerts`: the chart's alerting rules, with `promtool`, against the metrics recorded from
//!   the servers (needs only `helm` and `promtool`, not the cluster).
//! - `yaml`: pullcheck's YAML reader against kubectl's, on every fixture and a generated corpus
//!   (needs only the `kube` binary, not the cluster).

#![allow(clippy::unwrap_used)]

mod accepted;
mod alerts;
mod chart;
#[path = "../it/common/mod.rs"]
mod common;
mod credentials;
mod doctor;
mod frameworks;
mod harness;
mod jobs;
mod kubelet_words;
mod mirror;
mod node_config;
mod node_images;
mod policy;
mod proof;
mod release;
mod resources;
mod scale;
mod stale;
mod start;
mod verdicts;
mod watch;
mod watch_mode;
mod webhook;
#[cfg(feature = "webhook")]
mod webhook_cert;
mod yaml;
