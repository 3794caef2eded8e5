#!/usr/bin/env bash
# The round trip that the manifest request saves by going first, with no `GET /v2/` before it:
# `pullcheck check` of 1 and of N images on an anonymous registry 50 ms away, with two builds.
#
#   bench/ping.sh BEFORE [AFTER]
#
# BEFORE and AFTER are each a pullcheck binary or a git revision of this repository (built
# with `cargo build --release` from `git archive`, under target/ping-bench/); AFTER defaults to
# this checkout's release build. Example: `bench/ping.sh 1c3b0e3` (main's last revision that
# sent `GET /v2/` before the manifest request) against the working tree.
#
# The network is the script's own: a network namespace and a veth pair (10.253.53.1 here,
# 10.253.53.2 in the namespace), with `tc qdisc ... netem delay` on the host's end, so each
# round trip takes the delay. docker-registry runs inside the namespace; images are pushed
# before the delay is set. Nothing else is reached. Where the kernel has no netem (no
# sch_netem module), bench/delay-relay.py in the namespace stands in for it: it holds each new
# connection one round trip (the TCP handshake) and each chunk half of one in each direction.
# The registry's access log gives the requests of one run of each case, too.
#
# Environment: PULLCHECK_PING_IMAGES (N, default 20), PULLCHECK_PING_DELAY (default 50ms),
# PULLCHECK_PING_RUNS (runs per case, default 7; the median is printed).
# Needs root (ip netns, tc), docker-registry and curl (apt-get install docker-registry curl).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ]; then
  echo "bench/ping.sh: needs root for ip netns and tc" >&2
  exit 2
fi
need_registry
for tool in ip tc; do
  command -v "$tool" >/dev/null || { echo "bench/ping.sh: $tool is missing (iproute2)" >&2; exit 2; }
done

# Straight to the namespace: no proxy of the environment in between.
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY

images=${PULLCHECK_PING_IMAGES:-20}
delay=${PULLCHECK_PING_DELAY:-50ms}
runs=${PULLCHECK_PING_RUNS:-7}
work=target/ping-bench
mkdir -p "$work"

# binary_of SPEC: prints the path of a pullcheck binary: SPEC itself, or SPEC built as a
# revision (or this checkout, for "").
binary_of() {
  local spec=$1
  if [ -z "$spec" ]; then
    cargo build --release --quiet >&2
    echo "$PWD/target/release/pullcheck"
  elif [ -x "$spec" ] && [ -f "$spec" ]; then
    (cd "$(dirname "$spec")" && echo "$PWD/$(basename "$spec")")
  else
    local rev src out
    rev=$(git rev-parse --short=12 "$spec^{commit}")
    src=$work/src-$rev
    out=$PWD/$work/pullcheck-$rev
    if [ ! -x "$out" ]; then
      rm -rf "$src" && mkdir -p "$src"
      git archive "$rev" | tar -x -C "$src"
      echo "== building $spec ($rev)" >&2
      cargo build --release --quiet --manifest-path "$src/Cargo.toml" --target-dir "$work/target" >&2
      cp "$work/target/release/pullcheck" "$out"
    fi
    echo "$out"
  fi
}

before_bin=$(binary_of "$1")
after_bin=$(binary_of "${2:-}")

ns=pullcheck-ping-$$
host_if=pcp$$a
ns_if=pcp$$b
host_ip=10.253.53.1
ns_ip=10.253.53.2
reg_dir=$(mktemp -d)
reg_pid=
relay_pid=
cleanup() {
  if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; wait "$relay_pid" 2>/dev/null || true; fi
  if [ -n "$reg_pid" ]; then kill "$reg_pid" 2>/dev/null || true; wait "$reg_pid" 2>/dev/null || true; fi
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$reg_dir"
}
trap cleanup EXIT

ip netns add "$ns"
ip link add "$host_if" type veth peer name "$ns_if"
ip link set "$ns_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add "$ns_ip/30" dev "$ns_if"
ip -n "$ns" link set "$ns_if" up
ip -n "$ns" link set lo up

registry=$ns_ip:5000
# Without netem the registry listens on the namespace's loopback, behind the relay.
if tc qdisc add dev "$host_if" root netem delay "$delay" 2>/dev/null; then
  tc qdisc del dev "$host_if" root
  netem=yes
  reg_addr=$registry
else
  netem=no
  reg_addr=127.0.0.1:5000
fi
# start_relay RTT_SECONDS: the relay in front of the registry (no netem), with this delay.
start_relay() {
  if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; wait "$relay_pid" 2>/dev/null || true; fi
  ip netns exec "$ns" python3 bench/delay-relay.py "$registry" "$reg_addr" "$1" &
  relay_pid=$!
}
registry_config "$reg_dir" "$reg_addr"
ip netns exec "$ns" docker-registry serve "$reg_dir/config.yml" >"$reg_dir/registry.log" 2>&1 &
reg_pid=$!
[ "$netem" = yes ] || start_relay 0
for _ in $(seq 100); do
  curl -s -o /dev/null "http://$registry/v2/" && break
  sleep 0.1
done
curl -fs -o /dev/null "http://$registry/v2/" || { cat "$reg_dir/registry.log" >&2; exit 1; }

list=()
for i in $(seq "$images"); do
  push_oci_manifest "$registry" "bench/app$i" v1 linux amd64 >/dev/null
  list+=("$registry/bench/app$i:v1")
done
# From now on every packet from here to the registry waits `delay`: one round trip, one delay.
if [ "$netem" = yes ]; then
  tc qdisc add dev "$host_if" root netem delay "$delay"
  how="netem on the veth"
else
  start_relay "$(awk -v d="$delay" 'BEGIN { v = d + 0; if (d ~ /ms$/) v /= 1000; printf "%.4f", v }')"
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://$registry/v2/" && break
    sleep 0.1
  done
  how="no netem in this kernel: bench/delay-relay.py adds it"
fi

# requests BIN IMAGE...: the requests one run sends, from the registry's access log.
requests() {
  local bin=$1 before
  shift
  before=$(wc -l <"$reg_dir/registry.log")
  "$bin" check --plain-http "$registry" --secrets-dir /nonexistent --termination-log "" \
    --timeout 60s -o json "$@" >/dev/null
  sleep 0.3
  tail -n +"$((before + 1))" "$reg_dir/registry.log" | awk '
    /"GET \/v2\/ HTTP/ { ping++ }
    /"HEAD \/v2\/.*\/manifests\// { head++ }
    END { printf "%d GET /v2/, %d HEAD", ping, head }'
}

# median_ms BIN IMAGE...: the median wall time of `pullcheck check` in ms, over `runs` runs.
median_ms() {
  local bin=$1
  shift
  local times=() start end
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$bin" check --plain-http "$registry" --secrets-dir /nonexistent --termination-log "" \
      --timeout 60s -o json "$@" >"$reg_dir/out.json" || {
      echo "bench/ping.sh: $bin failed:" >&2
      cat "$reg_dir/out.json" >&2
      exit 1
    }
    end=$(date +%s%N)
    times+=($(((end - start) / 1000000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p"
}

echo "round trip to the registry: $delay ($how); $runs runs per case, median"
for n in 1 "$images"; do
  b=$(median_ms "$before_bin" "${list[@]:0:$n}")
  a=$(median_ms "$after_bin" "${list[@]:0:$n}")
  ratio=$(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')
  echo "$n image(s): before $b ms, after $a ms, before/after $ratio"
  echo "  requests of one run: before $(requests "$before_bin" "${list[@]:0:$n}"), after $(requests "$after_bin" "${list[@]:0:$n}")"
done
