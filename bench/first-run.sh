#!/usr/bin/env bash
# A new user's first run, timed: from `git clone` of this checkout's HEAD to a Job whose image tag
# does not exist `Failed`, on the cluster of tests/cluster/, with the README's commands only:
#
#   release  a release already in a registry (scripts/release.sh to the cluster's registry,
#            linux/amd64 only, before the clock starts), then `helm install oci://…`;
#   build    the image built from the fresh clone (`scripts/build-image.sh --cluster`, its own
#            cold target/), `skopeo copy` to the cluster's registry, `helm install charts/pullcheck`.
#
# Then `kubectl create namespace team-a`, the label, `kubectl rollout status` (as NOTES says),
# the bad Job, `kubectl wait --for=condition=Failed`. The registry speaks plain HTTP: `--plain-http`
# for Helm and `--dest-tls-verify=false` for skopeo, as docs/releases.md says. Prints each step's
# time since the clone.
#
# Usage: bench/first-run.sh release|build    (root; brings the cluster up, leaves it running;
#        uninstalls the release `pullcheck` and deletes the namespaces pullcheck and team-a first)
set -euo pipefail
cd "$(dirname "$0")/.."
path=${1:-}
case $path in
  release | build) ;;
  *) echo "usage: bench/first-run.sh release|build" >&2; exit 2 ;;
esac
repo=$PWD
helm_dir=$(tests/cluster/build-helm.sh | tail -n 1)
tests/cluster/cluster.sh up >/dev/null
# shellcheck disable=SC1091
. target/cluster/env
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
printf '#!/bin/sh\nexec %s kubectl "$@"\n' "$PULLCHECK_CLUSTER_KUBE" >"$work/bin/kubectl"
chmod +x "$work/bin/kubectl"
ln -s "$helm_dir/helm" "$work/bin/helm"
export PATH="$work/bin:$PATH"
registry=$PULLCHECK_CLUSTER_REGISTRY
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)-first-run.1"
if [ "$path" = release ]; then
  echo "== before the clock: scripts/release.sh $registry/first-run $version (linux/amd64)"
  PULLCHECK_RELEASE_PLAIN_HTTP=1 PULLCHECK_RELEASE_ARCHES=amd64 PULLCHECK_HELM="$helm_dir/helm" \
    scripts/release.sh "$registry/first-run" "$version" >"$work/release.log" 2>&1 ||
    { cat "$work/release.log" >&2; exit 1; }
fi
helm uninstall pullcheck -n pullcheck --wait >/dev/null 2>&1 || true
kubectl delete namespace team-a pullcheck --wait=true --ignore-not-found >/dev/null

start=$(date +%s%N)
step() { echo "$(( ($(date +%s%N) - start) / 1000000 )) ms  $*"; }
git clone -q "$repo" "$work/pullcheck"
cd "$work/pullcheck"
step "git clone"
if [ "$path" = release ]; then
  helm install pullcheck "oci://$registry/first-run/charts/pullcheck" --version "$version" \
    -n pullcheck --create-namespace --plain-http >/dev/null
  step "helm install oci://$registry/first-run/charts/pullcheck --version $version"
else
  built=$(date +%s%N)
  scripts/build-image.sh --cluster >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
  step "scripts/build-image.sh --cluster (the build alone: $(( ($(date +%s%N) - built) / 1000000 )) ms)"
  skopeo copy -q --dest-tls-verify=false oci-archive:target/image-webhook.tar \
    "docker://$registry/tools/pullcheck:first-run"
  step "skopeo copy"
  helm install pullcheck charts/pullcheck -n pullcheck --create-namespace \
    --set "image.repository=$registry/tools/pullcheck,image.tag=first-run" >/dev/null
  step "helm install charts/pullcheck"
fi
kubectl create namespace team-a >/dev/null
kubectl label namespace team-a pullcheck.dev/watch=enabled >/dev/null
step "namespace team-a labelled"
kubectl -n pullcheck rollout status deployment/pullcheck --timeout=5m >/dev/null
step "the chart's pods ready"
kubectl apply -n team-a -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: $registry/tools:no-such-tag
        command: ["true"]
YAML
step "the bad Job applied"
kubectl wait -n team-a --for=condition=Failed job/train --timeout=5m >/dev/null
step "the bad Job Failed ($(kubectl get job train -n team-a \
  -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}'))"
helm uninstall pullcheck -n pullcheck --wait >/dev/null
kubectl delete namespace team-a pullcheck --wait=false >/dev/null
