#!/usr/bin/env bash
# Builds the cluster tests' Kubernetes (tests/cluster/kube: one binary that is kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl and a trace sink for the API server's
# spans) and the pause program, into a cache outside the checkout, keyed by the Kubernetes version
# and a hash of the Go module's files: a second run, or a fresh clone on the same machine, finds
# them there in a second.
#
# PULLCHECK_CLUSTER_KUBERNETES chooses the version (v1.34.4 unless set). main.go and tracesink.go
# are shared by every version; each version has its own module file, passed to `go` with
# -modfile: tests/cluster/kube/go.mod for v1.34.4, tests/cluster/kube/VERSION/go.mod for another
# (with its go.sum beside it). A module file per version, not a copy of the Go files per version,
# keeps one source of the commands, and needs no build folder assembled from parts.
#
# Prints the path of the cache folder holding `kube` and `pause` on its last line.
# The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
default=v1.34.4
version=${PULLCHECK_CLUSTER_KUBERNETES:-$default}
if [ "$version" = "$default" ]; then
  modfile=$here/kube/go.mod
else
  modfile=$here/kube/$version/go.mod
fi
if [ ! -f "$modfile" ]; then
  known=$(cd "$here/kube" && ls -d v*/ 2>/dev/null | tr -d / | tr '\n' ' ')
  echo "tests/cluster/build.sh: no module for Kubernetes $version (PULLCHECK_CLUSTER_KUBERNETES): known are $default ${known% }" >&2
  exit 2
fi
# go.sum beside the module file: -modfile takes it from there.
sumfile=${modfile%.mod}.sum
# gomod CMD [SUBCMD] ARGS...: `go` in tests/cluster/kube with that module file (after the
# command's words, where `go` takes its flags).
gomod() {
  local words=("$1")
  shift
  if [ "${words[0]}" = mod ]; then
    words+=("$1")
    shift
  fi
  (cd "$here/kube" && go "${words[@]}" -modfile="$modfile" "$@")
}

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build.sh: Go is missing: the cluster tests build Kubernetes $version from its Go modules (Go $(awk '$1 == "go" {print $2}' "$modfile") or newer)" >&2
  exit 2
fi

# The module file must require the version it is chosen for.
required=$(gomod list -m -f '{{.Version}}' k8s.io/kubernetes)
if [ "$required" != "$version" ]; then
  echo "tests/cluster/${modfile#"$here/"}: requires k8s.io/kubernetes $required, not $version" >&2
  exit 1
fi

# The replace list must be the staging modules of k8s.io/kubernetes's own go.mod, each at its
# published tag: check it, so a version bump cannot leave one behind.
gomod mod download k8s.io/kubernetes
upstream=$(gomod mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
want=$(grep -E '=> \./staging/' "$upstream" | awk -v v="v0.${version#v1.}" '{print $1 " => " $1 " " v}' | sort)
have=$(grep -E '^[[:space:]]+k8s\.io/[^ ]+ => k8s\.io/' "$modfile" | sed 's/^[[:space:]]*//' | sort)
if [ "$want" != "$have" ]; then
  echo "tests/cluster/${modfile#"$here/"}: its replace list differs from the staging modules of k8s.io/kubernetes $version:" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi

key=$(cat "$modfile" "$sumfile" "$here/kube/"*.go "$here/pause/pause.c" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/kube-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
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
gomod build -ldflags "$ldflags" -o "$cache.tmp/kube" .
cc=gcc
command -v musl-gcc >/dev/null 2>&1 && cc=musl-gcc
"$cc" -static -Os -s -o "$cache.tmp/pause" "$here/pause/pause.c"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
