#!/usr/bin/env bash
# The tests on a real Kubernetes: builds pullcheck's image from the Dockerfile
# (scripts/build-image.sh) and the chart tests' Helm v3.22.0 from its Go module
# (tests/cluster/build-helm.sh), brings the cluster up (tests/cluster/cluster.sh; the first run
# on a machine builds Kubernetes from its Go modules), runs `cargo test --test cluster`, then takes
# the cluster down. PULLCHECK_CLUSTER_KEEP=1 leaves it (and the tests' namespaces) running.
#
# The whole suite runs on one container runtime and Kubernetes, PULLCHECK_CLUSTER_RUNTIME and
# PULLCHECK_CLUSTER_KUBERNETES (cluster.sh; default containerd2 and v1.37.2). Then, since each
# runtime words failed pulls its own way and each Kubernetes may act on them its own way, a
# short run on each other pair: the kubelet's words against that runtime's table, the seed case,
# the chart's default install and doctor --probe (each switch starts from a clean state folder:
# cluster.sh keeps a folder's runtime and Kubernetes).
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
# The other pairs' builds while the first pair's tests run (they mostly wait on the cluster):
# Kubernetes v1.34.4 (cluster.sh's own build of it then waits for this one, lock_cache in
# tests/cluster/lib.sh, and finds it built), then CRI-O and crictl, each from its Go module, at
# a lower priority than the frameworks' builds. Its log is kept; the CRI-O pair waits for it
# (wait_others).
others_build=
if [ $# -eq 0 ] || [ "${PULLCHECK_CLUSTER_RUNTIME:-}" = crio ]; then
  mkdir -p target
  (
    if [ $# -eq 0 ]; then PULLCHECK_CLUSTER_KUBERNETES=v1.34.4 nice -n 15 tests/cluster/build.sh; fi
    nice -n 15 tests/cluster/build-crio.sh
  ) >target/build-others.log 2>&1 &
  others_build=$!
fi
# The frameworks' controllers (tests/cluster/build-<framework>.sh, each from its Go module), all
# at once (a cold build is mostly downloads), niced, beside the first pair's tests once its timed
# tests are done; the frameworks' tests run after the rest of that pair's suite and wait for them.
frameworks=(argo jobset kuberay kueue tekton)
frameworks_build=
build_frameworks() {
  mkdir -p target
  (
    pids=()
    for f in "${frameworks[@]}"; do nice -n 10 "tests/cluster/build-$f.sh" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || exit 1; done
  ) >target/build-frameworks.log 2>&1 &
  frameworks_build=$!
}
wait_frameworks() {
  [ -n "$frameworks_build" ] || return 0
  wait "$frameworks_build" || { cat target/build-frameworks.log >&2; echo "a framework's build failed (target/build-frameworks.log)" >&2; exit 1; }
  frameworks_build=
}
wait_others() {
  [ -n "$others_build" ] || return 0
  wait "$others_build" || { cat target/build-others.log >&2; echo "the other pairs' builds failed (target/build-others.log)" >&2; exit 1; }
  others_build=
}
if [ "${PULLCHECK_CLUSTER_KEEP:-}" != 1 ]; then
  trap 'tests/cluster/cluster.sh down' EXIT
fi
# Each pair is RUNTIME:KUBERNETES (cluster.sh's PULLCHECK_CLUSTER_RUNTIME and
# PULLCHECK_CLUSTER_KUBERNETES). The whole suite runs on the first, what users run now: the newest
# Kubernetes on containerd 2. containerd 1.6 pairs with Kubernetes up to 1.34 only (containerd's
# RELEASES.md), so it runs on v1.34.4, as does containerd 2 once more; CRI-O's minor version is
# the Kubernetes one it is made for, v1.34.
pairs=(containerd2:v1.37.2 containerd2-local:v1.37.2 containerd2:v1.34.4 containerd1.6:v1.34.4 crio:v1.34.4)
pair=${PULLCHECK_CLUSTER_RUNTIME:-containerd2}:${PULLCHECK_CLUSTER_KUBERNETES:-v1.37.2}
state=${PULLCHECK_CLUSTER_DIR:-target/cluster}
# on RUNTIME:KUBERNETES: brings the cluster up on that pair (the test binary's harness then finds
# it running), cleaning first a state folder another pair made.
on() {
  export PULLCHECK_CLUSTER_RUNTIME=${1%%:*} PULLCHECK_CLUSTER_KUBERNETES=${1#*:}
  [ "$PULLCHECK_CLUSTER_RUNTIME" != crio ] || wait_others
  if [ -d "$state/pki" ] && { [ "$(cat "$state/runtime" 2>/dev/null)" != "$PULLCHECK_CLUSTER_RUNTIME" ] ||
    [ "$(cat "$state/kubernetes" 2>/dev/null || echo v1.34.4)" != "$PULLCHECK_CLUSTER_KUBERNETES" ]; }; then
    tests/cluster/cluster.sh clean
  fi
  echo "== cluster tests on $PULLCHECK_CLUSTER_RUNTIME, Kubernetes $PULLCHECK_CLUSTER_KUBERNETES" >&2
  tests/cluster/cluster.sh up
}
on "$pair"
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
  build_frameworks
  skips=(--skip frameworks::)
  for t in "${first[@]}" "${alone[@]}" "${last[@]}"; do skips+=(--skip "$t"); done
  set -- "${skips[@]}"
else
  last=()
fi
# The tests mostly wait on the cluster: run them side by side. `webhook` builds the webhook's
# tests (webhook_cert.rs) too.
cargo test --test cluster --features webhook -- --test-threads 8 --nocapture "$@"
if [ ${#last[@]} -gt 0 ]; then
  # The frameworks, all side by side: each test mostly waits on its controller and the kubelet.
  wait_frameworks
  cargo test --test cluster --features webhook -- --test-threads 16 --nocapture frameworks::
  cargo test --test cluster --features webhook -- --nocapture "${last[@]}"
  # The other runtimes: what differs between them is the kubelet's words (the words' table of
  # each, tests/fixtures/kubelet-recorded/), the node's registry configuration, and whether the
  # seed case still fails fast on them.
  for other in "${pairs[@]}"; do
    [ "$other" != "$pair" ] || continue
    on "$other"
    cargo test --test cluster --features webhook -- --exact --nocapture "${first[@]}"
    # The node's own registry configuration read as each runtime reads it, and what an image
    # the node holds proves on each kubelet (Kubernetes 1.35+ re-verifies credentials).
    cargo test --test cluster --features webhook -- --nocapture kubelet_words:: node_config:: node_images::
    # The chart's default install on this runtime: the seed Job failed and the good Job's
    # overhead (watch_mode, figures printed), and `doctor --probe`.
    cargo test --test cluster --features webhook -- --nocapture --test-threads 1 watch_mode:: doctor::doctor_probe
  done
fi
