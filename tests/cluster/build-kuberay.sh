#!/usr/bin/env bash
# Builds KubeRay's operator (tests/cluster/kuberay: a Go module that requires
# github.com/ray-project/kuberay/ray-operator and names its operator, `main.go` at that module's
# root, as a tool) into a cache outside the checkout, keyed by KubeRay's version and a hash of the
# module's files and this script, as tests/cluster/build.sh does for Kubernetes: a second run, or a
# fresh clone on the same machine, finds it there in a second.
#
# KubeRay is a framework whose Ray head pod waits forever on a missing image unless something
# fails it; the cluster tests run it as the project ships it: its own manifests, from the same
# module, are copied beside the binary (manifests/..., the paths they have in the module):
#   manifests/config/default/     the kustomization KubeRay's docs install (`kubectl create -k`):
#                                 crd + rbac + manager, namespace `default`, image
#                                 quay.io/kuberay/operator:v1.5.0; no webhook
#   manifests/config/crd/         the CRDs RayCluster, RayJob, RayService
#   manifests/config/rbac/        ServiceAccount, ClusterRole(Binding) `kuberay-operator`, the
#                                 leader-election Role(Binding)
#   manifests/config/manager/     Deployment `kuberay-operator` (command /manager), its Service
#   manifests/config/samples/ray-cluster.overwrite-command.yaml, ray-cluster.sample.yaml,
#   manifests/config/samples/ray-job.sample.yaml   (for reference)
#   Dockerfile                    the upstream image's layout (/manager, user 65532, distroless)
#
# `go install …@v1.5.0` of the operator is refused (it asks the module proxy for the version list),
# hence a module of our own. KubeRay's Dockerfile builds `manager` with cgo for a FIPS runtime
# (`CGO_ENABLED=1 go build -tags strictfipsruntime -a`; no file of the module uses that tag, it is
# for a FIPS toolchain): here it is built without cgo, static, stripped (-s -w), as our other builds
# are, with the ldflags KubeRay's Makefile sets (`build:`, -X main._buildTime_ / main._commitId_).
# v1.5.0's main.go declares neither variable, so the linker leaves them out and the operator
# reports no version: kept so that a version that declares them gets them.
#
# Prints the path of the cache folder holding `manager` and `manifests/` on its last line. The
# cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.5.0
pkg=github.com/ray-project/kuberay/ray-operator

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-kuberay.sh: Go is missing: the cluster's KubeRay $version is built from its Go module (Go 1.24 or newer)" >&2
  exit 2
fi

# The module must name the version the cache is keyed by.
have=$(cd "$here/kuberay" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/kuberay/go.mod requires KubeRay $have, build-kuberay.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/kuberay/go.mod" "$here/kuberay/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/kuberay-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/manager" ] && [ -d "$cache/manifests" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# The Makefile's ldflags: the build time (here the tag's date as the module proxy records it, so
# that a rebuild is the same binary) and the commit (the proxy's record of the tag's origin, when
# it has one).
commit=$(cd "$here/kuberay" && go mod download -json "$pkg@$version" |
  sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -n 1)
released=$(cd "$here/kuberay" && go list -m -json "$pkg" | sed -n 's/^[[:space:]]*"Time": "\([^"]*\)".*/\1/p')
ldflags="-s -w -X main._buildTime_=${released:-1970-01-01T00:00:00Z} -X main._commitId_=${commit:-$version}"
echo "== building KubeRay $version (the operator, manager) from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/kuberay" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$cache.tmp/manager" "$pkg")

# The manifests KubeRay ships, from the module's own source (read-only in the module cache, hence
# the chmod of the copy).
src=$(cd "$here/kuberay" && go list -m -f '{{.Dir}}' "$pkg")
for path in \
  config/default \
  config/crd \
  config/rbac \
  config/manager \
  config/samples/ray-cluster.overwrite-command.yaml \
  config/samples/ray-cluster.sample.yaml \
  config/samples/ray-job.sample.yaml \
  Dockerfile; do
  if [ ! -e "$src/$path" ]; then
    echo "tests/cluster/build-kuberay.sh: $path is not in KubeRay's module $version ($src): update the list in this script" >&2
    exit 1
  fi
  case $path in
  Dockerfile) dest=$cache.tmp/$path ;;
  *) dest=$cache.tmp/manifests/$path ;;
  esac
  mkdir -p "$(dirname "$dest")"
  cp -r "$src/$path" "$dest"
done
chmod -R u+w "$cache.tmp"

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
