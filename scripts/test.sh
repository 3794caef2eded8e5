#!/usr/bin/env bash
# Runs every test: unit tests, and integration tests against a real registry that the test
# harness starts on 127.0.0.1 (Debian's docker-registry, installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_registry
# The Kubernetes examples and `inject` output are validated offline against the API schemas.
if ! command -v kubernetes-validate >/dev/null 2>&1; then
  python3 -m pip install -q kubernetes-validate==1.37.0
fi
# botocore, for the cloud-credential tests' independent SigV4 check.
scripts/test-venv.sh >/dev/null
cargo test --all-targets "$@"
