#!/usr/bin/env bash
# Builds CRI-O for the cluster's node (tests/cluster/crio: a Go module that requires
# github.com/cri-o/cri-o and names its `crio` command as a tool), CRI-O's `pinns` helper (C, from
# the same module's source) and crictl, the CRI's command-line client (tests/cluster/crictl, a
# module apart), into a cache outside the checkout, keyed by CRI-O's version and a hash of the
# modules' files and this script, as tests/cluster/build.sh does for Kubernetes: a second run, or a
# fresh clone on the same machine, finds them there in a second.
#
# OpenShift's nodes run CRI-O; Debian 12 has none, nor crictl. `go install …@v1.34.0` of a command
# is refused (it asks the module proxy for the version list), hence modules of our own. At run time
# CRI-O also needs conmon and an OCI runtime: Debian's `conmon` and `runc` (runtime-crio.sh's
# crio_config names them).
#
# Prints the path of the cache folder holding `crio`, `pinns` and `crictl` on its last line.
# The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.34.0
crictl_version=v1.34.0

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-crio.sh: Go is missing: the cluster's CRI-O $version is built from its Go module (Go 1.24 or newer)" >&2
  exit 2
fi

# The modules must name the versions the cache is keyed by.
have=$(cd "$here/crio" && go list -m -f '{{.Version}}' github.com/cri-o/cri-o)
if [ "$have" != "$version" ]; then
  echo "tests/cluster/crio/go.mod requires CRI-O $have, build-crio.sh builds $version: make them agree" >&2
  exit 1
fi
have=$(cd "$here/crictl" && go list -m -f '{{.Version}}' sigs.k8s.io/cri-tools)
if [ "$have" != "$crictl_version" ]; then
  echo "tests/cluster/crictl/go.mod requires cri-tools $have, build-crio.sh builds $crictl_version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/crio/go.mod" "$here/crio/go.sum" "$here/crictl/go.mod" "$here/crictl/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/crio-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/crio" ] && [ -x "$cache/pinns" ] && [ -x "$cache/crictl" ]; then
  echo "$cache"
  exit 0
fi

# CRI-O is built with cgo: it links libseccomp (found by pkg-config) for the seccomp profiles pods
# may ask for (RuntimeDefault), and pinns is a static C program. gpgme is not needed: the
# containers_image_openpgp tag (below) verifies signatures in Go.
missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
command -v pkg-config >/dev/null || missing+=(pkg-config)
pkg-config --exists libseccomp 2>/dev/null || missing+=(libseccomp-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "tests/cluster/build-crio.sh: ${missing[*]} missing: run 'sudo apt-get install -y ${missing[*]}'" >&2
    exit 2
  fi
  echo "== installing Debian's ${missing[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$cache.tmp"
# The tags: `seccomp` as CRI-O's Makefile sets it when libseccomp is installed; signatures in Go,
# not gpgme; no btrfs or devicemapper storage drivers (their C headers are not installed, and the
# node's storage is overlay or vfs). The build date as the Makefile sets it (`crio version`).
tags="seccomp containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper"
ldflags="-s -w -X github.com/cri-o/cri-o/internal/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "== building CRI-O $version and crictl $crictl_version from their Go modules into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/crio" &&
  CGO_ENABLED=1 go build -tags "$tags" -ldflags "$ldflags" -o "$cache.tmp/crio" github.com/cri-o/cri-o/cmd/crio)

# pinns (it pins the pod's namespaces to files) from the module's own C source, built with its
# own Makefile in a scratch copy: the module cache is read-only, and the source is never ours.
src=$(cd "$here/crio" && go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$src/pinns" "$scratch/pinns"
chmod -R u+w "$scratch"
make -s -C "$scratch/pinns" >&2
cp "$scratch/bin/pinns" "$cache.tmp/pinns"

# crictl needs no cgo; its version as cri-tools' Makefile sets it.
(cd "$here/crictl" &&
  CGO_ENABLED=0 go build -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${crictl_version#v}" \
    -o "$cache.tmp/crictl" sigs.k8s.io/cri-tools/cmd/crictl)

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
