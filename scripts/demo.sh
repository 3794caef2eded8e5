#!/usr/bin/env bash
# The main job on a local default: start a real registry (Debian's docker-registry, CNCF
# distribution) on 127.0.0.1, push sample images through its API, then run `pullcheck check`
# on good and bad references and show the verdicts, the JSON and the termination message.
#
# Usage: scripts/demo.sh            (installs docker-registry with apt-get when missing)
# Exits 0 when every verdict is the expected one.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh

need_registry
echo "== building pullcheck (cargo build --bin pullcheck; a first build compiles its dependencies, a minute or two)"
cargo build --bin pullcheck
PULLCHECK=target/debug/pullcheck

work=$(mktemp -d)
trap 'stop_registry; rm -rf "$work"' EXIT
start_registry "$work"
REG=$REGISTRY_HOST
echo "== registry: distribution $(docker-registry --version 2>/dev/null | awk '{print $3}') on $REG (plain HTTP)"

echo "== pushing sample images"
app10=$(push_oci_manifest "$REG" demo/app 1.0 linux amd64)
app11=$(push_schema2_manifest "$REG" demo/app 1.1 linux amd64)
multi=$(push_oci_index "$REG" demo/multi latest)
echo "   $REG/demo/app:1.0   OCI manifest          $app10"
echo "   $REG/demo/app:1.1   Docker schema2        $app11"
echo "   $REG/demo/multi     OCI index (amd64, arm64) $multi"

failed=0
expect() { # expect CODE ARGS... : run pullcheck, show its output, compare the exit code
  local want=$1; shift
  # Print exactly what runs: copied while the demo registry is up, it gives the same answer.
  local command=("$PULLCHECK" check --plain-http "$REG" --termination-log "$work/termination-log" "$@")
  echo
  printf '$'; printf ' %q' "${command[@]}"; echo
  set +e
  "${command[@]}"
  local got=$?
  set -e
  if [ "$got" = "$want" ]; then
    echo "-> exit $got (expected)"
  else
    echo "-> exit $got, expected $want" >&2
    failed=1
  fi
}

echo
echo "== good references: every image can be pulled"
expect 0 "$REG/demo/app:1.0" "$REG/demo/app:1.1" "$REG/demo/app@$app10" "$REG/demo/multi"

echo
echo "== bad references: a missing tag, a missing repository, an invalid name, a dead registry"
expect 3 --timeout 3s "$REG/demo/app:1.0" "$REG/demo/app:2.0" "$REG/demo/nope:1.0" "$REG/Demo/App" 127.0.0.1:1/demo/app:1.0
echo "-- termination message (what kubectl describe pod shows):"
cat "$work/termination-log"; echo

echo
echo "== a typo in a tag: not_found, with what the user probably meant"
expect 3 "$REG/demo/app:1.2"

echo
echo "== an image without a variant for the node: exit 4"
expect 4 --platform linux/s390x "$REG/demo/multi"

echo
echo "== only the dead registry: exit 6 (transient), after the deadline"
expect 6 --timeout 2s 127.0.0.1:1/demo/app:1.0

echo
echo "== the same bad references as JSON"
expect 3 -o json --timeout 2s "$REG/demo/app:2.0" "$REG/demo/nope:1.0"

echo
echo "== what one check of one existing image costs the registry (from its access log)"
before=$(wc -l <"$REGISTRY_LOG")
expect 0 --quiet "$REG/demo/app:1.0"
sleep 0.2
tail -n +"$((before + 1))" "$REGISTRY_LOG" | grep -o '"[A-Z]* /v2/[^ ]* HTTP/[0-9.]*" [0-9]*' | sed 's/^/   /'

if [ "$failed" = 0 ]; then
  echo
  echo "demo: every verdict was the expected one"
fi
exit "$failed"
