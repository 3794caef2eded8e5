#!/usr/bin/env bash
# Builds the release binary (static, musl) and the `FROM scratch` image from the repository's
# Dockerfile with buildah — no Docker engine, no internet — then unpacks the image's root
# filesystem into target/image-rootfs for the tests to run the binary from it.
#
# Two images, from the same Dockerfile:
# - target/image.tar (localhost/pullcheck:ci): the init container's, no cargo feature;
# - target/image-webhook.tar (localhost/pullcheck:ci-webhook): the same binary with the
#   `webhook` and `watch` features, for the cluster-wide part the chart installs (`pullcheck
#   webhook` and `pullcheck watch`, two containers of the same pods).
#
# Prints the binary and image sizes. Needs root (apt-get, buildah with the vfs driver).
set -euo pipefail
cd "$(dirname "$0")/.."

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
# No `--features`: the release binary never holds the test hooks (src/test_hooks.rs); the
# tests read the image's binary and check it (tests/it/image.rs).
flags=()
if ! rustup target add "$target" >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$target"; then
  # No musl standard library to be had: link glibc statically instead. Name resolution then
  # needs NSS modules a scratch image lacks, so such a binary is for tests on IP addresses only.
  echo "warning: the $target target cannot be installed; building a static glibc binary" >&2
  target=$(rustc -vV | awk '/^host:/ {print $2}')
  export RUSTFLAGS="-C target-feature=+crt-static"
fi
mkdir -p "dist/$goarch"
# The webhook's binary first, so that target/$target/release/pullcheck is the plain one after.
cargo build --release --locked --target "$target" --features webhook,watch
cp "target/$target/release/pullcheck" "dist/$goarch/pullcheck-webhook"
cargo build --release --locked --target "$target"
cp "target/$target/release/pullcheck" "dist/$goarch/pullcheck"

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
tag=localhost/pullcheck:ci
rm -rf target/image-rootfs
image pullcheck "$tag" target/image.tar
image pullcheck-webhook localhost/pullcheck:ci-webhook target/image-webhook.tar

# Unpack the image's layers into a root filesystem (an OCI archive: index -> manifest -> layers).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xf target/image.tar -C "$tmp"
manifest=$(python3 -c 'import json,sys; i=json.load(open(sys.argv[1]+"/index.json")); print(i["manifests"][0]["digest"].split(":")[1])' "$tmp")
mkdir -p target/image-rootfs
python3 - "$tmp" "$manifest" <<'PY' | while read -r layer; do tar -xf "$tmp/blobs/sha256/$layer" -C target/image-rootfs; done
import json, sys
m = json.load(open(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
for l in m["layers"]:
    print(l["digest"].split(":")[1])
PY

binary=$(stat -c %s "dist/$goarch/pullcheck")
image=$(python3 - "$tmp" "$manifest" <<'PY'
import json, os, sys
m = json.load(open(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
print(sum(l["size"] for l in m["layers"]) + m["config"]["size"] + os.path.getsize(f"{sys.argv[1]}/blobs/sha256/{sys.argv[2]}"))
PY
)
echo "binary: dist/$goarch/pullcheck $binary bytes ($(awk -v b="$binary" 'BEGIN{printf "%.2f", b/1048576}') MiB), static: $(file -b "dist/$goarch/pullcheck" | grep -o 'static[^,]*')"
echo "image:  $tag $image bytes compressed ($(awk -v b="$image" 'BEGIN{printf "%.2f", b/1048576}') MiB); root filesystem: $(cd target/image-rootfs && find . -mindepth 1 | tr '\n' ' ')"
webhook=$(stat -c %s "dist/$goarch/pullcheck-webhook")
echo "webhook: dist/$goarch/pullcheck-webhook $webhook bytes ($(awk -v b="$webhook" 'BEGIN{printf "%.2f", b/1048576}') MiB), image localhost/pullcheck:ci-webhook in target/image-webhook.tar"
