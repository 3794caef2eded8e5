#!/usr/bin/env bash
# Builds pullcheck's static release binaries (musl) and packs them into `FROM scratch` images
# from the repository's Dockerfile with buildah: no Docker engine, no internet.
#
# Usage: scripts/build-image.sh [--init | --cluster | --all]
#   --init     (the default) the init container's image only: the binary without cargo
#              features, dist/<arch>/pullcheck, in target/image.tar (localhost/pullcheck:ci),
#              its root filesystem unpacked into target/image-rootfs. What `pullcheck inject`
#              and the chart's `inject.image` name.
#   --cluster  the cluster image only: the binary with `--features webhook,watch`,
#              dist/<arch>/pullcheck-webhook, in target/image-webhook.tar
#              (localhost/pullcheck:ci-webhook), unpacked into target/image-webhook-rootfs. The
#              chart's `image`: its pods run `pullcheck webhook` and `pullcheck watch`.
#   --all      both (the tests and CI need both).
#
# Two compiles when both are asked, since the init container's binary must stay without the
# cluster features (its size budget: docs/webhook.md). Prints the binary and image sizes. Needs
# root (apt-get, buildah with the vfs driver).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '5,15p' "$0" | sed 's/^# \{0,1\}//'; }
init=0 cluster=0
case ${1:---init} in
  --init) init=1 ;;
  --cluster) cluster=1 ;;
  --all) init=1 cluster=1 ;;
  -h | --help) usage; exit 0 ;;
  *) { echo "unknown argument: $1"; usage; } >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "one argument at most, got: $*" >&2; usage >&2; exit 2; }

arch=$(uname -m)
case $arch in
  x86_64) target=x86_64-unknown-linux-musl; goarch=amd64 ;;
  aarch64) target=aarch64-unknown-linux-musl; goarch=arm64 ;;
  *) echo "unsupported architecture $arch" >&2; exit 2 ;;
esac
if ! command -v buildah >/dev/null || ! command -v musl-gcc >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah musl-tools >/dev/null
fi
# Never `test-hooks`: the release binaries never hold the test hooks (src/test_hooks.rs); the
# tests read the images' binaries and check it (tests/it/image.rs).
if ! rustup target add "$target" >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$target"; then
  # No musl standard library to be had: link glibc statically instead. Name resolution then
  # needs NSS modules a scratch image lacks, so such a binary is for tests on IP addresses only.
  echo "warning: the $target target cannot be installed; building a static glibc binary" >&2
  target=$(rustc -vV | awk '/^host:/ {print $2}')
  export RUSTFLAGS="-C target-feature=+crt-static"
fi
mkdir -p "dist/$goarch" target
# Where cargo writes: its own target directory, unless CARGO_TARGET_DIR moves it.
built=${CARGO_TARGET_DIR:-target}/$target/release/pullcheck
if [ "$cluster" = 1 ]; then
  cargo build --release --locked --target "$target" --features webhook,watch
  cp "$built" "dist/$goarch/pullcheck-webhook"
fi
if [ "$init" = 1 ]; then
  cargo build --release --locked --target "$target"
  cp "$built" "dist/$goarch/pullcheck"
fi

store=(--storage-driver vfs)
# image BINARY TAG ARCHIVE: packs dist/<arch>/BINARY as /pullcheck into the image TAG, written to
# the OCI archive ARCHIVE.
image() {
  local log
  log=$(mktemp)
  buildah "${store[@]}" bud --isolation chroot --target prebuilt \
    --build-arg "TARGETARCH=$goarch" --build-arg "BINARY=$1" --platform "linux/$goarch" -t "$2" . >"$log" 2>&1 ||
    { cat "$log" >&2; exit 1; }
  rm -f "$3"
  buildah "${store[@]}" push "$2" "oci-archive:$3" >"$log" 2>&1 ||
    { cat "$log" >&2; exit 1; }
  rm -f "$log"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# unpack ARCHIVE ROOTFS: the image's layers as a root filesystem (an OCI archive: index ->
# manifest -> layers), for the tests to run the binary from it; prints the image's compressed
# size (layers, config and manifest).
unpack() {
  local dir=$tmp/$(basename "$1") manifest
  mkdir -p "$dir"
  tar -xf "$1" -C "$dir"
  manifest=$(python3 -c 'import json,sys; i=json.load(open(sys.argv[1]+"/index.json")); print(i["manifests"][0]["digest"].split(":")[1])' "$dir")
  rm -rf "$2"
  mkdir -p "$2"
  python3 - "$dir" "$manifest" <<'PY' | while read -r layer; do tar -xf "$dir/blobs/sha256/$layer" -C "$2"; done
import json, sys
m = json.load(open(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
for l in m["layers"]:
    print(l["digest"].split(":")[1])
PY
  python3 - "$dir" "$manifest" <<'PY'
import json, os, sys
m = json.load(open(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
print(sum(l["size"] for l in m["layers"]) + m["config"]["size"] + os.path.getsize(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
PY
}
mib() { awk -v b="$1" 'BEGIN{printf "%.2f", b/1048576}'; }
# report BINARY TAG ARCHIVE ROOTFS: builds, unpacks and prints the sizes.
report() {
  local binary size
  image "$1" "$2" "$3"
  size=$(unpack "$3" "$4")
  binary=$(stat -c %s "dist/$goarch/$1")
  echo "binary: dist/$goarch/$1 $binary bytes ($(mib "$binary") MiB), static: $(file -b "dist/$goarch/$1" | grep -o 'static[^,]*')"
  echo "image:  $2 in $3, $size bytes compressed ($(mib "$size") MiB); root filesystem: $(cd "$4" && find . -mindepth 1 | tr '\n' ' ')"
}
if [ "$init" = 1 ]; then
  report pullcheck localhost/pullcheck:ci target/image.tar target/image-rootfs
fi
if [ "$cluster" = 1 ]; then
  report pullcheck-webhook localhost/pullcheck:ci-webhook target/image-webhook.tar target/image-webhook-rootfs
fi
