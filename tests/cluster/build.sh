#!/usr/bin/env bash
# Builds the cluster tests' Kubernetes (tests/cluster/kube: one binary that is kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl and a trace sink for the API server's
# spans) and the pause program, into a cache outside the checkout, keyed by the Kubernetes version
# and a hash of the Go module's files: a second run, or a fresh clone on the same machine, finds
# them there in a second.
#
# Prints the path of the cache folder holding `kube` and `pause` on its last line.
# The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.34.4

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build.sh: Go is missing: the cluster tests build Kubernetes $version from its Go modules (Go 1.24 or newer)" >&2
  exit 2
fi

# The replace list must be the staging modules of k8s.io/kubernetes's own go.mod, each at its
# published tag: check it, so a version bump cannot leave one behind.
(cd "$here/kube" && go mod download k8s.io/kubernetes)
upstream=$(cd "$here/kube" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
want=$(grep -E '=> \./staging/' "$upstream" | awk -v v="v0.${version#v1.}" '{print $1 " => " $1 " " v}' | sort)
have=$(grep -E '^[[:space:]]+k8s\.io/[^ ]+ => k8s\.io/' "$here/kube/go.mod" | sed 's/^[[:space:]]*//' | sort)
if [ "$want" != "$have" ]; then
  echo "tests/cluster/kube/go.mod: its replace list differs from the staging modules of k8s.io/kubernetes $version:" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi

key=$(cat "$here/kube/go.mod" "$here/kube/go.sum" "$here/kube/"*.go "$here/pause/pause.c" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/kube-$version-$key
if [ -x "$cache/kube" ] && [ -x "$cache/pause" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# The version the commands report (`/version`, the Node's kubeletVersion), as Kubernetes' own
# hack/lib/version.sh sets it.
minor=$(echo "$version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
echo "== building Kubernetes $version from its Go modules into $cache (cold: see docs; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/kube" && go build -ldflags "$ldflags" -o "$cache.tmp/kube" .)
cc=gcc
command -v musl-gcc >/dev/null 2>&1 && cc=musl-gcc
"$cc" -static -Os -s -o "$cache.tmp/pause" "$here/pause/pause.c"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
