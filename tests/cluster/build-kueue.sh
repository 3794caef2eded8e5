#!/usr/bin/env bash
# Builds Kueue's controller manager (tests/cluster/kueue: a Go module that requires
# sigs.k8s.io/kueue and names its command, cmd/kueue, as a tool) into a cache outside the checkout,
# keyed by Kueue's version and a hash of the module's files and this script, as
# tests/cluster/build.sh does for Kubernetes: a second run, or a fresh clone on the same machine,
# finds it there in a second.
#
# Kueue queues batch workloads (a Job, a plain pod, ...) and admits them against quota; an
# admitted workload's pod waits forever on a missing image unless something fails it (Kueue's
# waitForPodsReady, off by default, only evicts and requeues it). The cluster tests run it as the
# project ships it: its own kustomize tree, from the same module, is copied beside the binary under
# manifests/ (below that, the paths they have in Kueue's source):
#   manifests/config/default/     the install (namespace kueue-system, prefix kueue-): CRDs, RBAC,
#                                 the manager's Deployment and its ConfigMap `manager-config`
#                                 (controller_manager_config.yaml: the Configuration), the webhooks
#                                 with their Service, the empty Secret the manager's internal cert
#                                 management fills in, the visibility API server's APIServices and
#                                 Service, the metrics Service
#   manifests/config/components/  what config/default assembles
#   manifests/config/...          the rest (alpha-enabled, dev, kueueviz, prometheus: not installed)
#   Dockerfile                    the upstream image's layout (distroless static nonroot, /manager,
#                                 USER 65532:65532)
#
# `go install sigs.k8s.io/kueue/cmd/kueue@v0.17.0` is refused (it asks the module proxy for the
# version list), hence a module of our own. Built without cgo, static, as Kueue's Makefile does
# (`CGO_ENABLED ?= 0`, `go build -ldflags="$(LD_FLAGS)" -o bin/manager cmd/kueue/main.go`), with
# the version ldflags it sets (sigs.k8s.io/kueue/pkg/version GitVersion, GitCommit, BuildDate),
# and stripped (-s -w, which the Makefile does not do) as our other builds are.
#
# Prints the path of the cache folder holding `manager`, `manifests/config/` and `Dockerfile` on
# its last line. The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v0.17.0
pkg=sigs.k8s.io/kueue

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-kueue.sh: Go is missing: the cluster's Kueue $version is built from its Go module (Go 1.25 or newer)" >&2
  exit 2
fi

# The module must name the version the cache is keyed by.
have=$(cd "$here/kueue" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/kueue/go.mod requires Kueue $have, build-kueue.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/kueue/go.mod" "$here/kueue/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/kueue-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/manager" ] && [ -d "$cache/manifests/config/default" ]; then
  echo "$cache"
  exit 0
fi
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"

# The version the manager logs at start, as Kueue's Makefile sets it for a release: the tag (`git
# describe --tags` of a clean checkout of it), its commit as the module proxy records the tag's
# origin, and as build date the tag's time (the Makefile takes the clock's; the tag's keeps the
# binary the same from build to build).
commit=$(cd "$here/kueue" && go mod download -json "$pkg@$version" |
  sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -n 1)
released=$(cd "$here/kueue" && go list -m -json "$pkg" | sed -n 's/^[[:space:]]*"Time": "\([^"]*\)".*/\1/p')
ldflags="-s -w -X $pkg/pkg/version.GitVersion=$version -X $pkg/pkg/version.BuildDate=${released:-1970-01-01T00:00:00Z}"
if [ -n "$commit" ]; then
  ldflags="$ldflags -X $pkg/pkg/version.GitCommit=$commit"
fi
echo "== building Kueue $version (manager) from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/kueue" &&
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$cache.tmp/manager" "$pkg/cmd/kueue")

# The manifests Kueue ships, from the module's own source (read-only in the module cache, hence
# the chmod of the copy).
src=$(cd "$here/kueue" && go list -m -f '{{.Dir}}' "$pkg")
for path in config Dockerfile; do
  if [ ! -e "$src/$path" ]; then
    echo "tests/cluster/build-kueue.sh: $path is not in Kueue's module $version ($src): update the list in this script" >&2
    exit 1
  fi
done
mkdir -p "$cache.tmp/manifests"
cp -r "$src/config" "$cache.tmp/manifests/config"
cp "$src/Dockerfile" "$cache.tmp/Dockerfile"
chmod -R u+w "$cache.tmp"

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
