#!/bin/sh
# The cost of one mirror hop: pullcheck checking images directly against their registry, and
# through a containerd hosts directory whose mirror is asked first (it has the image; or it
# lacks it and the upstream answers). Two docker-registry processes on loopback; the release
# binary; the median of PULLCHECK_HOP_RUNS runs (default 30) per case; prints each ratio.
# Needs docker-registry (apt-get install docker-registry).
set -eu
cd "$(dirname "$0")/.."
cargo test --release --quiet --test it mirror_hop_cost -- --ignored --nocapture 2>&1 \
    | grep -E "^(median|1 image|20 images)"
