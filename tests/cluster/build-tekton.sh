#!/usr/bin/env bash
# Builds Tekton Pipelines' controller and webhook, and the commands a TaskRun's pod is made of
# (entrypoint, nop, workingdirinit, sidecarlogresults: the controller names their images in its
# flags), from tests/cluster/tekton (a Go module that requires github.com/tektoncd/pipeline and
# names those six commands as tools), into a cache outside the checkout, keyed by Tekton's version
# and a hash of the module's files and this script, as tests/cluster/build.sh does for Kubernetes:
# a second run, or a fresh clone on the same machine, finds them there in a second.
#
# Tekton fails a TaskRun itself once a step's image is in ImagePullBackOff (at once by default, else
# after config-defaults' default-imagepullbackoff-timeout) and deletes its pod; the cluster tests
# run it as the project ships it: its own manifests, from the same module, are copied beside the
# binaries:
#   manifests/config/     the release's manifests (namespace, RBAC, CRDs, webhooks, ConfigMaps,
#                         the controller's, webhook's and events controller's Deployments; the
#                         resolvers in config/resolvers/), with the version labels and the
#                         `pipelines-info` version rewritten from "devel" to the tag, as the
#                         release pipeline does (tekton/publish.yaml, the `sed` after `ko resolve`)
#   manifests/.ko.yaml    ko's configuration (base images), for reference
#
# `go install …@v1.0.0` of a command is refused (it asks the module proxy for the version list),
# hence a module of our own. Tekton's images are built by ko (tekton/publish.yaml): static, without
# cgo, `-trimpath`, no ldflags of Tekton's own (its Makefile sets none). The one version a binary
# carries is knative's changeset (knative.dev/pkg/changeset: the `vcs.revision` Go stamps in a git
# checkout, cut to 7 characters), which the controller writes into every TaskRun's and pod's
# `pipeline.tekton.dev/release` annotation; a build from the module cache has no VCS stamp
# ("unknown"), so it is set with -X: to the tag's commit when the module proxy records it, else
# to the tag itself. Stripped (-s -w, which ko does not do) as our other builds are.
#
# Prints the path of the cache folder holding the six binaries and `manifests/` on its last line.
# The cache is ${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.0.0
pkg=github.com/tektoncd/pipeline
commands="controller webhook entrypoint nop workingdirinit sidecarlogresults"

if ! command -v go >/dev/null 2>&1; then
  echo "tests/cluster/build-tekton.sh: Go is missing: the cluster's Tekton Pipelines $version is built from its Go module (Go 1.24 or newer)" >&2
  exit 2
fi

# The module must name the version the cache is keyed by.
have=$(cd "$here/tekton" && go list -m -f '{{.Version}}' "$pkg")
if [ "$have" != "$version" ]; then
  echo "tests/cluster/tekton/go.mod requires Tekton Pipelines $have, build-tekton.sh builds $version: make them agree" >&2
  exit 1
fi

key=$(cat "$here/tekton/go.mod" "$here/tekton/go.sum" "$0" | sha256sum | cut -c1-12)
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}/tekton-$version-$key
# shellcheck source=lib.sh
. "$here/lib.sh"
lock_cache "$cache"
cached=yes
for c in $commands; do
  [ -x "$cache/$c" ] || cached=no
done
if [ "$cached" = yes ] && [ -d "$cache/manifests/config" ]; then
  echo "$cache"
  exit 0
fi
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"

rev=$(cd "$here/tekton" && go mod download -json "$pkg@$version" |
  sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -n 1 | cut -c1-7)
ldflags="-s -w -X knative.dev/pkg/changeset.rev=${rev:-$version}"
echo "== building Tekton Pipelines $version ($commands) from its Go module into $cache (cold: minutes; cached afterwards)" >&2
start=$(date +%s)
pkgs=
for c in $commands; do
  pkgs="$pkgs $pkg/cmd/$c"
done
# One `go build` of the six main packages into a folder: each is linked under its own name.
# shellcheck disable=SC2086 # $pkgs is a list of import paths
(cd "$here/tekton" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$cache.tmp/" $pkgs)

# The manifests Tekton ships, from the module's own source (read-only in the module cache, hence
# the chmod of the copy). No command of Tekton has a `kodata` folder in the module (the release
# pipeline links a source tarball into any it finds), so the images have none.
src=$(cd "$here/tekton" && go list -m -f '{{.Dir}}' "$pkg")
for path in config .ko.yaml; do
  if [ ! -e "$src/$path" ]; then
    echo "tests/cluster/build-tekton.sh: $path is not in Tekton's module $version ($src): update the list in this script" >&2
    exit 1
  fi
done
mkdir -p "$cache.tmp/manifests"
cp -r "$src/config" "$cache.tmp/manifests/config"
cp "$src/.ko.yaml" "$cache.tmp/manifests/.ko.yaml"
rm -f "$cache.tmp/manifests/config/dummy.go"
chmod -R u+w "$cache.tmp"
# What tekton/publish.yaml does to release.yaml after `ko resolve`: "devel" becomes the tag in the
# release labels and in the `pipelines-info` ConfigMap (`version:`, what `tkn version` reads).
find "$cache.tmp/manifests/config" -name '*.yaml' -exec sed -i \
  -e "s/\(pipeline.tekton.dev\/release\): \"devel\"/\1: \"$version\"/g" \
  -e "s/\(app.kubernetes.io\/version\): \"devel\"/\1: \"$version\"/g" \
  -e "s/\(version\): \"devel\"/\1: \"$version\"/g" {} +

rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "== built in $(($(date +%s) - start)) s" >&2
echo "$cache"
