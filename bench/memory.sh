#!/bin/sh
# Peak RSS of the release binary on the inputs of the memory bound (docs/performance.md, "Memory"):
# one 4 MiB index of 85,000 platforms, 16 such images, 64 at --concurrency 64, a
# 1 MiB pull secret (28,700 entries) with 16 images, a 4 MiB docker config (110,000 entries)
# with 16 images; a 4 MiB Node object, a plugin answer of 100,000 entries, 1 MiB hosts.toml and
# registries.conf, files at their caps, inject on 10,000 and 30,000 documents. Measured with GNU
# time (`%M`) by the tests of tests/it/hostile.rs that print "peak RSS", which assert the
# targets (24 MiB; 32 MiB for the 4 MiB docker config; inject's bound) when given the release
# binary. Installs GNU time with apt-get when it is missing (as root); tees to target/memory.txt.
set -eu

cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "bench/memory.sh: GNU time is missing; run as root or: sudo apt-get install time" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends time >/dev/null
fi

target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --release
PULLCHECK_MEMORY_BIN="$(cd "$target_dir/release" && pwd)/pullcheck"
export PULLCHECK_MEMORY_BIN

mkdir -p target
status=0
cargo test --test it hostile:: -- --nocapture --test-threads 1 >target/memory.txt 2>&1 || status=$?
grep -E "peak RSS|test result|KiB >" target/memory.txt
exit "$status"
