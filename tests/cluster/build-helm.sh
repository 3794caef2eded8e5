#!/usr/bin/env bash
# Builds the chart tests' Helm (tests/cluster/helm: a Go module that requires helm.sh/helm/v3 and
# names its `cmd/helm` as a tool) into a cache outside the checkout, keyed by the Helm version and
# a hash of the module's files and this script, as tests/cluster/build.sh does for Kubernetes: a
# second run, or a fresh clone on the same machine, finds it there in a second.
#
# Helm v3.22 requires the k8s.io modules at v0.37 (and Go 1.26): its module cannot share
# tests/cluster/kube's v0.34.4, so it has a go.mod of its own; the shared Go module and build
# caches still hold what both use at the same version.
#
# Prints the path of the cache folder holding `helm` on its last line.
# The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v3.22.0

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-helm.sh: Go is missing: the chart tests build Helm $version from its Go module (Go 1.26 or newer)" >&2
  exit 2
fi

# The module must name the Helm it is keyed by.
have=$(cd "$here/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
if [ "$have" != "$version" ]; then
  echo "tests/cluster/helm/go.mod requires helm.sh/helm/v3 $have, build-helm.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/helm/go.mod" "$here/helm/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/helm-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/helm" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# The version `helm version` reports, and the Kubernetes version `helm template` and `helm lint`
# assume without a cluster (1.<minor of client-go>), as Helm's own Makefile sets them.
k8s=$(cd "$here/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)
k8s_major=$(($(echo "${k8s#v}" | cut -d. -f1) + 1))
k8s_minor=$(echo "$k8s" | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
done
echo "== building Helm $version from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/helm" && CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$cache.tmp/helm" helm.sh/helm/v3/cmd/helm)
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
