#!/usr/bin/env bash
# pullcheck on the real cluster of tests/cluster/, measured against the same Job without it:
#
# 1. the seed case: a Job whose image tag does not exist (IfNotPresent, restartPolicy Never,
#    backoffLimit 5): seconds from `kubectl create` to the Job's Failed condition, with
#    pullcheck injected (inject --job-failure-policy) and without; without, the wait is cut at
#    CUT seconds (default 600) and shown as "> CUT s";
# 2. the overhead on a good Job: seconds from create to Complete, with and without pullcheck,
#    RUNS times each in turn (default 5), as median, min and max, and the ratio with/without
#    pair by pair;
# 3. the two modes of the chart side by side, each against the same Job without pullcheck:
#    `init` (the init container, as `inject --job-failure-policy` writes it) and `watch` (the
#    chart's default: nothing in the pod, the webhook's Job rule, the watcher), RUNS times each:
#    seconds to Failed for the missing tag, seconds to Complete for the good Job, and the
#    requests pullcheck added at the registry per pod (its user agent in the registry's log).
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
with=$(seconds seed-with Failed 300 "$(cluster_job seed-with "$missing" | sed 's/IfNotPresent/Always/' | inject)")
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

# pullcheck's requests in the registry's access log (the init container's and the watcher's own look
# send pullcheck's user agent; the kubelet's containerd sends its own).
registry_log=target/cluster/logs/registry.log
ours() { grep -c '" "pullcheck/' "$registry_log" 2>/dev/null || true; }

echo "== the chart in mode watch (its default), beside the same Jobs with the init container"
helm=$(tests/cluster/build-helm.sh | tail -n 1)/helm
release=pullcheck-bench
"$helm" uninstall "$release" -n "$release" --wait >/dev/null 2>&1 || true
k delete namespace "$release" --wait=true >/dev/null 2>&1 || true
k create namespace "$release" >/dev/null
webhook_image=$PULLCHECK_CLUSTER_REGISTRY/pullcheck:ci-webhook
"$helm" install "$release" charts/pullcheck -n "$release" --kubeconfig "$KUBECONFIG" --wait --timeout 4m \
  --set "image.repository=${webhook_image%:*},image.tag=${webhook_image##*:},watch.namespaceLabel=pullcheck.dev/watch=bench" >/dev/null
watched=pullcheck-bench-watched
k delete namespace "$watched" --wait=true >/dev/null 2>&1 || true
k create namespace "$watched" >/dev/null
k label namespace "$watched" pullcheck.dev/watch=bench >/dev/null
until k -n "$watched" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
# The webhook answers once its CA is in the configuration: a dry run shows the rule added.
until cluster_job probe "$good" | k -n "$watched" create --dry-run=server -o yaml -f - 2>/dev/null | grep -q ConfigIssue; do sleep 1; done

# timed NS NAME CONDITION MANIFEST: seconds, and pullcheck's registry requests meanwhile.
timed() {
  local before after t
  before=$(ours)
  t=$(ns=$1 seconds "$2" "$3" 300 "$4")
  sleep 1
  after=$(ours)
  echo "${t:-300} $((after - before))"
}
# The missing tag is pulled `Always`: with IfNotPresent the init container counts a miss only
# when it may read the node's image list (examples/node-images-rbac.yaml), which this
# namespace's account may not.
always() { sed 's/imagePullPolicy: IfNotPresent/imagePullPolicy: Always/'; }
fw=() cw=() fi_=() ci_=() co=() rwm=() rwg=() rim=() rig=()
for i in $(seq "$runs"); do
  read -r t n < <(timed "$watched" "miss-watch-$i" Failed "$(cluster_job "miss-watch-$i" "$missing" | always)"); fw+=("$t"); rwm+=("$n")
  read -r t n < <(timed "$ns" "miss-init-$i" Failed "$(cluster_job "miss-init-$i" "$missing" | always | inject)"); fi_+=("$t"); rim+=("$n")
  read -r t n < <(timed "$watched" "good-watch-$i" Complete "$(cluster_job "good-watch-$i" "$good")"); cw+=("$t"); rwg+=("$n")
  read -r t n < <(timed "$ns" "good-init-$i" Complete "$(cluster_job "good-init-$i" "$good" | inject)"); ci_+=("$t"); rig+=("$n")
  read -r t _ < <(timed "$ns" "good-none-$i" Complete "$(cluster_job "good-none-$i" "$good")"); co+=("$t")
done
per_pod() { printf '%s\n' "$@" | awk '{s += $1} END {printf "%.1f", s / NR}'; }
echo "| mode | missing tag to Failed | good Job to Complete | the same good Job without pullcheck | pullcheck's registry requests per good pod / per failed pod |"
echo "|---|---|---|---|---|"
echo "| watch | $(stats "${fw[@]}") s | $(stats "${cw[@]}") s | $(stats "${co[@]}") s | $(per_pod "${rwg[@]}") / $(per_pod "${rwm[@]}") |"
echo "| init | $(stats "${fi_[@]}") s | $(stats "${ci_[@]}") s | $(stats "${co[@]}") s | $(per_pod "${rig[@]}") / $(per_pod "${rim[@]}") |"
"$helm" uninstall "$release" -n "$release" --kubeconfig "$KUBECONFIG" >/dev/null 2>&1 || true
k delete namespace "$watched" "$release" --wait=false >/dev/null
k delete namespace "$ns" --wait=false >/dev/null
