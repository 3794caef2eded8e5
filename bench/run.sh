#!/bin/sh
# pullcheck against curl and skopeo on local registries (benches/compare.rs), in one command on a
# fresh Debian machine with Rust:
#   - installs docker-registry, skopeo, GNU time and curl with apt-get when one is missing (as root);
#   - builds the release binary (`cargo build --release`);
#   - runs `cargo bench --bench compare` against it, and tees the output to target/bench.txt.
#
# Environment: CARGO_TARGET_DIR is honoured (the output still goes to target/bench.txt); PULLCHECK_BENCH_BIN overrides the binary measured;
# PULLCHECK_BENCH_ARGS, PULLCHECK_BENCH_QUICK are passed on (see benches/compare.rs).
set -eu

cd "$(dirname "$0")/.."

missing=""
command -v docker-registry >/dev/null 2>&1 || missing="$missing docker-registry"
command -v skopeo >/dev/null 2>&1 || missing="$missing skopeo"
[ -x /usr/bin/time ] || missing="$missing time"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "bench/run.sh: missing:$missing; run as root or: sudo apt-get install$missing" >&2
        exit 1
    fi
    echo "bench/run.sh: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --release
PULLCHECK_BENCH_BIN="${PULLCHECK_BENCH_BIN:-$(cd "$target_dir/release" && pwd)/pullcheck}"
export PULLCHECK_BENCH_BIN

mkdir -p target
out=target/bench.txt
# The bench binary is built first, so that target/bench.txt holds only the benchmark's output;
# pipefail is not POSIX: the status of the run is kept in a file.
cargo bench --bench compare --no-run
status_file="$(mktemp)"
{ cargo bench --bench compare 2>&1; echo $? >"$status_file"; } | tee "$out"
status="$(cat "$status_file")"
rm -f "$status_file"
echo "bench/run.sh: output in $out" >&2
exit "$status"
