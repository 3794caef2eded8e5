#!/usr/bin/env bash
# pullcheck on the real cluster of tests/cluster/, measured against the same Job without it:
#
# 1. the seed case: a Job whose image tag does not exist (IfNotPresent, restartPolicy Never,
#    backoffLimit 5): seconds from `kubectl create` to the Job's Failed condition, with
#    pullcheck injected (inject --job-failure-policy) and without; without, the wait is cut at
#    CUT seconds (default 600) and shown as "> CUT s";
# 2. the overhead on a good Job: seconds from create to Complete, with and without pullcheck,
#    RUNS times each in turn (default 5), as median, min and max, and the ratio with/without
#    pair by pair.
#
# Usage: bench/cluster.sh [RUNS] [CUT]     (root; brings the cluster up, leaves it running)
# Times come from `kubectl wait`, which watches the Job: whole-process figures, no polling gap.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
runs=${1:-5}
cut=${2:-600}
scripts/build-image.sh >/dev/null
cargo build --release --quiet --bin pullcheck
tests/cluster/cluster.sh up
# shellcheck disable=SC1091
. target/cluster/env
k() { "$PULLCHECK_CLUSTER_KUBE" kubectl "$@"; }
ns=pullcheck-bench
k delete namespace "$ns" --wait=true >/dev/null 2>&1 || true
k create namespace "$ns" >/dev/null
until k -n "$ns" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done

inject() {
  target/release/pullcheck inject --image "$PULLCHECK_CLUSTER_REGISTRY/pullcheck:ci" \
    --job-failure-policy -- --plain-http "$PULLCHECK_CLUSTER_REGISTRY" 2>/dev/null
}
# seconds NAME CONDITION BOUND MANIFEST: create, then wait for the condition; prints seconds
# (3 decimals) or nothing when BOUND passed first.
seconds() {
  local name=$1 cond=$2 bound=$3 manifest=$4 start end
  start=$(date +%s.%N)
  echo "$manifest" | k -n "$ns" create -f - >/dev/null
  if k -n "$ns" wait --for=condition="$cond" "job/$name" --timeout="${bound}s" >/dev/null 2>&1; then
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}'
  fi
  k -n "$ns" delete job "$name" --wait=false --cascade=background >/dev/null 2>&1 || true
}

missing=$PULLCHECK_CLUSTER_REGISTRY/tools:no-such-tag
good=$PULLCHECK_CLUSTER_REGISTRY/tools:1
echo "== the seed case (missing tag), cut at $cut s without pullcheck"
with=$(seconds seed-with Failed 300 "$(cluster_job seed-with "$missing" | inject)")
without=$(seconds seed-without Failed "$cut" "$(cluster_job seed-without "$missing")")
printf '| %-18s | %s |\n' "with pullcheck" "${with:-> 300} s to Failed" "without" "${without:-> $cut} s to Failed"

echo "== a good Job, create to Complete, $runs runs each, in turn"
w=() o=() r=()
for i in $(seq "$runs"); do
  a=$(seconds "good-with-$i" Complete 300 "$(cluster_job "good-with-$i" "$good" | inject)")
  b=$(seconds "good-without-$i" Complete 300 "$(cluster_job "good-without-$i" "$good")")
  w+=("$a") o+=("$b") r+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')")
done
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "median %.2f (min %.2f, max %.2f)", (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[1], v[NR]}'; }
echo "| with pullcheck    | $(stats "${w[@]}") s |"
echo "| without           | $(stats "${o[@]}") s |"
echo "| ratio with/without | $(stats "${r[@]}") |"
k delete namespace "$ns" --wait=false >/dev/null
