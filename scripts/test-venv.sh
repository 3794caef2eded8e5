#!/usr/bin/env bash
# The Python virtual environment the integration tests use for an independent SigV4 check
# (botocore's signer verifies the signatures pullcheck sends to the ECR stand-in). Idempotent:
# prints the venv's python. Needs Debian's python3-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
if ! "$venv/bin/python" -c 'import botocore' >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'botocore==1.*'
fi
echo "$PWD/$venv/bin/python"
