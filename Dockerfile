# pullcheck's image: one static binary in an empty (`scratch`) image, run as uid 65532.
#
# Two ways to build it:
#   docker build .                     compiles the binary in a Rust stage (needs the internet),
#                                      multi-arch with `docker buildx build --platform linux/amd64,linux/arm64 .`
#   buildah bud --target prebuilt ...  packs a binary built beforehand into dist/<arch>/pullcheck
#                                      (no internet, no Docker engine: what CI does, see scripts/build-image.sh)
#
# The default (`FEATURES` empty) is the init container's image. The cluster image (the admission
# webhook and the stuck-pod controller: the chart's pods run `pullcheck webhook` and `pullcheck
# watch`) is the same Dockerfile with both cargo features on: `--build-arg
# FEATURES=webhook,watch` (and, prebuilt, `--build-arg BINARY=pullcheck-webhook`, what
# `scripts/build-image.sh --cluster` packs). The init container's image stays without them: they
# add a Kubernetes client and servers (docs/webhook.md says how much).

# --- the binary built beforehand (stage first, so that `--target prebuilt` builds nothing else)
FROM scratch AS prebuilt
ARG TARGETARCH=amd64
ARG BINARY=pullcheck
COPY dist/${TARGETARCH}/${BINARY} /pullcheck
USER 65532:65532
ENTRYPOINT ["/pullcheck"]

# --- the binary built here
FROM --platform=$BUILDPLATFORM rust:1-bookworm AS build
ARG TARGETARCH
ARG FEATURES=""
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
RUN case "$TARGETARCH" in \
      amd64) echo x86_64-unknown-linux-musl ;; \
      arm64) echo aarch64-unknown-linux-musl ;; \
      *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; \
    esac > /target && rustup target add "$(cat /target)"
# Cross-linking arm64 on an amd64 builder needs a musl cross linker; rust-lld links static musl.
ENV CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
    CC_aarch64_unknown_linux_musl=clang
WORKDIR /src
COPY . .
# Never `test-hooks`: the test hooks (src/test_hooks.rs) never ship.
RUN cargo build --release --locked --target "$(cat /target)" --features "$FEATURES" \
 && cp "target/$(cat /target)/release/pullcheck" /pullcheck

# --- the image (the default, last stage)
FROM scratch
COPY --from=build /pullcheck /pullcheck
USER 65532:65532
ENTRYPOINT ["/pullcheck"]
