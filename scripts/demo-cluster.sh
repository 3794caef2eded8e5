#!/usr/bin/env bash
# Watch the seed case live on a real Kubernetes (the cluster of tests/cluster/): the same Job, an
# image tag that does not exist, with pullcheck injected and without, side by side. Prints each
# command as it runs it, then what `kubectl get` shows as it happens, for SECONDS (default 90),
# then `kubectl describe` of the pod pullcheck failed.
#
# Usage: scripts/demo-cluster.sh [SECONDS]   (root; the first run builds Kubernetes, see
#        docs in docs/kubernetes-in-tests.md; the cluster is left running:
#        tests/cluster/cluster.sh down stops it)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
seconds=${1:-90}
scripts/build-image.sh --all >/dev/null
cargo build --quiet --bin pullcheck
tests/cluster/cluster.sh up
# shellcheck disable=SC1091
. target/cluster/env
export PATH="$(dirname "$PULLCHECK_CLUSTER_KUBE")/bin:$PATH"
mkdir -p "$(dirname "$PULLCHECK_CLUSTER_KUBE")/bin"
ln -sf ../kube "$(dirname "$PULLCHECK_CLUSTER_KUBE")/bin/kubectl"
run() { printf '$'; printf ' %q' "$@"; echo; "$@"; }

ns=demo
kubectl delete namespace "$ns" --wait=true >/dev/null 2>&1 || true
run kubectl create namespace "$ns"
until kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done

cluster_job train-with-pullcheck "$PULLCHECK_CLUSTER_REGISTRY/tools:no-such-tag" >"target/cluster/demo-with.yaml"
cluster_job train-without "$PULLCHECK_CLUSTER_REGISTRY/tools:no-such-tag" >"target/cluster/demo-without.yaml"
echo "== the Job (target/cluster/demo-without.yaml), and the same put through pullcheck inject:"
cat target/cluster/demo-without.yaml
printf '$ %s\n' "target/debug/pullcheck inject --image $PULLCHECK_CLUSTER_REGISTRY/pullcheck:ci --job-failure-policy -f target/cluster/demo-with.yaml -- --plain-http $PULLCHECK_CLUSTER_REGISTRY | kubectl apply -n $ns -f -"
target/debug/pullcheck inject --image "$PULLCHECK_CLUSTER_REGISTRY/pullcheck:ci" --job-failure-policy \
  -f target/cluster/demo-with.yaml -- --plain-http "$PULLCHECK_CLUSTER_REGISTRY" | kubectl apply -n "$ns" -f -
run kubectl apply -n "$ns" -f target/cluster/demo-without.yaml

echo "== watching for $seconds s: kubectl get jobs -n $ns -w, and kubectl get pods -n $ns -w beside it"
# One watch takes one resource type: two watches, their lines as they come.
timeout "$seconds" kubectl get jobs -n "$ns" -w &
timeout "$seconds" kubectl get pods -n "$ns" -w || true
wait
echo
run kubectl get jobs -n "$ns"
run kubectl get pods -n "$ns"
pod=$(kubectl get pods -n "$ns" -l batch.kubernetes.io/job-name=train-with-pullcheck -o name | head -n 1)
run kubectl describe -n "$ns" "$pod"
