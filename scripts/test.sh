#!/usr/bin/env bash
# Runs every test: unit tests, integration tests against a real registry that the test harness
# starts on 127.0.0.1 (Debian's docker-registry, installed here when missing), and the tests on a
# real single-node Kubernetes (tests/cluster/test.sh: needs root and Go).
#
# The Kubernetes examples and `inject` output are validated offline with kubernetes-validate
# (PyPI). Debian's own Python refuses a system-wide `pip install` (externally-managed-
# environment), so it goes into a virtual environment under target/venv, made here (with
# Debian's python3-venv, installed by apt when missing), and target/venv/bin comes first on the
# PATH of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_registry

venv=target/venv
validator=kubernetes-validate==1.37.0
if ! "$venv/bin/kubernetes-validate" --version >/dev/null 2>&1; then
  echo "== installing $validator into $venv"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    if [ "$(id -u)" != 0 ]; then
      echo "python3 -m venv failed: run 'sudo apt-get install -y python3-venv' and try again" >&2
      exit 2
    fi
    echo "== installing python3-venv (Debian's python3 needs it for python3 -m venv)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/python3" -m pip install -q --disable-pip-version-check "$validator"
fi
# botocore, for the cloud-credential tests' independent SigV4 check.
scripts/test-venv.sh >/dev/null
export PATH="$PWD/$venv/bin:$PATH"
# The integration tests reach their stand-ins (cloud registry names pinned to loopback, ACR's
# token exchange) through the `test-hooks` build feature (src/test_hooks.rs); the release build
# leaves it out. A test that needs it fails without it, and says so. The `webhook` feature builds
# `pullcheck webhook` (tests/it/webhook.rs) and `watch` builds `pullcheck watch` (tests/it/watch.rs),
# which the init container's binary leaves out too.
features=(--features test-hooks,webhook,watch)
if [ $# -gt 0 ]; then
  exec cargo test --all-targets "${features[@]}" "$@"
fi
# The tests that bound a whole process's wall time and peak memory (hostile registries and
# huge inputs) run after the others, one at a time: on a 2-core machine the rest of the suite
# running beside them would be measured too.
serial=(hostile:: bad_input::ten_thousand)
skips=()
for t in "${serial[@]}"; do skips+=(--skip "$t"); done
cargo test --all-targets "${features[@]}" -- "${skips[@]}"
# The library's examples (`--all-targets` leaves doctests out).
cargo test --doc --features webhook,watch
# They bound the init container's binary, which is built without the webhook feature: measure
# that build (the feature's code makes the debug binary's own footprint larger).
cargo test --test it --features test-hooks -- --test-threads=1 "${serial[@]}"
# Last, the tests on a real Kubernetes (root and Go; the first run on a machine builds it).
tests/cluster/test.sh
