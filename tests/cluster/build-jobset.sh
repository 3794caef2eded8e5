#!/usr/bin/env bash
# Builds JobSet's controller manager (tests/cluster/jobset: a Go module that requires
# sigs.k8s.io/jobset and names its command, the `main` package at the root of JobSet's module, as
# a tool) into a cache outside the checkout, keyed by JobSet's version and a hash of the module's
# files and this script, as tests/cluster/build.sh does for Kubernetes: a second run, or a fresh
# clone on the same machine, finds it there in a second.
#
# JobSet runs a group of batch/v1 Jobs as one workload; a pod of one of its Jobs waits forever on a
# missing image unless something fails it. The cluster tests run it as the project ships it: its
# own kustomize tree, from the same module, is copied beside the binary, under manifests/ (with
# the paths it has in JobSet's source):
#   config/default/           the install (namespace jobset-system, prefix jobset-): CRD, RBAC,
#                             the manager's Deployment and ConfigMap, the JobSet and pod webhooks
#                             with their Service, the empty Secret the manager's internal cert
#                             rotation fills in, the metrics Service
#   config/components/...     what config/default assembles
#   config/samples/, config/prometheus/  (for reference; not installed)
#   Dockerfile                the upstream image's layout (distroless static nonroot,
#                             /manager, USER 65532:65532)
#
# `go install sigs.k8s.io/jobset@v0.8.0` is refused (it asks the module proxy for the version
# list), hence a module of our own. Built without cgo, static, as JobSet's Makefile does
# (`CGO_ENABLED ?= 0`, `go build -ldflags="$(LD_FLAGS)" -o bin/manager main.go`), with the version
# ldflags it sets (sigs.k8s.io/jobset/pkg/version GitVersion, GitCommit), and stripped (-s -w,
# which the Makefile does not do) as our other builds are.
#
# Prints the path of the cache folder holding `manager` and `manifests/` on its last line. The cache
# is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v0.8.0
pkg=sigs.k8s.io/jobset

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-jobset.sh: Go is missing: the cluster's JobSet $version is built from its Go module (Go 1.24 or newer)" >&2
  exit 2
fi

# The module must name the version the cache is keyed by.
have=$(cd "$here/jobset" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/jobset/go.mod requires JobSet $have, build-jobset.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/jobset/go.mod" "$here/jobset/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/jobset-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/manager" ] && [ -d "$cache/manifests/config/default" ]; then
  echo "$cache"
  exit 0
fi
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"

# The version the manager logs at start ("Initializing", gitVersion, gitCommit), as JobSet's
# Makefile sets it for a release: the tag (`git describe --tags` of a clean checkout of it) and
# its commit, as the module proxy records the tag's origin.
commit=$(cd "$here/jobset" && go mod download -json "$pkg@$version" |
  sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -n 1)
ldflags="-s -w -X $pkg/pkg/version.GitVersion=$version"
if [ -n "$commit" ]; then
  ldflags="$ldflags -X $pkg/pkg/version.GitCommit=$commit"
fi
echo "== building JobSet $version (manager) from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/jobset" &&
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$cache.tmp/manager" "$pkg")

# The manifests JobSet ships, from the module's own source (read-only in the module cache, hence
# the chmod of the copy).
src=$(cd "$here/jobset" && go list -m -f '{{.Dir}}' "$pkg")
for path in config Dockerfile; do
  if [ ! -e "$src/$path" ]; then
    echo "tests/cluster/build-jobset.sh: $path is not in JobSet's module $version ($src): update the list in this script" >&2
    exit 1
  fi
  mkdir -p "$cache.tmp/manifests/$(dirname "$path")"
  cp -r "$src/$path" "$cache.tmp/manifests/$path"
done
chmod -R u+w "$cache.tmp"

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
