#!/usr/bin/env bash
# Builds the cluster's etcd (tests/cluster/etcd: a Go module that requires go.etcd.io/etcd/server/v3
# and names its command as a tool) into a cache outside the checkout, keyed by etcd's version and a
# hash of the module's files and this script, as tests/cluster/build.sh does for Kubernetes: a
# second run, or a fresh clone on the same machine, finds it there in a second.
#
# Debian 12's etcd is 3.4.23. Kubernetes asks for 3.5.11+ (or 3.4.29+), and its API server turns
# RequestWatchProgress off below 3.4.31: then it refuses the watch streams (WatchListClient) that
# client-go v0.33 and newer ask for, as the frameworks' controllers do; each refused watch ends
# and restarts, and the controller sees changes late (Argo saw a failed pod 31 s late). etcd 3.6
# is what Kubernetes v1.34+ ships with.
#
# Prints the path of the cache folder holding `etcd` on its last line. The cache is
# ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v3.6.16
pkg=go.etcd.io/etcd/server/v3

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-etcd.sh: Go is missing: the cluster's etcd $version is built from its Go module (Go 1.26 or newer)" >&2
  exit 2
fi

# The module must name the etcd it is keyed by.
have=$(cd "$here/etcd" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/etcd/go.mod requires etcd $have, build-etcd.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/etcd/go.mod" "$here/etcd/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/etcd-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/etcd" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# Static, without cgo, as etcd's own build (scripts/build_lib.sh: CGO_ENABLED=0, -trimpath).
# The version is a constant of go.etcd.io/etcd/api/v3/version; GitSHA names the release's commit
# there and is left as built from the module ("Not provided").
echo "== building etcd $version from its Go module into $cache (cold: a minute or two; cached afterwards)" >&2
start=$(date +%s)
(cd "$here/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache.tmp/etcd" "$pkg")
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
