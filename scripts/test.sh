#!/usr/bin/env bash
# Runs every test: unit tests, and integration tests against a real registry that the test
# harness starts on 127.0.0.1 (Debian's docker-registry, installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_registry
cargo test --all-targets "$@"
