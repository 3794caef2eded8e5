#!/usr/bin/env bash
# Builds the release binary (static, musl) and the `FROM scratch` image from the repository's
# Dockerfile with buildah — no Docker engine, no internet — then unpacks the image's root
# filesystem into target/image-rootfs for the tests to run the binary from it.
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
if rustup target add "$target" >/dev/null 2>&1 || rustup target list --installed | grep -qx "$target"; then
  cargo build --release --locked --target "$target"
else
  # No musl standard library to be had: link glibc statically instead. Name resolution then
  # needs NSS modules a scratch image lacks, so such a binary is for tests on IP addresses only.
  echo "warning: the $target target cannot be installed; building a static glibc binary" >&2
  target=$(rustc -vV | awk '/^host:/ {print $2}')
  RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked --target "$target"
fi
mkdir -p "dist/$goarch"
cp "target/$target/release/pullcheck" "dist/$goarch/pullcheck"

store=(--storage-driver vfs)
tag=localhost/pullcheck:ci
log=$(mktemp)
buildah "${store[@]}" bud --isolation chroot --target prebuilt \
  --build-arg "TARGETARCH=$goarch" --platform "linux/$goarch" -t "$tag" . >"$log" 2>&1 ||
  { cat "$log" >&2; exit 1; }
rm -rf target/image-rootfs target/image.tar
buildah "${store[@]}" push "$tag" "oci-archive:target/image.tar" >"$log" 2>&1 ||
  { cat "$log" >&2; exit 1; }
rm -f "$log"

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
