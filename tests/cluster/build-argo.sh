#!/usr/bin/env bash
# Builds Argo Workflows' workflow controller and its executor, argoexec (tests/cluster/argo: a Go
# module that requires github.com/argoproj/argo-workflows/v3 and names both commands as tools),
# into a cache outside the checkout, keyed by Argo's version and a hash of the module's files and
# this script, as tests/cluster/build.sh does for Kubernetes: a second run, or a fresh clone on the
# same machine, finds them there in a second.
#
# Argo is a framework whose step pods wait forever on a missing image unless something fails them;
# the cluster tests run it as the project ships it: its own manifests, from the same module, are
# copied beside the binaries (manifests/..., the paths they have in Argo's source):
#   manifests/base/crds/minimal/                             the CRDs (what quick-start and
#                                                            cluster-install use)
#   manifests/base/workflow-controller/                      ServiceAccount `argo`, ConfigMap
#                                                            `workflow-controller-configmap`,
#                                                            Deployment, PriorityClass
#   manifests/cluster-install-no-crds/workflow-controller-rbac/  ClusterRole(Binding) argo-cluster-role,
#                                                            Role(Binding) argo-role, aggregates
#   manifests/namespace-install/                             the same for a --namespaced controller
#   manifests/quick-start/base/executor/emissary/executor-role.yaml  Role `executor` (what a step's
#   manifests/quick-start/base/executor-default-rolebinding.yaml     pod's service account needs)
#   manifests/quick-start-minimal.yaml                       all of quick-start rendered, namespace
#                                                            `argo` (for reference)
#   hack/nsswitch.conf, hack/ssh_known_hosts                 the /etc files of the upstream images
#   Dockerfile                                               the upstream images' paths/ENTRYPOINTs
#
# `go install …@v3.7.0` of a command is refused (it asks the module proxy for the version list),
# hence a module of our own. Both commands are built without cgo, static, as Argo's Makefile does
# (`CGO_ENABLED=0 … -extldflags -static`), with the version ldflags it sets, and stripped (-s -w,
# which the Makefile does not do) as our other builds are.
#
# Prints the path of the cache folder holding `workflow-controller`, `argoexec` and `manifests/`
# on its last line. The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v3.7.0
pkg=github.com/argoproj/argo-workflows/v3

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-argo.sh: Go is missing: the cluster's Argo Workflows $version is built from its Go module (Go 1.24 or newer)" >&2
  exit 2
fi

# The module must name the version the cache is keyed by.
have=$(cd "$here/argo" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/argo/go.mod requires Argo Workflows $have, build-argo.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/argo/go.mod" "$here/argo/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/argo-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
if [ -x "$cache/workflow-controller" ] && [ -x "$cache/argoexec" ] && [ -d "$cache/manifests" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache.tmp"

# The version `workflow-controller version` / `argoexec version` report, and that the controller's
# default executor image is tagged with (argo.ImageTag()), as Argo's Makefile sets them for a
# release: the tag; its commit as the module proxy records the tag's origin and its date as the
# build date; a clean tree. With tag, commit and clean tree, GetVersion() reports the tag alone.
commit=$(cd "$here/argo" && go mod download -json "$pkg@$version" |
  sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -n 1)
released=$(cd "$here/argo" && go list -m -json "$pkg" | sed -n 's/^[[:space:]]*"Time": "\([^"]*\)".*/\1/p')
ldflags="-s -w -X $pkg.version=$version -X $pkg.gitTag=$version -X $pkg.buildDate=${released:-1970-01-01T00:00:00Z}"
if [ -n "$commit" ]; then
  ldflags="$ldflags -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean"
fi
echo "== building Argo Workflows $version (workflow-controller, argoexec) from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)

# The module zip lacks one file of Argo's repository: workflow/executor/osspecific/signal_linux.go
# is a symbolic link there (to signal_darwin.go in the same folder), and module zips leave
# symbolic links out, so `argoexec` does not compile from the module as it is ("undefined:
# Setpgid"). Go refuses an -overlay beneath the module cache; so both commands are built in a
# scratch copy of our module whose go.mod replaces Argo by a copy of its module source with that
# link restored as the file it names (what a checkout of the tag has). Every other module comes
# from the module cache, checked against our go.sum. The scratch folder's path is the same from
# run to run (for the Go build cache), and goes once the binaries are built.
src=$(cd "$here/argo" && go list -m -f '{{.Dir}}' "$pkg")
work=$cache.tmp/build
rm -rf "$work"
mkdir -p "$work"
cp "$here/argo/go.mod" "$here/argo/go.sum" "$work/"
cp -r "$src" "$work/argo-workflows"
chmod -R u+w "$work/argo-workflows"
osspecific=$work/argo-workflows/workflow/executor/osspecific
if [ ! -e "$osspecific/signal_linux.go" ]; then
  cp "$osspecific/signal_darwin.go" "$osspecific/signal_linux.go"
fi
(cd "$work" &&
  go mod edit -replace "$pkg=./argo-workflows" &&
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$cache.tmp/workflow-controller" "$pkg/cmd/workflow-controller" &&
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$cache.tmp/argoexec" "$pkg/cmd/argoexec")
rm -rf "$work"

# The manifests Argo ships, and the two /etc files its images add (hack/), from the module's own
# source (read-only in the module cache, hence the chmod of the copy).
for path in \
  manifests/base/crds/minimal \
  manifests/base/workflow-controller \
  manifests/cluster-install-no-crds/workflow-controller-rbac \
  manifests/namespace-install/workflow-controller-rbac \
  manifests/namespace-install/overlays/workflow-controller-deployment.yaml \
  manifests/quick-start/base/executor/emissary/executor-role.yaml \
  manifests/quick-start/base/executor-default-rolebinding.yaml \
  manifests/quick-start-minimal.yaml \
  hack/nsswitch.conf \
  hack/ssh_known_hosts \
  Dockerfile; do
  if [ ! -e "$src/$path" ]; then
    echo "tests/cluster/build-argo.sh: $path is not in Argo's module $version ($src): update the list in this script" >&2
    exit 1
  fi
  mkdir -p "$cache.tmp/$(dirname "$path")"
  cp -r "$src/$path" "$cache.tmp/$path"
done
chmod -R u+w "$cache.tmp"

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
