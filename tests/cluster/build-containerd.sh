#!/usr/bin/env bash
# Builds the cluster's containerd 2 (tests/cluster/containerd: a Go module that requires
# github.com/containerd/containerd/v2 and names its `containerd` and `containerd-shim-runc-v2`
# commands as tools) into a cache outside the checkout, keyed by the containerd version and a hash
# of the module's files and this script, as tests/cluster/build.sh does for Kubernetes: a second
# run, or a fresh clone on the same machine, finds them there in a second.
#
# Debian 12 has containerd 1.6 only; containerd 2 is what kind, GKE, AKS, EKS and k3s nodes run.
# `go install …@v2.4.2` of a command is refused (it asks the module proxy for the version list),
# hence a module of our own.
#
# Prints the path of the cache folder holding `containerd` and `containerd-shim-runc-v2` on its
# last line. The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v2.4.2

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-containerd.sh: Go is missing: the cluster's containerd $version is built from its Go module (Go 1.26 or newer)" >&2
  exit 2
fi

# The module must name the containerd it is keyed by.
have=$(cd "$here/containerd" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
if [ "$have" != "$version" ]; then
  echo "tests/cluster/containerd/go.mod requires containerd $have, build-containerd.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/containerd/go.mod" "$here/containerd/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/containerd-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/containerd" ] && [ -x "$cache/containerd-shim-runc-v2" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# The version the daemon reports (`containerd --version`, the CRI's runtime version, hence the
# Node's containerRuntimeVersion), as containerd's own Makefile sets it. Both are built without
# cgo: static, as the upstream shim is; without cgo containerd only lacks the btrfs snapshotter,
# which this node does not use. `no_grpc` is the Makefile's tag for the shim (ttrpc only).
pkg=github.com/containerd/containerd/v2
ldflags="-s -w -X $pkg/version.Version=$version -X $pkg/version.Package=$pkg"
echo "== building containerd $version from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/containerd" &&
  CGO_ENABLED=0 go build -tags urfave_cli_no_docs -ldflags "$ldflags" -o "$cache.tmp/containerd" "$pkg/cmd/containerd" &&
  CGO_ENABLED=0 go build -tags "urfave_cli_no_docs no_grpc" -ldflags "$ldflags" -o "$cache.tmp/containerd-shim-runc-v2" "$pkg/cmd/containerd-shim-runc-v2")
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
