#!/usr/bin/env bash
# Admission latency of `pullcheck webhook`: p50 and p99 over 500 Pod AdmissionReviews, sent one
# after another on one keep-alive TLS connection to a webhook on loopback, timed by the client
# (request written to answer read). The webhook is the release musl binary with the `webhook`
# feature, built as scripts/build-image.sh builds the image's, plus the feature.
#
# Usage: bench/webhook.sh   (prints one line with the figures)
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(uname -m)-unknown-linux-musl
cargo build --release --locked --target "$target" --features webhook
PULLCHECK_WEBHOOK_BENCH_BIN="$(realpath "${CARGO_TARGET_DIR:-target}")/$target/release/pullcheck" \
  cargo test --locked --test it --features test-hooks,webhook -- \
  --ignored --nocapture --exact webhook::latency_of_500_pod_reviews 2>&1 |
  grep '^webhook admission latency'
