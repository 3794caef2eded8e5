#!/usr/bin/env bash
# The tests on a real Kubernetes: builds pullcheck's image from the Dockerfile
# (scripts/build-image.sh) and the chart tests' Helm v3.22.0 from its Go module
# (tests/cluster/build-helm.sh), brings the cluster up (tests/cluster/cluster.sh; the first run
# on a machine builds Kubernetes from its Go modules), runs `cargo test --test cluster`, then takes
# the cluster down. PULLCHECK_CLUSTER_KEEP=1 leaves it (and the tests' namespaces) running.
#
# The whole suite runs on one container runtime, PULLCHECK_CLUSTER_RUNTIME (cluster.sh; default
# containerd2). Then, each runtime words failed pulls its own way: on each other runtime of the
# cluster a short run, the kubelet's words against that runtime's table, the seed case, the
# chart's default install (watch_mode) and doctor --probe (each
# switch of runtime starts from a clean state folder: cluster.sh keeps a folder's runtime).
#
# Needs root and Go. Without them it says which is missing and fails: these tests never skip.
# Arguments go to the test binary (a test name filter, say); then only the one runtime runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
missing=()
[ "$(id -u)" = 0 ] || missing+=("root (it runs containerd and the kubelet, makes a bridge and mounts)")
command -v go >/dev/null 2>&1 || missing+=("Go 1.26 or newer (Kubernetes v1.34.4 and Helm v3.22.0 are built from their Go modules)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'the cluster tests cannot run here: missing %s\n' "${missing[@]}" >&2
  exit 2
fi
scripts/build-image.sh --all >/dev/null
# The chart tests' helm, from its Go module (cached after the first build).
tests/cluster/build-helm.sh >/dev/null
if [ "${PULLCHECK_CLUSTER_KEEP:-}" != 1 ]; then
  trap 'tests/cluster/cluster.sh down' EXIT
fi
runtimes=(containerd2 containerd2-local containerd1.6)
runtime=${PULLCHECK_CLUSTER_RUNTIME:-containerd2}
state=${PULLCHECK_CLUSTER_DIR:-target/cluster}
# on RUNTIME: brings the cluster up on RUNTIME (the test binary's harness then finds it running),
# cleaning first a state folder another runtime made.
on() {
  export PULLCHECK_CLUSTER_RUNTIME=$1
  if [ -d "$state/containerd/root" ] && [ "$(cat "$state/runtime" 2>/dev/null)" != "$1" ]; then
    tests/cluster/cluster.sh clean
  fi
  echo "== cluster tests on $1" >&2
  tests/cluster/cluster.sh up
}
on "$runtime"
# The tests that need the node's image list complete run first, alone: the kubelet lists at
# most 5 names of an image, and the tests side by side pull the same image under many names
# (each fault proxy is a registry host of its own), after which no absence is provable.
first=(proof::the_seed_case_still_fails_fast_always_and_if_not_present_with_the_node_readable)
# The admission latency measurements run next, one at a time: beside the other tests the API
# server's tail is the machine's load, not the webhook's (docs/webhook.md, the cached verdicts).
alone=(
  webhook::admission_latency_of_500_pod_creations_with_and_without_the_webhook
  verdicts::kubectl_apply_prints_a_proven_miss_and_deny_refuses_it
)
# The scale test (300 pods at once) runs last, alone: beside it every other test would wait on
# a node busy starting its pods.
last=(scale::)
if [ $# -eq 0 ]; then
  cargo test --test cluster --features webhook -- --exact --nocapture "${first[@]}"
  cargo test --test cluster --features webhook -- --exact --nocapture --test-threads 1 "${alone[@]}"
  skips=()
  for t in "${first[@]}" "${alone[@]}" "${last[@]}"; do skips+=(--skip "$t"); done
  set -- "${skips[@]}"
else
  last=()
fi
# The tests mostly wait on the cluster: run them side by side. `webhook` builds the webhook's
# tests (webhook_cert.rs) too.
cargo test --test cluster --features webhook -- --test-threads 8 --nocapture "$@"
if [ ${#last[@]} -gt 0 ]; then
  cargo test --test cluster --features webhook -- --nocapture "${last[@]}"
  # The other runtimes: what differs between them is the kubelet's words (the words' table of
  # each, tests/fixtures/kubelet-recorded/) and whether the seed case still fails fast on them.
  for other in "${runtimes[@]}"; do
    [ "$other" != "$runtime" ] || continue
    on "$other"
    cargo test --test cluster --features webhook -- --exact --nocapture "${first[@]}"
    cargo test --test cluster --features webhook -- --nocapture kubelet_words::
    # The chart's default install on this runtime: the seed Job failed and the good Job's
    # overhead (watch_mode, figures printed), and `doctor --probe`.
    cargo test --test cluster --features webhook -- --nocapture --test-threads 1 watch_mode:: doctor::doctor_probe
  done
fi
